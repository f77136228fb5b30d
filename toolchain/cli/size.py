"""`minirt-size`: where a build's flash and RAM go, against the board's budgets and,
for CI, against a baseline size.json.

A thin layer over toolchain/report: size.py makes the table from the build's ELF and
map, baseline.py the diff and the growth gate, treemap.py the HTML page.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

from toolchain.cli.common import (
    EXIT_MISMATCH,
    EXIT_OK,
    ArgumentParser,
    non_negative_int,
    run_tool,
)
from toolchain.loader import UsageError
from toolchain.report.baseline import (
    DEFAULT_MAX_GROWTH,
    BaselineError,
    compare,
    format_diff,
    load_baseline,
)
from toolchain.report.layers import (
    DISPATCHES_FILE,
    attach_layers,
    read_layers,
    read_optimize,
    read_tuned,
)
from toolchain.report.size import SizeReport, size_report_from_files
from toolchain.report.treemap import write_treemap
from toolchain.target import Board, DescriptorError, load_board

IMAGE = "firmware"  # the image minirt-build writes: firmware.elf and firmware.map


def _percent(text: str) -> float:
    """An argparse type: a finite percentage >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite percentage >= 0, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="minirt-size",
        description="Show where a minirt-build image's flash and RAM go: the component "
                    "table, the RAM split and the largest symbols, each as a percentage of "
                    "the board's budgets; compare with a baseline size.json (a CI gate) and "
                    "draw a treemap.",
        epilog="Exit codes: 0 ok; 1 over the board's budget, or a component grew past "
               "--max-growth; 2 bad directory, baseline or option.")
    p.add_argument("build_dir", metavar="BUILD_DIR", help="a minirt-build output directory")
    p.add_argument("--baseline", metavar="OLD/size.json",
                   help="compare with this size.json (or the build directory holding it): "
                        "print the change of every component and fail (exit 1) when one "
                        "grows past --max-growth")
    p.add_argument("--max-growth", type=_percent, default=None, metavar="PCT",
                   help="with --baseline: the growth allowed to any component and total, in "
                        f"percent of its baseline size (default: {DEFAULT_MAX_GROWTH:g}, "
                        "i.e. any growth fails)")
    p.add_argument("--json", action="store_true",
                   help="print JSON (size.json's fields, the percentages, the baseline diff)")
    p.add_argument("--html", metavar="OUT.html",
                   help="also write a self-contained HTML treemap of flash and RAM by "
                        "component and symbol")
    p.add_argument("--symbols", type=non_negative_int, default=10, metavar="N",
                   help="list the N largest symbols (default: 10)")
    p.add_argument("--board", help="board name or YAML file (default: the board the build "
                                   "was made for)")
    return p


def _board_name(build_dir: Path) -> str:
    """The board a build was made for: from its size.json, else its linker script."""
    try:
        board = json.loads((build_dir / "size.json").read_text()).get("board")
        if isinstance(board, str):
            return board
    except (OSError, ValueError, AttributeError):
        pass
    script = build_dir / f"{IMAGE}.ld"
    m = re.search(r"for board '([^']+)'", script.read_text()) if script.is_file() else None
    if m is None:
        raise UsageError(f"{build_dir}: neither size.json nor {script.name} names the board; "
                         "give it with --board")
    return m.group(1)


def _load(build_dir: Path, board_arg: str | None) -> tuple[Board, SizeReport]:
    if not build_dir.is_dir():
        raise UsageError(f"{build_dir}: no such build directory")
    missing = [n for n in (f"{IMAGE}.elf", f"{IMAGE}.map") if not (build_dir / n).is_file()]
    if missing:
        raise UsageError(f"{build_dir}: no {' or '.join(missing)}; minirt-size reads the "
                         "image of a minirt-build output directory (a library build has none)")
    name = board_arg or _board_name(build_dir)
    try:
        board = load_board(name)
    except DescriptorError as e:
        hint = "" if board_arg else " (give the board's YAML with --board)"
        raise UsageError(f"{e}{hint}") from None
    try:
        report = size_report_from_files(build_dir / f"{IMAGE}.elf", build_dir / f"{IMAGE}.map",
                                        board)
    except (OSError, ValueError) as e:  # a truncated ELF, a map from another link
        raise UsageError(f"{build_dir}: cannot read the image: {e}") from None
    layers_file = build_dir / DISPATCHES_FILE
    if layers_file.is_file():  # a build older than the file has no names to show
        try:
            attach_layers(report, read_layers(layers_file))
            report.optimize = read_optimize(layers_file)
            report.tuned = read_tuned(layers_file)
        except ValueError as e:
            raise UsageError(str(e)) from None
    return board, report


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.max_growth is not None and args.baseline is None:
        raise UsageError("--max-growth applies to a comparison: give --baseline OLD/size.json")
    max_growth = DEFAULT_MAX_GROWTH if args.max_growth is None else args.max_growth
    build_dir = Path(args.build_dir)
    html = Path(args.html) if args.html else None
    if html is not None and not html.parent.is_dir():
        raise UsageError(f"--html {html}: the directory {html.parent} does not exist")
    _, report = _load(build_dir, args.board)
    current = report.to_json()

    changes = []
    if args.baseline:
        try:
            baseline = load_baseline(Path(args.baseline))
        except BaselineError as e:
            raise UsageError(str(e)) from None
        if baseline["board"] != report.board:
            raise UsageError(f"--baseline {args.baseline} is for board {baseline['board']}, "
                             f"{build_dir} for board {report.board}: compare builds of one "
                             "board")
        changes = compare(current, baseline)
    failed = [c for c in changes if c.grew_past(max_growth)]

    info = sys.stderr if args.json else sys.stdout
    if html is not None:
        write_treemap(report, html, f"minirt size: {build_dir} (board {report.board})")
    if args.json:
        data = {**current, "symbols": current["symbols"][: args.symbols],
                "percent": report.percentages()}
        if args.baseline:
            data["baseline"] = {
                "path": args.baseline, "max_growth_percent": max_growth,
                "changes": [{"memory": c.memory, "component": c.component, "old": c.old,
                             "new": c.new, "delta": c.delta, "percent": c.percent,
                             "over": c.grew_past(max_growth)} for c in changes],
                "failed": [c.describe() for c in failed]}
        print(json.dumps(data, indent=2))
    else:
        print(report.format_budget_table(args.symbols))
        if args.baseline:
            print(f"\nagainst {args.baseline} (allowed growth {max_growth:g} %):")
            print(format_diff(changes, max_growth))
    if html is not None:
        print(f"minirt-size: wrote {html}", file=info)
    for c in failed:
        print(f"minirt-size: error: {c.describe()}, over the allowed {max_growth:g} %",
              file=sys.stderr)
    for line in report.over_budget:
        print(f"minirt-size: error: {line}", file=sys.stderr)
    return EXIT_MISMATCH if failed or report.over_budget else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """The minirt-size console script."""
    return run_tool("minirt-size", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
