"""minirt-size: the table against the budgets, the baseline gate CI relies on (exit 1
naming the component that grew), the treemap page, and one-line errors (exit 2)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from toolchain.cli import size as size_cli
from toolchain.pipeline import build_model
from toolchain.target import load_board

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed.mlir"
# The seed model plus one more dispatch: what a change to a model does to the image.
T = "tensor<4x4xf32>"
GROWN = (
    f"func.func @main(%a: {T}, %b: {T}, %c: {T}) -> {T} {{\n"
    f"  %0 = stablehlo.multiply %a, %b : {T}\n"
    f"  %1 = stablehlo.add %0, %c : {T}\n"
    f"  %2 = stablehlo.dot_general %1, %a, contracting_dims = [1] x [0] : ({T}, {T}) -> {T}\n"
    f"  return %2 : {T}\n}}\n")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The seed and a grown seed for cortex-m4 (the baseline and a change), and the seed
    for x86-64 (another board)."""
    root = tmp_path_factory.mktemp("size-cli")
    grown = root / "grown.mlir"
    grown.write_text(GROWN)
    quiet = {"log": lambda *_: None}
    dirs = {"seed": root / "seed", "grown": root / "grown", "x86": root / "x86"}
    for (name, model, board) in (("seed", SEED, "cortex-m4"), ("grown", grown, "cortex-m4"),
                                 ("x86", SEED, "x86-64")):
        result = build_model(model, board, dirs[name], **quiet)
        from toolchain.report.size import size_report

        (dirs[name] / "size.json").write_text(json.dumps(size_report(result).to_json()))
    return dirs


def _run(capsys, *args: str) -> tuple[int, str, str]:
    rc = size_cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_table_with_budget_percentages(builds, capsys) -> None:
    rc, out, err = _run(capsys, builds["seed"], "--symbols", "3")
    assert rc == 0 and err == ""
    assert out.startswith("board cortex-m4: flash budget 4,194,304 B, RAM budget 4,194,304 B")
    header = next(line for line in out.splitlines() if line.startswith("component"))
    assert header.split() == ["component", "flash", "%", "budget", "RAM", "%", "budget"]
    total = next(line for line in out.splitlines() if line.startswith("total")).split("%")
    assert len(total) == 3
    split = next(line for line in out.splitlines() if line.startswith("RAM split:"))
    assert re.search(r"arena [\d,]+ B \(\d+\.\d\d %\), I/O buffers [\d,]+ B \(\d+\.\d\d %\), "
                     r"stack [\d,]+ B \(\d+\.\d\d %\)", split)
    symbols = out.split("symbol\n", 1)[1].strip().splitlines()
    assert len(symbols) == 3 and symbols[0].split()[-1] == "mrt_module_validate"


def test_json_output(builds, capsys) -> None:
    rc, out, _ = _run(capsys, builds["seed"], "--json", "--symbols", "2")
    data = json.loads(out)
    assert rc == 0 and data["board"] == "cortex-m4" and len(data["symbols"]) == 2
    stack = data["ram"]["stack"]
    assert data["percent"]["ram"]["stack"] == pytest.approx(100 * stack / data["budget"]["ram"])
    total = data["percent"]["flash"]["total"]
    assert total == pytest.approx(100 * data["flash_total"] / data["budget"]["flash"])


def test_same_build_passes_the_gate(builds, capsys) -> None:
    rc, out, err = _run(capsys, builds["seed"], "--baseline", builds["seed"] / "size.json")
    assert rc == 0 and err == ""
    assert "over the allowed growth" not in out
    rc, _, _ = _run(capsys, builds["seed"], "--baseline", builds["seed"])  # a directory
    assert rc == 0


def test_a_grown_component_fails_the_gate_by_name(builds, capsys) -> None:
    base = json.loads((builds["seed"] / "size.json").read_text())
    new = json.loads((builds["grown"] / "size.json").read_text())
    grown = new["flash"]["dispatch"] - base["flash"]["dispatch"]
    assert grown > 0
    rc, out, err = _run(capsys, builds["grown"], "--baseline", builds["seed"] / "size.json")
    assert rc == 1
    row = next(line for line in out.splitlines() if line.startswith("flash  dispatch code"))
    assert row.split()[3:6] == [str(base["flash"]["dispatch"]), str(new["flash"]["dispatch"]),
                                f"+{grown}"]
    assert row.endswith("over the allowed growth")
    errors = err.strip().splitlines()
    assert f"minirt-size: error: flash component dispatch code grew by {grown} B (+" in err
    assert all(line.startswith("minirt-size: error: ") for line in errors)
    assert "over the allowed 0 %" in errors[0]
    # A team that allows the growth passes (unless a component grew from 0 B: that is
    # unbounded growth); one that allows a little less than dispatch's does not.
    grew_from_zero = [k for m in ("flash", "ram") for k in base[m]
                      if base[m][k] == 0 and new[m][k] > 0]
    rc, _, _ = _run(capsys, builds["grown"], "--baseline", builds["seed"],
                    "--max-growth", "1e6")
    assert rc == (1 if grew_from_zero else 0)
    pct = 100 * grown / base["flash"]["dispatch"]
    rc, _, err = _run(capsys, builds["grown"], "--baseline", builds["seed"],
                      "--max-growth", f"{pct - 0.01:.2f}")
    assert rc == 1 and "dispatch code" in err
    rc, _, err = _run(capsys, builds["grown"], "--baseline", builds["seed"],
                      "--max-growth", f"{pct + 0.01:.2f}")
    assert "dispatch code" not in err


