"""The TFLite operator table: one row per builtin operator minirt imports.

Each row has a converter per element-type family of the operator (the type of its
first input and output): `float` for float32 models, `int8` for quantized ones. A
converter gets an OpContext and returns the graph tensor of the operator's output.

Data movement works the same on both families, so those rows share one converter; the
int8 arithmetic converters (int8.py) compute what TFLite Micro's integer kernels do. The
importer reports an operator with an empty slot as not supported, one line per operator
like every other unsupported operator. Rows with an `every` converter (state and
splits) take any element type, and say how many outputs the operator has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolchain.frontend.tflite import (
    control_flow,
    int8,
    int16,
    int32,
    layers,
    lstm,
    more_batch,
    more_int8,
    more_int16,
    more_l2norm,
    more_math,
    more_ops,
    more_reduce,
    more_resize,
    more_shapes,
    more_types,
    shape_ops,
    svdf,
    tile,
    transpose_conv,
    variables,
)
from toolchain.frontend.tflite import elementwise as ew
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.detection import detection_postprocess
from toolchain.frontend.tflite.signal_ops import SIGNAL_OPS
from toolchain.graph.ir import Tensor

# A converter returns the operator's result, one per output for several (SPLIT_V), or
# None for an operator that writes no graph tensor (ASSIGN_VARIABLE, VAR_HANDLE).
Converter = Callable[[OpContext], Any]


@dataclass(frozen=True)
class OpRow:
    """How one builtin operator is imported."""

    float: Converter | None
    int8: Converter | None
    min_inputs: int
    max_inputs: int | None  # None: any number (CONCATENATION)
    int16: Converter | None = None  # 16x8: int16 activations, int8 weights (int16.py)
    int32: Converter | None = None  # unquantized int32 arithmetic (int32.py)
    int64: Converter | None = None  # unquantized int64 (more_types.py, data movement)
    bool_: Converter | None = None  # bool tensors (data movement)
    uint8: Converter | None = None  # uint8 (DEQUANTIZE's input)
    # Outputs the operator has: a number, or None for any number of at least one (the
    # converter checks it against its options).
    outputs: int | None = 1
    # One converter for every element type (resources, state, splits, CAST, Signal).
    every: Converter | None = None

    def converter(self, family: str) -> Converter | None:
        """The converter for element-type family `family` ('float', 'int8', 'int16',
        'int32', 'int64', 'bool', or another type's name, which only an every-type row
        handles)."""
        if self.every is not None:
            return self.every
        return {"float": self.float, "int8": self.int8, "int16": self.int16,
                "int32": self.int32, "int64": self.int64, "bool": self.bool_,
                "uint8": self.uint8}.get(family)


def _row(float_: Converter | None, int8: Converter | None, inputs: tuple[int, int | None],
         int16: Converter | None = None, int32: Converter | None = None,
         int64: Converter | None = None, bool_: Converter | None = None) -> OpRow:
    return OpRow(float_, int8, inputs[0], inputs[1], int16, int32, int64, bool_)


def _moves(convert: Converter, inputs: tuple[int, int | None], *, int32: bool = True,
           int64: bool = False, bool_: bool = False, uint8: bool = False) -> OpRow:
    """A data-movement row: one converter for float32, int8, int16 and the unquantized
    types TFLite Micro's kernel copies."""
    return OpRow(convert, convert, inputs[0], inputs[1], convert, convert if int32 else None,
                 convert if int64 else None, convert if bool_ else None,
                 convert if uint8 else None)


def _every(converter: Converter, inputs: tuple[int, int | None], outputs: int | None = 1
           ) -> OpRow:
    """A row whose one converter takes every element type."""
    return OpRow(None, None, inputs[0], inputs[1], outputs=outputs, every=converter)


