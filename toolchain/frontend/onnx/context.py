"""What a node's converter works with: its inputs as graph tensors, constants or
quantized views, its attributes, and helpers that add graph nodes with inferred types.

Values of the ONNX graph are held three ways:

- a graph `Tensor` (a model input or a computed value);
- a numpy array, for constant-like values (initializers, Constant nodes, anything
  folded at import: Shape of a static tensor, ConstantOfShape, shape arithmetic), made
  a `constant` node only when a converter reads it as a tensor;
- a `QView`: the output of a DequantizeLinear, `scale * (q - zero_point)`, kept as the
  integer tensor q and its parameters so that an int8 converter can read q itself
  (docs/int8.md). A float reader gets the dequantized tensor, made on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.reader import NodeInfo
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS, ShapeError
from toolchain.graph.verify import verify_node
from toolchain.types import DType, QuantParams, TensorType, dtype

F32 = dtype("f32")


@dataclass
class QView:
    """A dequantized value not computed yet: real = scale * (q - zero_point), per tensor
    (`axis` None, scalar scale) or per channel along `axis` of q. `q` is the integer
    tensor (a graph Tensor) or its constant values (weights, biases)."""

    q: Tensor | np.ndarray
    scale: np.ndarray  # float32, shape () or (channels,)
    zero_point: np.ndarray  # int64, the same shape
    axis: int | None

    @property
    def dtype(self) -> DType:
        if isinstance(self.q, Tensor):
            return self.q.type.dtype
        return {np.dtype(np.int8): dtype("i8"), np.dtype(np.uint8): dtype("ui8"),
                np.dtype(np.int32): dtype("i32"), np.dtype(np.int16): dtype("i16"),
                np.dtype(np.uint16): dtype("ui16")}[self.q.dtype]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.q.type.shape) if isinstance(self.q, Tensor) else self.q.shape

    @property
    def is_const(self) -> bool:
        return isinstance(self.q, np.ndarray)

    def per_tensor(self) -> tuple[float, int] | None:
        """(scale, zero point) when one pair covers every element."""
        if self.axis is None or (self.scale.size == 1):
            return float(self.scale.reshape(-1)[0]), int(self.zero_point.reshape(-1)[0])
        s, z = self.scale.reshape(-1), self.zero_point.reshape(-1)
        if np.all(s == s[0]) and np.all(z == z[0]):
            return float(s[0]), int(z[0])
        return None

    def same_as(self, other: QView) -> bool:
        """Whether both hold values on one scale (the same parameters and storage)."""
        a, b = self.per_tensor(), other.per_tensor()
        return a is not None and a == b and self.dtype == other.dtype

    def quant_params(self) -> QuantParams | None:
        """The graph's QuantParams of q (per tensor only)."""
        pt = self.per_tensor()
        if pt is None:
            return None
        return QuantParams(self.dtype, F32, (pt[0],), (pt[1],), None)

    def dequantized(self) -> np.ndarray:
        """The real values of a constant view, in float32 as DequantizeLinear computes
        them: float(q - zero_point) * scale, one rounding."""
        assert isinstance(self.q, np.ndarray)
        q = self.q.astype(np.int64)
        s, z = self.scale, self.zero_point
        if self.axis is not None and s.size > 1:
            shape = [1] * q.ndim
            shape[self.axis] = -1
            s, z = s.reshape(shape), z.reshape(shape)
        with np.errstate(over="ignore"):  # a huge scale gives inf, as in onnxruntime
            return ((q - z).astype(np.float32) * s.astype(np.float32)).astype(np.float32)


Value = Tensor | np.ndarray | QView


