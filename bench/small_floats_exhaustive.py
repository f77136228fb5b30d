"""The firmware's f32 -> small float conversion (codegen/mathlib_small_float.py) over all
2**32 f32 bit patterns, against ml_dtypes; writes bench/results/small_floats_exhaustive.
{json,md}.

tests/codegen/test_codegen_small_floats.py checks every code and a sweep of f32 values
in seconds; this checks every f32 input, which takes minutes a format on one core. The
kernel runs JIT-compiled on the host with the x86-64 descriptor's flags (the same
integer operations every board runs: tests/e2e/test_small_floats.py runs the sweep under
QEMU on four boards).

Usage: python bench/small_floats_exhaustive.py [FORMAT ...]   (default: all eleven; the
results of a run of some formats are merged into the recorded ones)
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "codegen"))

from conftest import JitModule  # noqa: E402

from toolchain.kernel.form import Apply, Index, Kernel, Load  # noqa: E402
from toolchain.small_floats import FORMATS, to_bits  # noqa: E402
from toolchain.types import TensorType, dtype  # noqa: E402

CHUNK = 1 << 24  # f32 patterns per kernel call
RESULTS = ROOT / "bench" / "results"


def check(name: str) -> dict:
    """Every f32 pattern narrowed to `name` by the JIT-compiled kernel and by ml_dtypes:
    the count that differ and the first few."""
    fmt, f32 = FORMATS[name], dtype("f32")
    k = Kernel("narrow", (CHUNK,), 1, (TensorType((CHUNK,), f32),),
               TensorType((CHUNK,), dtype(name)),
               Apply("convert", (Load(0, (Index(0),)),), dtype(name)))
    j = JitModule([k])
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(j.engine.get_function_address("narrow"))
    out = np.zeros(CHUNK, np.uint8)
    bad, first, t0 = 0, [], time.time()
    for start in range(0, 1 << 32, CHUNK):
        u = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32)
        ptrs = (ctypes.c_void_p * 2)(u.ctypes.data, out.ctypes.data)
        fn(ctypes.cast(ptrs, ctypes.c_void_p))
        differ = out != to_bits(u.view(np.float32), fmt)
        bad += int(differ.sum())
        first += [f"{int(v):#010x}" for v in u[differ][:3 - len(first)]]
    return {"format": name, "inputs": 1 << 32, "differ": bad, "first": first,
            "seconds": round(time.time() - t0)}


def write(rows: list[dict]) -> None:
    """The results of this run merged into the recorded ones (a run of some formats keeps
    the others' rows), in FORMATS order."""
    path = RESULTS / "small_floats_exhaustive.json"
    by_name = {r["format"]: r for r in (json.loads(path.read_text()) if path.exists() else [])}
    by_name.update({r["format"]: r for r in rows})
    rows = [by_name[name] for name in FORMATS if name in by_name]
    path.write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["# Small float conversions over every f32 input "
             "(`python bench/small_floats_exhaustive.py`)", "",
             "The firmware's f32 -> format conversion, JIT-compiled for the host, against "
             "ml_dtypes on all 2**32 f32 bit patterns.", "",
             "| format | inputs | differ | seconds |", "|---|---:|---:|---:|"]
    lines += [f"| {r['format']} | {r['inputs']:,} | {r['differ']} | {r['seconds']} |"
              for r in rows]
    (RESULTS / "small_floats_exhaustive.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("formats", nargs="*", default=list(FORMATS), choices=list(FORMATS))
    args = ap.parse_args(argv)
    rows = []
    for name in args.formats:
        rows.append(check(name))
        print(rows[-1], flush=True)
        write(rows)
    return 1 if any(r["differ"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
