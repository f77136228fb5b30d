"""The native benchmark program (toolchain/bench): it computes what the reference
computes, times every sample in the process, and only boards this host runs natively
are accepted."""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

import numpy as np
import pytest

from toolchain import pipeline
from toolchain.bench import native
from toolchain.frontend.stablehlo import import_module
from toolchain.link.build import LinkError
from toolchain.loader import UsageError, random_inputs
from toolchain.mlir import parse_text
from toolchain.reference import run_graph
from toolchain.target import host_cpu, load_board

MODEL = """func.func @main(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %1 = stablehlo.tanh %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
"""
X86 = platform.machine().lower() in ("x86_64", "amd64")


def _graph():
    return import_module(parse_text(MODEL), "main")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[native.NativeBench, object]:
    if not X86 or shutil.which("clang") is None or shutil.which("ld.lld") is None:
        pytest.skip("needs an x86-64 host with clang and ld.lld")
    graph = _graph()
    out = tmp_path_factory.mktemp("bench") / "prog"
    return native.build_native_bench(graph, load_board("x86-64"), out, log=lambda m: None), \
        graph


def test_outputs_are_the_reference_and_samples_are_timed(bench) -> None:
    program, graph = bench
    inputs = random_inputs(graph, 3)
    raw = pipeline.encode_inputs(_signature(program), inputs)
    result = native.run_native_bench(program, raw, repeat=7, batch=2, warmup=1)
    assert len(result.samples_us) == 7 and result.batch == 2
    assert 0 < result.min_us <= result.median_us
    # CPU time of the process cannot exceed its wall time (one thread), by more than the
    # clocks' resolution.
    assert len(result.cpu_samples_us) == 7
    assert all(0 < c <= w + 1.0 for c, w in zip(result.cpu_samples_us, result.samples_us))
    got = np.frombuffer(result.outputs, dtype="<f4").reshape(4, 8)
    # Float bounds of minirt-run --check (cli/run.py: RTOL, ATOL) for the same reason.
    np.testing.assert_allclose(got, run_graph(graph, inputs)[0], rtol=1e-5, atol=1e-6)
    assert program.input_sizes == (4 * 16 * 4, 16 * 8 * 4)
    assert program.output_sizes == (4 * 8 * 4,)


def _signature(program: native.NativeBench):
    from toolchain.module.reader import read_module

    return read_module((program.out_dir / "model.mrt").read_bytes()).inputs


def test_auto_batch_makes_samples_last(bench) -> None:
    """Without --batch a sample runs enough inferences to last MIN_SAMPLE_NS."""
    program, graph = bench
    raw = pipeline.encode_inputs(_signature(program), random_inputs(graph, 0))
    result = native.run_native_bench(program, raw, repeat=3)
    assert result.batch > 1  # one 4x16x8 dot is far below 50 us
    assert result.median_us * result.batch * 1000 >= native.MIN_SAMPLE_NS / 4


def test_wrong_input_size_is_refused(bench) -> None:
    program, _ = bench
    with pytest.raises(UsageError, match="the model takes 768"):
        native.run_native_bench(program, b"\0" * 10, repeat=1)


@pytest.mark.parametrize("board, words", [
    ("cortex-m4", "cannot run natively on this host: minirt-bench runs Linux-process"),
    ("riscv32", "cannot run natively"),
])
def test_bare_metal_boards_are_refused(board: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        native.check_native(load_board(board))


def test_a_cpu_level_the_host_lacks_is_refused(monkeypatch) -> None:
    if not X86:
        pytest.skip("an x86-64 host")
    monkeypatch.setattr(host_cpu, "host_cpu_flags", lambda: {"sse2", "avx"})
    native.check_native(load_board("x86-64"))  # the baseline needs nothing more
    with pytest.raises(UsageError, match=r"needs CPU level x86-64-v3; this host's CPU lacks "
                                         r"avx2, fma"):
        native.check_native(load_board("x86-64-v3"))
    # An AVX2 machine without AVX-512 runs v3's code, not v4's.
    v3 = set(host_cpu.CPU_FLAGS["x86-64-v3"])
    monkeypatch.setattr(host_cpu, "host_cpu_flags", lambda: v3)
    native.check_native(load_board("x86-64-v3"))
    with pytest.raises(UsageError, match=r"needs CPU level x86-64-v4; this host's CPU lacks "
                                         r"avx512f, avx512bw"):
        native.check_native(load_board("x86-64-v4"))


def test_another_architecture_is_refused() -> None:
    if not X86:
        pytest.skip("an x86-64 host")
    with pytest.raises(UsageError, match=r"board aarch64 \(aarch64\) cannot run natively on "
                                         r"this x86_64 host"):
        native.check_native(load_board("aarch64"))


def test_a_failed_link_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    """A build that fails after its temporary directory exists removes it."""

    def fail(*args, **kwargs):
        raise LinkError("no linker today")

    monkeypatch.setattr(native, "link_firmware", fail)
    with pytest.raises(LinkError, match="no linker today"):
        native.build_native_bench(_graph(), load_board("x86-64"), tmp_path / "p",
                                  log=lambda m: None)
    assert list(tmp_path.iterdir()) == []
