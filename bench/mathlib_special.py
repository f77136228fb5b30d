"""Measures the ulp errors of the math library's special functions (CHLO's erf, erfc,
erf_inv, lgamma, digamma, bessel_i1e, zeta, polygamma, the inverse trigonometric and
hyperbolic functions) and writes bench/results/mathlib_special.{json,md}, the figures
docs/mathlib.md quotes.

f32: the sweeps of tests/codegen/test_codegen_mathlib_special.py, wider (2048
significands per binade and sign, 2**18 dense points): about 1.3 million inputs a
function. f16 and bf16: every bit pattern (65,536), computed in f32 by the same code
and rounded once to the narrow format; the error is in ulps of that format. f64 operands
are rounded to f32 and the result widened back, so their error is the f32 one (in f32
ulps), not a float64 accuracy: that row is not repeated. The kernels run JIT-compiled on
the host with the x86-64 descriptor's flags (the same IEEE operations every board runs:
tests/frontend/test_chlo.py runs them under QEMU on four boards).

Usage: python bench/mathlib_special.py [--per-binade N]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "codegen"))

from conftest import JitModule  # noqa: E402
from test_codegen_mathlib import Runner, _kernel, ulp_error  # noqa: E402
from test_codegen_mathlib_special import (  # noqa: E402
    UNARY,
    errors,
    polygamma_inputs,
    sweep,
    zeta_inputs,
)

from toolchain.reference import special  # noqa: E402
from toolchain.types import bf16_bits, bf16_from_bits, dtype  # noqa: E402

OUT = ROOT / "bench" / "results" / "mathlib_special"
# (significand bits incl. the implicit one, smallest normal exponent, largest finite).
FORMATS = {"f16": (11, -14, 65504.0), "bf16": (8, -126, 3.3895314e38)}


def narrow_ulp_error(got: np.ndarray, want: np.ndarray, fmt: str) -> np.ndarray:
    """|got - want| in ulps of the narrow format at the float64 true result; past the
    format's range only inf is right, and NaN must meet NaN."""
    bits, emin, top = FORMATS[fmt]
    got64 = got.astype(np.float64)
    _, e = np.frexp(np.abs(want))
    ulp = np.ldexp(1.0, np.maximum(e - bits, emin - bits + 1))
    # The value the largest finite rounds up to counts as the format's "inf".
    edge = np.ldexp(1.0, int(np.frexp(top)[1]))
    got64 = np.where(np.isinf(got64), np.copysign(edge, got64), got64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got64 - want) / ulp
    exact = ~np.isfinite(want) | (np.abs(want) >= edge)
    same = (np.isnan(got) & np.isnan(want)) | (np.isinf(got) & (np.abs(want) >= edge) & (
        np.sign(got) == np.sign(want)))
    err = np.where(exact, np.where(same, 0.0, np.inf), err)
    return np.where(np.isnan(got) & ~np.isnan(want), np.inf, err)


def _run_bf16(j: JitModule, name: str, x: np.ndarray) -> np.ndarray:
    """A bf16 kernel on bf16 values (held in float32), through their 16-bit patterns."""
    a = np.ascontiguousarray(bf16_bits(x))
    out = np.zeros(len(x), np.uint16)
    ptrs = (ctypes.c_void_p * 2)(a.ctypes.data, out.ctypes.data)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(j.engine.get_function_address(name))(
        ctypes.cast(ptrs, ctypes.c_void_p))
    return bf16_from_bits(out)


