"""Adding nodes to a Graph with their result types inferred from the op table.

Frontends and passes that build graph fragments (the int8 kernels of toolchain/quant,
the .tflite importer, quantization) describe a node by op, operands and attributes; the
type rule of toolchain/graph/ops.py gives its result, so no builder states a type it
could get wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolchain.diagnostics import Location
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS
from toolchain.types import DType, QuantParams, TensorType

__all__ = ["GraphBuilder"]


class GraphBuilder:
    """Appends typed nodes to `graph`, each carrying `loc` (where in the source model
    they come from)."""

    def __init__(self, graph: Graph, loc: Location | None = None) -> None:
        self.graph = graph
        self.loc = loc

    def op(self, name: str, inputs: list[Tensor], quant: QuantParams | None = None,
           **attrs: Any) -> Tensor:
        """One single-result node; `quant` annotates an integer result with the
        quantization it is stored in."""
        probe = Node(name, list(inputs), [], dict(attrs), self.loc)
        (ty,) = OPS[name].infer(probe)
        if quant is not None:
            ty = TensorType(ty.shape, ty.dtype, quant)
        return self.graph.add(name, inputs, [ty], attrs, self.loc).output

    def const(self, value: Any, dt: DType, quant: QuantParams | None = None) -> Tensor:
        """A constant of element type `dt` holding `value` (cast with numpy)."""
        array = np.asarray(value).astype(dt.np_dtype)
        ty = TensorType(array.shape, dt, quant)
        return self.graph.add("constant", [], [ty], {"value": array}, self.loc).output

    def splat(self, value: Any, dt: DType, shape: tuple[int, ...]) -> Tensor:
        """A scalar constant broadcast to `shape` (an index map: it never reaches RAM)."""
        scalar = self.const(value, dt)
        if not shape:
            return scalar
        return self.op("broadcast_in_dim", [scalar], dims=(), shape=tuple(shape))

    def along(self, values: Any, dt: DType, shape: tuple[int, ...], axis: int) -> Tensor:
        """Per-channel constants along `axis` of `shape` (one value: a splat)."""
        array = np.asarray(values).reshape(-1)
        if array.size == 1 or len(set(array.tolist())) == 1:
            return self.splat(array[0], dt, shape)
        if array.size != shape[axis]:
            raise ValueError(f"{array.size} values for axis {axis} of shape {shape}")
        return self.op("broadcast_in_dim", [self.const(array, dt)], dims=(axis,),
                       shape=tuple(shape))

    def broadcast_to(self, t: Tensor, shape: tuple[int, ...]) -> Tensor:
        """`t` broadcast numpy-style (trailing dimensions aligned) to `shape`."""
        src = tuple(t.type.shape)
        if src == tuple(shape):
            return t
        offset = len(shape) - len(src)
        if offset < 0 or any(s not in (1, shape[offset + i]) for i, s in enumerate(src)):
            raise ValueError(f"cannot broadcast {src} to {tuple(shape)}")
        return self.op("broadcast_in_dim", [t], dims=tuple(range(offset, len(shape))),
                       shape=tuple(shape))
