"""The state of recurrent operators: TFLite variable tensors (is_variable=True).

UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF read their state from a variable tensor and write
the new state back into it; in TFLite Micro that tensor survives from one invocation to
the next. Converters read and write that state through `state_in` and `state_out` only,
so that the state mechanism (state kept between inferences) is wired in at these two
places on merge. Until then every inference starts from the initial state, as TFLite
Micro's first invocation after AllocateTensors does.
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


def state_key(ctx: OpContext, index: int) -> str:
    """The state's name across the model: the variable tensor itself (TFLite keeps the
    state in the tensor, not in the operator), e.g. `tensor 18 ('lstm/zeros')`."""
    return ctx.info(index).describe()


def state_in(ctx: OpContext, index: int) -> Tensor:
    """The state the operator starts from, read from variable tensor input `index`.

    For now the initial value as a constant of the tensor's type; on merge this becomes
    the state mechanism's read of the value the previous inference left, as
    ctx.read_state(state_key(ctx, index), initial_value(ctx, index), type)."""
    info = ctx.info(index)
    value = initial_value(ctx, index)
    node = ctx.graph.add("constant", [], [tensor_type(info)], {"value": value})
    ctx.new_tensors.add(id(node.output))
    return node.output


def state_out(ctx: OpContext, index: int, new_state: Tensor) -> None:
    """Stores `new_state` (the variable tensor's shape and element type) as the value of
    variable tensor input `index` for the next inference. For now it only checks that
    contract (every inference starts from the initial state); on merge this becomes the
    state mechanism's write, ctx.write_state(state_key(ctx, index), new_state)."""
    ty = tensor_type(ctx.info(index))
    if new_state.type.shape != ty.shape or new_state.type.dtype != ty.dtype:
        raise Unsupported(f"the new state {new_state.type} does not fit input {index}, {ty}")


__all__ = ["initial_value", "state_in", "state_key", "state_out"]