def test_gate_json(builds, capsys) -> None:
    rc, out, err = _run(capsys, builds["grown"], "--baseline", builds["seed"], "--json")
    data = json.loads(out)
    assert rc == 1 and data["baseline"]["max_growth_percent"] == 0
    over = {(c["memory"], c["component"]) for c in data["baseline"]["changes"] if c["over"]}
    assert ("flash", "dispatch") in over and ("flash", "total") in over
    assert any("dispatch code" in line for line in data["baseline"]["failed"])


def test_html_treemap(builds, capsys, tmp_path: Path) -> None:
    page = tmp_path / "size.html"
    rc, out, _ = _run(capsys, builds["seed"], "--html", page, "--symbols", "0")
    assert rc == 0 and f"wrote {page}" in out
    text = page.read_text()
    assert text.count("<svg") == 2 and "<script" not in text and "http" not in text
    assert "mrt_module_validate" in text and "mrt_image_arena" in text


@pytest.mark.parametrize("make_args, message", [
    (lambda b, t: [t / "nope"], "no such build directory"),
    (lambda b, t: [t], "no firmware.elf or firmware.map"),
    (lambda b, t: [b["seed"], "--max-growth", "5"], "--max-growth applies to a comparison"),
    (lambda b, t: [b["seed"], "--baseline", b["seed"], "--max-growth", "-1"],
     "must be a finite percentage >= 0"),
    (lambda b, t: [b["seed"], "--baseline", t / "missing.json"], "cannot read the baseline"),
    (lambda b, t: [b["seed"], "--baseline", b["x86"]],
     "is for board x86-64, {seed} for board cortex-m4"),
    (lambda b, t: [b["seed"], "--html", t / "no" / "x.html"], "does not exist"),
    (lambda b, t: [b["seed"], "--board", "no-such-board"], "no-such-board"),
])
def test_errors_are_one_line(builds, capsys, tmp_path: Path, make_args, message) -> None:
    rc, out, err = _run(capsys, *make_args(builds, tmp_path))
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("minirt-size: error: ")
    assert message.format(seed=builds["seed"]) in err


@pytest.mark.parametrize("content, message", [
    ("{", "invalid JSON"),
    ("[]", "no board"),
    ('{"board": "cortex-m4", "flash": {"runtime": "x"}}', "'flash' is not a table"),
    ('{"board": "cortex-m4", "flash": {}, "ram": {}}', "no 'flash_total'"),
    ('{"board": "a\\nb", "flash": {}, "ram": {}}', "no board"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ('{"board": "cortex-m4", "flash": ' + '{"a": ' * 5000 + "1" + "}" * 5001,
     "nested too deeply"),
    ('{"board": "cortex-m4", "flash_total": 1' + "0" * 5000 + "}",
     "invalid JSON: Exceeds the limit (4300 digits)"),
])
def test_bad_baselines(builds, capsys, tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "size.json"
    bad.write_text(content)
    rc, out, err = _run(capsys, builds["seed"], "--baseline", bad)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert message in err and str(bad) in err


@pytest.mark.parametrize(("field", "message"), [
    ("flash_total", "'flash_total' is not a byte count"),
    ("ram_total", "'ram_total' is not a byte count"),
    ("flash", "'flash' is not a table of byte counts"),
    ("ram", "'ram' is not a table of byte counts"),
])
def test_a_huge_integer_in_a_baseline_is_one_line(field: str, message: str, builds, capsys,
                                                  tmp_path: Path) -> None:
    """A valid JSON integer too large for a percentage (it would overflow a float)."""
    data = json.loads((builds["seed"] / "size.json").read_text())
    huge = 10 ** 4000
    if isinstance(data[field], dict):
        data[field] = dict.fromkeys(data[field], huge)
    else:
        data[field] = huge
    bad = tmp_path / "size.json"
    bad.write_text(json.dumps(data))
    rc, out, err = _run(capsys, builds["seed"], "--baseline", bad)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert f"{bad}: not a size.json ({message}" in err


def test_a_fifo_baseline_does_not_block(builds, capsys, tmp_path: Path) -> None:
    """A reader that opened the FIFO would wait for a writer: one comes after 5 s with
    "{}", so a blocking implementation fails on the message instead of hanging."""
    fifo = tmp_path / "size.json"
    os.mkfifo(fifo)

    def unblock() -> None:
        time.sleep(5)
        try:  # ENXIO unless someone has it open for reading
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, b"{}")
            os.close(fd)
        except OSError:
            pass

    threading.Thread(target=unblock, daemon=True).start()
    rc, _, err = _run(capsys, builds["seed"], "--baseline", fifo)
    assert rc == 2 and err == (f"minirt-size: error: {fifo}: cannot read the baseline: not "
                               "a regular file\n")


def test_over_budget_exits_1(builds, capsys, tmp_path: Path) -> None:
    """A board whose flash budget is below the image (its memory is not): the build
    keeps its image, and minirt-size fails it, with the board's YAML given by path."""
    data = yaml.safe_load(load_board("cortex-m4").path.read_text())
    data["identifier"] = "m4-tight"
    data["budgets"]["flash"] = 512
    path = tmp_path / "m4-tight.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "fw"
    build_model(SEED, str(path), out, log=lambda *_: None)
    rc, _, err = _run(capsys, out)  # the board is not a bundled one: say how to name it
    assert rc == 2 and "--board" in err
    rc, text, err = _run(capsys, out, "--board", path)
    assert rc == 1 and "OVER BUDGET: board m4-tight: flash" in text
    assert "minirt-size: error: board m4-tight: flash" in err


def test_console_script(builds) -> None:
    """The installed console script (pyproject), or the module where it is not installed."""
    exe = Path(sys.executable).with_name("minirt-size")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "toolchain.cli.size"]
    proc = subprocess.run([*cmd, str(builds["seed"]), "--symbols", "0"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "RAM split:" in proc.stdout