def narrow(op: str, ref, fmt: str) -> tuple[float, float]:
    """(worst ulp error, its input) of `op` in `fmt` over every bit pattern."""
    pats = np.arange(1 << 16, dtype=np.uint16)
    k = _kernel(op, 1, len(pats), dtype(fmt))
    j = JitModule([k])
    if fmt == "f16":
        x = pats.view(np.float16)
        got = j.run(k.name, x)
    else:
        x = bf16_from_bits(pats)
        got = _run_bf16(j, k.name, x)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
        err = narrow_ulp_error(got, want, fmt)
    i = int(np.argmax(err))
    return float(err[i]), float(x[i])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-binade", type=int, default=2048)
    args = ap.parse_args()
    t0 = time.perf_counter()
    run = Runner(JitModule, [(c.op, 1) for c in UNARY] + [("zeta", 2), ("polygamma", 2)])
    rows = []
    for case in UNARY:
        x = sweep(case, np.random.default_rng(41), args.per_binade, 1 << 18)
        got = run(case.op, x)
        err, scaled = errors(case, x, got)
        keep = x if case.negative_scale is None else x[x >= 0]
        i = int(np.argmax(err))
        row = {"op": case.op, "inputs": int(len(x)), "f32_ulp": float(err[i]),
               "f32_at": float(keep[i]), "bound": case.ulp}
        if case.negative_scale is not None:
            row["f32_negative_scaled_ulp"] = float(scaled.max())
            row["negative_bound"] = case.negative_ulp
        for fmt in FORMATS:
            row[f"{fmt}_ulp"], row[f"{fmt}_at"] = narrow(case.op, case.ref, fmt)
        rows.append(row)
        print(f"{case.op}: f32 {row['f32_ulp']:.2f} ulp, f16 {row['f16_ulp']:.2f}, "
              f"bf16 {row['bf16_ulp']:.2f}", flush=True)
    for op, inputs, ref, bound in (
            ("zeta", zeta_inputs, special.zeta, 4), ("polygamma", polygamma_inputs,
                                                      special.polygamma, 4)):
        a, b = inputs(np.random.default_rng(42), 1 << 18)
        got = run(op, a, b)
        with np.errstate(all="ignore"):
            err = ulp_error(got, ref(a.astype(np.float64), b.astype(np.float64)))
        ok = ~((b < 0) & np.isfinite(b))  # negative q / x: cancelling sums (docs)
        i = int(np.argmax(np.where(ok, err, 0)))
        rows.append({"op": op, "inputs": int(len(a)), "f32_ulp": float(err[i]),
                     "f32_at": [float(a[i]), float(b[i])], "bound": bound})
        print(f"{op}: f32 {err[i]:.2f} ulp", flush=True)
    result = {"machine": platform.machine(), "per_binade": args.per_binade,
              "seconds": round(time.perf_counter() - t0, 1), "functions": rows}
    OUT.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    OUT.with_suffix(".md").write_text(markdown(result))
    print(f"wrote {OUT.with_suffix('.md')} ({result['seconds']} s)")
    return 0


def markdown(result: dict) -> str:
    lines = ["# Special functions: measured ulp errors", "",
             "Written by `python bench/mathlib_special.py` (JIT on the host, "
             f"{result['machine']}); f32 over {result['functions'][0]['inputs']:,} inputs a "
             "function (every binade), f16 and bf16 over every bit pattern. f64 operands "
             "are computed through f32 (the f32 column applies). lgamma and digamma for "
             "x < 0: in ulps of max(|lgamma|, 1) and of max(|digamma(x)|, |digamma(1 - x)|). "
             "f16 / bf16 errors a hair above 0.5 are the double rounding of the f32 result.",
             "", "| function | f32 ulp | bound | x < 0 (scaled) | f16 ulp | bf16 ulp |",
             "|---|---|---|---|---|---|"]
    for r in result["functions"]:
        neg = (f"{r['f32_negative_scaled_ulp']:.2f} (<= {r['negative_bound']})"
               if "f32_negative_scaled_ulp" in r else "")
        f16 = f"{r['f16_ulp']:.4f}" if "f16_ulp" in r else "-"
        bf16 = f"{r['bf16_ulp']:.4f}" if "bf16_ulp" in r else "-"
        lines.append(f"| {r['op']} | {r['f32_ulp']:.2f} | {r['bound']} | {neg} | {f16} | "
                     f"{bf16} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
