"""The seed firmware's flash, before and after the 1 KB work (issue 10, point 6).

`minirt-build --board B examples/seed.mlir` for every board, twice: from the tree at the
revision before the work (--before, extracted with `git archive` into a temporary
directory) and from this tree. Each build is measured by its own tree's size report
(toolchain/report/size.py, size.json: every flash byte in one component), which must
add up to the ELF's loadable bytes; the components are the same in both. Every board's new
image must also pass `minirt-run --check` under QEMU.

Writes bench/results/seed_size.json and seed_size.md: the per-component table and the
symbols of the cortex-m4 image before and after, and every board's totals. Exits 1 if
the cortex-m4 image is over 1,024 bytes or a check fails.

Usage: python bench/seed_size.py [--before REV] [--boards B,B] [--jobs N] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from elftools.elf.elffile import ELFFile  # noqa: E402

from toolchain.report.size import COMPONENT_LABELS  # noqa: E402
from toolchain.target import list_boards  # noqa: E402

BEFORE = "b84ed8b"  # main when the work began: the seed on cortex-m4 was 2,028 B
SEED = Path("examples") / "seed.mlir"
BOARD = "cortex-m4"  # the board the bound is for
LIMIT = 1024  # bytes of flash (sum of the loadable segments)
RAM_SECTIONS = (".bss", ".data")  # symbols there are RAM (.data would be both: none)


def extract(rev: str, dest: Path) -> Path:
    """The tree of `rev` of this repository, in `dest`."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def _toolchain(tree: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    """Runs `python -m module args` with `tree`'s own toolchain package."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=tree, env=env,
                          capture_output=True, text=True)


def loadable_bytes(elf_path: Path) -> int:
    """The flash an image takes: the file bytes of its PT_LOAD segments."""
    with elf_path.open("rb") as f:
        return sum(seg["p_filesz"] for seg in ELFFile(f).iter_segments()
                   if seg["p_type"] == "PT_LOAD")


def measure(tree: Path, board: str, out: Path, check: bool) -> dict:
    """Builds the seed from `tree` for `board` into `out`; its size report (this tree's
    attribution) and, with `check`, whether `minirt-run --check` passes."""
    build = _toolchain(tree, "toolchain.cli.build", "--board", board, str(SEED), "-o", str(out))
    if build.returncode != 0:
        raise RuntimeError(f"{tree}: building the seed for {board} failed:\n{build.stderr}")
    # The tree's own size report (size.json): each tree's reader knows its module format.
    report = json.loads((out / "size.json").read_text())
    row = {
        "board": board,
        "flash_total": report["flash_total"],
        "loadable_bytes": loadable_bytes(out / "firmware.elf"),
        "flash": {k: v for k, v in report["flash"].items() if v},
        "symbols": [{"name": s["name"], "size": s["size"], "component": s["component"]}
                    for s in report["symbols"] if s["section"] not in RAM_SECTIONS],
    }
    if not sum(report["flash"].values()) == row["flash_total"] == row["loadable_bytes"]:
        raise RuntimeError(f"{tree}: the size report of {board} does not add up: {row}")
    if check:
        run = _toolchain(tree, "toolchain.cli.run", "--board", board, "--check", str(SEED),
                         "-o", str(out))
        row["check"] = run.returncode == 0 and "outputs match the reference" in run.stdout
        if not row["check"]:
            row["check_output"] = (run.stdout + run.stderr).strip().splitlines()[-3:]
    return row


def _component_table(before: dict, after: dict) -> list[str]:
    rows = ["| component | before (B) | after (B) | change |", "|---|---:|---:|---:|"]
    for key, label in COMPONENT_LABELS.items():
        b, a = before["flash"].get(key, 0), after["flash"].get(key, 0)
        if a or b:
            rows.append(f"| {label} | {b:,} | {a:,} | {a - b:+,} |")
    b, a = before["flash_total"], after["flash_total"]
    rows.append(f"| **total** | **{b:,}** | **{a:,}** | **{a - b:+,}** |")
    return rows


def _symbol_table(row: dict) -> list[str]:
    rows = ["| symbol | component | bytes |", "|---|---|---:|"]
    rows += [f"| `{s['name']}` | {COMPONENT_LABELS.get(s['component'], s['component'])} "
             f"| {s['size']:,} |" for s in row["symbols"]]
    return rows


def markdown(data: dict) -> str:
    """The results as the Markdown page."""
    before, after = data["before"][BOARD], data["after"][BOARD]
    lines = [
        "# Seed firmware flash, before and after",
        "",
        f"Written by `python bench/seed_size.py` (the revision before: `{data['before_rev']}`)."
        f" `minirt-build --board B examples/seed.mlir`; flash is the sum of the ELF's "
        f"loadable segments, split by each tree's size report (toolchain/report/size.py), "
        f"its components adding up to it. The bound: {LIMIT:,} B on "
        f"{BOARD}.",
        "",
        f"## {BOARD}: {before['flash_total']:,} B -> {after['flash_total']:,} B",
        "",
        *_component_table(before, after),
        "",
        "Symbols after (every flash byte the symbols cover; alignment padding is the rest):",
        "",
        *_symbol_table(after),
        "",
        "Symbols before:",
        "",
        *_symbol_table(before),
        "",
        "## Every board",
        "",
        "| board | before (B) | after (B) | change | `minirt-run --check` |",
        "|---|---:|---:|---:|---|",
    ]
    for board, a in data["after"].items():
        b = data["before"].get(board)
        was = f"{b['flash_total']:,}" if b else "-"
        change = f"{a['flash_total'] - b['flash_total']:+,}" if b else "-"
        check = {True: "passes", False: "FAILS", None: "not run"}[a.get("check")]
        lines.append(f"| `{board}` | {was} | {a['flash_total']:,} | {change} | {check} |")
    lines += ["", f"{data['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default=BEFORE, help=f"revision before (default {BEFORE})")
    p.add_argument("--boards", default=",".join(list_boards()),
                   help="comma-separated boards (default: all)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--no-check", action="store_true", help="do not run the new images")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    boards = [b for b in args.boards.split(",") if b]
    if BOARD not in boards:
        boards.insert(0, BOARD)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="minirt-seed-size-") as tmp:
        work = Path(tmp)
        old = extract(args.before, work / "before")
        # Boards added since `before` (the real boards) have no before column.
        was = [b for b in boards if (old / "boards" / f"{b}.yaml").is_file()]
        jobs = [(old, b, work / f"before-{b}", False) for b in was]
        jobs += [(ROOT, b, work / f"after-{b}", not args.no_check) for b in boards]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda j: measure(*j), jobs))
    data = {"before_rev": subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.before],
                                         capture_output=True, text=True).stdout.strip(),
            "limit": LIMIT, "board": BOARD,
            "before": {r["board"]: r for r in rows[:len(was)]},
            "after": {r["board"]: r for r in rows[len(was):]},
            "seconds": round(time.perf_counter() - start, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "seed_size.json").write_text(json.dumps(data, indent=2) + "\n")
    (args.out / "seed_size.md").write_text(markdown(data))
    after = data["after"][BOARD]["flash_total"]
    print(f"seed on {BOARD}: {data['before'][BOARD]['flash_total']:,} B -> {after:,} B "
          f"(limit {LIMIT:,}); wrote {args.out}/seed_size.json, seed_size.md")
    failed = [b for b, r in data["after"].items() if r.get("check") is False]
    for board in failed:
        print(f"{board}: minirt-run --check failed: {data['after'][board]['check_output']}")
    return 1 if after > LIMIT or failed else 0


if __name__ == "__main__":
    sys.exit(main())
