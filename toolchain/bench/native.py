"""A model as a native benchmark program, and its timings.

``build_native_bench`` compiles a graph for a Linux-process board and links its dispatch
object with runtime_c's core, the board's Linux platform part (``_start``, no libc) and
bench_main.c (the timing main) instead of the verification harness. ``run_native_bench``
runs that program on this host: ``warmup`` untimed inferences, then ``repeat`` samples
of ``batch`` inferences, each sample timed with clock_gettime in the process (wall time,
and the process's CPU time). It reports the median and minimum per inference, in
microseconds, as iree-benchmark-module does (its ``real_time`` median and the fastest
run), and the median CPU time (its ``cpu_time``).

Only boards whose code this host's CPU executes are accepted (``check_native``): a
Linux-process board of this machine's architecture whose target's CPU level this CPU
has (x86-64-v3 needs AVX2, FMA, F16C, BMI1/2, LZCNT and MOVBE).
"""

from __future__ import annotations

import platform
import shutil
import statistics
import struct
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolchain.graph.ir import Graph
from toolchain.link.build import link_firmware
from toolchain.link.out_dir import check_out_dir, staged_build
from toolchain.loader import UsageError
from toolchain.module.reader import read_module
from toolchain.passes import QuantizeOptions
from toolchain.schedule.optimize import DEFAULT_OPTIMIZE
from toolchain.target import Board
from toolchain.target.host_cpu import missing_cpu_flags

__all__ = ["BenchResult", "NativeBench", "build_native_bench", "check_native",
           "run_native_bench"]

MAIN_SOURCE = Path(__file__).resolve().parent / "bench_main.c"
IN_FILE, OUT_FILE = "minirt_bench_in.bin", "minirt_bench_out.bin"

# The machine (platform.machine()) each LLVM triple's architecture runs natively on.
_NATIVE_MACHINES = {"x86_64": ("x86_64", "amd64"), "aarch64": ("aarch64", "arm64")}
# A sample should last at least this long, so the two clock_gettime system calls around
# it (50-200 ns each without a vDSO) stay below 1% of it.
MIN_SAMPLE_NS = 50_000
# The bench program's exit statuses (bench_main.c).
_EXITS = {16: "cannot open its input file", 17: "its input file is short",
          19: "cannot create its result file", 20: "writing its result file failed"}


@dataclass(frozen=True)
class NativeBench:
    """A linked benchmark program: ``elf`` in ``out_dir``, and the build's figures."""

    out_dir: Path
    elf: Path
    input_sizes: tuple[int, ...]
    output_sizes: tuple[int, ...]
    compile_seconds: float  # model file to linked program, this process's wall time
    image_bytes: int  # flash image: code + constants + initialized data


