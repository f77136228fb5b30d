"""The ONNX op table: one row per op type minirt imports.

Each row has the float converter (it gets an OpContext and returns the node's output: a
graph tensor, a constant, or a quantized view) and, for ops with an exact integer form,
the int8 converter the importer tries first when the node reads quantized views
(DequantizeLinear outputs): it gets the QuantizeLinear after the node (quant.OutputQuant,
or None) and raises NotInt8 when the pattern has no integer form, so the float converter
runs on the dequantized values instead (quant.py).

`OPS` is data: docs and tests list it (op type -> converters and arity).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolchain.frontend.onnx import (
    col2im,
    data_dependent,
    deform_conv,
    det,
    dft,
    einsum,
    grid_sample,
    indexing,
    integer,
    layers,
    logic,
    lrn,
    movement,
    norms,
    pool_indices,
    quant,
    recurrent,
    roi_align,
    shape_ops,
    tfidf,
)
from toolchain.frontend.onnx import elementwise as ew
from toolchain.frontend.onnx import math_ops as mo
from toolchain.frontend.onnx import resize as rsz
from toolchain.frontend.onnx.context import OpContext

Converter = Callable[[OpContext], Any]
Int8Converter = Callable[[OpContext, Any], Any]


@dataclass(frozen=True)
class OpRow:
    """How one op type is imported."""

    convert: Converter
    int8: Int8Converter | None
    min_inputs: int
    max_inputs: int | None  # None: any number (Concat)


def _row(convert: Converter, inputs: tuple[int, int | None],
         int8: Int8Converter | None = None) -> OpRow:
    return OpRow(convert, int8, inputs[0], inputs[1])


_pass = quant.passthrough
_max_pool_int8 = _pass(layers.max_pool)

OPS: dict[str, OpRow] = {
    # layers (layers.py)
    "Conv": _row(layers.conv, (2, 3), quant.conv_int8),
    "ConvTranspose": _row(layers.conv_transpose, (2, 3)),
    "Gemm": _row(layers.gemm, (2, 3), quant.gemm_int8),
    "MatMul": _row(layers.matmul, (2, 2), quant.matmul_int8),
    "Einsum": _row(einsum.einsum, (1, None)),
    "BatchNormalization": _row(layers.batch_normalization, (5, 5)),
    "MaxPool": _row(pool_indices.max_pool_row, (1, 1), _max_pool_int8),
    "AveragePool": _row(layers.average_pool, (1, 1), quant.average_pool_int8),
    "LpPool": _row(layers.lp_pool, (1, 1)),
    "GlobalAveragePool": _row(layers.global_pool("add"), (1, 1), quant.mean_int8),
    "GlobalMaxPool": _row(layers.global_pool("maximum"), (1, 1), _pass(
        layers.global_pool("maximum"))),
    # recurrent layers, unrolled (recurrent.py)
    "LSTM": _row(recurrent.recurrent, (3, 8)),
    "GRU": _row(recurrent.recurrent, (3, 6)),
    "RNN": _row(recurrent.recurrent, (3, 6)),
    # activations and element-wise ops (elementwise.py)
    "Relu": _row(ew.relu, (1, 1), quant.table_int8),
    "Clip": _row(ew.clip, (1, 3), quant.table_int8),
    "LeakyRelu": _row(ew.leaky_relu, (1, 1), quant.table_int8),
    "Sigmoid": _row(ew.unary("logistic"), (1, 1), quant.table_int8),
    "Tanh": _row(ew.unary("tanh"), (1, 1), quant.table_int8),
    "HardSigmoid": _row(ew.hard_sigmoid, (1, 1), quant.table_int8),
    "HardSwish": _row(ew.hard_swish, (1, 1), quant.table_int8),
    "Softmax": _row(ew.softmax, (1, 1)),
    "LogSoftmax": _row(ew.log_softmax, (1, 1)),
    "Exp": _row(ew.unary("exponential"), (1, 1)),
    "Log": _row(ew.unary("log"), (1, 1)),
    "Sqrt": _row(ew.unary("sqrt"), (1, 1)),
    "Neg": _row(ew.unary("negate", floats_only=False), (1, 1)),
    "Abs": _row(ew.unary("abs", floats_only=False), (1, 1)),
    "Add": _row(ew.binary("add"), (2, 2), quant.binary_int8("add")),
    "Sub": _row(ew.binary("subtract"), (2, 2)),
    "Mul": _row(ew.binary("multiply"), (2, 2), quant.binary_int8("mul")),
    "Div": _row(ew.binary("divide"), (2, 2)),
    "ReduceMean": _row(ew.reduce("add", mean=True), (1, 2), quant.mean_int8),
    "ReduceSum": _row(ew.reduce("add"), (1, 2)),
    "ReduceMax": _row(ew.reduce("maximum"), (1, 2)),
    "ReduceMin": _row(ew.reduce("minimum"), (1, 2)),
    "Cast": _row(ew.cast, (1, 1)),
    "CastLike": _row(ew.cast_like, (2, 2)),
    "BitCast": _row(ew.bit_cast, (1, 1)),
    "Identity": _row(ew.identity, (1, 1), _pass(ew.identity)),
    "Dropout": _row(ew.identity, (1, 3), _pass(ew.identity)),
    # comparisons, logical ops, Where (logic.py)
    **{op: _row(logic.compare, (2, 2)) for op in logic.COMPARISONS},
    **{op: _row(logic.logical, (2, 2)) for op in logic.LOGICAL},
    "Not": _row(logic.not_, (1, 1)),
    "Where": _row(logic.where, (3, 3)),
    # arithmetic and activations (math_ops.py)
    **{op: _row(conv, (1, 1)) for op, conv in mo.FLOAT_UNARY_CONVERTERS.items()},
    **{op: _row(mo.int_unary, (1, 1)) for op in mo.INT_UNARY},
    **{op: _row(mo.bitwise, (2, 2)) for op in mo.BITWISE},
    **{op: _row(mo.variadic, (1, None)) for op in mo.VARIADIC},
    "Pow": _row(mo.pow_, (2, 2)),
    "Mod": _row(mo.mod, (2, 2)),
    "Reciprocal": _row(mo.reciprocal, (1, 1)),
    "BitShift": _row(mo.bit_shift, (2, 2)),
    "Elu": _row(mo.elu, (1, 1)),
    "Selu": _row(mo.selu, (1, 1)),
    "Celu": _row(mo.celu, (1, 1)),
    "Softplus": _row(mo.softplus, (1, 1)),
    "Softsign": _row(mo.softsign, (1, 1)),
    "Mish": _row(mo.mish, (1, 1)),
    "Swish": _row(mo.swish, (1, 1)),
    "Gelu": _row(mo.gelu, (1, 1)),
    "ThresholdedRelu": _row(mo.thresholded_relu, (1, 1)),
    "Shrink": _row(mo.shrink, (1, 1)),
    "PRelu": _row(mo.prelu, (2, 2)),
    "IsNaN": _row(mo.is_nan, (1, 1)),
    "IsInf": _row(mo.is_inf, (1, 1)),
    # reductions and normalizations (norms.py)
    **{op: _row(norms.reduction, (1, 2)) for op in [*norms.REDUCTIONS, "ReduceLogSumExp"]},
    **{op: _row(norms.arg_extreme, (1, 1)) for op in norms.ARG},
    "Hardmax": _row(norms.hardmax, (1, 1)),
    "TopK": _row(norms.top_k, (2, 2)),
    "LayerNormalization": _row(norms.layer_normalization, (2, 3)),
    "RMSNormalization": _row(norms.rms_normalization, (2, 2)),
    "LpNormalization": _row(norms.lp_normalization, (1, 1)),
    "InstanceNormalization": _row(norms.instance_normalization, (3, 3)),
    "GroupNormalization": _row(norms.group_normalization, (3, 3)),
    # data movement (shape_ops.py): int8 views move as they are
    "Reshape": _row(shape_ops.reshape, (2, 2), _pass(shape_ops.reshape)),
    "Flatten": _row(shape_ops.flatten, (1, 1), _pass(shape_ops.flatten)),
    "Transpose": _row(shape_ops.transpose, (1, 1), _pass(shape_ops.transpose)),
    "Concat": _row(shape_ops.concat, (1, None), _pass(shape_ops.concat, all_inputs=True)),
    "Pad": _row(shape_ops.pad, (2, 4), quant.pad_int8),
    "Slice": _row(shape_ops.slice_, (3, 5), _pass(shape_ops.slice_)),
    "Squeeze": _row(shape_ops.squeeze, (1, 2), _pass(shape_ops.squeeze)),
    "Unsqueeze": _row(shape_ops.unsqueeze, (1, 2), _pass(shape_ops.unsqueeze)),
    "Gather": _row(shape_ops.gather, (2, 2), _pass(shape_ops.gather)),
    "Expand": _row(shape_ops.expand, (2, 2), _pass(shape_ops.expand)),
    # more data movement (movement.py)
    "Split": _row(movement.split, (1, 2)),
    "Tile": _row(movement.tile, (2, 2)),
    "Trilu": _row(movement.trilu, (1, 2)),
    "GatherElements": _row(movement.gather_elements, (2, 2)),
    "ScatterND": _row(movement.scatter_nd, (3, 3)),
    "ScatterElements": _row(movement.scatter_elements, (3, 3)),
    "SpaceToDepth": _row(movement.space_to_depth, (1, 1)),
    "DepthToSpace": _row(movement.depth_to_space, (1, 1)),
    "CumSum": _row(movement.cum_sum, (2, 2)),
    "CumProd": _row(movement.cum_prod, (2, 2)),
    "Resize": _row(rsz.resize, (1, 4)),
    "DFT": _row(dft.dft, (1, 3)),
    "STFT": _row(dft.stft, (2, 4)),
    "GridSample": _row(grid_sample.grid_sample, (2, 2)),
    "Col2Im": _row(col2im.col2im, (3, 3)),
    "DeformConv": _row(deform_conv.deform_conv, (3, 5)),
    "TfIdfVectorizer": _row(tfidf.tfidf_vectorizer, (1, 1)),
    "LRN": _row(lrn.lrn, (1, 1)),
    "Det": _row(det.det, (1, 1)),
    "RoiAlign": _row(roi_align.roi_align, (3, 3)),
    "GatherND": _row(indexing.gather_nd, (2, 2)),
    "ConvInteger": _row(integer.conv_integer, (2, 4)),
    "MatMulInteger": _row(integer.matmul_integer, (2, 4)),
    "ReverseSequence": _row(indexing.reverse_sequence, (2, 2)),
    "MaxUnpool": _row(indexing.max_unpool, (2, 3)),
    "TensorScatter": _row(indexing.tensor_scatter, (2, 3)),
    "OneHot": _row(movement.one_hot, (3, 3)),
    "EyeLike": _row(movement.eye_like, (1, 1)),
    # output sizes that depend on values, known at build time (data_dependent.py)
    "Compress": _row(data_dependent.compress, (2, 2)),
    "Unique": _row(data_dependent.unique, (1, 1)),
    "NonZero": _row(data_dependent.non_zero, (1, 1)),
    "NonMaxSuppression": _row(data_dependent.non_max_suppression, (2, 5)),
    "Range": _row(data_dependent.range_, (3, 3)),
    # constant-like ops: numpy values at import
    "Constant": _row(shape_ops.constant, (0, 0)),
    "Shape": _row(shape_ops.shape, (1, 1)),
    "Size": _row(shape_ops.size, (1, 1)),
    "ConstantOfShape": _row(shape_ops.constant_of_shape, (1, 1)),
    # quantization (quant.py)
    "QuantizeLinear": _row(quant.quantize_linear, (2, 3)),
    "DequantizeLinear": _row(quant.dequantize_linear, (2, 3)),
    "QLinearConv": _row(quant.qlinear_conv, (8, 9)),
    "QLinearMatMul": _row(quant.qlinear_matmul, (8, 8)),
}

# Ops never evaluated at import even on constant inputs: a DequantizeLinear of constant
# weights stays a quantized view, so an int8 converter can read the integers.
NO_FOLD = frozenset({"DequantizeLinear", "QLinearConv", "QLinearMatMul"})


__all__ = ["NO_FOLD", "OPS", "Converter", "Int8Converter", "OpRow"]
