"""The int16 packed DSP steps (codegen/dot.py `dsp16`, schedule/widen16.py) on the DSP
boards under QEMU, bit for bit against TFLite Micro's interpreter.

16x8 layers (int16 activations, int8 weights) over a sweep of shapes: input channels
odd (3, 5, 13), multiples of 4, and 2 or 6, whose window rows (taps x channels) are
merged into one reduced dim (schedule/window_rows.py; conv0's 7x7 over 2 channels);
1x1, 3x3, 5x5 and 7x7 windows; strides 1 and 2; SAME and VALID padding (bounds-checked
words at the border, the pad value in both halves); a transposed convolution; dense
layers of 7, 64 and 300 inputs, one of 1,024 inputs whose weights (+-63) keep every sum
within int32 by build16's bound, with inputs of +-32,767 matched to the weights' signs
so that a sum reaches 2,113,865,472 (98% of 2**31), and one of 1,100 inputs of
full-range weights, whose sums can leave int32 so the layer keeps the int64 accumulator
(its steps are SMLALD). A depthwise layer (its reduction, the taps, is contiguous in
neither operand) rides along. Every model of a board is one image; the image must
contain SMLADs and SMLALDs (the models are all 16x8, whose scalar code has neither),
and each output must equal the interpreter's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from toolchain.emu.run import run_image
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.module import read_module
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs
from toolchain.target import load_board
from toolchain.testing.difftest import merge_graphs

tm = pytest.importorskip("tflite_models")
pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]
# (window, input channels, output channels, input height x width, stride, padding)
CONVS = [
    (1, 16, 8, (5, 6), 1, "VALID"),
    (1, 13, 5, (4, 4), 1, "VALID"),
    (3, 8, 8, (7, 9), 1, "SAME"),
    (3, 2, 4, (6, 6), 1, "SAME"),
    (3, 6, 4, (6, 7), 2, "SAME"),
    (3, 3, 6, (8, 8), 2, "VALID"),
    (3, 64, 4, (4, 5), 1, "SAME"),
    (5, 5, 3, (9, 7), 1, "SAME"),
    (5, 32, 6, (7, 7), 2, "SAME"),
    (7, 2, 8, (2, 20), 1, "SAME"),  # seanet conv0's shape: window rows merged, 14 a row
]
DENSE = [7, 64, 300]


def _i16(shape, scale: float):
    return tm.Tensor(shape, "int16", scale=scale, zero_point=0)


def _filter(rng, shape, axis: int = 0, data=None):
    n = shape[axis]
    scales = list(rng.uniform(0.002, 0.02, n))
    if data is None:
        data = rng.integers(-127, 128, shape)
    return tm.Tensor(shape, "int8", scale=scales, zero_point=[0] * n, quantized_dimension=axis,
                     data=data)


def _bias(rng, scales):
    n = len(scales)
    return tm.Tensor((n,), "int64", scale=[0.001 * s for s in scales], zero_point=[0] * n,
                     data=rng.integers(-(1 << 20), 1 << 20, n))


def _conv(rng, k, cin, cout, hw, stride, padding):
    w = _filter(rng, (cout, k, k, cin))
    shape = (1, *hw, cin)
    out_hw = [-(-n // stride) if padding == "SAME" else (n - k) // stride + 1 for n in hw]
    model = tm.single_op_model(
        "CONV_2D", [_i16(shape, 0.001), w, _bias(rng, w.scale)],
        [_i16((1, *out_hw, cout), 0.02)], padding=padding, stride_h=stride, stride_w=stride,
        dilation_h_factor=1, dilation_w_factor=1, fused_activation_function="NONE")
    return model, [rng.integers(-32768, 32768, shape).astype(np.int16)]


def _dense(rng, depth: int, units: int = 5, data=None, out_scale=0.05):
    w = _filter(rng, (units, depth), data=data)
    model = tm.single_op_model(
        "FULLY_CONNECTED", [_i16((2, depth), 0.001), w, _bias(rng, w.scale)],
        [_i16((2, units), out_scale)], fused_activation_function="NONE")
    return model, [rng.integers(-32768, 32768, (2, depth)).astype(np.int16)], w


def _matched(w) -> np.ndarray:
    """Two input rows of +-32,767 with the signs of w's first row, and the opposite: its
    sum as large as it can be, and as small."""
    signs = np.where(np.asarray(w.data)[0] < 0, -32767, 32767).astype(np.int16)
    return np.stack([signs, -signs])


def _cases() -> list[tuple[str, bytes, list[np.ndarray]]]:
    rng = np.random.default_rng(1608)
    cases = [(f"conv{k}x{k}-c{cin}-o{cout}-s{s}-{p}", *_conv(rng, k, cin, cout, hw, s, p))
             for k, cin, cout, hw, s, p in CONVS]
    cases += [(f"dense{d}", *_dense(rng, d)[:2]) for d in DENSE]
    # 1,024 inputs, weights +-63: sum |w| = 64,512 a row, so 2**15 * sum |w| < 2**31 and
    # the layer sums in int32; x = +-32,767 with the first row's signs takes its sum to
    # 32,767 * 64,512 = 2,113,865,472 (2**31 is 2,147,483,648), the other input row to
    # as far below zero.
    model, _, w = _dense(rng, 1024, units=4, data=rng.choice([-63, 63], (4, 1024)),
                         out_scale=2.0)
    cases.append(("dense1024-int32-extremes", model, [_matched(w)]))
    # 1,100 inputs of full-range weights: sum |w| near 70,000 > 2**31 / 2**15, so int64
    # sums; inputs matched to the first row's signs take its sum to about 2.3e9, past
    # int32 (a 32-bit accumulator would wrap).
    model, _, w = _dense(rng, 1100, out_scale=50.0)
    cases.append(("dense1100-int64", model, [_matched(w)]))
    w = _filter(rng, (3, 4, 3, 2))
    shape = tm.Tensor((4,), "int32", data=np.array([1, 10, 9, 3]))
    cases.append(("transpose_conv-c2-s2", tm.single_op_model(
        "TRANSPOSE_CONV", [shape, w, _i16((1, 5, 5, 2), 0.003), _bias(rng, w.scale)],
        [_i16((1, 10, 9, 3), 0.004)], padding="SAME", stride_h=2, stride_w=2),
        [rng.integers(-32768, 32768, (1, 5, 5, 2)).astype(np.int16)]))
    w = _filter(rng, (1, 3, 3, 8), axis=3)
    cases.append(("depthwise3x3-c8", tm.single_op_model(
        "DEPTHWISE_CONV_2D", [_i16((1, 6, 6, 8), 0.001), w, _bias(rng, w.scale)],
        [_i16((1, 6, 6, 8), 0.01)], padding="SAME", stride_h=1, stride_w=1,
        depth_multiplier=1, dilation_h_factor=1, dilation_w_factor=1,
        fused_activation_function="NONE"),
        [rng.integers(-32768, 32768, (1, 6, 6, 8)).astype(np.int16)]))
    return cases


def test_the_sweep_has_sums_on_both_sides_of_the_int32_bound() -> None:
    """The sweep's dense layers pick both accumulators (build16's bound), so it checks
    SMLAD's int32 sums and the int64 layer beside them."""
    graphs = {name: import_model(read_model(model)) for name, model, _ in _cases()
              if name.startswith("dense")}
    acc = {name: [n.outputs[0].type.dtype.name for n in g.nodes if n.op == "dot_general"]
           for name, g in graphs.items()}
    assert acc["dense1024-int32-extremes"] == ["i32"]
    assert acc["dense1100-int64"] == ["i64"]
    assert acc["dense64"] == ["i32"]


