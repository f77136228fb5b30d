"""Float .tflite operators, one single-op model per op and attribute corner, against
TFLite Micro's own interpreter (which runs float models too).

Tolerance: numpy.isclose(rtol=1e-4, atol=1e-5), the issue's bound for float models
against TFLite: TFLite sums in another order than the reference (which accumulates in
float64) and uses its own exp / tanh.
"""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Tensor, run_tflm, single_op_model

from toolchain.frontend.tflite import import_model, read_model
from toolchain.reference import run_graph

RTOL, ATOL = 1e-4, 1e-5
ACTIVATIONS = ["NONE", "RELU", "RELU_N1_TO_1", "RELU6"]


def f32(shape: tuple[int, ...], data: np.ndarray | None = None) -> Tensor:
    return Tensor(shape, "float32", data=data)


def i32(values: list) -> Tensor:
    a = np.asarray(values, dtype=np.int32)
    return Tensor(a.shape, "int32", data=a)


def randn(shape: tuple[int, ...], seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def check(opcode: str, inputs: list, outputs: list, arrays: list[np.ndarray],
          **options) -> list[np.ndarray]:
    """Builds the model, runs it in TFLite Micro and in our reference, compares them."""
    model = single_op_model(opcode, inputs, outputs, **options)
    want, _ = run_tflm(model, arrays)
    graph = import_model(read_model(model))
    got = run_graph(graph, arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return got


def out_size(size: int, window: int, stride: int, dilation: int, padding: str) -> int:
    effective = (window - 1) * dilation + 1
    return -(-size // stride) if padding == "SAME" else -(-(size - effective + 1) // stride)


# ------------------------------------------------------------------ CONV_2D


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("dilation", [1, 2])
def test_conv_2d_windows(padding: str, stride: int, dilation: int) -> None:
    h, w, c, o, k = 9, 8, 3, 4, 3
    oh, ow = (out_size(s, k, stride, dilation, padding) for s in (h, w))
    x, wt = f32((1, h, w, c)), f32((o, k, k, c), randn((o, k, k, c), 1))
    b, y = f32((o,), randn((o,), 2)), f32((1, oh, ow, o))
    check("CONV_2D", [x, wt, b], [y], [randn((1, h, w, c))], padding=padding,
          stride_h=stride, stride_w=stride, dilation_h_factor=dilation,
          dilation_w_factor=dilation, fused_activation_function="RELU6")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_conv_2d_activations(activation: str) -> None:
    x, wt = f32((2, 5, 4, 2)), f32((3, 2, 3, 2), randn((3, 2, 3, 2), 3))
    b, y = f32((3,), randn((3,), 4)), f32((2, 3, 2, 3))
    check("CONV_2D", [x, wt, b], [y], [randn((2, 5, 4, 2), 5, 2.0)], padding="SAME",
          stride_h=2, stride_w=2, fused_activation_function=activation)


def test_conv_2d_no_bias_asymmetric_strides() -> None:
    x, wt, y = f32((1, 7, 6, 2)), f32((5, 1, 3, 2), randn((5, 1, 3, 2), 6)), f32((1, 7, 3, 5))
    check("CONV_2D", [x, wt, None], [y], [randn((1, 7, 6, 2), 7)], padding="SAME",
          stride_h=1, stride_w=2)


# ------------------------------------------------------------------ DEPTHWISE_CONV_2D


@pytest.mark.parametrize("multiplier", [1, 2])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2)])
def test_depthwise_conv_2d(multiplier: int, padding: str, stride: int, dilation: int) -> None:
    h, w, c, k = 8, 7, 3, 3
    oh, ow = (out_size(s, k, stride, dilation, padding) for s in (h, w))
    x, wt = f32((1, h, w, c)), f32((1, k, k, c * multiplier), randn((1, k, k, c * multiplier), 8))
    b, y = f32((c * multiplier,), randn((c * multiplier,), 9)), f32((1, oh, ow, c * multiplier))
    check("DEPTHWISE_CONV_2D", [x, wt, b], [y], [randn((1, h, w, c), 10)], padding=padding,
          stride_h=stride, stride_w=stride, dilation_h_factor=dilation,
          dilation_w_factor=dilation, depth_multiplier=multiplier,
          fused_activation_function="RELU")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_depthwise_conv_2d_activations(activation: str) -> None:
    x, wt = f32((1, 4, 4, 2)), f32((1, 3, 3, 2), randn((1, 3, 3, 2), 11))
    b, y = f32((2,), randn((2,), 12)), f32((1, 4, 4, 2))
    check("DEPTHWISE_CONV_2D", [x, wt, b], [y], [randn((1, 4, 4, 2), 13, 2.0)], padding="SAME",
          stride_h=1, stride_w=1, depth_multiplier=1, fused_activation_function=activation)


# ------------------------------------------------------------------ FULLY_CONNECTED