def _quantize_int8(ctx: OpContext) -> Tensor:
    """QUANTIZE with an int8 side: between int8 and int16 / int32 TFLite Micro's
    Requantize (the 16x8 converter's), with uint8 more_types.py's, else int8.py's
    (float32's AffineQuantize, int8's table)."""
    types = {ctx.input(0).type.dtype.name, ctx.output_type().dtype.name}
    if types & {"i16", "i32"}:
        return int16.quantize(ctx)
    if "ui8" in types:
        return more_types.requantize_uint8(ctx)
    return int8.quantize_op(ctx)


OPS: dict[str, OpRow] = {
    # layers (convolution.py, layers.py, hybrid.py)
    "CONV_2D": _row(layers.conv_2d, int8.conv_2d, (2, 3), int16.conv_2d),
    "TRANSPOSE_CONV": _row(transpose_conv.transpose_conv_float,
                           transpose_conv.transpose_conv_int8, (3, 4), int16.transpose_conv),
    "DEPTHWISE_CONV_2D": _row(layers.depthwise_conv_2d, int8.depthwise_conv_2d, (2, 3),
                              int16.depthwise_conv_2d),
    "FULLY_CONNECTED": _row(layers.fully_connected, int8.fully_connected, (2, 3),
                            int16.fully_connected),
    "AVERAGE_POOL_2D": _row(layers.average_pool_2d, int8.average_pool_2d, (1, 1),
                            int16.average_pool_2d),
    "MAX_POOL_2D": _row(layers.max_pool_2d, layers.max_pool_2d, (1, 1), layers.max_pool_2d),
    # recurrent layers with variable-tensor state (lstm.py, svdf.py)
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _row(lstm.lstm_float, lstm.lstm_int8, (24, 24),
                                         lstm.lstm_int16),
    "SVDF": _row(svdf.svdf_float, svdf.svdf_int8, (5, 5)),
    # elementwise and reductions (elementwise.py)
    "ADD": _row(ew.add, int8.add, (2, 2), int16.add, int32.add),
    "SUB": _row(ew.sub, int8.sub, (2, 2), int16.sub, int32.sub),
    "MUL": _row(ew.mul, int8.mul, (2, 2), int16.mul, int32.mul),
    "DIV": _row(ew.div, more_int8.div_int8, (2, 2), None, int32.div),
    "MINIMUM": _row(more_ops.minimum, more_ops.minimum, (2, 2), more_ops.minimum,
                    int32.minimum, more_types.minimum_int64),
    "MAXIMUM": _row(more_ops.maximum, more_ops.maximum, (2, 2), more_ops.maximum,
                    int32.maximum, more_types.maximum_int64),
    "FLOOR_DIV": _row(more_ops.floor_div, None, (2, 2)),
    "FLOOR_MOD": _row(more_ops.floor_mod, None, (2, 2)),
    "ADD_N": _row(more_ops.add_n, more_int8.add_n_int8, (1, None)),
    "CAST": _every(more_types.cast, (1, 1)),
    "LOGISTIC": _row(ew.logistic, int8.logistic, (1, 1), int16.logistic),
    "TANH": _row(ew.tanh, int8.tanh, (1, 1), int16.tanh),
    "RELU": _row(ew.relu, int8.relu, (1, 1), int16.relu),
    "RELU6": _row(ew.relu6, int8.relu6, (1, 1), int16.relu6),
    "RELU_N1_TO_1": _row(ew.relu_n1_to_1, None, (1, 1)),
    "HARD_SWISH": _row(ew.hard_swish, int8.hard_swish, (1, 1)),
    "SOFTMAX": _row(ew.softmax, int8.softmax, (1, 1), int16.softmax),
    "MEAN": _row(ew.mean, int8.mean, (2, 2), int16.mean),
    "SUM": _row(ew.sum_, int8.sum_, (2, 2), int16.sum_),
    "QUANTIZE": _row(None, _quantize_int8, (1, 1), int16.quantize),
    "LEAKY_RELU": _row(ew.leaky_relu, int8.leaky_relu, (1, 1), int16.leaky_relu),
    "DEQUANTIZE": OpRow(ew.dequantize_float16, int8.dequantize, 1, 1, int16.dequantize,
                        uint8=more_types.dequantize_uint8),
    # data movement (shape_ops.py): the same converter for both families
    # (RESHAPE and SQUEEZE copy bytes whatever the type; the others' kernels list theirs)
    "RESHAPE": _moves(shape_ops.reshape, (1, 2), int64=True, bool_=True, uint8=True),
    "SQUEEZE": _moves(shape_ops.squeeze, (1, 1), int64=True, bool_=True, uint8=True),
    "PAD": _moves(shape_ops.pad, (2, 2)),
    "CONCATENATION": _moves(shape_ops.concatenation, (1, None), int64=True, bool_=True),
    "TRANSPOSE": _moves(shape_ops.transpose, (2, 2), int32=False),
    "STRIDED_SLICE": _moves(shape_ops.strided_slice, (4, 4), bool_=True),
    # state (variables.py, state.py) and splits
    "VAR_HANDLE": _every(variables.var_handle, (0, 0)),
    "READ_VARIABLE": _every(variables.read_variable, (1, 1)),
    "ASSIGN_VARIABLE": _every(variables.assign_variable, (2, 2), 0),
    "CALL_ONCE": _every(variables.call_once, (0, 0), 0),
    "SPLIT_V": _every(variables.split_v, (3, 3), None),
    "SPLIT": _every(variables.split, (2, 2), None),
    # control flow on subgraphs, as the graph's `if` and `while` (control_flow.py)
    "IF": _every(control_flow.if_op, (1, None), None),
    "WHILE": _every(control_flow.while_op, (1, None), None),
    # comparisons, logical ops, selection (more_ops.py): they check their types themselves
    "EQUAL": _every(more_ops.equal, (2, 2)),
    "NOT_EQUAL": _every(more_ops.not_equal, (2, 2)),
    "LESS": _every(more_ops.less, (2, 2)),
    "LESS_EQUAL": _every(more_ops.less_equal, (2, 2)),
    "GREATER": _every(more_ops.greater, (2, 2)),
    "GREATER_EQUAL": _every(more_ops.greater_equal, (2, 2)),
    "LOGICAL_AND": _every(more_ops.logical_and, (2, 2)),
    "LOGICAL_OR": _every(more_ops.logical_or, (2, 2)),
    "LOGICAL_NOT": _every(more_ops.logical_not, (1, 1)),
    "SELECT_V2": _every(more_ops.select_v2, (3, 3)),
    # elementwise math (more_math.py): float32, int8 where TFLite Micro has a table form
    **{name: _row(convert, None, (1, 1)) for name, convert in more_math.UNARY_CONVERTERS.items()},
    "ABS": _row(more_math.UNARY_CONVERTERS["ABS"], more_math.abs_int8, (1, 1),
                more_int16.abs_int16),
    "RSQRT": _row(more_math.UNARY_CONVERTERS["RSQRT"], more_math.rsqrt_int8, (1, 1),
                  more_int16.rsqrt_int16),
    "SQUARE": _row(more_math.square, None, (1, 1)),
    "SQUARED_DIFFERENCE": _row(more_math.squared_difference,
                               more_math.squared_difference_int8, (2, 2),
                               more_int16.squared_difference_int16,
                               more_types.squared_difference_int32),
    "ELU": _row(more_math.elu, more_math.elu_int8, (1, 1)),
    "PRELU": _row(more_math.prelu, more_math.prelu_int8, (2, 2), more_int16.prelu_int16),
    "LOG_SOFTMAX": _row(more_math.log_softmax, more_math.log_softmax_int8, (1, 1)),
    "L2_NORMALIZATION": _row(more_math.l2_normalization, more_l2norm.l2_normalization_int8,
                             (1, 1)),
    # data movement and indexing (more_shapes.py): every type the kernel takes
    "EXPAND_DIMS": _every(more_shapes.expand_dims, (2, 2)),
    "BROADCAST_TO": _every(more_shapes.broadcast_to, (2, 2)),
    "FILL": _every(more_shapes.fill, (2, 2)),
    "ZEROS_LIKE": _every(more_shapes.zeros_like, (1, 1)),
    "PACK": _every(more_shapes.pack, (1, None)),
    "UNPACK": _every(more_shapes.unpack, (1, 1), None),
    "GATHER": _every(more_shapes.gather, (2, 2)),
    "GATHER_ND": _every(more_shapes.gather_nd, (2, 2)),
    "ARG_MAX": _every(more_shapes.arg_max, (2, 2)),
    "ARG_MIN": _every(more_shapes.arg_min, (2, 2)),
    "DEPTH_TO_SPACE": _row(more_shapes.depth_to_space, more_shapes.depth_to_space, (1, 1)),
    "SPACE_TO_DEPTH": _row(more_shapes.space_to_depth, more_shapes.space_to_depth, (1, 1)),
    "PADV2": _every(more_shapes.padv2, (2, 3)),
    "MIRROR_PAD": _every(more_shapes.mirror_pad, (2, 2)),
    "CUMSUM": _row(more_shapes.cumsum, more_shapes.cumsum_int8, (2, 2)),
    # resizing (more_resize.py): constant gathers, TFLite Micro's integer weights for int8
    "RESIZE_NEAREST_NEIGHBOR": _row(more_resize.resize_nearest_neighbor,
                                    more_resize.resize_nearest_neighbor, (2, 2),
                                    more_resize.resize_nearest_neighbor),
    "RESIZE_BILINEAR": _row(more_resize.resize_bilinear, more_resize.resize_bilinear, (2, 2)),
    # reductions and data movement (more_reduce.py)
    "REDUCE_MAX": _row(more_reduce.reduce_max, more_reduce.reduce_max, (2, 2),
                       more_reduce.reduce_max, more_reduce.reduce_max),
    "REDUCE_MIN": _row(more_reduce.reduce_min, more_reduce.reduce_min, (2, 2),
                       more_reduce.reduce_min, more_reduce.reduce_min),
    "REDUCE_ALL": _every(more_reduce.reduce_all, (2, 2)),
    "SLICE": _every(more_reduce.slice_, (3, 3)),
    "L2_POOL_2D": _row(more_reduce.l2_pool_2d, None, (1, 1)),
    "REVERSE_V2": _every(more_reduce.reverse_v2, (2, 2)),
    "ROUND": _row(more_reduce.round_, None, (1, 1)),
    "SHAPE": _every(more_reduce.shape, (1, 1)),
    "BROADCAST_ARGS": _every(more_reduce.broadcast_args, (2, 2)),
    "EMBEDDING_LOOKUP": _every(more_types.embedding_lookup, (2, 2)),
    "DYNAMIC_UPDATE_SLICE": _every(more_reduce.dynamic_update_slice, (3, 3)),
    "TILE": _every(tile.tile, (2, 2)),  # beyond TFLite Micro: Keras 3's nearest upsampling
    # blocks and batched products (more_batch.py)
    "SPACE_TO_BATCH_ND": _row(more_batch.space_to_batch_nd, more_batch.space_to_batch_nd,
                              (3, 3)),
    "BATCH_TO_SPACE_ND": _row(more_batch.batch_to_space_nd, more_batch.batch_to_space_nd,
                              (3, 3)),
    "BATCH_MATMUL": _row(more_batch.batch_matmul, more_batch.batch_matmul_int8, (2, 2),
                         more_int16.batch_matmul_int16),
}
# TFLite Micro's Signal library (signal_ops.py): custom operators, whatever their types.
OPS.update({name: _every(convert, (least, most), outputs)
            for name, (convert, least, most, outputs) in SIGNAL_OPS.items()})
# TFLite Micro's DETECTION_POSTPROCESS, registered as a custom operator (detection.py).
OPS["CUSTOM:TFLite_Detection_PostProcess"] = _every(detection_postprocess, (3, 3), 4)


__all__ = ["OPS", "Converter", "OpRow"]
