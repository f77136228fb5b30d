"""Float convolutions and dense layers as explicit vector tiles (codegen/float_lanes.py)
against the reference, over a sweep of shapes: odd channel counts (a vector tile and a
scalar tail), strides 1 and 2, 1x1 / 3x3 / 5x5 windows with padding (checked loads in
the tile on x86-64-v4), partial sums (a 640-long dense row), bias, ReLU and a residual
add in the epilogue. On x86-64-v4 natively (skipped, saying why, on a CPU without
AVX-512: QEMU 7.2 does not execute it), and under QEMU on x86-64 (4-lane SSE tiles),
x86-64-v3 (8-lane AVX2) and aarch64 (4-lane NEON), each like minirt-run --check.

On x86-64-v4 the whole-vector layers have no scalar FMA left: the tile is built as
vectors, not left to LLVM's SLP vectorizer (which built autoencoder's partial sums
back up lane by lane)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from toolchain.bench import native
from toolchain.cli.run import ATOL, RTOL
from toolchain.emu.run import run_image
from toolchain.loader import UsageError, load_graph, random_inputs
from toolchain.module.reader import read_module
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs, module_outputs
from toolchain.reference import run_graph
from toolchain.target import load_board

RNG = np.random.default_rng(21)


def _dense(a: np.ndarray) -> str:
    """An f32 array as an MLIR dense literal."""
    def nest(x: np.ndarray) -> str:
        if x.ndim == 0:
            return repr(float(x))
        return "[" + ", ".join(nest(y) for y in x) + "]"
    return f"dense<{nest(a)}>"


def _t(shape: tuple[int, ...]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


# (name, input H, W, Cin, Cout, kernel, stride, pad, epilogue): epilogue "bias_relu",
# "bias", "residual_relu" (+ another input of the output's shape, then ReLU) or "".
CONVS = [
    ("c3x3_8x8_16_32", 8, 8, 16, 32, 3, 1, 1, "bias_relu"),
    ("c3x3_s2_9x7_5_48", 9, 7, 5, 48, 3, 2, 1, "bias_relu"),
    ("c3x3_6x10_3_17", 6, 10, 3, 17, 3, 1, 1, "bias"),
    ("c1x1_5x5_13_64", 5, 5, 13, 64, 1, 1, 0, "residual_relu"),
    ("c5x5_12x12_7_16", 12, 12, 7, 16, 5, 1, 2, ""),
]
# (name, rows, K, N, epilogue)
DENSES = [
    ("d_1x640_128", 1, 640, 128, "bias_relu"),
    ("d_3x100_40", 3, 100, 40, "bias"),
    ("d_1x129_32", 1, 129, 32, ""),
]
# The layers whose outputs are whole vectors on every board (no scalar tail).
WHOLE = ("c3x3_8x8_16_32", "c1x1_5x5_13_64", "d_1x640_128")


def _epilogue(lines: list[str], v: str, shape: tuple[int, ...], kind: str, tag: str,
              args: list[str]) -> str:
    """Appends the epilogue's ops to `lines`; returns the result's SSA name."""
    t = _t(shape)
    n = shape[-1]
    if kind.startswith("bias"):
        lines.append(f"  %{tag}_b = stablehlo.constant "
                     f"{_dense(RNG.standard_normal(n).astype(np.float32))} : {_t((n,))}")
        lines.append(f"  %{tag}_bb = stablehlo.broadcast_in_dim %{tag}_b, dims = "
                     f"[{len(shape) - 1}] : ({_t((n,))}) -> {t}")
        lines.append(f"  %{tag}_y = stablehlo.add %{v}, %{tag}_bb : {t}")
        v = f"{tag}_y"
    if kind.startswith("residual"):
        args.append(f"%{tag}_r: {t}")
        lines.append(f"  %{tag}_y = stablehlo.add %{v}, %{tag}_r : {t}")
        v = f"{tag}_y"
    if kind.endswith("relu"):
        lines.append(f"  %{tag}_z = stablehlo.constant dense<0.0> : {t}")
        lines.append(f"  %{tag}_relu = stablehlo.maximum %{v}, %{tag}_z : {t}")
        v = f"{tag}_relu"
    return v


def sweep_model(names: tuple[str, ...] | None = None) -> str:
    """One StableHLO function with a result per layer of the sweep (those in `names`)."""
    args: list[str] = []
    lines: list[str] = []
    results: list[tuple[str, str]] = []
    for name, h, w, cin, cout, k, s, p, epi in CONVS:
        if names is not None and name not in names:
            continue
        x = (1, h, w, cin)
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        out = (1, oh, ow, cout)
        args.append(f"%{name}_x: {_t(x)}")
        kernel = (RNG.standard_normal((k, k, cin, cout)) / np.sqrt(k * k * cin)).astype(
            np.float32)
        lines.append(f"  %{name}_k = stablehlo.constant {_dense(kernel)} : {_t(kernel.shape)}")
        lines.append(
            f"  %{name}_c = stablehlo.convolution(%{name}_x, %{name}_k) dim_numbers = "
            f"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{stride = [{s}, {s}], "
            f"pad = [[{p}, {p}], [{p}, {p}]]}} {{batch_group_count = 1 : i64, "
            f"feature_group_count = 1 : i64}} : ({_t(x)}, {_t(kernel.shape)}) -> {_t(out)}")
        results.append((_epilogue(lines, f"{name}_c", out, epi, name, args), _t(out)))
    for name, rows, kk, n, epi in DENSES:
        if names is not None and name not in names:
            continue
        args.append(f"%{name}_x: {_t((rows, kk))}")
        weights = (RNG.standard_normal((kk, n)) / np.sqrt(kk)).astype(np.float32)
        lines.append(f"  %{name}_w = stablehlo.constant {_dense(weights)} : {_t((kk, n))}")
        lines.append(f"  %{name}_d = stablehlo.dot_general %{name}_x, %{name}_w, "
                     f"contracting_dims = [1] x [0] : ({_t((rows, kk))}, {_t((kk, n))}) "
                     f"-> {_t((rows, n))}")
        results.append((_epilogue(lines, f"{name}_d", (rows, n), epi, name, args),
                        _t((rows, n))))
    ret = ", ".join(f"%{v}" for v, _ in results)
    types = ", ".join(t for _, t in results)
    return (f"func.func @main({', '.join(args)}) -> ({types}) {{\n" + "\n".join(lines)
            + f"\n  return {ret} : {types}\n}}\n")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("float_lanes") / "sweep.mlir"
    path.write_text(sweep_model())
    return path


def _inputs(graph) -> list[np.ndarray]:
    return random_inputs(graph, 5)


def _check(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(CONVS) + len(DENSES)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        # minirt-run --check's bounds: FMA and partial sums add in another order.
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"output {i}")


def _v4_board():
    board = load_board("x86-64-v4")
    try:
        native.check_native(board)
    except UsageError as e:  # "... this host's CPU lacks avx512f, ..."
        pytest.skip(f"x86-64-v4 code cannot run here (QEMU 7.2 lacks AVX-512): {e}")
    return board


def test_sweep_natively_on_x86_64_v4(sweep: Path, tmp_path: Path) -> None:
    board = _v4_board()
    graph = load_graph(sweep)
    inputs = _inputs(graph)
    program = native.build_native_bench(graph, board, tmp_path / "prog", log=lambda _: None)
    module = read_module((program.out_dir / "model.mrt").read_bytes())
    result = native.run_native_bench(program, encode_inputs(module.inputs, inputs),
                                     repeat=1, batch=1, warmup=0)
    _check(decode_outputs(module.outputs, result.outputs), run_graph(graph, inputs))


@pytest.mark.parametrize("board", ["x86-64", "x86-64-v3", "aarch64"])
def test_sweep_under_qemu(board: str, sweep: Path, tmp_path: Path) -> None:
    b = load_board(board)
    graph = load_graph(sweep)
    inputs = _inputs(graph)
    build = compile_graph(graph, b, tmp_path / "fw", log=lambda _: None)
    run = run_image(b, build.elf, inputs)
    assert run.exit_code == 0, run.stderr
    _check(decode_outputs(module_outputs(build.module), run.outputs),
           run_graph(build.graph, inputs))


def test_whole_vector_layers_have_no_scalar_fma_on_x86_64_v4(tmp_path: Path) -> None:
    """A build check (no AVX-512 CPU needed): the conv, 1x1 conv and 640-long dense
    layers of whole 16-lane vectors are zmm FMAs only."""
    if shutil.which("llvm-objdump") is None:
        pytest.skip("missing tool: llvm-objdump")
    model = tmp_path / "whole.mlir"
    model.write_text(sweep_model(WHOLE))
    build = compile_graph(load_graph(model), load_board("x86-64-v4"), tmp_path / "fw",
                          log=lambda _: None)
    asm = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn",
                          str(build.out_dir / "dispatch.o")],
                         capture_output=True, text=True, check=True).stdout
    packed = re.findall(r"vfmadd\d+ps\s.*zmm", asm)
    scalar = re.findall(r"vfmadd\d+ss\s", asm)
    assert len(packed) >= 3 and not scalar, (len(packed), len(scalar))
