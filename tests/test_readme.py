"""README.md: a quickstart first, and no figure that the benchmarks do not back.

Issue 22, point 7. The README opens with the two set-up commands, then a quickstart of
at most 150 lines before the reference part (`# Reference`). Every figure it quotes is
read from a file in bench/results/ here and compared with the README's text, so a
figure goes stale only by failing this test; and every figure-like number in the README
must be one of those checked (a new figure needs a source and a row in FIGURES). The
links from the README and the docs pages it points to must lead to files and headings
that exist, since the README's deep material moved to docs/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "bench" / "results"
QUICKSTART_LIMIT = 150
REFERENCE_HEADING = "# Reference"


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _json(name: str):
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _row(rows: list[dict], **key) -> dict:
    found = [r for r in rows if all(r.get(k) == v for k, v in key.items())]
    assert len(found) == 1, (key, len(found))
    return found[0]


def _fmt(value: int) -> str:
    """A count as the README writes it: thousands separated by commas."""
    return f"{value:,}"


# ----------------------------------------------------------------- the set-up commands


def _code_blocks(text: str) -> list[list[str]]:
    """The README's code blocks in order, fenced or indented by four spaces, each as its
    lines (an indented block starts after a blank line, as in Markdown)."""
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = lines.index("```", i + 1)
            blocks.append(lines[i + 1:end])
            i = end + 1
        elif lines[i].startswith("    ") and i > 0 and not lines[i - 1].strip():
            start = i
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                i += 1
            blocks.append([s[4:] for s in lines[start:i] if s.strip()])
        else:
            i += 1
    return blocks


def test_the_first_commands_are_the_two_setup_commands() -> None:
    first = _code_blocks(_readme())[0]
    commands = [line.split("#", 1)[0].strip() for line in first]
    assert commands == ["make run", "make test"]


def test_the_setup_commands_do_what_the_readme_says() -> None:
    """`make run` builds, runs and checks the bundled example; `make test` runs pytest;
    both depend on `setup`, which installs everything."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rules = {name: (deps, recipe) for name, deps, recipe in
             re.findall(r"^(\w[\w-]*):([^\n]*)\n((?:\t[^\n]*\n)*)", makefile, re.M)}
    run_deps, run_recipe = rules["run"]
    test_deps, test_recipe = rules["test"]
    assert "setup" in run_deps.split() and "setup" in test_deps.split()
    assert "minirt-build" in run_recipe and "minirt-run" in run_recipe
    assert "--check" in run_recipe
    assert "pytest" in test_recipe
    assert re.search(r"^EXAMPLE\s*\?=\s*examples/seed\.mlir$", makefile, re.M)
    assert re.search(r"^BOARD\s*\?=\s*cortex-m4$", makefile, re.M)


def test_the_quickstart_fits_in_150_lines() -> None:
    lines = _readme().split("\n")
    assert REFERENCE_HEADING in lines, "the reference part starts at '# Reference'"
    quickstart = lines.index(REFERENCE_HEADING)
    assert quickstart <= QUICKSTART_LIMIT, (
        f"{quickstart} lines before '{REFERENCE_HEADING}': move detail to docs/")


def test_the_quickstart_walks_the_firmware_path() -> None:
    """Install, build for a board, read the size report, run and check, the Python API,
    link into a firmware, flash: in that order, all before the reference part."""
    quickstart = _readme().split("\n" + REFERENCE_HEADING + "\n", 1)[0]
    headings = re.findall(r"^## (.+)$", quickstart, re.M)
    assert headings[:7] == ["Install", "Build for a board", "Read the size report",
                            "Run under QEMU and check the numbers", "Python API",
                            "The model as a library in your own firmware", "Flash"]
    for command in ("minirt-build --board cortex-m4", "minirt-run --board cortex-m4",
                    "--check", "import minirt", "--emit library", "minirt-flash"):
        assert command in quickstart, command


# ------------------------------------------------------------------------- the figures


def _seed_flash(component: str) -> Callable[[], list[str]]:
    return lambda: [_fmt(_json("seed_size.json")["after"]["cortex-m4"]["flash"][component])]


def _seed_model() -> dict:
    return _row(_json("models.json"), model="seed", board="cortex-m4", quantize="none")


def _board_budget(board: str) -> dict:
    rows = [r for r in _json("size_report.json")["rows"] if r["board"] == board]
    budgets = {json.dumps(r["budget"], sort_keys=True) for r in rows}
    assert len(budgets) == 1, (board, budgets)
    return rows[0]["budget"]


def _kws_boot() -> dict:
    return _row(_json("boot_check.json"), model="kws_ref_model", board="cortex-m4")


def _suite(name: str) -> dict:
    return _json("peer_suites.json")[name]


