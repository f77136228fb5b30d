"""The int8 kernels of toolchain/quant/build.py, as graph chains run by the numpy
reference, against toolchain/quant/tflm.py (TFLite Micro's arithmetic, itself proven
against the interpreter in tests/quant): identical int8 outputs. And each chain is one
dispatch that never keeps a wide tensor in RAM."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_graph
from toolchain.passes import fold_constants
from toolchain.quant import build, tflm
from toolchain.reference import run_graph
from toolchain.schedule import schedule
from toolchain.types import TensorType, dtype

I8, F32 = dtype("i8"), dtype("f32")


def _run(inputs: list[np.ndarray], make) -> tuple[np.ndarray, Graph]:
    g = Graph("k")
    b = GraphBuilder(g)
    args = [g.add_input(TensorType(x.shape, I8 if x.dtype == np.int8 else F32))
            for x in inputs]
    g.outputs = [make(b, *args)]
    verify_graph(g)
    return run_graph(g, inputs)[0], g


def _one_dispatch(g: Graph) -> None:
    program = schedule(fold_constants(g))
    assert len(program.steps) == 1, [s.kernel.name for s in program.steps]
    assert program.arena_size == 0


def _pads(size: int, k: int, stride: int, dilation: int, mode: str) -> tuple[int, int]:
    out, before = tflm.compute_padding(size, k, stride, dilation, mode)
    total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
    return before, total - before


CONV_CASES = [
    # (input shape, cout, kernel, strides, dilations, padding, zp in, zp out, activation)
    ((1, 7, 6, 3), 4, (3, 3), (1, 1), (1, 1), "SAME", -3, 5, "NONE"),
    ((1, 9, 9, 2), 3, (3, 2), (2, 2), (1, 1), "VALID", -128, 127, "RELU"),
    ((2, 8, 5, 4), 5, (3, 3), (1, 2), (2, 1), "SAME", 127, -128, "RELU6"),
    ((1, 10, 4, 1), 8, (10, 4), (2, 1), (1, 1), "SAME", 83, -20, "RELU_N1_TO_1"),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{c[0]}-{c[5]}-{c[8]}")
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv2d_matches_tflm(case, per_channel: bool) -> None:
    shape, cout, k, strides, dil, mode, zin, zout, act = case
    rng = np.random.default_rng(hash((shape, per_channel)) % 2**32)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    w = rng.integers(-127, 128, (cout, *k, shape[3])).astype(np.int8)
    bias = rng.integers(-20000, 20000, cout).astype(np.int32)
    wscale = rng.uniform(0.001, 0.02, cout if per_channel else 1)
    mult, shift = tflm.conv_params(0.05, wscale, 0.1)
    lo, hi = tflm.activation_range(act, 0.1, zout)
    pads = [_pads(shape[1 + i], k[i], strides[i], dil[i], mode) for i in range(2)]
    got, g = _run([x], lambda b, t: build.conv2d(
        b, t, w, bias, strides=strides, padding=pads, dilations=dil, input_zp=zin,
        multipliers=mult, shifts=shift, output_zp=zout, act_min=lo, act_max=hi))
    want = tflm.conv2d(x, w, bias, strides=strides, padding=mode, dilations=dil, input_zp=zin,
                       output_zp=zout, multipliers=mult, shifts=shift, act_min=lo, act_max=hi)
    np.testing.assert_array_equal(got, want)
    _one_dispatch(g)


@pytest.mark.parametrize("multiplier", [1, 2])
@pytest.mark.parametrize("mode", ["SAME", "VALID"])
def test_depthwise_matches_tflm(multiplier: int, mode: str) -> None:
    rng = np.random.default_rng(multiplier * 7 + len(mode))
    x = rng.integers(-128, 128, (1, 9, 6, 5)).astype(np.int8)
    cout = 5 * multiplier
    w = rng.integers(-127, 128, (1, 3, 3, cout)).astype(np.int8)
    bias = rng.integers(-5000, 5000, cout).astype(np.int32)
    mult, shift = tflm.conv_params(0.05, rng.uniform(0.001, 0.05, cout), 0.2)
    pads = [_pads(s, 3, 2, 1, mode) for s in (9, 6)]
    got, g = _run([x], lambda b, t: build.conv2d(
        b, t, w, bias, strides=(2, 2), padding=pads, depthwise=True, input_zp=-7,
        multipliers=mult, shifts=shift, output_zp=3))
    want = tflm.depthwise_conv2d(x, w, bias, strides=(2, 2), padding=mode,
                                 depth_multiplier=multiplier, input_zp=-7, output_zp=3,
                                 multipliers=mult, shifts=shift)
    np.testing.assert_array_equal(got, want)
    _one_dispatch(g)


@pytest.mark.parametrize("filter_zp", [0, 9])
def test_fully_connected_matches_tflm(filter_zp: int) -> None:
    rng = np.random.default_rng(filter_zp)
    x = rng.integers(-128, 128, (2, 40)).astype(np.int8)
    w = rng.integers(-127, 128, (12, 40)).astype(np.int8)
    bias = rng.integers(-9000, 9000, 12).astype(np.int32)
    mult, shift = tflm.fully_connected_params(0.3, 0.01, 0.25)
    got, g = _run([x], lambda b, t: build.fully_connected(
        b, t, w, bias, input_zp=-11, multipliers=mult, shifts=shift, output_zp=-1,
        filter_zp=filter_zp))
    want = tflm.fully_connected(x, w, bias, input_zp=-11, output_zp=-1, multipliers=mult,
                                shifts=shift, filter_zp=filter_zp)
    np.testing.assert_array_equal(got, want)
    _one_dispatch(g)


@pytest.mark.parametrize("mode, window, strides", [("VALID", (25, 5), (1, 1)),
                                                   ("SAME", (3, 3), (2, 2)),
                                                   ("SAME", (2, 3), (1, 2))])
def test_average_pool_matches_tflm(mode: str, window, strides) -> None:
    rng = np.random.default_rng(len(window) + strides[1])
    x = rng.integers(-128, 128, (1, 25, 5, 6)).astype(np.int8)
    pads = [_pads(s, window[i], strides[i], 1, mode) for i, s in enumerate((25, 5))]
    got, g = _run([x], lambda b, t: build.average_pool(b, t, window=window, strides=strides,
                                                       padding=pads, act_min=-100,
                                                       act_max=120))
    want = tflm.average_pool(x, filter_size=window, strides=strides, padding=mode,
                             act_min=-100, act_max=120)
    np.testing.assert_array_equal(got, want)
    _one_dispatch(g)


@pytest.mark.parametrize("kind", ["add", "sub"])
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 4), (3, 1))])
def test_add_sub_match_tflm(kind: str, shapes) -> None:
    rng = np.random.default_rng(len(kind) + len(shapes[1]))
    x1 = rng.integers(-128, 128, shapes[0]).astype(np.int8)
    x2 = rng.integers(-128, 128, shapes[1]).astype(np.int8)
    params = getattr(tflm, f"{kind}_params")(0.07, -3, 0.11, 25, 0.15, 4, "RELU")
    p = params
    got, g = _run([x1, x2], lambda b, a, c: getattr(build, kind)(
        b, a, c, left_shift=p.left_shift,
        input1=(-p.input1_offset, p.input1_multiplier, p.input1_shift),
        input2=(-p.input2_offset, p.input2_multiplier, p.input2_shift),
        output=(p.output_offset, p.output_multiplier, p.output_shift),
        act_min=p.act_min, act_max=p.act_max))
    np.testing.assert_array_equal(got, getattr(tflm, kind)(x1, x2, params))
    _one_dispatch(g)


def test_mul_matches_tflm() -> None:
    rng = np.random.default_rng(3)
    x1 = rng.integers(-128, 128, (3, 5)).astype(np.int8)
    x2 = rng.integers(-128, 128, (5,)).astype(np.int8)
    p = tflm.mul_params(0.02, 7, 0.03, -128, 0.004, -5, "RELU6")
    got, g = _run([x1, x2], lambda b, a, c: build.mul(
        b, a, c, input1_zp=p.input1_zp, input2_zp=p.input2_zp, multiplier=p.multiplier,
        shift=p.shift, output_zp=p.output_zp, act_min=p.act_min, act_max=p.act_max))
    np.testing.assert_array_equal(got, tflm.mul(x1, x2, p))
    _one_dispatch(g)


def test_quantize_and_dequantize_match_tflm() -> None:
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((4, 9)) * 3).astype(np.float32)
    x[0, :4] = [0.25, -0.25, 0.75, -1e9]  # ties and saturation
    got, g = _run([x], lambda b, t: build.quantize(b, t, scale=0.5, zero_point=-2))
    np.testing.assert_array_equal(got, tflm.quantize(np.clip(x, -1e6, 1e6), 0.5, -2))
    q = rng.integers(-128, 128, (3, 7)).astype(np.int8)
    got, g = _run([q], lambda b, t: build.dequantize(b, t, scale=0.0137, zero_point=21))
    np.testing.assert_array_equal(got, tflm.dequantize(q, 0.0137, 21))


def test_requantize_as_rescale_matches_tflm() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (50,)).astype(np.int8)
    p = tflm.requantize_params(0.3, -5, 0.07, 12)

    def make(b, t):
        v = b.op("subtract", [b.op("convert", [t], dtype="i32"), b.splat(p.input_zp,
                                                                     dtype("i32"), (50,))])
        return build.requantize(b, v, p.multiplier, p.shift, axis=None, output_zp=p.output_zp)

    got, _ = _run([x], make)
    np.testing.assert_array_equal(got, tflm.requantize(x, p))


def test_lookup_is_a_gather_of_the_table() -> None:
    table = np.arange(256, dtype=np.int64)[::-1].astype(np.int8)  # -(x + 1) in two's complement
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    got, g = _run([x], lambda b, t: build.lookup(b, t, table))
    np.testing.assert_array_equal(got, table[x.astype(np.int64) + 128])
    _one_dispatch(g)


@pytest.mark.parametrize("shape", [(1, 12), (3, 10), (2, 2, 7), (1, 2)])
@pytest.mark.parametrize("scale", [0.0039, 0.1, 0.7])
def test_softmax_matches_tflm(shape, scale: float) -> None:
    from toolchain.quant import tflm_activations, tflm_tables

    rng = np.random.default_rng(int(scale * 1000) + len(shape))
    x = rng.integers(-128, 128, shape).astype(np.int8)
    x.reshape(-1)[0] = -128  # a row with extreme spread
    x.reshape(-1)[1] = 127
    params = tflm_activations.softmax_params(scale)
    exp_table, sum_table = tflm_tables.softmax_exp_table(params)
    got, g = _run([x], lambda b, t: build.softmax(b, t, exp_table, sum_table))
    np.testing.assert_array_equal(got, tflm_activations.softmax(x, params))
    program = schedule(fold_constants(g))
    rows = int(np.prod(shape[:-1]))
    for step in program.steps:  # the arena only ever holds per-row values
        assert all(buf.size <= 8 * rows for buf in step.buffers if buf.kind == "arena")


@pytest.mark.parametrize("axes, keep", [((1, 2), True), ((1, 2), False), ((2,), False),
                                        ((0, 1, 2, 3), True)])
def test_mean_matches_tflm(axes, keep: bool) -> None:
    rng = np.random.default_rng(len(axes) + keep)
    x = rng.integers(-128, 128, (2, 5, 3, 4)).astype(np.int8)
    p = tflm.mean_params(0.12, -9, 0.05, 6)
    got, g = _run([x], lambda b, t: build.mean(
        b, t, axes, keep_dims=keep, input_zp=p.input_zp, multiplier=p.multiplier,
        shift=p.shift, output_zp=p.output_zp))
    np.testing.assert_array_equal(got, tflm.mean(x, axes, keep, p))
    _one_dispatch(g)
