"""Single-operator int8 .tflite models, one per op and corner, through the whole of
minirt — the importer, the numpy reference, and the firmware under QEMU on cortex-m4 and
x86-64 — against TFLite Micro's interpreter on fresh random inputs, exactly.

The corners: per-tensor and per-channel weights, SAME and VALID padding, strides,
dilation, depth multipliers, every fused activation, extreme zero points (-128, 127)
and scales, broadcasting, and each element-wise function over all 256 int8 inputs.
(tests/quant proves toolchain/quant's arithmetic on many more cases; this proves the
importer and the compiled kernels use it right.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

from tflite_models import Tensor, run_tflm, single_op_model  # noqa: E402

from toolchain.emu.run import run_image  # noqa: E402
from toolchain.frontend.tflite.importer import import_model  # noqa: E402
from toolchain.frontend.tflite.reader import read_model  # noqa: E402
from toolchain.module import read_module  # noqa: E402
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402
from toolchain.target import load_board  # noqa: E402

Case = tuple[bytes, list[np.ndarray]]  # a model and its inputs


def q(shape, scale: float = 0.05, zp: int = -3) -> Tensor:
    return Tensor(shape, "int8", scale=scale, zero_point=zp)


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, name)))


def _int8(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(-128, 128, tuple(shape)).astype(np.int8)


def conv(name: str, *, depthwise: bool = False, per_channel: bool = True,
         padding: str = "SAME", stride: int = 1, dilation: int = 1, mult: int = 1,
         act: str = "NONE", zps: tuple[int, int] = (-3, 5),
         scales: tuple[float, float] = (0.05, 0.1)) -> Case:
    rng = _rng(name)
    h, w, cin, cout = 9, 7, 3, 4
    k = 3
    cout = cin * mult if depthwise else cout
    wshape = (1, k, k, cout) if depthwise else (cout, k, k, cin)
    wscale = list(rng.uniform(0.002, 0.02, cout)) if per_channel else [0.01]
    weights = Tensor(wshape, "int8", scale=wscale, zero_point=[0] * len(wscale),
                     quantized_dimension=3 if depthwise else 0,
                     data=rng.integers(-127, 128, wshape))
    bias = Tensor((cout,), "int32", scale=[scales[0] * s for s in np.broadcast_to(wscale, cout)],
                  zero_point=[0] * cout, data=rng.integers(-5000, 5000, cout))
    eff = (k - 1) * dilation + 1
    oh, ow = ((h + stride - 1) // stride, (w + stride - 1) // stride) if padding == "SAME" \
        else ((h - eff) // stride + 1, (w - eff) // stride + 1)
    options = dict(padding=padding, stride_h=stride, stride_w=stride,
                   dilation_h_factor=dilation, dilation_w_factor=dilation,
                   fused_activation_function=act)
    if depthwise:
        options["depth_multiplier"] = mult
    model = single_op_model("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D",
                            [q((1, h, w, cin), scales[0], zps[0]), weights, bias],
                            [q((1, oh, ow, cout), scales[1], zps[1])], **options)
    return model, [_int8(rng, (1, h, w, cin))]


def fully_connected(name: str, per_channel: bool, bias: bool = True,
                    keep: bool = False, act: str = "NONE") -> Case:
    rng = _rng(name)
    units, depth = 6, 20
    wscale = list(rng.uniform(0.002, 0.02, units)) if per_channel else [0.01]
    weights = Tensor((units, depth), "int8", scale=wscale, zero_point=[0] * len(wscale),
                     data=rng.integers(-127, 128, (units, depth)))
    b = Tensor((units,), "int32", scale=[0.3 * s for s in np.broadcast_to(wscale, units)],
               zero_point=[0] * units, data=rng.integers(-9000, 9000, units)) if bias else None
    x_shape = (2, 2, depth) if keep else (2, depth)
    y_shape = (2, 2, units) if keep else (2, units)
    model = single_op_model("FULLY_CONNECTED", [q(x_shape, 0.3, 11), weights, b],
                            [q(y_shape, 0.25, -1)], keep_num_dims=keep,
                            fused_activation_function=act)
    return model, [_int8(rng, x_shape)]


def pool(name: str, op: str, padding: str, stride: int, act: str = "NONE",
         zp: int = -3) -> Case:
    rng = _rng(name)
    shape = (1, 9, 7, 5)
    oh = (9 + stride - 1) // stride if padding == "SAME" else (9 - 3) // stride + 1
    ow = (7 + stride - 1) // stride if padding == "SAME" else (7 - 2) // stride + 1
    model = single_op_model(op, [q(shape, 0.05, zp)], [q((1, oh, ow, 5), 0.05, zp)],
                            padding=padding, stride_h=stride, stride_w=stride, filter_height=3,
                            filter_width=2, fused_activation_function=act)
    return model, [_int8(rng, shape)]


def binary(name: str, op: str, shapes, act: str = "NONE",
           quant=((0.07, -3), (0.11, 25), (0.15, 4))) -> Case:
    rng = _rng(name)
    (s1, z1), (s2, z2), (so, zo) = quant
    out = tuple(np.broadcast_shapes(*shapes))
    model = single_op_model(op, [q(shapes[0], s1, z1), q(shapes[1], s2, z2)], [q(out, so, zo)],
                            fused_activation_function=act)
    return model, [_int8(rng, shapes[0]), _int8(rng, shapes[1])]


def unary(op: str, out: tuple[float, int], inp: tuple[float, int] = (0.1, -5),
          **options) -> Case:
    """Every int8 value once."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    model = single_op_model(op, [q(x.shape, *inp)], [q(x.shape, *out)], **options)
    return model, [x]