@pytest.mark.parametrize("in_shape,keep,out_shape", [
    ((2, 6), False, (2, 4)),
    ((2, 3, 6), True, (2, 3, 4)),
    ((2, 3, 6), False, (6, 4)),
    ((1, 2, 3), False, (1, 4)),  # 6 values read as one row of 6
])
def test_fully_connected(in_shape: tuple, keep: bool, out_shape: tuple) -> None:
    x, wt = f32(in_shape), f32((4, 6), randn((4, 6), 14))
    b, y = f32((4,), randn((4,), 15)), f32(out_shape)
    check("FULLY_CONNECTED", [x, wt, b], [y], [randn(in_shape, 16)], keep_num_dims=keep,
          fused_activation_function="RELU")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_fully_connected_no_bias(activation: str) -> None:
    x, wt, y = f32((3, 5)), f32((2, 5), randn((2, 5), 17)), f32((3, 2))
    check("FULLY_CONNECTED", [x, wt, None], [y], [randn((3, 5), 18, 2.0)],
          fused_activation_function=activation)


# ------------------------------------------------------------------ pooling


POOLS = [((3, 3), 2, "SAME"), ((2, 2), 2, "VALID"), ((3, 2), 1, "SAME"), ((4, 4), 3, "SAME"),
         ((2, 3), (1, 2), "VALID")]


@pytest.mark.parametrize("opcode", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("window,stride,padding", POOLS)
def test_pools(opcode: str, window: tuple, stride, padding: str) -> None:
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    h, w, c = 7, 6, 3
    oh = out_size(h, window[0], sh, 1, padding)
    ow = out_size(w, window[1], sw, 1, padding)
    check(opcode, [f32((2, h, w, c))], [f32((2, oh, ow, c))], [randn((2, h, w, c), 19)],
          padding=padding, stride_h=sh, stride_w=sw, filter_height=window[0],
          filter_width=window[1], fused_activation_function="RELU_N1_TO_1")


@pytest.mark.parametrize("opcode", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_pool_activations(opcode: str, activation: str) -> None:
    check(opcode, [f32((1, 5, 5, 2))], [f32((1, 3, 3, 2))], [randn((1, 5, 5, 2), 20, 3.0)],
          padding="SAME", stride_h=2, stride_w=2, filter_height=3, filter_width=3,
          fused_activation_function=activation)


def test_average_pool_excludes_padding() -> None:
    """TFLite averages over the window's input elements only: a corner of ones stays 1."""
    ones = np.ones((1, 4, 4, 1), np.float32)
    got = check("AVERAGE_POOL_2D", [f32((1, 4, 4, 1))], [f32((1, 4, 4, 1))], [ones],
                padding="SAME", stride_h=1, stride_w=1, filter_height=3, filter_width=3)
    np.testing.assert_array_equal(got[0], ones)


# ------------------------------------------------------------------ binary ops


@pytest.mark.parametrize("opcode", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("a,b", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)),
                                 ((2, 1, 4), (1, 3, 1)), ((1,), (2, 2))])
def test_binary_broadcasting(opcode: str, a: tuple, b: tuple) -> None:
    out = np.broadcast_shapes(a, b)
    check(opcode, [f32(a), f32(b)], [f32(out)], [randn(a, 21), randn(b, 22)],
          fused_activation_function="NONE")


