"""Every (operator, element type) TFLite Micro's kernels take (tflm_type_matrix.py):
a one-operator model of that type must run in TFLite Micro's interpreter (so the table
claims nothing the kernel refuses), and minirt must import it and compute what the
interpreter computes — or, for a pair in REFUSED, fail with its one-line error.

The models are small and their inputs positive and in range (a type-acceptance check:
the arithmetic of each new form is tested on full-range values in
test_tflite_more_types.py). Integer and bool outputs must match exactly; float outputs
as numpy.isclose(rtol=1e-5, atol=1e-5): minirt's exp / log / sin / ... come from its own
math library, not the C library TFLite Micro calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tflite_models import OPTIONS_TABLE, Tensor, run_tflm, single_op_model
from tflm_type_matrix import (
    I4W,
    REFUSED,
    TFLM_REGISTERED,
    TFLM_TYPES,
    UNCHECKED,
)

from toolchain.frontend.tflite import TFLiteError, import_model, read_model
from toolchain.reference import run_graph

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

for _op, _table in {
    "ABS": None, "RSQRT": None, "NEG": None, "SQRT": None, "SQUARE": None, "LOG": None,
    "COS": None, "CEIL": None, "FLOOR": None, "ROUND": None, "LOG_SOFTMAX": None,
    "L2_NORMALIZATION": "L2NormOptions", "LOGICAL_NOT": None, "ZEROS_LIKE": None,
    "SQUARED_DIFFERENCE": None, "FLOOR_DIV": None, "FLOOR_MOD": None, "EQUAL": None,
    "NOT_EQUAL": None, "GREATER": None, "GREATER_EQUAL": None, "LESS": None,
    "LESS_EQUAL": None, "LOGICAL_AND": None, "LOGICAL_OR": None, "PRELU": None,
    "ADD_N": None, "SELECT_V2": None, "L2_POOL_2D": "Pool2DOptions",
    "BATCH_MATMUL": "BatchMatMulOptions", "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions", "REDUCE_ALL": "ReducerOptions",
    "ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions", "CUMSUM": "CumsumOptions",
    "EXPAND_DIMS": None, "PACK": "PackOptions", "UNPACK": "UnpackOptions",
    "SPLIT": "SplitOptions", "SPLIT_V": "SplitVOptions", "PADV2": None,
    "MIRROR_PAD": "MirrorPadOptions", "SLICE": None, "REVERSE_V2": None,
    "GATHER": "GatherOptions", "GATHER_ND": None, "EMBEDDING_LOOKUP": None,
    "DYNAMIC_UPDATE_SLICE": None, "BROADCAST_TO": None, "BROADCAST_ARGS": None,
    "SHAPE": "ShapeOptions", "FILL": None, "DEPTH_TO_SPACE": "DepthToSpaceOptions",
    "SPACE_TO_DEPTH": "SpaceToDepthOptions", "SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions",
    "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
}.items():
    OPTIONS_TABLE.setdefault(_op, _table)

# Operators whose models need more than a template (state, recurrence, subgraphs): their
# own tests compare them with TFLite Micro type by type.
OWN_TESTS = {
    "SVDF": "test_tflite_svdf.py",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "test_tflite_lstm.py, test_tflm_recurrent_models.py",
    **{op: "test_tflite_state.py, test_variable_state.py"
       for op in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")},
    "IF": "test_tflite_control_flow.py", "WHILE": "test_tflite_control_flow.py",
}

# The quantization each quantized type gets by default: int16 symmetric (16x8).
_QUANT = {"int8": (0.05, 3), "int16": (0.001, 0), "uint8": (0.05, 130)}
# Outputs whose scale the kernel fixes (LOGISTIC, TANH, SOFTMAX, L2_NORMALIZATION).
_FIXED_OUT = {
    ("LOGISTIC", "int8"): (1 / 256, -128), ("LOGISTIC", "int16"): (1 / 32768, 0),
    ("TANH", "int8"): (1 / 128, 0), ("TANH", "int16"): (1 / 32768, 0),
    ("SOFTMAX", "int8"): (1 / 256, -128), ("SOFTMAX", "int16"): (1 / 32768, 0),
    ("L2_NORMALIZATION", "int8"): (1 / 128, 0),
}


def act(shape: tuple[int, ...], t: str, quant: tuple[float, int] | None = None) -> Tensor:
    """An activation of type t, quantized when t is a quantized integer type."""
    if t in _QUANT:
        scale, zp = quant or _QUANT[t]
        return Tensor(shape, t, scale=scale, zero_point=zp)
    return Tensor(shape, t)


def const(data: Any, t: str = "int32", quant: tuple[Any, Any] | None = None,
          **extra: Any) -> Tensor:
    arr = np.asarray(data)
    if quant is None:
        return Tensor(arr.shape, t, data=arr)
    return Tensor(arr.shape, t, scale=quant[0], zero_point=quant[1], data=arr, **extra)


def values(shape: tuple[int, ...], t: str, rng: np.random.Generator) -> np.ndarray:
    """Positive, in-range values of type t (real values above 0 for quantized types)."""
    if t == "float32":
        return rng.uniform(0.5, 2.0, shape).astype(np.float32)
    if t == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    low, high = {"int8": (10, 128), "uint8": (140, 256), "int16": (100, 3000),
                 "int32": (1, 6), "int64": (1, 6), "uint32": (1, 6)}[t]
    return rng.integers(low, high, shape).astype(t)


Case = tuple[list, list, dict]
S = (2, 3, 4)


def _unary(op: str, t: str, **options: Any) -> Case:
    out = act(S, t, _FIXED_OUT.get((op, t)))
    if op == "LOG_SOFTMAX" and t == "int8":
        out = act(S, t, (16 / 256, 127))
    return [act(S, t)], [out], options


def _binary(op: str, t: str) -> Case:
    out = "bool" if op in ("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS",
                           "LESS_EQUAL") else t
    options = {"fused_activation_function": "NONE"} if op in ("ADD", "SUB", "MUL",
                                                               "DIV") else {}
    return [act(S, t), act(S, t, (0.07, -2) if t == "int8" else None)], \
        [act(S, out, (0.1, 1) if out == "int8" else (0.004, 0) if out == "int16" else None)], \
        options


def _bias(t: str, n: int, scales: list[float]) -> Tensor:
    if t == "float32":
        return const(np.linspace(-1, 1, n), "float32")
    kind = "int64" if t == "int16" else "int32"
    return const(np.arange(n) * 7 - 5, kind, ([s * _QUANT[t][0] for s in scales], [0] * n))


def _filter(t: str, shape: tuple[int, ...], axis: int) -> tuple[Tensor, list[float]]:
    rng = np.random.default_rng(4)
    if t == "float32":
        return const(rng.normal(size=shape), "float32"), []
    scales = [0.01 + 0.002 * k for k in range(shape[axis])]
    if t == I4W and len(shape) == 2:  # TFLite Micro's FC takes INT4 per tensor only
        return const(rng.integers(-8, 8, shape), "int4", (scales[0], 0)), [scales[0]] * shape[0]
    if t == I4W:
        return const(rng.integers(-8, 8, shape), "int4", (scales, [0] * shape[axis]),
                     quantized_dimension=axis), scales
    return const(rng.integers(-127, 128, shape), "int8", (scales, [0] * shape[axis]),
                 quantized_dimension=axis), scales


def _layer(op: str, t: str) -> Case:
    weights, t = t, "int8" if t == I4W else t
    if op == "CONV_2D":
        w, s = _filter(weights, (3, 3, 3, 2), 0)
        return [act((1, 5, 5, 2), t), w, _bias(t, 3, s)], [act((1, 5, 5, 3), t, (0.2, 0))], \
            dict(padding="SAME", stride_h=1, stride_w=1, dilation_h_factor=1,
                 dilation_w_factor=1, fused_activation_function="NONE")
    if op == "DEPTHWISE_CONV_2D":
        w, s = _filter(weights, (1, 3, 3, 4), 3)
        return [act((1, 5, 5, 2), t), w, _bias(t, 4, s)], [act((1, 5, 5, 4), t, (0.2, 0))], \
            dict(padding="SAME", stride_h=1, stride_w=1, dilation_h_factor=1,
                 dilation_w_factor=1, depth_multiplier=2, fused_activation_function="NONE")
    if op == "TRANSPOSE_CONV":
        w, s = _filter(t, (3, 3, 3, 2), 0)
        return [const([1, 8, 8, 3]), w, act((1, 4, 4, 2), t), _bias(t, 3, s)], \
            [act((1, 8, 8, 3), t, (0.2, 0))], dict(padding="SAME", stride_h=2, stride_w=2)
    if op == "FULLY_CONNECTED":
        w, s = _filter(weights, (4, 6), 0)
        return [act((2, 6), t), w, _bias(t, 4, s)], [act((2, 4), t, (0.2, 0))], \
            dict(fused_activation_function="NONE")
    if op == "BATCH_MATMUL":
        return [act((2, 3, 4), t), act((2, 4, 5), t)], [act((2, 3, 5), t, (0.5, 0))], \
            dict(adj_x=False, adj_y=False)
    kind = "L2_POOL_2D" if op == "L2_POOL_2D" else op
    return [act((1, 4, 4, 2), t)], [act((1, 2, 2, 2), t)], \
        dict(padding="VALID", stride_h=2, stride_w=2, filter_height=2, filter_width=2,
             fused_activation_function="NONE") if kind else {}


def _axis_op(op: str, t: str) -> Case:
    if op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ALL"):
        out_q = None if op in ("REDUCE_MAX", "REDUCE_MIN") else (0.1, -1) if t == "int8" \
            else None
        return [act(S, t), const([1])], [act((2, 4), t, out_q)], dict(keep_dims=False)
    if op in ("ARG_MAX", "ARG_MIN"):
        return [act(S, t), const([2])], [Tensor((2, 3), "int32")], dict(output_type=2)
    return [act(S, t), const(np.int32(2))], [act(S, t, (0.5, 0) if t == "int8" else None)], \
        dict(exclusive=False, reverse=False)


def _moves(op: str, t: str) -> Case:  # noqa: C901  (one branch per operator: a table)
    if op == "EMBEDDING_LOOKUP" and t == "int8->float32":
        table = const(np.arange(12).reshape(4, 3) - 6, "int8", (0.25, 0))
        return [const([3, 1]), table], [Tensor((2, 3), "float32")], {}
    x = act((2, 3), t)
    y = act((2, 3), t)  # a second tensor of x's type (an output is a tensor of its own)
    if op == "RESHAPE":
        return [x, const([3, 2])], [act((3, 2), t)], dict(new_shape=[3, 2])
    if op == "SQUEEZE":
        return [act((2, 1, 3), t)], [x], dict(squeeze_dims=[1])
    if op == "EXPAND_DIMS":
        return [x, const([1])], [act((2, 1, 3), t)], {}
    if op == "CONCATENATION":
        return [x, act((2, 2), t)], [act((2, 5), t)], dict(axis=1,
                                                           fused_activation_function="NONE")
    if op == "PACK":
        return [x, act((2, 3), t)], [act((2, 2, 3), t)], dict(values_count=2, axis=0)
    if op == "UNPACK":
        return [x], [act((3,), t), act((3,), t)], dict(num=2, axis=0)
    if op == "SPLIT":
        return [const(np.int32(1)), act((2, 4), t)], [act((2, 2), t), act((2, 2), t)], \
            dict(num_splits=2)
    if op == "SPLIT_V":
        return [act((2, 4), t), const([1, 3]), const(np.int32(1))], \
            [act((2, 1), t), act((2, 3), t)], dict(num_splits=2)
    pads = const([[1, 0], [0, 2]])
    if op == "PAD":
        return [x, pads], [act((3, 5), t)], {}
    if op == "PADV2":
        fill = values((), t, np.random.default_rng(1))
        q = _QUANT.get(t)
        return [x, pads, const(fill, t, q)], [act((3, 5), t)], {}
    if op == "MIRROR_PAD":
        return [act((3, 4), t), const([[1, 1], [0, 2]])], [act((5, 6), t)], dict(mode=0)
    if op == "TRANSPOSE":
        return [x, const([1, 0])], [act((3, 2), t)], {}
    if op == "SLICE":
        return [x, const([1, 0]), const([1, 2])], [act((1, 2), t)], {}
    if op == "STRIDED_SLICE":
        return [act((4, 6), t), const([1, 0]), const([4, 6]), const([1, 2])], \
            [act((3, 3), t)], {}
    if op == "REVERSE_V2":
        return [x, const([1])], [y], {}
    if op == "GATHER":
        return [act((4, 3), t), const([3, 1])], [x], dict(axis=0)
    if op == "GATHER_ND":
        return [act((4, 3), t), const([[3], [1]])], [x], {}
    if op == "EMBEDDING_LOOKUP":
        return [const([3, 1]), act((4, 3), t)], [x], {}
    if op == "DYNAMIC_UPDATE_SLICE":
        return [act((4, 3), t), x, const([1, 0])], [act((4, 3), t)], {}
    if op == "BROADCAST_TO":
        return [act((1, 3), t), const([2, 3])], [x], {}
    if op == "BROADCAST_ARGS":
        return [const([2, 1], t), const([1, 3], t)], [Tensor((2,), t)], {}
    if op == "SHAPE":
        return [x], [Tensor((2,), "int32")], dict(out_type=2)
    if op == "FILL":
        return [const([2, 3]), act((), t)], [x], {}
    if op == "ZEROS_LIKE":
        return [x], [y], {}
    raise AssertionError(op)


def _space(op: str, t: str) -> Case:
    if op == "DEPTH_TO_SPACE":
        return [act((1, 2, 2, 8), t)], [act((1, 4, 4, 2), t)], dict(block_size=2)
    if op == "SPACE_TO_DEPTH":
        return [act((1, 4, 4, 2), t)], [act((1, 2, 2, 8), t)], dict(block_size=2)
    if op == "SPACE_TO_BATCH_ND":
        return [act((1, 4, 4, 1), t), const([2, 2]), const([[0, 0], [0, 0]])], \
            [act((4, 2, 2, 1), t)], {}
    if op == "BATCH_TO_SPACE_ND":
        return [act((4, 2, 2, 1), t), const([2, 2]), const([[0, 0], [0, 0]])], \
            [act((1, 4, 4, 1), t)], {}
    return [act((1, 2, 2, 1), t), const([4, 4])], [act((1, 4, 4, 1), t)], \
        dict(align_corners=False, half_pixel_centers=False)


def _convert(op: str, key: str) -> Case:
    a, b = key.split("->")
    if op == "CAST":
        return [Tensor(S, a)], [Tensor(S, b)], {}
    if op == "DEQUANTIZE":
        return [act(S, a)], [Tensor(S, b)], {}
    def quantized(t: str, scale: float) -> Tensor:
        if t == "float32":
            return Tensor(S, t)
        zp = {"int8": -3, "uint8": 125}.get(t, 0)
        return Tensor(S, t, scale=scale, zero_point=zp)

    return [quantized(a, 0.05)], [quantized(b, 0.06)], {}


_PRELU_ALPHA = {"float32": const(np.full(4, 0.25), "float32"),
                "int8": const(np.full(4, 20), "int8", (0.01, 0)),
                "int16": const(np.full(4, 20), "int8", (0.01, 0))}

TEMPLATES: dict[str, Callable[[str, str], Case]] = {
    **{op: _layer for op in ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV",
                             "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D",
                             "L2_POOL_2D", "BATCH_MATMUL")},
    **{op: _binary for op in ("ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE", "MAXIMUM",
                              "MINIMUM", "FLOOR_DIV", "FLOOR_MOD", "EQUAL", "NOT_EQUAL",
                              "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL",
                              "LOGICAL_AND", "LOGICAL_OR")},
    **{op: _unary for op in ("ABS", "RSQRT", "NEG", "SQRT", "SQUARE", "EXP", "LOG", "SIN",
                             "COS", "CEIL", "FLOOR", "ROUND", "LOGISTIC", "TANH", "RELU",
                             "RELU6", "ELU", "HARD_SWISH", "LOG_SOFTMAX",
                             "L2_NORMALIZATION", "LOGICAL_NOT")},
    "SOFTMAX": lambda op, t: (([act(S, "int8")], [act(S, "int16", (1 / 65536, -32768))],
                               dict(beta=1.0)) if t == "int8->int16"
                              else _unary(op, t, beta=1.0)),
    "LEAKY_RELU": lambda op, t: _unary(op, t, alpha=0.2),
    "PRELU": lambda op, t: ([act(S[:2] + (4,), t), _PRELU_ALPHA[t]],
                            [act(S[:2] + (4,), t)], {}),
    "ADD_N": lambda op, t: ([act(S, t), act(S, t)], [act(S, t, (0.1, 0))], {}),
    "SELECT_V2": lambda op, t: ([act(S, "bool"), act(S, t), act(S, t)], [act(S, t)], {}),
    **{op: _axis_op for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ALL",
                               "ARG_MAX", "ARG_MIN", "CUMSUM")},
    **{op: _moves for op in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CONCATENATION", "PACK",
                             "UNPACK", "SPLIT", "SPLIT_V", "PAD", "PADV2", "MIRROR_PAD",
                             "TRANSPOSE", "SLICE", "STRIDED_SLICE", "REVERSE_V2", "GATHER",
                             "GATHER_ND", "EMBEDDING_LOOKUP", "DYNAMIC_UPDATE_SLICE",
                             "BROADCAST_TO", "BROADCAST_ARGS", "SHAPE", "FILL",
                             "ZEROS_LIKE")},
    **{op: _space for op in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "SPACE_TO_BATCH_ND",
                             "BATCH_TO_SPACE_ND", "RESIZE_BILINEAR",
                             "RESIZE_NEAREST_NEIGHBOR")},
    **{op: _convert for op in ("CAST", "QUANTIZE", "DEQUANTIZE")},
}
_UNARY_OPTIONLESS = {"ZEROS_LIKE"}

PAIRS = [(op, t) for op, types in TFLM_TYPES.items() for t in types
         if op not in OWN_TESTS]


def test_matrix_is_whole() -> None:
    """Every operator TFLite Micro registers (that minirt imports) is in the matrix, every
    refusal names a pair of the matrix and says why, and every row has a template."""
    from toolchain.frontend.tflite.ops import OPS

    assert set(TFLM_TYPES) == TFLM_REGISTERED
    builtin = {name for name in OPS if not name.startswith("CUSTOM:")}
    # RELU_N1_TO_1 and TILE (Keras 3's nearest upsampling, tests/.../converter): minirt
    # imports them; TFLite Micro's resolver has no AddBuiltin for them.
    assert builtin <= TFLM_REGISTERED | {"RELU_N1_TO_1", "TILE"}
    for (op, t), why in REFUSED.items():
        assert t in TFLM_TYPES[op] and why, (op, t)
    assert {op for op, _ in PAIRS} <= set(TEMPLATES)


def _model(op: str, t: str) -> tuple[bytes, list[np.ndarray]]:
    inputs, outputs, options = TEMPLATES[op](op, t)
    rng = np.random.default_rng(sum(map(ord, op + t)))
    given = [values(x.shape, x.dtype, rng) for x in inputs if x is not None and x.data is None]
    return single_op_model(op, inputs, outputs, **options), given


@pytest.mark.parametrize(("op", "t"), PAIRS, ids=[f"{op}-{t}" for op, t in PAIRS])
def test_tflm_type(op: str, t: str) -> None:
    model, given = _model(op, t)
    want, _ = run_tflm(model, given)  # TFLite Micro takes it: the table is right
    if (op, t) in REFUSED:
        with pytest.raises(TFLiteError) as e:
            import_model(read_model(model), "m.tflite")
        assert str(e.value).startswith("m.tflite: operator 0") and "\n" not in str(e.value)
        return
    got = run_graph(import_model(read_model(model), "m.tflite"), given)
    assert len(got) == len(want)
    for w, g in zip(want, got, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)


# ------------------------------------------------------------------ the other direction
# Every type the matrix leaves out of an operator, the interpreter must refuse: so the
# matrix is complete, not only right. (Pairs a template cannot build, e.g. a PRELU alpha
# of a type the test has no constant for, are left out: `_buildable`.)

CANDIDATES = ("float32", "int8", "int16", "int32", "int64", "bool", "uint8")
_CONVERSIONS = ("CAST", "QUANTIZE", "DEQUANTIZE")


def _buildable(op: str, t: str) -> bool:
    try:
        _model(op, t)
    except (KeyError, ValueError, TypeError, AssertionError):
        return False
    return True


def _outside() -> list[tuple[str, str]]:
    pairs = []
    for op in TEMPLATES:
        if op in _CONVERSIONS:
            keys = [f"{a}->{b}" for a in (*CANDIDATES, "uint32")
                    for b in (*CANDIDATES, "uint32") if not (op == "CAST" and a == b)]
        else:
            keys = list(CANDIDATES)
        pairs += [(op, t) for t in keys if t not in TFLM_TYPES[op]
                  and t not in UNCHECKED.get(op, ()) and _buildable(op, t)]
    return pairs


OUTSIDE = _outside()
UNCHECKED_PAIRS = [(op, t) for op, types in UNCHECKED.items() for t in types]


@pytest.mark.parametrize(("op", "t"), OUTSIDE, ids=[f"{op}-{t}" for op, t in OUTSIDE])
def test_tflm_refuses_types_outside_the_matrix(op: str, t: str) -> None:
    model, given = _model(op, t)
    with pytest.raises(RuntimeError):
        run_tflm(model, given)


@pytest.mark.parametrize(("op", "t"), UNCHECKED_PAIRS,
                         ids=[f"{op}-{t}" for op, t in UNCHECKED_PAIRS])
def test_unchecked_types_run_in_tflm_and_are_refused(op: str, t: str) -> None:
    model, given = _model(op, t)
    run_tflm(model, given)
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "m.tflite")
    assert str(e.value).startswith("m.tflite: operator 0") and "\n" not in str(e.value)