# (what, a regex of README text whose groups are figures, the figures from bench/results)
# Each regex must match exactly once; a group's text must equal its figure as printed.
FIGURES: list[tuple[str, str, Callable[[], list[str]]]] = [
    ("size report: runtime", r"\n    runtime +(\d+) +0\n", _seed_flash("runtime")),
    ("size report: dispatch code", r"\n    dispatch code +(\d+) +0\n",
     _seed_flash("dispatch")),
    ("size report: schedule", r"\n    schedule/signature +(\d+) +0\n",
     _seed_flash("schedule")),
    ("size report: startup", r"\n    startup +(\d+) +0\n", _seed_flash("startup")),
    ("size report: harness", r"\n    harness +(\d+) +0\n", _seed_flash("harness")),
    ("size report: total", r"\n    total +([\d,]+) +([\d,]+) +\(budget ([\d,]+) / ([\d,]+)\)",
     lambda: [_fmt(_json("seed_size.json")["after"]["cortex-m4"]["flash_total"]),
              _fmt(_seed_model()["ram_bytes"]),
              _fmt(_board_budget("cortex-m4")["flash"]),
              _fmt(_board_budget("cortex-m4")["ram"])]),
    ("quickstart: seed instructions", r"\((\d+) instructions for the seed\)",
     lambda: [_fmt(_seed_model()["instructions"])]),
    ("figures: seed", r"The seed example on cortex-m4: ([\d,]+) B of flash, ([\d,]+) B of "
     r"RAM, ([\d,]+) instructions",
     lambda: [_fmt(_seed_model()["flash_bytes"]), _fmt(_seed_model()["ram_bytes"]),
              _fmt(_seed_model()["instructions"])]),
    ("figures: boot check", r"kws_ref_model on cortex-m4: ([\d,]+) instructions with the "
     r"default\s+`--boot-check layout`[^,]*,\s+([\d,]+)\s+with `small` and ([\d,]+) with `fast`",
     lambda: [_fmt(_kws_boot()[k]["boot"]) for k in ("layout", "small", "fast")]),
    ("figures: random graphs", r"([\d,]+) random graphs on each of (\d+) boards, (\d+) "
     r"failures",
     lambda: [_fmt(_json("random_graphs.json")["graphs_per_board"]),
              _fmt(len(_json("random_graphs.json")["boards"])),
              _fmt(len(_json("random_graphs.json")["failures"]))]),
    ("figures: peer suites",
     r"TFLite Micro's models load (\d+) of ([\d,]+),\s+StableHLO interpreter tests import "
     r"([\d,]+) of ([\d,]+), ONNX node tests match ([\d,]+) of ([\d,]+)",
     lambda: [_fmt(s[k]) for s in (_suite("TFLite Micro's models (load)"),
                                   _suite("StableHLO interpreter tests (import + verify)"),
                                   _suite("ONNX backend node tests (reference matches)"))
              for k in ("pass", "total")]),
]


@pytest.mark.parametrize("what, pattern, expected", FIGURES, ids=[f[0] for f in FIGURES])
def test_a_figure_matches_its_results_file(what: str, pattern: str, expected) -> None:
    matches = list(re.finditer(pattern, _readme()))
    assert len(matches) == 1, f"{what}: {len(matches)} matches of {pattern!r} in README.md"
    assert list(matches[0].groups()) == expected(), what


def _tables(text: str) -> list[tuple[list[str], list[list[str]], list[list[tuple[int, int]]]]]:
    """Every Markdown table of `text`: its column keys, its rows' cells and their spans.
    A column headed like the one before it ("TFLM" after "code excl. weights: minirt")
    is keyed by both, so that repeated headers stay apart."""
    tables = []
    for m in re.finditer(r"(?m)^\|.*\|\n\|[-| :]+\|\n(?:\|.*\|\n?)+", text):
        lines = m.group(0).rstrip("\n").split("\n")
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        keys = [h if i == 0 or h not in ("TFLM",) else f"{header[i - 1]} / {h}"
                for i, h in enumerate(header)]
        rows, spans, offset = [], [], m.start() + len(lines[0]) + len(lines[1]) + 2
        for line in lines[2:]:
            cells, cell_spans, pos = [], [], offset + 1
            for raw in line[1:-1].split("|"):
                stripped = raw.strip()
                start = pos + raw.index(stripped) if stripped else pos
                cells.append(stripped)
                cell_spans.append((start, start + len(stripped)))
                pos += len(raw) + 1
            rows.append(cells)
            spans.append(cell_spans)
            offset += len(line) + 1
        tables.append((keys, rows, spans))
    return tables


def _mlperf_table() -> tuple[list[str], list[list[str]], list[list[tuple[int, int]]]]:
    readme = [t for t in _tables(_readme()) if t[0][:2] == ["model", "instructions: minirt"]]
    assert len(readme) == 1, "README.md has one MLPerf Tiny table"
    return readme[0]


