"""`--quantize int4-weights`: symmetric per-channel int4 weights stored two to a byte
(kernel/sub_byte.py, schedule/sub_byte.py) and unpacked where the kernels load them.

Packing round trips on the host; the quantizer's range and error; the module's packed
pool entries; and firmware `--check` on cortex-m4 and riscv32 against the reference of
the same int4 graph, for a model made here (odd channel counts, so the kernels' run-time
nibble selection runs beside the build-time one) and for a shared JAX model.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain.cli import run as run_cli
from toolchain.frontend import import_module
from toolchain.kernel.form import Kernel
from toolchain.kernel.interpret import run_kernel
from toolchain.kernel.sub_byte import pack_bits, packed_size, unpack_bits
from toolchain.loader import load_graph
from toolchain.mlir import parse_text
from toolchain.module.from_program import module_from_program
from toolchain.module.reader import read_module
from toolchain.passes import QuantizeOptions, fold_constants, quantize_weights
from toolchain.passes.quantize import int4_symmetric
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.reference import run_graph
from toolchain.report.accuracy import compare_outputs
from toolchain.target import load_board
from toolchain.types import dtype

SUB_BYTE = ["i4", "ui4", "i2", "ui2"]


def _range(name: str) -> tuple[int, int]:
    dt = dtype(name)
    return (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.kind == "i" else \
        (0, (1 << dt.bits) - 1)


# ------------------------------------------------------------------ packing on the host


@pytest.mark.parametrize("name", SUB_BYTE)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (2, 3, 4, 5)])
def test_pack_round_trip(name: str, shape: tuple[int, ...]) -> None:
    dt = dtype(name)
    lo, hi = _range(name)
    values = np.random.default_rng(len(shape)).integers(lo, hi + 1, shape).astype(
        dt.np_dtype)
    packed = pack_bits(values, dt)
    assert packed.dtype == np.uint8
    assert packed.size == packed_size(values.size, dt) == -(-values.size // (8 // dt.bits))
    back = unpack_bits(packed, dt, shape)
    assert back.dtype == dt.np_dtype and np.array_equal(back, values)


def test_pack_layout_is_low_bits_first_row_major() -> None:
    # ONNX's layout: element 0 in the low nibble; the last byte's unused bits are 0.
    assert pack_bits(np.array([1, -2, 7], np.int8), dtype("i4")).tolist() == [0xE1, 0x07]
    assert pack_bits(np.array([[1, 2], [3, 0]], np.uint8), dtype("ui2")).tolist() == [0x39]
    assert pack_bits(np.array([-8, 7, -1], np.int8), dtype("i4")).tolist() == [0x78, 0x0F]


def test_pack_refuses_values_outside_the_type_and_unpack_a_wrong_size() -> None:
    with pytest.raises(ValueError, match="outside i4's range"):
        pack_bits(np.array([8], np.int8), dtype("i4"))
    with pytest.raises(ValueError, match="outside ui2's range"):
        pack_bits(np.array([4], np.uint8), dtype("ui2"))
    with pytest.raises(ValueError, match="3 elements is 2 uint8 bytes"):
        unpack_bits(np.zeros(3, np.uint8), dtype("i4"), (3,))


# ------------------------------------------------------------------ the quantizer


def _sse(w: np.ndarray, q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return ((q.astype(np.float64) * scale - w) ** 2).sum(axis=0)


def test_int4_scales_are_per_channel_and_least_error_on_the_clip_grid() -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((400, 9)).astype(np.float32) * \
        np.array([1, 10, 100, 1, 1, 1, 0.01, 3, 1], np.float32)
    q, scale = int4_symmetric(w, axis=1)
    assert q.dtype == np.int8 and scale.dtype == np.float32 and scale.shape == (9,)
    assert q.min() >= -7 and q.max() <= 7
    peak = np.abs(w).max(axis=0)
    assert (scale <= peak / 7 * 1.000001).all() and (scale >= peak / 14 * 0.999999).all()
    assert np.array_equal(q, np.clip(np.rint(w / scale), -7, 7))
    # Never worse than the plain max|w| / 7 (a = 1 is on the grid); on Gaussian weights
    # every channel clips its tails (a of 0.64..0.90 here) for less error.
    plain = (peak / 7).astype(np.float32)
    plain_q = np.clip(np.rint(w / plain), -7, 7)
    assert (_sse(w, q, scale) < _sse(w, plain_q, plain)).all()
    assert (scale < 0.95 * plain).all()


def test_int4_per_tensor_and_all_zero() -> None:
    q, scale = int4_symmetric(np.zeros((3, 3), np.float32), axis=None)
    assert scale.shape == () and (q == 0).all() and scale > 0
    w = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    q, scale = int4_symmetric(w, axis=None)
    assert scale.shape == () and np.abs(q).max() == 7
    assert np.abs(q * scale - w).max() <= scale  # within a step, clipping included


# A 3x3 convolution of 3 to 5 channels (135 weights: odd), SAME, a per-tensor constant
# added (not a weight: axis None), tanh, then a dense layer of 180 to 33; and a second
# output, an 8x9 input times an 8x9 constant (per tensor, rows of an odd length).
# tests/codegen/test_codegen_sub_byte.py runs every target's tiles over packed weights.
def _model(seed: int = 0) -> str:
    rng = np.random.default_rng(seed)

    def hexed(shape: tuple[int, ...], scale: float = 1.0) -> str:
        a = (rng.standard_normal(shape) * scale).astype("<f4")
        return a.tobytes().hex().upper()

    return f"""