@pytest.mark.parametrize("opcode", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_binary_activations(opcode: str, activation: str) -> None:
    check(opcode, [f32((3, 4)), f32((3, 4))], [f32((3, 4))],
          [randn((3, 4), 23, 2.0), randn((3, 4), 24, 2.0)],
          fused_activation_function=activation)


def test_binary_with_a_constant_operand() -> None:
    c = f32((4,), randn((4,), 25))
    check("ADD", [f32((2, 4)), c], [f32((2, 4))], [randn((2, 4), 26)])


# ------------------------------------------------------------------ unary ops


@pytest.mark.parametrize("opcode", ["LOGISTIC", "TANH", "RELU", "RELU6", "HARD_SWISH"])
def test_unary(opcode: str) -> None:
    x = np.linspace(-9, 9, 64, dtype=np.float32).reshape(2, 32)
    check(opcode, [f32((2, 32))], [f32((2, 32))], [x])


def test_relu_n1_to_1() -> None:
    """TFLite Micro has no RELU_N1_TO_1 kernel; TFLite's is a clamp to [-1, 1]."""
    x = np.linspace(-3, 3, 25, dtype=np.float32).reshape(5, 5)
    graph = import_model(read_model(single_op_model("RELU_N1_TO_1", [f32((5, 5))],
                                                    [f32((5, 5))])))
    np.testing.assert_array_equal(run_graph(graph, [x])[0], np.clip(x, -1, 1))


@pytest.mark.parametrize("shape", [(2, 5), (1, 2, 3, 7)])
@pytest.mark.parametrize("beta", [1.0, 0.5, 2.5])
def test_softmax(shape: tuple, beta: float) -> None:
    check("SOFTMAX", [f32(shape)], [f32(shape)], [randn(shape, 27, 3.0)], beta=beta)


# ------------------------------------------------------------------ reductions and shapes


@pytest.mark.parametrize("axes,keep", [([1, 2], True), ([1, 2], False), ([-1], False),
                                       ([0, 3, -1], True)])
def test_mean(axes: list, keep: bool) -> None:
    shape = (2, 3, 4, 5)
    norm = {a % 4 for a in axes}
    out = tuple(1 if i in norm else d for i, d in enumerate(shape) if keep or i not in norm)
    check("MEAN", [f32(shape), i32(axes)], [f32(out)], [randn(shape, 28)], keep_dims=keep)


def test_reshape() -> None:
    check("RESHAPE", [f32((2, 3, 4)), i32([6, -1])], [f32((6, 4))], [randn((2, 3, 4), 29)],
          new_shape=[6, 4])


@pytest.mark.parametrize("dims,out", [([0], (3, 1, 2)), ([], (3, 2)), ([-2, 0], (3, 2))])
def test_squeeze(dims: list, out: tuple) -> None:
    check("SQUEEZE", [f32((1, 3, 1, 2))], [f32(out)], [randn((1, 3, 1, 2), 30)],
          squeeze_dims=dims)


def test_pad() -> None:
    pads = [[0, 0], [1, 2], [2, 0], [0, 1]]
    check("PAD", [f32((1, 3, 3, 2)), i32(pads)], [f32((1, 6, 5, 3))], [randn((1, 3, 3, 2), 31)])


@pytest.mark.parametrize("axis,shapes", [(-1, [(2, 3, 1), (2, 3, 4), (2, 3, 2)]),
                                         (1, [(2, 1, 3), (2, 2, 3)]), (0, [(1, 4), (2, 4)])])
def test_concatenation(axis: int, shapes: list) -> None:
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    check("CONCATENATION", [f32(s) for s in shapes], [f32(tuple(out))],
          [randn(s, 32 + i) for i, s in enumerate(shapes)], axis=axis,
          fused_activation_function="NONE")


@pytest.mark.parametrize("perm", [[0, 3, 1, 2], [3, 2, 1, 0], [0, 1, 2, 3]])
def test_transpose(perm: list) -> None:
    shape = (2, 3, 4, 5)
    check("TRANSPOSE", [f32(shape), i32(perm)], [f32(tuple(shape[p] for p in perm))],
          [randn(shape, 36)])


STRIDED = [
    # begin, end, strides, options, output shape (input 4x6x5)
    ([0, 1, 0], [4, 5, 5], [1, 2, 1], {}, (4, 2, 5)),
    ([1, -1, 4], [3, 0, 0], [1, -1, -2], {}, (2, 5, 2)),
    ([0, 0, 0], [0, 0, 0], [1, 1, 1], {"begin_mask": 7, "end_mask": 7}, (4, 6, 5)),
    ([2, 0, 1], [3, 6, 4], [1, 1, 1], {"shrink_axis_mask": 1}, (6, 3)),
    ([-1, 0, 0], [0, 3, 5], [1, 1, 2], {"shrink_axis_mask": 1, "end_mask": 4}, (3, 3)),
    ([3, 5, 4], [0, 0, 0], [-1, -2, -3], {"end_mask": 7}, (4, 3, 2)),
    ([0, 2, 0], [4, 100, -100], [2, 1, -1], {}, (2, 4, 1)),  # clamped bounds
]


@pytest.mark.parametrize("begin,end,strides,options,out", STRIDED)
def test_strided_slice(begin: list, end: list, strides: list, options: dict, out: tuple) -> None:
    shape = (4, 6, 5)
    x = randn(shape, 37)
    got = check("STRIDED_SLICE", [f32(shape), i32(begin), i32(end), i32(strides)], [f32(out)],
                [x], **options)
    assert got[0].shape == out


# ------------------------------------------------------------------ DEQUANTIZE


def test_dequantize_float16(monkeypatch: pytest.MonkeyPatch) -> None:
    """float16 weights with a DEQUANTIZE in front of a float op (TFLite's fp16 models).
    TFLite Micro has no float16 kernels; the expectation is exact: widening is exact."""
    import tflite
    import tflite_models
    from tflite_models import Op, build_model

    monkeypatch.setitem(tflite_models.TENSOR_TYPES, "float16", tflite.TensorType.FLOAT16)
    w16 = randn((4,), 38).astype(np.float16)
    w = Tensor((4,), "float16", data=w16)
    x, w32, y = f32((2, 4)), f32((4,)), f32((2, 4))
    model = build_model([Op("DEQUANTIZE", [w], [w32]), Op("ADD", [x, w32], [y])], [x], [y])
    graph = import_model(read_model(model))
    xs = randn((2, 4), 39)
    np.testing.assert_array_equal(run_graph(graph, [xs])[0], xs + w16.astype(np.float32))


def test_conv_2d_groups() -> None:
    """A filter with half the input's channels: a grouped convolution (TFLite's CONV_2D
    with groups = input channels / filter channels)."""
    x, wt = f32((1, 5, 5, 4)), f32((6, 3, 3, 2), randn((6, 3, 3, 2), 40))
    b, y = f32((6,), randn((6,), 41)), f32((1, 5, 5, 6))
    check("CONV_2D", [x, wt, b], [y], [randn((1, 5, 5, 4), 42)], padding="SAME",
          stride_h=1, stride_w=1)