def _board_table() -> tuple[list[str], list[list[str]], list[list[tuple[int, int]]]]:
    readme = [t for t in _tables(_readme()) if t[0][:3] == ["board", "CPU", "flash / RAM"]]
    assert len(readme) == 1, "README.md has one board table"
    return readme[0]


def test_the_mlperf_table_matches_its_results_file() -> None:
    """Each cell of the README's MLPerf Tiny table equals the cell of the same model and
    column in bench/results/mlperf.md's comparison with TFLite Micro."""
    results = (RESULTS / "mlperf.md").read_text(encoding="utf-8")
    section = results.split("## Against TFLite Micro + CMSIS-NN on cortex-m4", 1)[1]
    theirs = [t for t in _tables(section) if t[0][0] == "model"]
    assert len(theirs) == 1
    their_keys, their_rows, _ = theirs[0]
    by_model = {row[0]: dict(zip(their_keys, row, strict=True)) for row in their_rows}
    keys, rows, _ = _mlperf_table()
    assert len(rows) == len(by_model)
    for row in rows:
        for key, cell in zip(keys, row, strict=True):
            assert cell == by_model[row[0]][key], (row[0], key)


# Whole KB or MB, or bytes where a budget is not a whole number of KB (the ESP32s' RAM).
_SIZE = re.compile(r"^([\d,]+) (B|KB|MB) / ([\d,]+) (B|KB|MB)$")


def test_the_board_table_matches_the_size_report() -> None:
    """A board's flash / RAM in the README are the budgets bench/results/size_report.json
    measured every model against (KB and MB of 1,024)."""
    keys, rows, _ = _board_table()
    boards = set(_json("size_report.json")["boards"])
    listed = set()
    for row in rows:
        cells = dict(zip(keys, row, strict=True))
        names = re.findall(r"`([^`]+)`", cells["board"])
        listed.update(names)
        if cells["flash / RAM"] == "hosted":
            continue
        m = _SIZE.match(cells["flash / RAM"])
        assert m, cells["flash / RAM"]
        unit = {"B": 1, "KB": 1024, "MB": 1024 * 1024}
        flash = int(m[1].replace(",", "")) * unit[m[2]]
        ram = int(m[3].replace(",", "")) * unit[m[4]]
        (name,) = names
        assert _board_budget(name) == {"flash": flash, "ram": ram}, name
    assert listed == boards, listed ^ boards


# A number is a figure when it has a thousands comma, is 10 or more, or carries a unit;
# parts of names and options (x86-64, input_0, 1e-5, 1x3x32x32, mps2-an386) are not.
_NUMBER = re.compile(r"(?<![\w.\-/+=<>#])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w\-/=.]\w)"
                     r"(?:\s?(B|KB|MB|M|K|%|instructions|bytes)\b)?")
# Numbers that are versions or names, not measurements.
NOT_FIGURES = ["opset 13"]


def _figure_spans() -> list[tuple[int, int]]:
    text = _readme()
    spans = []
    for _, pattern, _ in FIGURES:
        for m in re.finditer(pattern, text):
            spans.extend(m.span(g) for g in range(1, len(m.groups()) + 1))
    # The MLPerf table is checked cell by cell, the board table in its flash / RAM column.
    spans.extend(span for row in _mlperf_table()[2] for span in row[1:])
    keys, _, cell_spans = _board_table()
    spans.extend(row[keys.index("flash / RAM")] for row in cell_spans)
    for phrase in NOT_FIGURES:
        start = text.index(phrase)
        spans.append((start, start + len(phrase)))
    return spans


def test_every_figure_in_the_readme_is_checked() -> None:
    text, spans = _readme(), _figure_spans()
    unchecked = []
    for m in _NUMBER.finditer(text):
        number, unit = m.group(1), m.group(2)
        if not ("," in number or unit or float(number) >= 10):
            continue
        start, end = m.span(1)
        if not any(a <= start and end <= b for a, b in spans):
            line = text.count("\n", 0, start) + 1
            unchecked.append(f"line {line}: {m.group(0)!r}")
    assert not unchecked, ("figures with no bench/results/ source in FIGURES "
                           f"(tests/test_readme.py): {unchecked}")


# --------------------------------------------------------------------------- the links


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to
    hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"(?ms)^```.*?^```", "", text)  # a '#' in a code block is no heading
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def _links(path: Path) -> list[tuple[Path, str]]:
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # nor is `f(x)[i](y)` in inline code a link
    out = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        file, _, anchor = target.partition("#")
        out.append(((path.parent / file).resolve() if file else path, anchor))
    return out


def test_the_readme_and_docs_links_lead_somewhere() -> None:
    """The README's links, and those of the docs pages it links to, name files and
    headings that exist."""
    pages = [README] + sorted((ROOT / "docs").glob("*.md"))
    broken = []
    for page in pages:
        for target, anchor in _links(page):
            if not target.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and target.is_file() and anchor not in _anchors(target):
                broken.append(f"{page.name}: {target.name}#{anchor}")
    assert not broken, broken
