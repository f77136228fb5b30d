"""Native host benchmarks (minirt-bench): a model linked into a hosted Linux program
that times its inference in one process. See native.py."""

from toolchain.bench.native import (
    BenchResult,
    NativeBench,
    build_native_bench,
    check_native,
    run_native_bench,
)

__all__ = ["BenchResult", "NativeBench", "build_native_bench", "check_native",
           "run_native_bench"]
