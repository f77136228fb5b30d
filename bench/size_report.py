"""Flash and RAM of every shared model on every board: the size matrix (`make size-report`).

Models: every JAX model in ../shared/models/jax and every MLPerf Tiny .tflite model in
../shared/models/mlperf_tiny, f32 as they come. Boards: every board in boards/. For each
pair: flash and RAM against the board's budgets, split by component (size.json's
table), or, for a model the board cannot hold, the same table from a link against
enlarged memories and what overflows by how much (pipeline.link_image), so a model that
does not fit is shown as such with its real size.

Code generation depends on the target, not the board, so each model is compiled once
per target and linked once per board of that target. One progress line per link, as
they finish; --jobs compiles that many (model, target) pairs at a time.

Writes bench/results/size_report.json and size_report.md.

Usage: python bench/size_report.py [--jobs N] [--models M,M] [--boards B,B] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.diagnostics import CompileError  # noqa: E402
from toolchain.link.build import LinkError  # noqa: E402
from toolchain.loader import UsageError, load_graph  # noqa: E402
from toolchain.module.pack import PackError  # noqa: E402
from toolchain.pipeline import DoesNotFit, compile_image, link_image  # noqa: E402
from toolchain.report.size import SizeReport, size_report_from_files  # noqa: E402
from toolchain.target import list_boards, load_board  # noqa: E402

SHARED = ROOT.parent / "shared" / "models"


def shared_models() -> list[Path]:
    """Every shared JAX model, then every MLPerf Tiny .tflite model (empty when the
    shared folder is absent)."""
    return (sorted((SHARED / "jax").glob("*.mlir"))
            + sorted((SHARED / "mlperf_tiny").glob("*.tflite")))


def _row(model: Path, board, status: str, report: SizeReport | None, seconds: float,
         note: str = "") -> dict:
    row = {"model": model.stem, "file": f"{model.parent.name}/{model.name}",
           "board": board.identifier, "target": board.target, "status": status,
           "note": note, "seconds": round(seconds, 2),
           "budget": {"flash": board.budgets.flash, "ram": board.budgets.ram},
           "memory": {"flash": board.flash.length, "ram": board.ram.length}}
    if report is not None:
        row.update(flash_total=report.flash_total, ram_total=report.ram_total,
                   flash=dict(report.flash), ram=dict(report.ram),
                   flash_percent=round(report.percent("flash", report.flash_total), 2),
                   ram_percent=round(report.percent("ram", report.ram_total), 2))
    return row


def build_group(model: Path, boards: list[str]) -> list[dict]:
    """Compiles `model` once for the target of `boards` and links it for each board."""
    loaded = [load_board(b) for b in boards]
    rows: list[dict] = []
    start = time.perf_counter()
    try:
        image = compile_image(load_graph(model), loaded[0], log=lambda _: None)
    except (CompileError, UsageError, LinkError, PackError) as e:
        message = e.render() if isinstance(e, CompileError) else str(e)
        return [_row(model, b, "error", None, 0.0, message.splitlines()[0]) for b in loaded]
    except Exception as e:  # a compiler bug: recorded in the matrix, not the end of the run
        return [_row(model, b, "error", None, 0.0, f"internal error: {type(e).__name__}: {e}")
                for b in loaded]
    compile_seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="minirt-size-") as tmp:
        obj = Path(tmp) / "dispatch.o"
        obj.write_bytes(image.obj)
        for board in loaded:
            t0 = time.perf_counter()
            work = Path(tmp) / board.identifier
            try:
                link = link_image(board, [obj], work, log=lambda _: None)
            except DoesNotFit as e:
                rows.append(_row(model, board, "does not fit", e.report,
                                 time.perf_counter() - t0,
                                 str(e).split(" memory: ", 1)[-1]))
                continue
            except LinkError as e:
                rows.append(_row(model, board, "error", None, time.perf_counter() - t0, str(e)))
                continue
            report = size_report_from_files(link.elf, link.map, board, helpers=link.helpers)
            status = "over budget" if report.over_budget else "fits"
            rows.append(_row(model, board, status, report, time.perf_counter() - t0,
                             "; ".join(report.over_budget)))
    for r in rows:  # the shared compile, spread over the boards that used it
        r["seconds"] = round(r["seconds"] + compile_seconds / len(rows), 2)
    return rows


def _kib(n: int) -> str:
    return f"{n / 1024:.1f}"


def _cell(r: dict) -> str:
    """flash / RAM KiB and % of the budgets; or what overflows, by how many KiB."""
    if r["status"] == "error":
        return "error"
    text = f"{_kib(r['flash_total'])} / {_kib(r['ram_total'])}"
    if r["status"] == "fits":
        return f"{text} ({r['flash_percent']:.0f} / {r['ram_percent']:.0f} %)"
    limits = r["memory" if r["status"] == "does not fit" else "budget"]
    over = [f"{memory} +{_kib(r[key] - limits[memory.lower()])}"
            for memory, key in (("flash", "flash_total"), ("RAM", "ram_total"))
            if r[key] > limits[memory.lower()]]
    return f"**{r['status']}**: {', '.join(over)}"


def markdown(rows: list[dict], models: list[str], boards: list[str], seconds: float) -> str:
    """The matrix (boards x models) and the list of errors."""
    by = {(r["model"], r["board"]): r for r in rows}
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["status"]] += 1
    lines = [
        "# Size matrix: every shared model on every board",
        "",
        "Written by `make size-report` (bench/size_report.py), f32 models as they come. A "
        "cell is flash / RAM in KiB (1024 B; RAM includes the stack) and their shares of "
        "the board's budgets. **does not fit**: what overflows the board's memory and by "
        "how many KiB, measured by a link against enlarged memories (the full tables are "
        "in size_report.json); **over budget**: fits the memory, not the budget.",
        "",
        f"{len(rows)} builds of {len(models)} models on {len(boards)} boards in "
        f"{seconds:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ".",
        "",
        "| board | " + " | ".join(models) + " |",
        "|---|" + "---|" * len(models),
    ]
    for b in boards:
        lines.append(f"| `{b}` | " + " | ".join(_cell(by[(m, b)]) if (m, b) in by else ""
                                                for m in models) + " |")
    errors = [r for r in rows if r["status"] == "error"]
    if errors:
        lines += ["", "## Errors", ""]
        lines += [f"- {r['model']} on {r['board']}: {r['note']}" for r in errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="(model, target) pairs at a time")
    ap.add_argument("--models", help="comma-separated model names (file stems)")
    ap.add_argument("--boards", help="comma-separated boards (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results",
                    help="directory for size_report.json and .md")
    args = ap.parse_args(argv)
    models = shared_models()
    if args.models:
        wanted = set(args.models.split(","))
        models = [m for m in models if m.stem in wanted]
    if not models:
        print(f"size_report: no models (shared folder {SHARED} absent or --models matched "
              "none)", file=sys.stderr)
        return 2
    boards = args.boards.split(",") if args.boards else list_boards()
    by_target: dict[str, list[str]] = defaultdict(list)
    for b in boards:
        by_target[load_board(b).target].append(b)
    groups = [(m, bs) for m in models for bs in by_target.values()]
    total = len(models) * len(boards)
    rows: list[dict] = []
    start = time.perf_counter()
    def progress(group_rows: list[dict]) -> None:
        for r in group_rows:
            rows.append(r)
            size = (f"flash {r['flash_total']:,} B, RAM {r['ram_total']:,} B"
                    if "flash_total" in r else r["note"][:100])
            print(f"[{len(rows):>3}/{total}] {r['model']} on {r['board']}: {r['status']} "
                  f"({size}) {r['seconds']:.1f} s", flush=True)

    if args.jobs <= 1:  # in this process: no pool to start, nothing to pickle
        for m, bs in groups:
            progress(build_group(m, bs))
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(build_group, m, bs) for m, bs in groups]
            for future in as_completed(futures):
                progress(future.result())
    seconds = time.perf_counter() - start
    order = {b: i for i, b in enumerate(boards)}
    names = [m.stem for m in models]
    rows.sort(key=lambda r: (names.index(r["model"]), order[r["board"]]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "size_report.json").write_text(json.dumps(
        {"models": names, "boards": boards, "seconds": round(seconds, 1), "rows": rows},
        indent=1) + "\n")
    (args.out / "size_report.md").write_text(markdown(rows, names, boards, seconds))
    print(f"size_report: {len(rows)} builds in {seconds:.0f} s; wrote "
          f"{args.out / 'size_report.md'} and size_report.json")
    return 0 if all(r["status"] != "error" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
