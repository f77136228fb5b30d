"""The boot check's cost: instructions the runtime spends outside the inference (the
module's CRC-32 at start-up) for each --boot-check, per model and board, beside one
inference and the flash each variant takes (docs/module-format.md, "The boot check").

Counts are QEMU's retired instructions (exact); flash is the ELF's, from the size report.
Writes bench/results/boot_check.{json,md}.

    python bench/boot_check.py [--boards B ...] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import minirt  # noqa: E402
from toolchain.module.format import BOOT_CHECKS  # noqa: E402

SHARED = ROOT.parent / "shared" / "models" / "mlperf_tiny"
RESULTS = ROOT / "bench" / "results"
MODELS = [ROOT / "examples" / "seed.mlir",
          *(SHARED / f"{m}.tflite" for m in ("kws_ref_model", "ad01_int8",
                                             "pretrainedResnet_quant", "vww_96_int8"))]
BOARDS = ["cortex-m4", "cortex-m0plus", "riscv32"]


def measure(model: Path, board: str) -> dict:
    """One row: per boot check, the instructions outside the inference and the flash;
    the inference's own count (the same for every variant)."""
    row: dict = {"model": model.stem, "board": board}
    with tempfile.TemporaryDirectory(prefix="minirt-boot-") as tmp:
        for check in BOOT_CHECKS:  # the default first
            try:
                build = minirt.build(model, board, out_dir=Path(tmp) / check,
                                     boot_check=check)
                profile = build.profile()
            except minirt.Error as e:
                row["error"] = str(e).splitlines()[0]
                return row
            # The runtime's instructions outside the inference: the module load, whose
            # cost is the CRC (start-up and the harness's file I/O are other rows).
            row[check] = {"boot": sum(r.outside for r in profile.rows if r.name == "runtime"),
                          "flash": build.size.flash_total}
            row["inference"] = profile.total
    return row


def _markdown(rows: list[dict]) -> str:
    checks = list(BOOT_CHECKS)
    lines = ["# Boot check (`python bench/boot_check.py`)", "",
             "Instructions the runtime runs outside one inference (the module's checks at "
             "boot) for each `--boot-check`: `layout` (the default: the structure and the "
             "CRC-32 of everything but the weights, bit by bit), `small` (the whole module's "
             "CRC-32 too, bit by bit, 40 B of code) and `fast` (the whole CRC-32 by "
             "slicing-by-4, 4 KB of tables), beside one inference; flash of the whole image.",
             "",
             "| model | board | inference | "
             + " | ".join(f"boot, {c} | share" for c in checks) + " | "
             + " | ".join(f"flash, {c}" for c in checks) + " |",
             "|---|---|" + "---:|" * (1 + 3 * len(checks))]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['board']} | {r['error']} |"
                         + "|" * (3 * len(checks)))
            continue
        inf = r["inference"]
        lines.append(f"| {r['model']} | {r['board']} | {inf:,} | "
                     + " | ".join(f"{r[c]['boot']:,} | {100 * r[c]['boot'] / inf:.1f} %"
                                  for c in checks) + " | "
                     + " | ".join(f"{r[c]['flash']:,}" for c in checks) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boards", nargs="+", default=BOARDS)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    models = [m for m in MODELS if m.exists()]
    if len(models) < len(MODELS):
        print(f"boot_check: {SHARED} is absent: the seed only", file=sys.stderr)
    jobs = [(m, b) for m in models for b in args.boards]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(measure, *zip(*jobs)))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "boot_check.json").write_text(json.dumps(rows, indent=2) + "\n")
    (args.out / "boot_check.md").write_text(_markdown(rows))
    print(_markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
