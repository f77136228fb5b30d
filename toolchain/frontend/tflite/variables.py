"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) and the
splits streaming models build ring buffers with (SPLIT, SPLIT_V).

The variables are state (state.py): READ_VARIABLE reads the state region in place and
ASSIGN_VARIABLE sets the value the state takes at the end of the inference. The
converters that return None write no graph tensor (a resource handle, an assignment).
"""

from __future__ import annotations

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor


def _handle(ctx: OpContext) -> str:
    """The key of the variable whose resource tensor is input 0."""
    info = ctx.info(0)  # refuses an omitted input
    key = ctx.states.handles.get(info.index)
    if key is None:
        raise Unsupported(f"input 0 ({info.describe()}) is not a resource a VAR_HANDLE "
                          "before it created")
    return key


def var_handle(ctx: OpContext) -> None:
    """VAR_HANDLE: names the variable (container and shared_name, as TFLite Micro keys
    it) that later READ_VARIABLE / ASSIGN_VARIABLE operators reach through its output."""
    name = ctx.option("shared_name")
    if not name:
        raise Unsupported("its shared_name is empty")
    container = ctx.options.get("container", "") or ""
    ctx.states.handles[ctx.op.outputs[0]] = f"{container}/{name}" if container else name
    return None


def read_variable(ctx: OpContext) -> Tensor:
    """READ_VARIABLE: the variable's current value."""
    return ctx.read_state(_handle(ctx), ctx.output_type())


def assign_variable(ctx: OpContext) -> None:
    """ASSIGN_VARIABLE: input 1 becomes the variable's value."""
    ctx.write_state(_handle(ctx), ctx.input(1))
    return None


def call_once(ctx: OpContext) -> None:
    """CALL_ONCE: its init subgraph's assignments are the variables' boot values."""
    ctx.states.call_once(int(ctx.option("init_subgraph_index")))
    return None


def _split(ctx: OpContext, x: Tensor, sizes: list[int], axis: int) -> list[Tensor]:
    rank = x.type.rank
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} is outside rank {rank}")
    axis %= rank
    dim = x.type.shape[axis]
    if sizes.count(-1) == 1:  # one size may be -1: the rest of the dimension
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise Unsupported(f"split sizes {sizes} do not add up to dimension {axis} ({dim})")
    if len(sizes) != len(ctx.op.outputs):
        raise Unsupported(f"it splits into {len(sizes)} parts but has "
                          f"{len(ctx.op.outputs)} outputs")
    parts, start = [], 0
    for size in sizes:
        begin = [0] * rank
        limit = list(x.type.shape)
        begin[axis], limit[axis] = start, start + size
        parts.append(ctx.node("slice", [x], start=tuple(begin), limit=tuple(limit),
                              strides=(1,) * rank))
        start += size
    return parts


def split_v(ctx: OpContext) -> list[Tensor]:
    """SPLIT_V: input 0 cut along axis (input 2) into the sizes of input 1."""
    axis = ctx.value(2, "axis").reshape(-1)
    if axis.size != 1:
        raise Unsupported("input 2 (axis) must hold one value")
    return _split(ctx, ctx.input(0), [int(s) for s in ctx.value(1, "size_splits").reshape(-1)],
                  int(axis[0]))


def split(ctx: OpContext) -> list[Tensor]:
    """SPLIT: input 1 cut along axis (input 0) into num_splits equal parts."""
    axis = ctx.value(0, "axis").reshape(-1)
    if axis.size != 1:
        raise Unsupported("input 0 (axis) must hold one value")
    x = ctx.input(1)
    n = int(ctx.option("num_splits"))
    rank = x.type.rank
    a = int(axis[0])
    dim = x.type.shape[a % rank] if -rank <= a < rank else 0
    if n <= 0 or dim % n:
        raise Unsupported(f"num_splits {n} does not divide dimension {a} ({dim})")
    return _split(ctx, x, [dim // n] * n, a)


__all__ = ["assign_variable", "call_once", "read_variable", "split", "split_v", "var_handle"]