def softmax(name: str, scale: float, beta: float = 1.0) -> Case:
    rng = _rng(name)
    model = single_op_model("SOFTMAX", [q((3, 10), scale, 7)], [q((3, 10), 1 / 256, -128)],
                            beta=beta)
    return model, [_int8(rng, (3, 10))]


def mean(name: str, axes, keep: bool) -> Case:
    rng = _rng(name)
    shape = (1, 5, 4, 6)
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else tuple(
        d for i, d in enumerate(shape) if i not in axes)
    axis = Tensor((len(axes),), "int32", data=np.array(axes))
    model = single_op_model("MEAN", [q(shape, 0.12, -9), axis], [q(out, 0.05, 6)],
                            keep_dims=keep)
    return model, [_int8(rng, shape)]


def quantize_float() -> Case:
    x = (np.random.default_rng(1).standard_normal((4, 8)) * 3).astype(np.float32)
    x[0, :4] = [0.25, -0.25, 0.75, -1e6]
    model = single_op_model("QUANTIZE", [Tensor((4, 8), "float32")], [q((4, 8), 0.5, -2)])
    return model, [x]


def dequantize() -> Case:
    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    model = single_op_model("DEQUANTIZE", [q(x.shape, 0.0137, 21)], [Tensor(x.shape, "float32")])
    return model, [x]


CASES: dict[str, Callable[[], Case]] = {
    "conv-per-channel-same": lambda: conv("c1"),
    "conv-per-tensor-valid-stride2": lambda: conv("c2", per_channel=False, padding="VALID",
                                                  stride=2),
    "conv-dilation2-relu": lambda: conv("c3", dilation=2, act="RELU"),
    "conv-relu6-extreme-zps": lambda: conv("c4", act="RELU6", zps=(-128, 127)),
    "conv-relu-n1-to-1-tiny-scales": lambda: conv("c5", act="RELU_N1_TO_1",
                                                  scales=(1e-3, 2e-3), zps=(127, -128)),
    "conv-large-scales": lambda: conv("c6", scales=(4.0, 30.0), zps=(0, 0)),
    "depthwise-same": lambda: conv("d1", depthwise=True),
    "depthwise-multiplier2-valid-stride2": lambda: conv("d2", depthwise=True, mult=2,
                                                        padding="VALID", stride=2),
    "depthwise-per-tensor-relu": lambda: conv("d3", depthwise=True, per_channel=False,
                                              act="RELU"),
    "fc-per-tensor": lambda: fully_connected("f1", per_channel=False),
    "fc-per-channel-relu": lambda: fully_connected("f2", per_channel=True, act="RELU"),
    "fc-no-bias-keep-dims": lambda: fully_connected("f3", per_channel=True, bias=False,
                                                    keep=True),
    "avgpool-same-stride2": lambda: pool("p1", "AVERAGE_POOL_2D", "SAME", 2),
    "avgpool-valid-relu6": lambda: pool("p2", "AVERAGE_POOL_2D", "VALID", 1, "RELU6", 127),
    "maxpool-same-relu": lambda: pool("p3", "MAX_POOL_2D", "SAME", 2, "RELU", -128),
    "add-broadcast": lambda: binary("a1", "ADD", ((2, 3, 4), (4,))),
    "add-relu6": lambda: binary("a2", "ADD", ((2, 3, 4), (2, 3, 4)), "RELU6"),
    "sub-broadcast": lambda: binary("s1", "SUB", ((1, 4), (3, 1))),
    "mul-relu": lambda: binary("m1", "MUL", ((3, 5), (5,)), "RELU",
                               ((0.02, 7), (0.03, -128), (0.004, -5))),
    "softmax": lambda: softmax("x1", 0.1),
    "softmax-small-scale-beta": lambda: softmax("x2", 0.02, beta=2.0),
    "logistic": lambda: unary("LOGISTIC", (1 / 256, -128)),
    "tanh": lambda: unary("TANH", (1 / 128, 0), (0.05, 10)),
    "relu": lambda: unary("RELU", (0.08, -128)),
    "relu6": lambda: unary("RELU6", (0.1, -5)),
    "hard-swish": lambda: unary("HARD_SWISH", (0.06, -100)),
    "requantize": lambda: unary("QUANTIZE", (0.3, 11)),
    "mean-spatial": lambda: mean("n1", (1, 2), True),
    "mean-last": lambda: mean("n2", (3,), False),
    "quantize-float": quantize_float,
    "dequantize": dequantize,
}


def _tflm(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    outputs, _ = run_tflm(model, inputs)
    return outputs[0]


@pytest.mark.parametrize("name", CASES)
def test_reference_matches_tflite_micro(name: str) -> None:
    model, inputs = CASES[name]()
    graph = import_model(read_model(model))
    want = _tflm(model, inputs)
    got = run_graph(graph, inputs)[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
@pytest.mark.parametrize("name", CASES)
def test_firmware_matches_tflite_micro(name: str, board: str, tmp_path: Path) -> None:
    model, inputs = CASES[name]()
    want = _tflm(model, inputs)
    result = compile_graph(import_model(read_model(model)), load_board(board),
                           tmp_path / "fw", log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, inputs),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    got = decode_outputs(module.outputs, run.outputs)[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)