func.func @main(%x: tensor<1x6x6x3xf32>, %x2: tensor<8x9xf32>)
    -> (tensor<1x33xf32>, tensor<8x9xf32>) {{
  %k = stablehlo.constant dense<"0x{hexed((3, 3, 3, 5), 0.3)}"> : tensor<3x3x3x5xf32>
  %c = stablehlo.constant dense<"0x{hexed((1, 6, 6, 5))}"> : tensor<1x6x6x5xf32>
  %w = stablehlo.constant dense<"0x{hexed((180, 33), 0.1)}"> : tensor<180x33xf32>
  %m = stablehlo.constant dense<"0x{hexed((8, 9))}"> : tensor<8x9xf32>
  %y = stablehlo.convolution(%x, %k)
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {{stride = [1, 1], pad = [[1, 1], [1, 1]]}}
         {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
       : (tensor<1x6x6x3xf32>, tensor<3x3x3x5xf32>) -> tensor<1x6x6x5xf32>
  %a = stablehlo.add %y, %c : tensor<1x6x6x5xf32>
  %t = stablehlo.tanh %a : tensor<1x6x6x5xf32>
  %r = stablehlo.reshape %t : (tensor<1x6x6x5xf32>) -> tensor<1x180xf32>
  %d = stablehlo.dot_general %r, %w, contracting_dims = [1] x [0]
       : (tensor<1x180xf32>, tensor<180x33xf32>) -> tensor<1x33xf32>
  %p = stablehlo.multiply %x2, %m : tensor<8x9xf32>
  return %d, %p : tensor<1x33xf32>, tensor<8x9xf32>
}}
"""


def _graph(seed: int = 0):
    return import_module(parse_text(_model(seed), "int4.mlir"))


def test_weights_become_i4_with_a_scale_per_output_channel() -> None:
    graph = quantize_weights(fold_constants(_graph()), QuantizeOptions("int4-weights"))
    stored = {n.inputs[0].type.shape: n for n in graph.nodes if n.op == "dequantize"}
    assert set(stored) == {(3, 3, 3, 5), (1, 6, 6, 5), (180, 33), (8, 9)}
    for shape, axis in [((3, 3, 3, 5), 3), ((180, 33), 1), ((1, 6, 6, 5), None),
                        ((8, 9), None)]:
        t = stored[shape].inputs[0].type
        assert t.dtype.name == "i4" and stored[shape].attrs["axis"] == axis
        assert (t.quant.storage_min, t.quant.storage_max) == (-7, 7)
        assert len(t.quant.scales) == (1 if axis is None else shape[axis])


def test_the_module_stores_them_two_to_a_byte() -> None:
    board = load_board("cortex-m4")
    program = schedule_for_board(prepare_graph(_graph(), QuantizeOptions("int4-weights")),
                                 board)
    assert len(program.bit_packed) == 4
    module = read_module(module_from_program(program, board.target))
    packed = sorted((c.size, c.storage_dtype.name, c.dtype.name, len(c.params.scales))
                    for c in module.constants if c.storage_dtype.name == "i4")
    # Weights of 72, 135, 180 and 5940 elements: 36, 68, 90 and 2970 bytes.
    assert packed == [(36, "i4", "f32", 1), (68, "i4", "f32", 5), (90, "i4", "f32", 1),
                      (2970, "i4", "f32", 33)]
    # Every kernel reading one lists it as bit-packed, and computes what it did unpacked.
    for step in program.steps:
        k = step.kernel
        if not isinstance(k, Kernel) or not k.bit_packed:
            continue
        args = [np.asarray(program.constants[b.index]) if b.kind == "constant" else
                np.random.default_rng(0).standard_normal(t.shape).astype(t.dtype.np_dtype)
                for b, t in zip(step.buffers, k.operands)]
        plain = [unpack_bits(a, t.dtype, t.shape) if j in k.bit_packed else a
                 for j, (a, t) in enumerate(zip(args, k.operands))]
        unpacked = replace(k, bit_packed=())
        assert np.array_equal(run_kernel(k, args), run_kernel(unpacked, plain))


def test_int4_accuracy_against_float() -> None:
    rng = np.random.default_rng(5)
    x = [rng.standard_normal(s).astype(np.float32) for s in [(1, 6, 6, 3), (8, 9)]]
    want = run_graph(_graph(), x)
    got = run_graph(quantize_weights(fold_constants(_graph()),
                                     QuantizeOptions("int4-weights")), x)
    acc = compare_outputs(got, want)
    # 16 levels for a Gaussian weight: the measured cosine is 0.995 here.
    assert 0.98 < acc.cosine_similarity < 0.9999, acc


# ------------------------------------------------------------------ firmware --check


def _check(model: Path, board: str, out: Path, capsys, *extra: str) -> bytes:
    rc = run_cli.main([str(model), "--board", board, "--check", "-o", str(out),
                       "--quantize", "int4-weights", *extra])
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    assert "check: outputs match the reference" in stdout
    return (out / "model.mrt").read_bytes()


@pytest.mark.parametrize("board", ["cortex-m4", "riscv32"])
def test_firmware_check_made_model(board: str, tmp_path: Path, capsys) -> None:
    model = tmp_path / "int4.mlir"
    model.write_text(_model(1))
    module = read_module(_check(model, board, tmp_path / "fw", capsys))
    assert sum(c.storage_dtype.name == "i4" for c in module.constants) == 4


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("board", ["cortex-m4", "riscv32"])
def test_firmware_check_shared_jax_model(board: str, tmp_path: Path, capsys) -> None:
    path = MODELS_DIR / "jax" / "cnn.mlir"
    module = read_module(_check(path, board, tmp_path / "fw", capsys, "--inputs",
                                str(path.with_suffix(".npz"))))
    packed = [c for c in module.constants if c.storage_dtype.name == "i4"]
    assert packed, "no weight was stored as packed int4"
    graph = load_graph(path)
    weights = {n.outputs[0].type.num_elements for n in graph.nodes if n.op == "constant"}
    assert all(c.size * 2 - 1 in weights or c.size * 2 in weights for c in packed)
