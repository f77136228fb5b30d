"""Structural fuzz of the packed module under QEMU, in full (`make fuzz-module`).

For three models (bench/fuzz_models: one with constants and int8 quantization records,
one with several dispatches and arena reuse, one with several inputs and outputs) on
x86-64 and cortex-m4, every 32-bit field of the module is set to each of 0, 1, 16, the
arena size, the module size, 0x7fffffff, 0xffffffff and 1 << 30 with the CRC recomputed,
and the firmware runs under QEMU (toolchain/emu/module_fuzz.py). Every run must be
rejected by the loader with the predicted status or produce exactly the unmodified
outputs. Writes bench/results/module_fuzz.json and module_fuzz.md; exits 1 on any
other outcome.

    python bench/module_fuzz.py [--boards x86-64 cortex-m4] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from toolchain.emu.module_fuzz import FuzzTarget, Outcome, fuzz_cases
from toolchain.loader import load_graph, random_inputs
from toolchain.module.format import BOOT_CHECKS, DEFAULT_BOOT_CHECK, Status
from toolchain.passes import QuantizeOptions
from toolchain.pipeline import build_model

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# model -> (file, --quantize mode)
MODELS = {
    "dense_int8": ("dense_int8.mlir", "int8-weights"),
    "chain": ("chain.mlir", "none"),
    "multi_io": ("multi_io.mlir", "none"),
}
BOARDS = ("x86-64", "cortex-m4")


def fuzz_target(model: str, board: str, work: Path,
                boot_check: str = DEFAULT_BOOT_CHECK) -> FuzzTarget:
    """Builds one model for one board and runs it clean on seeded inputs."""
    path, mode = MODELS[model]
    path = HERE / "fuzz_models" / path
    build = build_model(path, board, work / f"{model}-{board}-{boot_check}",
                        log=lambda _: None, quantize=QuantizeOptions(mode),
                        boot_check=boot_check)
    inputs = random_inputs(load_graph(path), seed=0)
    return FuzzTarget(build.board, build.elf, [x.tobytes() for x in inputs], boot_check)


def outcome_label(o: Outcome) -> str:
    return "loaded, outputs exact" if o.expected == 0 else Status(o.expected).name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boards", nargs="+", default=list(BOARDS))
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    # The default checks the layout only, the others the whole CRC too: the loader's
    # other checks must hold in both (the CRC field itself is read by the second only).
    p.add_argument("--boot-checks", nargs="+", default=["layout", "small"],
                   choices=sorted(BOOT_CHECKS))
    p.add_argument("--jobs", type=int, default=2, help="QEMU runs at once (default: 2)")
    args = p.parse_args(argv)
    start = time.perf_counter()
    rows, failures, total = [], [], 0
    with tempfile.TemporaryDirectory(prefix="minirt-fuzz-") as tmp:
        for board, check, model in ((b, c, m) for b in args.boards
                                    for c in args.boot_checks for m in args.models):
            target = fuzz_target(model, board, Path(tmp), check)
            cases = fuzz_cases(target.module)
            print(f"module_fuzz: {model} on {board}, --boot-check {check}: {len(cases)} runs "
                  f"({len(cases) // 8} fields x 8 values)", file=sys.stderr, flush=True)
            with ThreadPoolExecutor(args.jobs) as pool:
                outcomes = []
                for i, o in enumerate(pool.map(target.run, cases), 1):
                    outcomes.append(o)
                    if i % 200 == 0:
                        print(f"  {i}/{len(cases)}", file=sys.stderr, flush=True)
            bad = [o for o in outcomes if not o.passed]
            failures += [(f"{model} ({check})", board, o) for o in bad]
            total += len(outcomes)
            rows.append({"model": model, "board": board, "boot_check": check,
                         "module_bytes": len(target.module),
                         "fields": len(cases) // 8, "runs": len(outcomes),
                         "outcomes": dict(Counter(outcome_label(o) for o in outcomes)),
                         "failures": len(bad)})
    seconds = round(time.perf_counter() - start, 1)
    result = {"runs": total, "failures": len(failures), "seconds": seconds, "rows": rows,
              "failed_cases": [{"model": m, "board": b, "offset": o.case.offset,
                                "value": o.case.value, "expected": o.expected,
                                "exit": o.exit_code, "detail": o.detail}
                               for m, b, o in failures[:100]]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "module_fuzz.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Structural module fuzz under QEMU", "",
             f"{total} runs, {len(failures)} failures, {seconds} s "
             "(`python bench/module_fuzz.py`).", "",
             "| model | board | boot check | module bytes | fields | runs | outcomes | failures |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        outs = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
        lines.append(f"| {r['model']} | {r['board']} | {r['boot_check']} | "
                     f"{r['module_bytes']} | {r['fields']} | "
                     f"{r['runs']} | {outs} | {r['failures']} |")
    (RESULTS / "module_fuzz.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    for m, b, o in failures[:20]:
        print(f"FAIL {m} {b}: field {o.case.offset} = {o.case.value:#x}: expected "
              f"{o.expected}, {o.detail}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
