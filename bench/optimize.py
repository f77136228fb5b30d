"""`--optimize size` against `auto` and `speed` on the MLPerf Tiny int8 models.

Issue 21, point 4: on DSP boards the int8 weights were stored pre-extended to 16 bits
whenever they fit the flash budget (kws_ref_model's 37.5 -> 56.4 KB), with no say for the
user. This bench builds each MLPerf Tiny int8 model under each --optimize mode
(toolchain/schedule/optimize.py) and measures what the modes trade: the weights as
stored (the module's constants in flash), the code, the whole flash image, and the
instructions of one inference under QEMU (exact, repeatable), each run checked against
TFLite Micro's outputs bit for bit (bench/mlperf.py bench_one, the .npz beside each
model). The last columns are the size mode's saving in flash and its cost in
instructions against auto.

Writes bench/results/optimize.json and optimize.md.

Usage: python bench/optimize.py [--boards B,B] [--models M,M] [--markdown-only]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from mlperf import INT8, MLPERF, bench_one  # noqa: E402

from toolchain.schedule.optimize import OPTIMIZE_MODES  # noqa: E402

# DSP boards, where the modes differ: two with 4 MB of flash, where auto pre-extends
# every weight as speed does, and feather-m4-express's 512 KB, where it cannot.
BOARDS = ["cortex-m4", "cortex-m7", "feather-m4-express"]
MODES = ["size", "auto", "speed"]
KW = 38_000  # the goal for kws_ref_model's weights under size, in bytes


def measure(models: list[str], boards: list[str], work: Path) -> list[dict]:
    """A row per (model, board, mode): bench_one's figures with the mode's choice."""
    rows = []
    for name in models:
        for board in boards:
            for mode in MODES:
                row = bench_one(name, board, work, mode)
                row["mode"] = mode
                rows.append(row)
                print(f"{name:24} {board:10} {mode:6} {row['check']:12} weights "
                      f"{row.get('weights_bytes', '-'):>8} insns "
                      f"{row.get('instructions') or '-':>12}", file=sys.stderr, flush=True)
    return rows


def _versus_auto(rows: list[dict]) -> None:
    """Adds to each row its flash and instructions against the same build under auto."""
    auto = {(r["model"], r["board"]): r for r in rows if r["mode"] == "auto"}
    for r in rows:
        base = auto.get((r["model"], r["board"]))
        if base is None or "instructions" not in r or "instructions" not in base:
            continue
        r["flash_bytes"] = r["code_bytes"] + r["weights_bytes"]
        r["flash_vs_auto"] = r["flash_bytes"] - (base["code_bytes"] + base["weights_bytes"])
        r["instructions_vs_auto_percent"] = round(
            100.0 * (r["instructions"] / base["instructions"] - 1), 1)
        if r.get("est_cycles") and base.get("est_cycles"):
            r["est_cycles_vs_auto_percent"] = round(
                100.0 * (r["est_cycles"] / base["est_cycles"] - 1), 1)


def _table(rows: list[dict]) -> list[str]:
    lines = ["| model | board | mode | weights (stored) | int8 weights | pre-extended | "
             "code | flash | flash vs auto | instructions | vs auto | est. cycles | vs auto | "
             "check |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "instructions" not in r:
            lines.append(f"| {r['model']} | {r['board']} | {r['mode']} | | | | | | | | | | | "
                         f"{r['check']} ({r.get('note', '')}) |")
            continue
        o = r["optimize"]
        lines.append(
            f"| {r['model']} | {r['board']} | {r['mode']} | {r['weights_bytes']:,} | "
            f"{o['int8_bytes']:,} | {o['paired']} of {o['pairable']} | {r['code_bytes']:,} | "
            f"{r['flash_bytes']:,} | {r['flash_vs_auto']:+,} | {r['instructions']:,} | "
            f"{r['instructions_vs_auto_percent']:+.1f} % | {r.get('est_cycles') or 0:,} | "
            f"{r.get('est_cycles_vs_auto_percent', 0):+.1f} % | {r['check']} |")
    return lines


def _goal(rows: list[dict]) -> list[str]:
    """The done-when line: kws_ref_model's weights under size on cortex-m4, its cost."""
    size = next((r for r in rows if r["model"] == "kws_ref_model" and r["mode"] == "size"
                 and r["board"] == "cortex-m4" and "instructions" in r), None)
    auto = next((r for r in rows if r["model"] == "kws_ref_model" and r["mode"] == "auto"
                 and r["board"] == "cortex-m4" and "instructions" in r), None)
    if size is None or auto is None:
        return []
    held = "holds" if size["weights_bytes"] <= KW else "MISSES"
    return [f"kws_ref_model on cortex-m4 under `--optimize size`: weights "
            f"{size['weights_bytes']:,} B ({held} the goal of at most {KW:,} B; "
            f"{auto['weights_bytes']:,} B pre-extended under auto), flash "
            f"{size['flash_bytes']:,} B ({size['flash_vs_auto']:+,} B), at "
            f"{size['instructions']:,} instructions against {auto['instructions']:,} "
            f"({size['instructions_vs_auto_percent']:+.1f} %; estimated cycles "
            f"{size['est_cycles_vs_auto_percent']:+.1f} %).", ""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--models", default=",".join(INT8))
    ap.add_argument("--markdown-only", action="store_true",
                    help="rewrite optimize.md from the rows in optimize.json, measuring "
                         "nothing")
    args = ap.parse_args()
    out = ROOT / "bench" / "results"
    if args.markdown_only:
        rows = json.loads((out / "optimize.json").read_text())
    elif not MLPERF.is_dir():
        print(f"bench/optimize.py: {MLPERF} is absent", file=sys.stderr)
        return 2
    else:
        with tempfile.TemporaryDirectory(prefix="minirt-optimize-") as tmp:
            rows = measure(args.models.split(","), args.boards.split(","), Path(tmp))
    _versus_auto(rows)
    out.mkdir(parents=True, exist_ok=True)
    (out / "optimize.json").write_text(json.dumps(rows, indent=2) + "\n")
    modes = "; ".join(f"`{name}`: {mode.means}" for name, mode in OPTIMIZE_MODES.items())
    text = ["# `--optimize` on the MLPerf Tiny int8 models (`python bench/optimize.py`)", "",
            f"The modes (toolchain/schedule/optimize.py): {modes}. Weights (stored): the "
            "module's constants in flash (weights, biases, scales); int8 weights: the "
            "constants at their int8 size; pre-extended: the weights stored 16-bit of "
            "those the packed steps could read so. Code: everything else in flash. "
            "Instructions: one inference under QEMU; est. cycles: estimated from them with "
            "the core's timings (docs/cycles.md). Check: every input of the model's "
            ".npz against TFLite Micro's outputs, exactly.", "", *_goal(rows),
            *_table(rows), ""]
    (out / "optimize.md").write_text("\n".join(text))
    return 0 if all(r["check"] in ("ok", "does not fit") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
