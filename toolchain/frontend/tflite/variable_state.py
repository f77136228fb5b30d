"""The state of recurrent operators: TFLite variable tensors (is_variable=True).

UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF read their state from a variable tensor and write
the new state back into it; in TFLite Micro that tensor survives from one invocation to
the next. Converters read and write that state through `state_in` and `state_out`,
which keep it as minirt's state that survives an inference (state.py), keyed by the
variable tensor as the importer keys every variable tensor: the first inference starts
from TFLite Micro's initial value, each next one from the state the last one left.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.context import OpContext, tensor_type
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor


def initial_value(ctx: OpContext, index: int) -> np.ndarray:
    """The value TFLite Micro gives variable tensor input `index` before the first
    invocation (MicroInterpreterGraph::ResetTensorData): every byte of an int8 tensor is
    its zero point, every other tensor is zero. A buffer in the file is not read."""
    info = ctx.info(index)
    if not info.is_variable:
        raise Unsupported(f"input {index} ({info.describe()}) holds the operator's state "
                          "and must be a variable tensor")
    ty = tensor_type(info)
    fill = 0
    if info.type == "INT8" and info.quant is not None and info.quant.zero_points:
        fill = info.quant.zero_points[0]
    return np.full(ty.shape, fill, dtype=ty.dtype.np_dtype)


def state_in(ctx: OpContext, index: int) -> Tensor:
    """The state the operator starts from, read from variable tensor input `index`: the
    value the previous inference left (TFLite Micro's initial value at boot and after a
    reset)."""
    value = initial_value(ctx, index)
    return ctx.read_state(ctx.variable_key(index), tensor_type(ctx.info(index)), value, value)


def state_out(ctx: OpContext, index: int, new_state: Tensor) -> None:
    """Stores `new_state` (the variable tensor's shape and element type) as the value of
    variable tensor input `index` for the next inference."""
    ty = tensor_type(ctx.info(index))
    if new_state.type.shape != ty.shape or new_state.type.dtype != ty.dtype:
        raise Unsupported(f"the new state {new_state.type} does not fit input {index}, {ty}")
    ctx.write_state(ctx.variable_key(index), new_state)


__all__ = ["initial_value", "state_in", "state_out"]