@dataclass(frozen=True)
class BenchResult:
    """Timings per inference, in microseconds, over ``repeat`` samples of ``batch``."""

    samples_us: tuple[float, ...]  # wall time (CLOCK_MONOTONIC)
    batch: int
    outputs: bytes  # the raw outputs of the last inference
    cpu_samples_us: tuple[float, ...] = ()  # this process's CPU time, per sample

    @property
    def cpu_median_us(self) -> float:
        return statistics.median(self.cpu_samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def min_us(self) -> float:
        return min(self.samples_us)


def check_native(board: Board) -> None:
    """Raises UsageError unless ``board``'s programs run natively on this host."""
    target = board.target_info
    arch = target.llvm_triple.split("-")[0]
    if target.os != "linux" or board.simulation.mode != "user":
        raise UsageError(f"board {board.identifier} cannot run natively on this host: "
                         "minirt-bench runs Linux-process boards (x86-64, x86-64-v3, x86-64-v4 "
                         "on an x86-64 host; aarch64 on an aarch64 host)")
    machine = platform.machine().lower()
    if machine not in _NATIVE_MACHINES.get(arch, ()):
        raise UsageError(f"board {board.identifier} ({arch}) cannot run natively on this "
                         f"{machine} host")
    missing = missing_cpu_flags(target.cpu)
    if missing:
        raise UsageError(f"board {board.identifier} needs CPU level {target.cpu}; this "
                         f"host's CPU lacks {', '.join(missing)}")


def build_native_bench(graph: Graph, board: Board, out_dir: Path,
                       quantize: QuantizeOptions | None = None, log=print,
                       optimize: str = DEFAULT_OPTIMIZE) -> NativeBench:
    """Compiles ``graph`` (rewritten in place) for ``board`` under --optimize
    ``optimize`` and links the benchmark program into ``out_dir`` (replaced only when
    every step succeeded)."""
    from toolchain import pipeline  # the pipeline imports much; only a build needs it

    out_dir = Path(out_dir)
    check_out_dir(out_dir)
    start = time.perf_counter()
    image = pipeline.compile_image(graph, board, quantize, log, optimize)
    with staged_build(out_dir, log=log) as tmp:
        (tmp / "model.mrt").write_bytes(image.module)
        (tmp / "dispatch.o").write_bytes(image.obj)
        link = link_firmware(board, [tmp / "dispatch.o"], tmp,
                             runtime_parts=("core", "platform"),
                             extra_sources=[MAIN_SOURCE], name="bench")
        seconds = time.perf_counter() - start
    module = read_module(image.module)
    return NativeBench(out_dir, out_dir / link.elf.name,
                       tuple(s.byte_size for s in module.inputs),
                       tuple(s.byte_size for s in module.outputs), seconds, link.flash_used)


def _run(bench: NativeBench, inputs: bytes, repeat: int, batch: int, warmup: int,
         timeout: float) -> BenchResult:
    work = Path(tempfile.mkdtemp(prefix="minirt-bench-"))
    try:
        (work / IN_FILE).write_bytes(struct.pack("<4I", repeat, batch, warmup, 0) + inputs)
        try:
            # The program runs in its scratch directory, so a relative path (the default
            # build/..., or -o DIR as typed) must not be resolved from there.
            proc = subprocess.run([str(bench.elf.resolve())], cwd=work, capture_output=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise UsageError(f"{bench.elf}: no result after {timeout:g} s (lower "
                             "--repeat)") from None
        if proc.returncode != 0:
            code = proc.returncode
            why = _EXITS.get(code) or (f"mrt_module_run failed with status {code - 32}"
                                       if code > 32 else f"status {code}")
            raise RuntimeError(f"{bench.elf}: the benchmark program failed: {why}")
        raw = (work / OUT_FILE).read_bytes()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ns = np.frombuffer(raw[:16 * repeat], dtype="<u8").reshape(repeat, 2)
    wall, cpu = (tuple(float(n) / batch / 1000.0 for n in ns[:, k]) for k in (0, 1))
    return BenchResult(wall, batch, raw[16 * repeat:], cpu)


def run_native_bench(bench: NativeBench, inputs: bytes, repeat: int = 100,
                     batch: int | None = None, warmup: int = 3,
                     timeout: float = 600.0, min_sample_ns: int = MIN_SAMPLE_NS) -> BenchResult:
    """Runs the program: ``repeat`` timed samples of ``batch`` inferences (None: enough
    for each sample to last ``min_sample_ns``, from a short calibration run)."""
    if len(inputs) != sum(bench.input_sizes):
        raise UsageError(f"the inputs hold {len(inputs)} bytes, the model takes "
                         f"{sum(bench.input_sizes)}")
    if batch is None:
        # A sample of one inference also times the clock calls and a cold cache: grow the
        # batch from what each probe measures until a sample lasts long enough.
        batch = 1
        for _ in range(4):
            probe = _run(bench, inputs, 3, batch, 1, timeout)
            sample_ns = probe.min_us * batch * 1000.0
            if sample_ns >= min_sample_ns:
                break
            batch = max(batch + 1, int(np.ceil(batch * 1.2 * min_sample_ns / max(sample_ns, 1.0))))
    return _run(bench, inputs, repeat, batch, warmup, timeout)


def summary(result: BenchResult, extra: Sequence[str] = ()) -> str:
    """The figures as iree-benchmark-module's users read them."""
    return "\n".join([f"median: {result.median_us:.3f} us per inference",
                      f"min:    {result.min_us:.3f} us per inference",
                      f"CPU time: {result.cpu_median_us:.3f} us per inference (median)",
                      *extra])