@pytest.mark.parametrize("board", DSP_BOARDS)
def test_16x8_layers_take_smlad_and_match_tflite_micro(board: str, tmp_path: Path) -> None:
    from tflite_models import run_tflm

    cases = _cases()
    graphs = [import_model(read_model(model)) for _, model, _ in cases]
    inputs = [x for _, _, xs in cases for x in xs]
    result = compile_graph(merge_graphs(graphs), load_board(board), tmp_path / "fw",
                           log=lambda _: None)
    # +dsp: the Armv8-M object carries no attributes that would tell objdump of the DSP
    # extension (it prints SMLAD as <unknown> without it).
    dis = subprocess.run(["llvm-objdump", "-d", "--mattr=+dsp",
                          str(tmp_path / "fw" / "dispatch.o")],
                         capture_output=True, text=True, check=True).stdout
    lines = dis.splitlines()
    assert sum("smlad\t" in line for line in lines) >= 16, "no int16 SMLAD steps"
    assert sum("smlald\t" in line for line in lines) >= 2, "no int16 SMLALD steps"
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, inputs),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    outputs = decode_outputs(module.outputs, run.outputs)
    for (name, model, xs), got in zip(cases, outputs, strict=True):
        want = run_tflm(model, xs)[0][0]
        assert np.array_equal(got, want), (name, np.abs(got.astype(int) - want).max())


def _smlads(out: Path) -> int:
    dis = subprocess.run(["llvm-objdump", "-d", "--mattr=+dsp", str(out / "dispatch.o")],
                         capture_output=True, text=True, check=True).stdout
    return sum("smlad\t" in line for line in dis.splitlines())


def test_widened_weights_follow_the_optimize_mode(tmp_path: Path) -> None:
    """The widened int16 weights take the flash room of --optimize like the paired int8
    ones (schedule/optimize.py): under `size` the weights stay int8 and the layer's
    products are taken one at a time (no SMLAD), under `speed` they are widened (twice
    the weights' bytes); both exact."""
    from tflite_models import run_tflm

    name, model, xs = next(c for c in _cases() if c[0].startswith("conv3x3-c64"))
    want = run_tflm(model, xs)[0][0]
    weights = 4 * 3 * 3 * 64  # the layer's int8 weights
    stored = {}
    for mode in ("size", "speed"):
        out = tmp_path / mode
        result = compile_graph(import_model(read_model(model)), load_board("cortex-m4"), out,
                               log=lambda _: None, optimize=mode)
        module = read_module(result.module)
        run = run_image(result.board, result.elf, encode_inputs(module.inputs, xs),
                        count_instructions=False)
        assert run.exit_code == 0, run.diagnosis
        assert np.array_equal(decode_outputs(module.outputs, run.outputs)[0], want), mode
        stored[mode] = (_smlads(out), result.program.optimize.stored_bytes)
    assert stored["size"][0] == 0 and stored["speed"][0] >= 8, (name, stored)
    assert stored["speed"][1] - stored["size"][1] == weights, stored
