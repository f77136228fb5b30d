"""TOSA's data nodes and data movement: CONST, CONST_SHAPE, RESHAPE, TRANSPOSE, SLICE,
PAD, CONCAT, TILE, REVERSE, GATHER, SCATTER.

A `!tosa.shape<N>` value (CONST_SHAPE) is an i64 constant of N elements in the graph:
the ops that take one read its values at build time (`TosaOp.shape`), and fold / dead
code elimination drop it afterwards. TOSA 1.0 turned most of these ops' attributes into
shape operands; the pre-1.0 attribute spellings are read too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from toolchain.frontend.tosa.context import I64, TosaError, TosaOp
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS
from toolchain.mlir.ir import DenseAttr, FloatAttr, IntAttr
from toolchain.types import TensorType, round_to_bf16

__all__ = ["CONVERTERS"]


def _const(t: TosaOp) -> Tensor:
    """CONST: the `values` literal (`value` before TOSA 1.0), of the declared type."""
    a = t.attr("values")
    if a is None:
        a = t.attr("value")
    ty = t.result()
    if isinstance(a, DenseAttr):
        array = a.array
    elif isinstance(a, IntAttr | FloatAttr):
        array = np.full(ty.shape, a.value)
    else:
        raise TosaError("needs a dense 'values' literal")
    array = np.asarray(array).astype(ty.dtype.np_dtype)
    if ty.dtype.name == "bf16":
        array = round_to_bf16(array)
    return t.b.graph.add("constant", [], [ty], {"value": array.reshape(ty.shape)},
                         t.b.loc).output


def _const_shape(t: TosaOp) -> Tensor:
    """CONST_SHAPE: its values as an i64 constant (a shape, read at build time)."""
    a = t.attr("values")
    if not isinstance(a, DenseAttr) or a.array.dtype.kind not in "iu":
        raise TosaError("needs an integer 'values' literal")
    values = a.array.astype(np.int64).reshape(-1)
    return t.b.graph.add("constant", [], [TensorType((values.size,), I64)],
                         {"value": values}, t.b.loc).output


def _shape_arg(t: TosaOp, index: int, attr: str, what: str) -> tuple[int, ...]:
    """A shape operand (TOSA 1.0) or the attribute it replaced."""
    if t.has_input(index):
        return t.shape(index, what)
    return t.ints(attr)


def _reshape(t: TosaOp) -> Tensor:
    """RESHAPE to the declared shape; the shape operand must agree (-1 infers a size)."""
    x = t.input(0, "input")
    out = tuple(t.result().shape)
    if t.has_input(1) or t.attr("new_shape") is not None:
        given = _shape_arg(t, 1, "new_shape", "shape")
        if len(given) != len(out) or any(g not in (o, -1) for g, o in zip(given, out)):
            raise TosaError(f"shape {list(given)} does not match the result type's "
                            f"{list(out)}")
    return t.node("reshape", [x], shape=out)


def _transpose(t: TosaOp) -> Tensor:
    x = t.input(0, "input")
    perms = t.shape(1, "perms") if t.has_input(1) else t.ints("perms")
    return t.node("transpose", [x], permutation=tuple(perms))


def _slice(t: TosaOp) -> Tensor:
    """SLICE [start, start + size) per dimension (a size of -1 runs to the end)."""
    x = t.input(0, "input")
    start = _shape_arg(t, 1, "start", "start")
    size = _shape_arg(t, 2, "size", "size")
    shape = x.type.shape
    if len(start) != len(shape) or len(size) != len(shape):
        raise TosaError(f"start and size need {len(shape)} values each")
    limit = tuple(d if n == -1 else s + n for s, n, d in zip(start, size, shape))
    return t.node("slice", [x], start=tuple(start), limit=limit, strides=(1,) * len(shape))


def _pad(t: TosaOp) -> Tensor:
    """PAD by [low0, high0, low1, high1, ...] with pad_const (a one-element operand)."""
    x = t.input(0, "input")
    rank = x.type.rank
    padding = t.shape(1, "padding") if t.has_input(1) else t.ints("padding")
    if len(padding) != 2 * rank:
        raise TosaError(f"padding needs {2 * rank} values, got {len(padding)}")
    if any(p < 0 for p in padding):
        raise TosaError(f"padding {list(padding)} must not be negative")
    dt = x.type.dtype
    if t.has_input(2):
        value = t.input(2, "pad_const")
        if value.type.num_elements != 1:
            raise TosaError("pad_const must hold one value")
        value = t.node("reshape", [t.convert(value, dt)], shape=())
    else:  # before TOSA 1.0: an attribute, or zero
        a = t.attr("pad_const")
        value = t.b.const(0 if a is None else t.number("pad_const"), dt)
    return t.node("pad", [x, value], low=tuple(padding[0::2]), high=tuple(padding[1::2]),
                  interior=(0,) * rank)


def _concat(t: TosaOp) -> Tensor:
    if not t.inputs:
        raise TosaError("needs at least one operand")
    axis = t.int("axis")
    rank = t.inputs[0].type.rank
    if not -rank <= axis < rank:
        raise TosaError(f"axis {axis} is out of range for rank {rank}")
    return t.node("concatenate", list(t.inputs), dimension=axis % rank)


def _tile(t: TosaOp) -> Tensor:
    """TILE: x repeated `multiples` times per dimension, as a broadcast to [m0, d0, m1,
    d1, ...] (an index map) and a reshape."""
    x = t.input(0, "input")
    multiples = _shape_arg(t, 1, "multiples", "multiples")
    shape = tuple(x.type.shape)
    if len(multiples) != len(shape) or any(m < 1 for m in multiples):
        raise TosaError(f"multiples {list(multiples)} must be {len(shape)} values >= 1")
    spread = tuple(v for m, d in zip(multiples, shape) for v in (m, d))
    wide = t.node("broadcast_in_dim", [x], dims=tuple(range(1, 2 * len(shape), 2)),
                  shape=spread)
    return t.node("reshape", [wide], shape=tuple(m * d for m, d in zip(multiples, shape)))


def _reverse(t: TosaOp) -> Tensor:
    x = t.input(0, "input")
    axis = t.int("axis")
    if not 0 <= axis < x.type.rank:
        raise TosaError(f"axis {axis} is out of range for rank {x.type.rank}")
    return t.node("reverse", [x], dims=(axis,))


def _gather(t: TosaOp) -> Tensor:
    """GATHER: values [N, K, C], indices [N, W] -> [N, W, C], out[n, w] = values[n,
    indices[n, w]] (a gather batched over N)."""
    values, indices = t.input(0, "values"), t.input(1, "indices")
    if values.type.rank != 3 or indices.type.rank != 2:
        raise TosaError("takes values [N, K, C] and indices [N, W]")
    c = values.type.shape[2]
    return t.node("gather", [values, indices], offset_dims=(2,), collapsed_slice_dims=(1,),
                  operand_batching_dims=(0,), start_indices_batching_dims=(0,),
                  start_index_map=(1,), index_vector_dim=2, slice_sizes=(1, 1, c))


def _scatter(t: TosaOp) -> Tensor:
    """SCATTER: values_in [N, K, C], indices [N, W], input [N, W, C] -> values_out, a
    copy of values_in with out[n, indices[n, w]] = input[n, w] (the graph's scatter
    batched over N, window C, an update region that returns the new value).

    TOSA requires every index in [0, K) and no index twice in a batch, and leaves the
    result undefined otherwise; minirt's is deterministic: updates apply in row-major
    order of (n, w), so of repeated indices the last (largest w) wins, and an index
    outside [0, K) writes nothing (the graph's scatter skips it, as StableHLO's does)."""
    values, indices, updates = (t.input(0, "values_in"), t.input(1, "indices"),
                                t.input(2, "input"))
    if values.type.rank != 3 or indices.type.rank != 2 or updates.type.rank != 3:
        raise TosaError("takes values_in [N, K, C], indices [N, W] and input [N, W, C]")
    (n, _, c), (ni, w), (nu, wu, cu) = (values.type.shape, indices.type.shape,
                                        updates.type.shape)
    if (ni, nu, wu, cu) != (n, n, w, c):
        raise TosaError(f"input is {_dims(updates.type.shape)}, indices "
                        f"{_dims(indices.type.shape)} and values_in "
                        f"{_dims(values.type.shape)} need it {n}x{w}x{c}")
    if indices.type.dtype.kind not in "iu":
        raise TosaError(f"indices must be integers, not {indices.type.dtype}")
    if updates.type.dtype != values.type.dtype:
        raise TosaError(f"input is {updates.type.dtype}, values_in {values.type.dtype}")
    scalar = TensorType((), values.type.dtype)
    update = Graph("tosa.scatter.update")
    update.add_input(scalar)
    update.outputs = [update.add_input(scalar)]  # the new value replaces the old
    attrs = {"update_window_dims": (2,), "inserted_window_dims": (1,),
             "input_batching_dims": (0,), "scatter_indices_batching_dims": (0,),
             "scatter_dims_to_operand_dims": (1,), "index_vector_dim": 2,
             "indices_are_sorted": False, "unique_indices": False}
    inputs = [values, indices, updates]
    OPS["scatter"].infer(Node("scatter", inputs, [], attrs, t.b.loc, [update]))  # checks
    return t.b.graph.add("scatter", inputs, [values.type], attrs, t.b.loc, [update]).output


def _dims(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape))


CONVERTERS: dict[str, Callable[[TosaOp], Tensor]] = {
    "tosa.const": _const,
    "tosa.const_shape": _const_shape,
    "tosa.reshape": _reshape,
    "tosa.transpose": _transpose,
    "tosa.slice": _slice,
    "tosa.pad": _pad,
    "tosa.concat": _concat,
    "tosa.tile": _tile,
    "tosa.reverse": _reverse,
    "tosa.gather": _gather,
    "tosa.scatter": _scatter,
}
