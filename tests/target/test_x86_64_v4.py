"""The x86-64-v4 target (AVX-512) beside x86-64-v3: its code uses EVEX (AVX-512)
encodings, and, on a host whose CPU has AVX-512, its programs run natively (QEMU 7.2
does not execute AVX-512) with the reference's outputs: every shared JAX model within
minirt-run --check's float bounds, and an int8 MLPerf Tiny model bit for bit against
TFLite Micro's outputs. Those runs skip, saying why, on a CPU without AVX-512 (CI
machines may lack it); the build checks always run."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models, jax_models

from toolchain.bench import native
from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli
from toolchain.cli.run import ATOL, RTOL
from toolchain.loader import UsageError, load_graph
from toolchain.module.reader import read_module
from toolchain.pipeline import decode_outputs, encode_inputs
from toolchain.reference import run_graph
from toolchain.target import host_cpu, load_board

# A dot and a bias add, as tests/target/test_x86_64_v3.py builds.
MODEL = """func.func @main(%x: tensor<4x64xf32>, %w: tensor<64x16xf32>,
                %b: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
  %1 = stablehlo.add %0, %b : tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
"""
TOOLS = ("clang", "ld.lld", "llvm-objdump")
# In 64-bit mode byte 0x62 opens an EVEX prefix (BOUND, its 32-bit meaning, is invalid):
# the encoding only AVX-512 CPUs decode. llvm-objdump prints the bytes before the
# mnemonic; an instruction's line starts "<address>: 62 ...".
EVEX_LINE = re.compile(r"^\s*[0-9a-f]+:\s+62 (?:[0-9a-f]{2} ){3}", re.M)


def _missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def test_descriptor() -> None:
    board = load_board("x86-64-v4")
    target = board.target_info
    assert target.cpu == "x86-64-v4" and target.capabilities.fma
    assert target.capabilities.vector_bits == 512 and target.capabilities.simd == "avx512"
    assert target.capabilities.float_registers == 32
    assert "+avx512f" in target.features and "+avx512vl" in target.features
    ids = {load_board(b).target_info.target_id for b in ("x86-64", "x86-64-v3")}
    assert target.target_id not in ids


def test_code_uses_evex_encodings(tmp_path: Path, capsys) -> None:
    """Build only (no AVX-512 CPU needed): v4's code has EVEX instructions, v3's none."""
    if _missing_tools():
        pytest.skip(f"missing tools: {', '.join(_missing_tools())}")
    model = tmp_path / "dot_add.mlir"
    model.write_text(MODEL)
    asm = {}
    for board in ("x86-64-v3", "x86-64-v4"):
        assert build_cli.main([str(model), "--board", board, "-o", str(tmp_path / board)]) == 0
        asm[board] = subprocess.run(["llvm-objdump", "-d", str(tmp_path / board / "dispatch.o")],
                                    capture_output=True, text=True, check=True).stdout
    capsys.readouterr()
    assert EVEX_LINE.search(asm["x86-64-v4"]), "no EVEX-encoded instruction on x86-64-v4"
    assert not EVEX_LINE.search(asm["x86-64-v3"])


@pytest.fixture(scope="module")
def v4_native() -> object:
    """The x86-64-v4 board, when this host runs its programs (else the test skips)."""
    if _missing_tools():
        pytest.skip(f"missing tools: {', '.join(_missing_tools())}")
    board = load_board("x86-64-v4")
    try:
        native.check_native(board)
    except UsageError as e:  # e.g. "... this host's CPU lacks avx512f, ..."
        pytest.skip(f"x86-64-v4 code cannot run here (QEMU 7.2 lacks AVX-512): {e}")
    return board


def _run_native(graph, board, inputs: list[np.ndarray], out: Path) -> list[np.ndarray]:
    program = native.build_native_bench(graph, board, out, log=lambda _: None)
    module = read_module((program.out_dir / "model.mrt").read_bytes())
    raw = encode_inputs(module.inputs, inputs)
    result = native.run_native_bench(program, raw, repeat=1, batch=1, warmup=0)
    return decode_outputs(module.outputs, result.outputs)


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("model", jax_models(), ids=lambda p: p.stem)
def test_jax_models_run_natively_and_match(model: Path, v4_native, tmp_path: Path) -> None:
    graph = load_graph(model)
    data = np.load(model.with_suffix(".npz"))
    inputs = [data[f"input_{i}"] for i in range(len(graph.inputs))]
    got = _run_native(graph, v4_native, inputs, tmp_path / "prog")
    want = run_graph(graph, inputs)  # the graph as compiled (prepared in place)
    for g, w in zip(got, want, strict=True):
        # minirt-run --check's bounds: FMA and vector sums add in another order.
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
def test_int8_kws_is_bit_exact_with_tflite_micro(v4_native, tmp_path: Path) -> None:
    path = MODELS_DIR / "mlperf_tiny" / "kws_ref_model.tflite"
    data = np.load(path.with_suffix(".npz"))
    graph = load_graph(path)
    program = native.build_native_bench(graph, v4_native, tmp_path / "prog",
                                        log=lambda _: None)
    module = read_module((program.out_dir / "model.mrt").read_bytes())
    cases = [k for k in sorted(data) if k.startswith("input_")]
    assert cases
    for k in cases:
        raw = encode_inputs(module.inputs, [data[k]])
        result = native.run_native_bench(program, raw, repeat=1, batch=1, warmup=0)
        got = decode_outputs(module.outputs, result.outputs)[0]
        want = data[k.replace("input", "output")]
        assert got.dtype == np.int8 and np.array_equal(got, want), k


def test_a_host_without_avx512_is_refused_in_one_line(monkeypatch, tmp_path: Path,
                                                      capsys) -> None:
    """minirt-run on a CPU without AVX-512 (an AVX2 one, faked): one line, exit 1, no
    traceback and no attempt under QEMU (whose TCG lacks AVX-512 too)."""
    if _missing_tools():
        pytest.skip(f"missing tools: {', '.join(_missing_tools())}")
    monkeypatch.setattr(host_cpu, "host_cpu_flags", lambda: set(host_cpu.CPU_FLAGS["x86-64-v3"]))
    model = tmp_path / "dot_add.mlir"
    model.write_text(MODEL)
    assert run_cli.main([str(model), "--board", "x86-64-v4", "--check", "-o",
                         str(tmp_path / "fw")]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == ("minirt-run: error: board x86-64-v4: its x86-64-v4 code runs natively "
                   "(QEMU cannot execute it) and this host's CPU lacks avx512f, avx512bw, "
                   "avx512cd, avx512dq, avx512vl")