class OpContext:
    """One node being converted: its inputs, attributes and the graph to add to."""

    def __init__(self, node: NodeInfo, graph: Graph, lookup: Callable[[str], Value],
                 as_tensor: Callable[[str], Tensor], opset: int):
        self.info = node
        self.graph = graph
        self._lookup = lookup
        self._as_tensor = as_tensor
        self.opset = opset

    def reading(self, tensors: dict[str, Tensor]) -> OpContext:
        """The same node, its inputs named in `tensors` read as those tensors (an int8
        view's integers, for data movement on int8 values)."""
        return OpContext(self.info, self.graph, self._lookup,
                         lambda name: tensors[name] if name in tensors else
                         self._as_tensor(name), self.opset)

    def building(self, graph: Graph) -> OpContext:
        """The same node, adding nodes to `graph` instead (a region being assembled)."""
        return OpContext(self.info, graph, self._lookup, self._as_tensor, self.opset)

    # ------------------------------------------------------------ the node

    def attr(self, name: str, default: Any = None) -> Any:
        return self.info.attrs.get(name, default)

    def ints(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        value = self.info.attrs.get(name)
        if value is None:
            return None if default is None else list(default)
        if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
            raise Unsupported(f"attribute '{name}' must be a list of integers")
        return list(value)

    def ints_per_dim(self, name: str, count: int, default: int, minimum: int) -> list[int]:
        """Attribute `name` checked against the rank: `count` integers (one per spatial
        dimension, or two for pads) each at least `minimum`; `default` each when absent.
        The one rule for strides, dilations, pads, output_padding and output_shape."""
        values = self.ints(name, [default] * count)
        assert values is not None
        if len(values) != count or any(v < minimum for v in values):
            raise Unsupported(f"{name} {values} must be {count} values >= {minimum}")
        return values

    def has_input(self, i: int) -> bool:
        return i < len(self.info.inputs) and self.info.inputs[i] != ""

    def value(self, i: int) -> Value:
        """Input i as held: Tensor, numpy array or QView."""
        if not self.has_input(i):
            raise Unsupported(f"input {i} is missing")
        return self._lookup(self.info.inputs[i])

    def input(self, i: int) -> Tensor:
        """Input i as a graph tensor (a constant made a node, a QView dequantized)."""
        if not self.has_input(i):
            raise Unsupported(f"input {i} is missing")
        return self._as_tensor(self.info.inputs[i])

    def qview(self, i: int) -> QView | None:
        v = self.value(i) if self.has_input(i) else None
        return v if isinstance(v, QView) else None

    def const(self, i: int, what: str) -> np.ndarray:
        """The values of input i, which must be constant (a shape, axes, pads...)."""
        v = self.value(i)
        if isinstance(v, QView) and v.is_const:
            return v.dequantized()
        if isinstance(v, Tensor) and any(v is t for t in self.graph.inputs):
            name = self.info.inputs[i]
            raise Unsupported(f"input {i} ({what}) must be a constant: it is the model's "
                              f"input '{name}'; give its value with --input-value "
                              f"{name}=VALUE")
        if not isinstance(v, np.ndarray):
            raise Unsupported(f"input {i} ({what}) must be a constant (an initializer, a "
                              "Constant node, or computed from them and static shapes)")
        return v

    def optional_const(self, i: int, what: str) -> np.ndarray | None:
        return self.const(i, what) if self.has_input(i) else None

    def shape(self, i: int) -> tuple[int, ...]:
        v = self.value(i)
        if isinstance(v, Tensor):
            return tuple(v.type.shape)
        return tuple(v.shape)

    # ------------------------------------------------------------ building nodes

    def node(self, op: str, inputs: Sequence[Tensor], quant: QuantParams | None = None,
             **attrs: Any) -> Tensor:
        """Adds graph op `op` with its result type inferred, and returns the result."""
        probe = Node(op, list(inputs), [], attrs)
        try:
            (ty,) = OPS[op].infer(probe)
        except ShapeError as e:
            raise Unsupported(f"{op}: {e}") from None
        if quant is not None:
            ty = TensorType(ty.shape, ty.dtype, quant)
        node = self.graph.add(op, list(inputs), [ty], attrs)
        err = verify_node(node)
        if err is not None:
            raise Unsupported(err.message)
        return node.output

    def constant(self, value: Any, dt: DType | str) -> Tensor:
        """A constant node of element type `dt`."""
        dt = dtype(dt) if isinstance(dt, str) else dt
        array = np.asarray(value).astype(dt.np_dtype)
        return self.graph.add("constant", [], [TensorType(array.shape, dt)],
                              {"value": array}).output

    def scalar(self, value: float | int, like: Tensor) -> Tensor:
        return self.constant(value, like.type.dtype)

    def broadcast(self, t: Tensor, shape: tuple[int, ...],
                  dims: tuple[int, ...] | None = None) -> Tensor:
        """`t` broadcast to `shape`; by default numpy's rule (trailing dims aligned)."""
        shape = tuple(shape)
        if dims is None:
            dims = tuple(range(len(shape) - t.type.rank, len(shape)))
        if tuple(t.type.shape) == shape and dims == tuple(range(len(shape))):
            return t
        return self.node("broadcast_in_dim", [t], dims=tuple(dims), shape=shape)

    def filled(self, value: float | int, like: Tensor) -> Tensor:
        return self.broadcast(self.scalar(value, like), tuple(like.type.shape), ())

    def reshape(self, t: Tensor, shape: Sequence[int]) -> Tensor:
        if tuple(t.type.shape) == tuple(shape):
            return t
        return self.node("reshape", [t], shape=tuple(int(s) for s in shape))

    def broadcast_pair(self, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
        """Both operands broadcast numpy-style to their common shape."""
        try:
            shape = tuple(np.broadcast_shapes(a.type.shape, b.type.shape))
        except ValueError:
            raise Unsupported(f"shapes {list(a.type.shape)} and {list(b.type.shape)} do not "
                              "broadcast") from None
        if a.type.dtype != b.type.dtype:
            raise Unsupported(f"operands of element types {a.type.dtype} and {b.type.dtype}")
        return self.broadcast(a, shape), self.broadcast(b, shape)


def empty_value(shape: Sequence[int], dt: DType) -> np.ndarray:
    """The value of a result with no elements (a dimension of 0): a constant, since it
    holds nothing to compute, so the firmware never sees a zero-size tensor. Nodes
    reading it fold at import (onnx's reference) or take it as a constant."""
    shape = tuple(int(d) for d in shape)
    assert 0 in shape
    return np.zeros(shape, dt.np_dtype)


def axis_of(axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis normalized into [0, rank)."""
    if not -rank <= axis < rank:
        raise Unsupported(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


__all__ = ["OpContext", "QView", "Value", "axis_of", "empty_value"]
