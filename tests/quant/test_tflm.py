"""toolchain.quant.tflm equals TFLite Micro, bit for bit, on single-op models per corner.

Each case builds a one-operator .tflite (tests/tflite_models.py), runs TFLite Micro's
interpreter on fresh seeded random int8 inputs and compares our numpy kernel, fed the
parameters our `*_params` functions derive from the same scales, with np.array_equal.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, replace

import numpy as np
import pytest
from tflite_models import Tensor, single_op_model
from tflm_oracle import assert_exact, const, q, rand_int8, run, run_single

from toolchain.quant import tflm
from toolchain.quant.fixedpoint import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_half_away,
)

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def rng_for(name: str) -> np.random.Generator:
    """A generator seeded from the case name: every case has its own fixed inputs."""
    return np.random.default_rng(zlib.crc32(name.encode()))


# ---------------------------------------------------------------------------------------
# CONV_2D and DEPTHWISE_CONV_2D.


@dataclass(frozen=True)
class ConvCase:
    per_channel: bool = True
    padding: str = "SAME"
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    activation: str = "NONE"
    input_zp: int = -3
    output_zp: int = 5
    input_scale: float = 0.05
    filter_scale: float = 0.02      # per-channel scales spread around it
    output_scale: float = 0.2
    input_hw: tuple[int, int] = (9, 7)
    kernel: tuple[int, int] = (3, 3)
    channels: tuple[int, int] = (3, 5)   # (in, out) for conv; (in, multiplier) for depthwise
    batch: int = 1
    bias: bool = True

    def __str__(self) -> str:
        return "-".join(f"{k}={v}" for k, v in vars(self).items())


STRUCTURED = [
    ConvCase(per_channel=pc, padding=pad, stride=(s, s), dilation=(d, d), activation=act)
    for pc, pad, s, d, act in itertools.product(
        [False, True], ["SAME", "VALID"], [1, 2], [1, 2], ACTIVATIONS)
]
EXTREMES = [
    ConvCase(input_zp=-128, output_zp=-128),
    ConvCase(input_zp=127, output_zp=127, activation="RELU"),
    ConvCase(input_zp=-128, output_zp=127, activation="RELU6"),
    ConvCase(input_zp=127, output_zp=-128, activation="RELU_N1_TO_1", output_scale=0.005),
    # Tiny scales: 1e-6-ish inputs with an output scale that keeps results in range...
    ConvCase(input_scale=1e-6, filter_scale=1e-3, output_scale=1e-8),
    # ...and with one that makes the multiplier ~1e-9 (shift near -31).
    ConvCase(input_scale=1e-6, filter_scale=1e-3, output_scale=1.0),
    ConvCase(input_scale=1e-7, filter_scale=1e-5, output_scale=1e2),  # below 2**-31: flushed
    # Large scales: multipliers above 1 (left shifts, accumulators that overflow int32
    # once shifted: both sides wrap alike).
    ConvCase(input_scale=50.0, filter_scale=0.5, output_scale=100.0),
    ConvCase(input_scale=2.0, filter_scale=0.5, output_scale=0.01),
    ConvCase(input_scale=3.0, filter_scale=0.9, output_scale=0.002, activation="RELU6"),
    # Odd shapes, batches, asymmetric kernels, 1x1, kernel as large as the input.
    ConvCase(input_hw=(1, 1), kernel=(1, 1), channels=(7, 3)),
    ConvCase(input_hw=(5, 11), kernel=(2, 3), stride=(2, 3), batch=2),
    ConvCase(input_hw=(6, 6), kernel=(6, 6), padding="VALID", channels=(2, 4)),
    ConvCase(input_hw=(6, 5), kernel=(5, 1), stride=(3, 1), dilation=(1, 2), padding="SAME"),
    ConvCase(input_hw=(13, 4), kernel=(3, 2), stride=(1, 2), dilation=(3, 1), padding="VALID"),
    ConvCase(bias=False),
    ConvCase(channels=(16, 9), input_hw=(7, 5), batch=3),
]


def _filter_scales(rng: np.random.Generator, case: ConvCase, channels: int) -> np.ndarray:
    if not case.per_channel:
        return np.array([case.filter_scale], dtype=np.float32)
    return (case.filter_scale * rng.uniform(0.25, 2.0, channels)).astype(np.float32)


def _conv_model(case: ConvCase, depthwise: bool, rng: np.random.Generator):
    h, w = case.input_hw
    kh, kw = case.kernel
    cin, c2 = case.channels
    cout = cin * c2 if depthwise else c2
    oh, _ = tflm.compute_padding(h, kh, case.stride[0], case.dilation[0], case.padding)
    ow, _ = tflm.compute_padding(w, kw, case.stride[1], case.dilation[1], case.padding)
    fscales = _filter_scales(rng, case, cout)
    wshape = (1, kh, kw, cout) if depthwise else (cout, kh, kw, cin)
    weights = rng.integers(-127, 128, size=wshape).astype(np.int8)
    qdim = 3 if depthwise else 0
    nscale = fscales.size
    wt = const(weights, "int8", scale=list(fscales), zero_point=[0] * nscale,
               quantized_dimension=qdim)
    bias_scales = (np.float32(case.input_scale) * fscales).astype(np.float32)
    bias = rng.integers(-20000, 20000, size=cout).astype(np.int32)
    bt = const(bias, "int32", scale=list(np.broadcast_to(bias_scales, (cout,))),
               zero_point=[0] * cout) if case.bias else None
    x = q((case.batch, h, w, cin), case.input_scale, case.input_zp)
    y = q((case.batch, oh, ow, cout), case.output_scale, case.output_zp)
    options = dict(padding=case.padding, stride_h=case.stride[0], stride_w=case.stride[1],
                   dilation_h_factor=case.dilation[0], dilation_w_factor=case.dilation[1],
                   fused_activation_function=case.activation)
    if depthwise:
        options["depth_multiplier"] = c2
    opcode = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
    model = single_op_model(opcode, [x, wt, bt], [y], **options)
    return model, weights, bias if case.bias else None, fscales


def _check_conv(case: ConvCase, depthwise: bool) -> None:
    rng = rng_for(f"{depthwise}{case}")
    model, weights, bias, fscales = _conv_model(case, depthwise, rng)
    mult, shifts = tflm.conv_params(case.input_scale, fscales, case.output_scale)
    lo, hi = tflm.activation_range(case.activation, case.output_scale, case.output_zp)
    common = dict(strides=case.stride, padding=case.padding, dilations=case.dilation,
                  input_zp=case.input_zp, output_zp=case.output_zp, multipliers=mult,
                  shifts=shifts, act_min=lo, act_max=hi)
    for trial in range(2):
        x = rand_int8(rng, (case.batch, *case.input_hw, case.channels[0]))
        expected = run(model, [x])
        if depthwise:
            got = tflm.depthwise_conv2d(x, weights, bias, depth_multiplier=case.channels[1],
                                        **common)
        else:
            got = tflm.conv2d(x, weights, bias, **common)
        assert_exact(expected, got, f"{'depthwise' if depthwise else 'conv'} trial {trial}")


@pytest.mark.parametrize("case", STRUCTURED + EXTREMES, ids=str)
def test_conv2d(case: ConvCase) -> None:
    _check_conv(case, depthwise=False)


DEPTHWISE = [
    ConvCase(per_channel=pc, padding=pad, stride=(s, s), dilation=(d, d), activation=act,
             channels=(3, dm))
    for pc, pad, s, d, dm, act in itertools.product(
        [False, True], ["SAME", "VALID"], [1, 2], [1, 2], [1, 2], ["NONE", "RELU6"])
] + [
    ConvCase(channels=(4, 1), activation="RELU"),
    ConvCase(channels=(4, 2), activation="RELU_N1_TO_1", output_scale=0.01),
] + [
    # No bias-less case: TFLite Micro's DEPTHWISE_CONV_2D crashes (segmentation fault)
    # on a model without the optional bias input, so there is no oracle for it.
    ConvCase(**{**vars(c), "channels": (3, 2)}) for c in EXTREMES if c.bias
]


@pytest.mark.parametrize("case", DEPTHWISE, ids=str)
def test_depthwise_conv2d(case: ConvCase) -> None:
    _check_conv(case, depthwise=True)


def test_grouped_conv2d() -> None:
    """CONV_2D with filter depth 2 on 6 input channels: three groups of 2 outputs."""
    rng = rng_for("grouped")
    weights = rng.integers(-127, 128, size=(6, 3, 3, 2)).astype(np.int8)
    fscales = rng.uniform(0.01, 0.03, 6).astype(np.float32)
    bias = rng.integers(-500, 500, 6).astype(np.int32)
    model = single_op_model(
        "CONV_2D", [q((1, 7, 7, 6), 0.05, 2), const(weights, "int8", scale=list(fscales),
                                                  zero_point=[0] * 6),
                    const(bias, scale=list(fscales * np.float32(0.05)), zero_point=[0] * 6)],
        [q((1, 7, 7, 6), 0.1, -1)], padding="SAME", stride_h=1, stride_w=1)
    mult, shifts = tflm.conv_params(0.05, fscales, 0.1)
    x = rand_int8(rng, (1, 7, 7, 6))
    got = tflm.conv2d(x, weights, bias, strides=(1, 1), padding="SAME", input_zp=2,
                      output_zp=-1, multipliers=mult, shifts=shifts)
    assert_exact(run(model, [x]), got, "grouped conv")


# ---------------------------------------------------------------------------------------
# FULLY_CONNECTED.


@dataclass(frozen=True)
class FcCase:
    per_channel: bool = False
    activation: str = "NONE"
    bias: bool = True
    input_shape: tuple[int, ...] = (1, 37)
    units: int = 11
    input_scale: float = 0.04
    filter_scale: float = 0.01
    output_scale: float = 0.15
    input_zp: int = 4
    output_zp: int = -7

    def __str__(self) -> str:
        return "-".join(f"{k}={v}" for k, v in vars(self).items())


FC_CASES = [
    FcCase(per_channel=pc, activation=act, bias=b, input_shape=shape)
    for pc, act, b, shape in itertools.product(
        [False, True], ACTIVATIONS, [True, False], [(1, 37), (3, 37)])
] + [
    FcCase(input_zp=-128, output_zp=127), FcCase(input_zp=127, output_zp=-128),
    FcCase(input_shape=(2, 5, 6), units=4),        # rows taken from a 3-D input
    FcCase(input_scale=1e-6, filter_scale=1e-3, output_scale=1e-7),
    FcCase(input_scale=1e-6, filter_scale=1e-3, output_scale=3.0),
    FcCase(input_scale=4.0, filter_scale=0.7, output_scale=0.003, per_channel=True),
    FcCase(input_scale=0.0123, filter_scale=0.00731, output_scale=0.0917),
    FcCase(input_shape=(1, 1), units=1),
]


@pytest.mark.parametrize("case", FC_CASES, ids=str)
def test_fully_connected(case: FcCase) -> None:
    rng = rng_for(str(case))
    depth = case.input_shape[-1]
    weights = rng.integers(-127, 128, size=(case.units, depth)).astype(np.int8)
    if case.per_channel:
        fscales = (case.filter_scale * rng.uniform(0.5, 2, case.units)).astype(np.float32)
    else:
        fscales = np.array([case.filter_scale], dtype=np.float32)
    bias = rng.integers(-5000, 5000, case.units).astype(np.int32)
    nsc = fscales.size
    wt = const(weights, "int8", scale=list(fscales), zero_point=[0] * nsc)
    bscale = list(np.broadcast_to(fscales * np.float32(case.input_scale), (nsc,)))
    bt = const(bias, scale=bscale, zero_point=[0] * nsc) if case.bias else None
    rows = int(np.prod(case.input_shape[:-1]))
    model = single_op_model(
        "FULLY_CONNECTED", [q(case.input_shape, case.input_scale, case.input_zp), wt, bt],
        [q((rows, case.units), case.output_scale, case.output_zp)],
        fused_activation_function=case.activation)
    mult, shifts = tflm.fully_connected_params(case.input_scale, fscales, case.output_scale)
    lo, hi = tflm.activation_range(case.activation, case.output_scale, case.output_zp)
    for trial in range(3):
        x = rand_int8(rng, case.input_shape)
        got = tflm.fully_connected(x, weights, bias if case.bias else None,
                                   input_zp=case.input_zp, output_zp=case.output_zp,
                                   multipliers=mult, shifts=shifts, act_min=lo, act_max=hi)
        assert_exact(run(model, [x]), got, f"fully connected trial {trial}")


def _accumulator_where_multipliers_disagree(m1: tuple, m2: tuple, real: float) -> int | None:
    """An int32 accumulator whose requantized value differs between two (multiplier,
    shift) pairs, searched near each rounding boundary of the int8 output range."""
    for k in range(-100, 100):
        center = int((k + 0.5) / real)
        acc = np.arange(center - 2000, center + 2000, dtype=np.int64)
        out1 = multiply_by_quantized_multiplier(acc, *m1)
        out2 = multiply_by_quantized_multiplier(acc, *m2)
        differ = np.flatnonzero(out1 != out2)
        if differ.size:
            return int(acc[differ[0]])
    return None


def test_fully_connected_per_tensor_multiplier_in_double() -> None:
    """The per-tensor FULLY_CONNECTED multiplier comes from the double product of the
    scales. Some TFLite Micro sources round input_scale * filter_scale to float32 first;
    a one-weight FC whose bias puts the accumulator where the two multipliers round
    differently shows the interpreter does not."""
    rng = rng_for("fc-float-product")
    sout = 1000.0
    for _ in range(100):
        sin, sw = (float(v) for v in rng.uniform(0.01, 0.03, 2).astype(np.float32))
        by_double = tflm.fully_connected_params(sin, [sw], sout)
        by_float = quantize_multiplier(float(np.float32(sin) * np.float32(sw)) / sout)
        if by_float[0] != by_double[0][0]:
            break
    else:
        raise AssertionError("no scales found where the float32 and double products differ")
    m_double = (int(by_double[0][0]), int(by_double[1][0]))
    acc = _accumulator_where_multipliers_disagree(by_float, m_double, sin * sw / sout)
    assert acc is not None
    bias = np.array([acc], dtype=np.int32)
    weights = np.ones((1, 1), dtype=np.int8)
    model = single_op_model(
        "FULLY_CONNECTED", [q((256, 1), sin, 0), const(weights, "int8", scale=sw, zero_point=0),
                            const(bias, scale=sin * sw, zero_point=0)], [q((256, 1), sout, 0)])
    x = np.arange(-128, 128, dtype=np.int8).reshape(256, 1)
    expected = run(model, [x])
    kw = dict(input_zp=0, output_zp=0)
    assert_exact(expected, tflm.fully_connected(x, weights, bias, multipliers=by_double[0],
                                                shifts=by_double[1], **kw), "double product")
    assert not np.array_equal(expected, tflm.fully_connected(
        x, weights, bias, multipliers=[by_float[0]], shifts=[by_float[1]], **kw))


# ---------------------------------------------------------------------------------------
# AVERAGE_POOL_2D, MAX_POOL_2D.

POOL_CASES = [
    (op, pad, s, f, act)
    for op, pad, s, f, act in itertools.product(
        ["AVERAGE_POOL_2D", "MAX_POOL_2D"], ["SAME", "VALID"], [1, 2], [(2, 2), (3, 2)],
        ACTIVATIONS)
]


@pytest.mark.parametrize(("opcode", "padding", "stride", "filt", "activation"), POOL_CASES)
@pytest.mark.parametrize("zp", [-128, 3, 127])
def test_pooling(opcode: str, padding: str, stride: int, filt: tuple[int, int],
                 activation: str, zp: int) -> None:
    rng = rng_for(f"{opcode}{padding}{stride}{filt}{activation}{zp}")
    shape = (2, 7, 9, 3)
    oh, _ = tflm.compute_padding(7, filt[0], stride, 1, padding)
    ow, _ = tflm.compute_padding(9, filt[1], stride, 1, padding)
    scale = 0.07
    model = single_op_model(
        opcode, [q(shape, scale, zp)], [q((2, oh, ow, 3), scale, zp)], padding=padding,
        stride_h=stride, stride_w=stride, filter_height=filt[0], filter_width=filt[1],
        fused_activation_function=activation)
    lo, hi = tflm.activation_range(activation, scale, zp)
    fn = tflm.average_pool if opcode == "AVERAGE_POOL_2D" else tflm.max_pool
    for trial in range(2):
        x = rand_int8(rng, shape)
        got = fn(x, filter_size=filt, strides=(stride, stride), padding=padding,
                 act_min=lo, act_max=hi)
        assert_exact(run(model, [x]), got, f"{opcode} trial {trial}")


def test_average_pool_rounding_of_negative_ties() -> None:
    """Sums that are exact half-multiples of the window: -3 / 2 -> -2, 3 / 2 -> 2, 0."""
    x = np.array([-1, -2, 1, 2, 0, 0, -1, 0], dtype=np.int8).reshape(1, 1, 8, 1)
    model = single_op_model("AVERAGE_POOL_2D", [q(x.shape, 0.1, 0)], [q((1, 1, 4, 1), 0.1, 0)],
                            padding="VALID", stride_h=1, stride_w=2, filter_height=1,
                            filter_width=2)
    got = tflm.average_pool(x, filter_size=(1, 2), strides=(1, 2), padding="VALID")
    assert got.ravel().tolist() == [-2, 2, 0, -1]   # -1.5, 1.5, 0, -0.5
    assert_exact(run(model, [x]), got, "average pool ties")


# ---------------------------------------------------------------------------------------
# ADD, SUB, MUL.

BINARY_SHAPES = {
    "same": ((2, 3, 5, 4), (2, 3, 5, 4)),
    "channel": ((2, 3, 5, 4), (1, 1, 1, 4)),
    "scalar": ((3, 5), (1,)),
    "both": ((3, 1, 4), (1, 5, 1)),
}
# (scale1, zp1, scale2, zp2, scale_out, zp_out)
BINARY_QUANT = {
    "typical": (0.05, 3, 0.02, -4, 0.1, 1),
    "equal": (0.1, 0, 0.1, 0, 0.1, 0),
    "extreme_zp": (0.03, -128, 0.07, 127, 0.09, -128),
    "extreme_zp2": (0.03, 127, 0.07, -128, 0.09, 127),
    "tiny": (1e-6, 5, 3e-6, -5, 4e-6, 0),
    "large": (80.0, 10, 30.0, -20, 200.0, 7),
    "odd": (0.0123457, 17, 0.0876543, -33, 0.0517, 9),
}


@pytest.mark.parametrize("quant", list(BINARY_QUANT))
@pytest.mark.parametrize("shapes", list(BINARY_SHAPES))
@pytest.mark.parametrize("opcode", ["ADD", "SUB", "MUL"])
def test_binary(opcode: str, shapes: str, quant: str) -> None:
    s1, z1, s2, z2, so, zo = BINARY_QUANT[quant]
    if opcode == "MUL" and quant != "equal":
        so = so * max(s1, s2)     # keep products in range, so outputs vary
    _check_binary(opcode, BINARY_SHAPES[shapes], (s1, z1, s2, z2, so, zo), "NONE")


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("opcode", ["ADD", "SUB", "MUL"])
def test_binary_activations(opcode: str, activation: str) -> None:
    quant = (0.05, 3, 0.02, -4, 0.01 if opcode == "MUL" else 0.02, -20)
    _check_binary(opcode, BINARY_SHAPES["same"], quant, activation)


def _check_binary(opcode: str, shapes: tuple[tuple[int, ...], tuple[int, ...]],
                  quant: tuple, activation: str) -> None:
    s1, z1, s2, z2, so, zo = quant
    rng = rng_for(f"{opcode}{shapes}{quant}{activation}")
    out_shape = np.broadcast_shapes(*shapes)
    model = single_op_model(opcode, [q(shapes[0], s1, z1), q(shapes[1], s2, z2)],
                            [q(out_shape, so, zo)], fused_activation_function=activation)
    make = {"ADD": tflm.add_params, "SUB": tflm.sub_params, "MUL": tflm.mul_params}[opcode]
    fn = {"ADD": tflm.add, "SUB": tflm.sub, "MUL": tflm.mul}[opcode]
    params = make(s1, z1, s2, z2, so, zo, activation)
    for trial in range(2):
        a, b = rand_int8(rng, shapes[0]), rand_int8(rng, shapes[1])
        assert_exact(run(model, [a, b]), fn(a, b, params), f"{opcode} trial {trial}")


def test_sub_multipliers_in_double() -> None:
    """SUB's multipliers are derived in double, like ADD's. Some TFLite Micro sources form
    them in float32 instead; for these scales that gives other multipliers and other
    outputs, and the interpreter does not follow it."""
    s1, z1, s2, z2, so, zo = 0.05787447463754018, 3, 0.01173220977394963, -4, 0.07729040727631813, 1
    f1, f2, fo = np.float32(s1), np.float32(s2), np.float32(so)
    twice = np.float32(2) * max(f1, f2)
    float32_way = [quantize_multiplier(float(np.float32(v))) for v in
                   (f1 / twice, f2 / twice, twice / (np.float32(1 << 20) * fo))]
    params = tflm.sub_params(s1, z1, s2, z2, so, zo)
    alt = replace(params, input1_multiplier=float32_way[0][0], input2_multiplier=float32_way[1][0],
                  output_multiplier=float32_way[2][0])
    assert alt != params
    a = np.repeat(np.arange(-128, 128, dtype=np.int8), 256).reshape(256, 256)
    b = a.T.copy()
    model = single_op_model("SUB", [q(a.shape, s1, z1), q(b.shape, s2, z2)], [q(a.shape, so, zo)])
    expected = run(model, [a, b])
    assert_exact(expected, tflm.sub(a, b, params), "SUB")
    assert not np.array_equal(expected, tflm.sub(a, b, alt))


# ---------------------------------------------------------------------------------------
# MEAN.

MEAN_CASES = [
    ((1, 5, 7, 3), (1, 2), True), ((1, 5, 7, 3), (1, 2), False), ((2, 5, 7, 3), (2,), True),
    ((2, 5, 7, 3), (3,), False), ((2, 5, 7, 3), (0, 1, 2, 3), True), ((4, 6), (-1,), False),
    ((1, 9, 9, 2), (2, 1), True), ((3, 8, 1, 5), (1,), True), ((1, 3, 3, 64), (1, 2), True),
    ((1, 33, 31, 2), (1, 2), False),
]
MEAN_QUANT = [(0.05, 3, 0.05, 3), (0.05, -128, 0.02, 127), (0.1, 10, 0.003, -5),
              (1e-6, 0, 2e-6, 0), (20.0, -7, 60.0, 2)]


@pytest.mark.parametrize(("shape", "axes", "keep"), MEAN_CASES)
@pytest.mark.parametrize("quant", MEAN_QUANT, ids=str)
def test_mean(shape: tuple[int, ...], axes: tuple[int, ...], keep: bool, quant: tuple) -> None:
    si, zi, so, zo = quant
    rng = rng_for(f"mean{shape}{axes}{keep}{quant}")
    x = rand_int8(rng, shape)
    out_shape = np.mean(np.zeros(shape), axis=tuple(axes), keepdims=keep).shape
    model = single_op_model("MEAN", [q(shape, si, zi), const(list(axes))],
                            [q(out_shape or (1,), so, zo)], keep_dims=keep)
    got = tflm.mean(x, axes, keep, tflm.mean_params(si, zi, so, zo))
    expected = run(model, [x])
    assert_exact(expected, got.reshape(expected.shape), "MEAN")


# ---------------------------------------------------------------------------------------
# QUANTIZE, DEQUANTIZE, requantization.

QUANT_PARAMS = [(0.05, 0), (0.05, -128), (0.05, 127), (0.1, 3), (1e-6, -1), (37.5, 9),
                (0.0078125, -128), (3.0, 0)]


@pytest.mark.parametrize(("scale", "zp"), QUANT_PARAMS)
def test_quantize(scale: float, zp: int) -> None:
    rng = rng_for(f"quantize{scale}{zp}")
    span = 300 * scale
    x = rng.uniform(-span, span, size=(4, 50)).astype(np.float32)
    # Exact ties (k + 0.5) * scale where representable: TFLite rounds them away from zero.
    ties = ((np.arange(-20, 20) + 0.5) * np.float32(scale)).astype(np.float32)
    x = np.concatenate([x.ravel(), ties, [0.0, -0.0, span * 10, -span * 10]]).astype(np.float32)
    model = single_op_model("QUANTIZE", [Tensor(x.shape, "float32")], [q(x.shape, scale, zp)])
    assert_exact(run(model, [x]), tflm.quantize(x, scale, zp), "QUANTIZE")


@pytest.mark.parametrize(("scale", "zp"), QUANT_PARAMS)
def test_dequantize(scale: float, zp: int) -> None:
    x = np.arange(-128, 128, dtype=np.int8)
    model = single_op_model("DEQUANTIZE", [q(x.shape, scale, zp)], [Tensor(x.shape, "float32")])
    expected = run(model, [x])
    got = tflm.dequantize(x, scale, zp)
    assert got.dtype == np.float32
    assert np.array_equal(expected.view(np.int32), got.view(np.int32))  # bit patterns


REQUANT = [(0.05, 3, 0.05, 3), (0.05, 3, 0.05, -3), (0.05, 0, 0.1, 0), (0.1, -128, 0.03, 127),
           (0.02, 127, 0.5, -128), (1e-6, 1, 1e-3, 0), (0.5, 0, 1e-3, 0), (0.011, 7, 0.013, -9)]


@pytest.mark.parametrize("quant", REQUANT, ids=str)
def test_requantize(quant: tuple) -> None:
    si, zi, so, zo = quant
    x = np.arange(-128, 128, dtype=np.int8).reshape(2, 128)
    model = single_op_model("QUANTIZE", [q(x.shape, si, zi)], [q(x.shape, so, zo)])
    got = tflm.requantize(x, tflm.requantize_params(si, zi, so, zo))
    assert_exact(run(model, [x]), got, "requantize")


def test_tflm_uses_double_rounding() -> None:
    """TFLite Micro's build is not TFLITE_SINGLE_ROUNDING: on inputs where the two
    MultiplyByQuantizedMultiplier forms disagree, the interpreter gives the double one."""
    from toolchain.quant import fixedpoint as fp

    x = np.arange(-128, 128, dtype=np.int8)
    found = 0
    for si, so in [(0.625, 1.0), (0.3, 0.7), (0.37, 0.9), (0.81, 2.6)]:
        p = tflm.requantize_params(si, 0, so, 0)
        double = fp.multiply_by_quantized_multiplier(x.astype(np.int64), p.multiplier, p.shift)
        single = fp.multiply_by_quantized_multiplier_single_rounding(x.astype(np.int64),
                                                                     p.multiplier, p.shift)
        model = single_op_model("QUANTIZE", [q(x.shape, si, 0)], [q(x.shape, so, 0)])
        expected = run(model, [x])
        assert_exact(expected, np.clip(double, -128, 127).astype(np.int8), "double rounding")
        found += int(np.sum(np.clip(single, -128, 127) != expected))
    assert found > 0, "no input where single and double rounding differ: the test proves nothing"


# ---------------------------------------------------------------------------------------
# Data movement: PAD, CONCATENATION, TRANSPOSE, STRIDED_SLICE, SQUEEZE, RESHAPE.


@pytest.mark.parametrize("zp", [-128, 0, 9, 127])
@pytest.mark.parametrize("paddings", [[[0, 0], [1, 2], [0, 1], [0, 0]],
                                      [[1, 0], [0, 0], [3, 3], [2, 1]]])
def test_pad(paddings: list, zp: int) -> None:
    x = rand_int8(rng_for(f"pad{paddings}{zp}"), (1, 4, 5, 3))
    out_shape = tuple(d + a + b for d, (a, b) in zip(x.shape, paddings))
    model = single_op_model("PAD", [q(x.shape, 0.1, zp), const(paddings)], [q(out_shape, 0.1, zp)])
    assert_exact(run(model, [x]), tflm.pad(x, paddings, zp), "PAD")


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -3])
def test_concatenation(axis: int) -> None:
    rng = rng_for(f"concat{axis}")
    shapes = [(2, 3, 4, 5)] * 3
    shapes = [tuple(d + i if a == axis % 4 else d for a, d in enumerate(s))
              for i, s in enumerate(shapes)]
    xs = [rand_int8(rng, s) for s in shapes]
    out_shape = np.concatenate(xs, axis=axis).shape
    model = single_op_model("CONCATENATION", [q(s, 0.1, -2) for s in shapes],
                            [q(out_shape, 0.1, -2)], axis=axis)
    assert_exact(run(model, xs), tflm.concatenation(xs, axis), "CONCATENATION")


@pytest.mark.parametrize("perm", [(0, 3, 1, 2), (3, 2, 1, 0), (0, 1, 2, 3), (2, 0, 3, 1)])
def test_transpose(perm: tuple[int, ...]) -> None:
    x = rand_int8(rng_for(f"transpose{perm}"), (2, 3, 4, 5))
    out_shape = tuple(x.shape[p] for p in perm)
    model = single_op_model("TRANSPOSE", [q(x.shape, 0.1, 1), const(list(perm))],
                            [q(out_shape, 0.1, 1)])
    assert_exact(run(model, [x]), tflm.transpose(x, perm), "TRANSPOSE")


STRIDED = [
    # begin, end, strides, begin_mask, end_mask, shrink_axis_mask
    ([0, 1, 0, 0], [1, 5, 6, 2], [1, 2, 3, 1], 0, 0, 0),
    ([0, -1, -2, 0], [1, 0, 0, 2], [1, -1, -2, 1], 0, 0, 0),
    ([0, 0, 0, 1], [0, 0, 0, 2], [1, 1, 1, 1], 0b0111, 0b0111, 0),
    ([0, 2, 0, 0], [1, 3, 6, 2], [1, 1, 1, 1], 0, 0, 0b0010),
    ([0, 9, -9, 0], [1, -9, 9, 2], [1, -1, 1, 1], 0, 0, 0),
    ([0, 4, 5, 1], [1, 0, 0, 2], [1, -2, -3, 1], 0, 0b0110, 0b1000),
    ([0, 1, 1, 0], [1, 4, 5, 2], [1, 1, 1, 1], 0b1111, 0, 0b0001),
]


@pytest.mark.parametrize(("begin", "end", "strides", "bmask", "emask", "smask"), STRIDED)
def test_strided_slice(begin: list, end: list, strides: list, bmask: int, emask: int,
                       smask: int) -> None:
    x = rand_int8(rng_for(f"ss{begin}{end}{strides}"), (1, 5, 6, 2))
    got = tflm.strided_slice(x, begin, end, strides, begin_mask=bmask, end_mask=emask,
                             shrink_axis_mask=smask)
    model = single_op_model(
        "STRIDED_SLICE", [q(x.shape, 0.1, 0), const(begin), const(end), const(strides)],
        [q(got.shape, 0.1, 0)], begin_mask=bmask, end_mask=emask, shrink_axis_mask=smask)
    assert_exact(run(model, [x]), got, "STRIDED_SLICE")


def test_squeeze_and_reshape() -> None:
    x = rand_int8(rng_for("squeeze"), (1, 5, 1, 3))
    model = single_op_model("SQUEEZE", [q(x.shape, 0.1, 0)], [q((5, 3), 0.1, 0)],
                            squeeze_dims=[0, 2])
    assert_exact(run(model, [x]), np.squeeze(x, axis=(0, 2)), "SQUEEZE")
    model = single_op_model("RESHAPE", [q(x.shape, 0.1, 0), const([3, 5])], [q((3, 5), 0.1, 0)])
    assert_exact(run(model, [x]), x.reshape(3, 5), "RESHAPE")
    assert_exact(run_single("RESHAPE", [q(x.shape, 0.1, 0)], q((15,), 0.1, 0), [x],
                            new_shape=[15]), x.reshape(15), "RESHAPE new_shape")


# ---------------------------------------------------------------------------------------
# Parameter derivation against hand-worked values.


def test_activation_range() -> None:
    assert tflm.activation_range("NONE", 0.1, 5) == (-128, 127)
    assert tflm.activation_range("RELU", 0.1, 5) == (5, 127)
    assert tflm.activation_range("RELU6", 0.1, -128) == (-128, -68)
    assert tflm.activation_range("RELU6", 0.01, 0) == (0, 127)
    assert tflm.activation_range("RELU_N1_TO_1", 0.1, 0) == (-10, 10)
    # 1 / 0.4 = 2.5 exactly in float32: ties away from zero.
    assert tflm.activation_range("RELU_N1_TO_1", 0.4, 0) == (-3, 3)
    with pytest.raises(ValueError, match="unknown fused activation"):
        tflm.activation_range("TANH", 0.1, 0)


def test_compute_padding() -> None:
    assert tflm.compute_padding(7, 3, 2, 1, "SAME") == (4, 1)
    assert tflm.compute_padding(8, 3, 2, 1, "SAME") == (4, 0)     # total 1: all after
    assert tflm.compute_padding(7, 3, 1, 2, "VALID") == (3, 0)
    assert tflm.compute_padding(9, 3, 1, 2, "SAME") == (9, 2)
    with pytest.raises(ValueError, match="SAME or VALID"):
        tflm.compute_padding(7, 3, 1, 1, "FULL")


@pytest.mark.parametrize("scale", [0.10256410390138626, 0.11214953660964966,
                                   0.07547169923782349])
def test_activation_range_bounds_in_float32(scale: float) -> None:
    """The fused RELU6 bound 6 / scale is divided in float32: for these scales double
    division rounds to another integer, and TFLite Micro's clamp follows float32."""
    lo, hi = tflm.activation_range("RELU6", scale, -128)
    assert hi != -128 + int(round_half_away(6.0 / float(np.float32(scale))))
    a = np.full((4, 4), 127, dtype=np.int8)
    model = single_op_model("ADD", [q(a.shape, 0.05, 0), q(a.shape, 0.05, 0)],
                            [q(a.shape, scale, -128)], fused_activation_function="RELU6")
    assert run(model, [a, a]).max() == hi


def test_quantize_divides_in_float32() -> None:
    """QUANTIZE divides the float32 value by the float32 scale: values next to exact
    ties, where the float32 quotient rounds to the tie and the exact one does not."""
    rng = rng_for("quantize-float32")
    values, scales = [], []
    while len(values) < 32:
        s = np.float32(rng.uniform(0.01, 0.2))
        tie = np.float32((int(rng.integers(-100, 100)) + 0.5) * float(s))
        for v in (tie, np.nextafter(tie, np.float32(-1e9)), np.nextafter(tie, np.float32(1e9))):
            if round_half_away(v / s) != round_half_away(float(v) / float(s)):
                values.append(v)
                scales.append(s)
    for v, s in zip(values, scales):
        x = np.array([v], dtype=np.float32)
        model = single_op_model("QUANTIZE", [Tensor((1,), "float32")], [q((1,), float(s), 0)])
        assert_exact(run(model, [x]), tflm.quantize(x, float(s), 0), f"QUANTIZE {v} / {s}")
