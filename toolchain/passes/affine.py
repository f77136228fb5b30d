"""Per-channel affine folding (batch normalization folding, generalized).

Chains of elementwise add / subtract / multiply / divide by constants that vary along
at most one axis (per-channel, or scalar) are collapsed into one `x * scale + shift`;
when x comes straight from a convolution or dot_general whose weights are constant
and the axis is its output-channel axis, the scale is multiplied into the weights:

    conv(x, W) - mean) / sqrt(var + eps) * gamma + beta  ==  conv(x, W * s) + t

with s = gamma / sqrt(var + eps), t = beta - mean * s. Inference-time batch norm then
costs nothing but a bias add, and four per-channel vectors per layer become one.
Values change only by rounding (division becomes multiplication by the reciprocal,
products are reassociated); everything downstream, the reference included, runs the
folded graph. A chain whose result is rounded to an integer or a small float (QUANTIZE's
x / scale before its round: TFLite's and ONNX's definitions; ONNX's float8 and float4
QuantizeLinear) is left alone: there one ulp moves a value across a tie and changes the
result (and dropping a + 0 would keep a -0 that the add makes +0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.passes.fold import eliminate_dead_nodes
from toolchain.types import TensorType


@dataclass
class _Affine:
    """y = x * scale + shift, with scale and shift scalar or along `axis` of x."""

    x: Tensor
    axis: int | None
    scale: np.ndarray  # shape () or (n,)
    shift: np.ndarray


def _constant_value(t: Tensor) -> np.ndarray | None:
    """The full value of t if it is a constant or a broadcast of one, as a (lazy) view."""
    node = t.producer
    if node is None:
        return None
    if node.op == "constant":
        return np.asarray(node.attrs["value"])
    if node.op == "broadcast_in_dim" and node.inputs[0].producer is not None \
            and node.inputs[0].producer.op == "constant":
        src = np.asarray(node.inputs[0].producer.attrs["value"])
        expanded = [1] * len(node.attrs["shape"])
        for i, d in enumerate(node.attrs["dims"]):
            expanded[d] = src.shape[i]
        return np.broadcast_to(src.reshape(expanded), node.attrs["shape"])
    return None


def _per_channel(v: np.ndarray) -> tuple[int | None, np.ndarray] | None:
    """(axis, vector) when v varies along at most one axis; (None, scalar) if constant."""
    if v.size == 0 or v.dtype.kind != "f":
        return None
    first = v.reshape(-1)[0]
    varying = [a for a in range(v.ndim) if v.shape[a] > 1
               and not np.array_equal(v, np.broadcast_to(v.take([0], axis=a), v.shape))]
    if not varying:
        return None, np.asarray(first, dtype=v.dtype)
    if len(varying) > 1:
        return None
    axis = varying[0]
    index = tuple(slice(None) if a == axis else 0 for a in range(v.ndim))
    return axis, np.ascontiguousarray(v[index])


def _as_affine(node: Node) -> _Affine | None:
    """node as an affine map of its one non-constant operand, if it is one."""
    if node.op not in ("add", "subtract", "multiply", "divide") or len(node.inputs) != 2:
        return None
    out = node.output.type
    if not out.dtype.is_float or out.quant is not None:
        return None
    values = [_constant_value(t) for t in node.inputs]
    if (values[0] is None) == (values[1] is None):
        return None
    pos = 1 if values[1] is not None else 0
    found = _per_channel(values[pos])
    if found is None:
        return None
    axis, c = found
    x = node.inputs[1 - pos]
    one, zero = np.ones_like(c), np.zeros_like(c)
    with np.errstate(all="ignore"):
        if node.op == "add":
            scale, shift = one, c
        elif node.op == "multiply":
            scale, shift = c, zero
        elif node.op == "subtract":
            scale, shift = (one, -c) if pos == 1 else (-one, c)
        elif pos == 1 and np.all(c != 0):  # x / c
            scale, shift = (1 / c).astype(c.dtype), zero
        else:
            return None
    return _Affine(x, axis, scale, shift)


def _compose(inner: _Affine, outer: _Affine) -> _Affine | None:
    """outer(inner(x)); None when their channel axes differ."""
    if inner.axis is not None and outer.axis is not None and inner.axis != outer.axis:
        return None
    axis = inner.axis if inner.axis is not None else outer.axis
    return _Affine(inner.x, axis, (inner.scale * outer.scale).astype(inner.scale.dtype),
                   (inner.shift * outer.scale + outer.shift).astype(inner.shift.dtype))


def _uses(graph: Graph) -> dict[int, int]:
    n: dict[int, int] = {}
    for node in graph.nodes:
        for t in node.inputs:
            n[id(t)] = n.get(id(t), 0) + 1
    for t in graph.outputs:
        n[id(t)] = n.get(id(t), 0) + 1
    return n


def _weight_axis(producer: Node, axis: int) -> tuple[int, int] | None:
    """(weight operand, weight axis) that output `axis` of a contraction scales."""
    at = producer.attrs
    if producer.op == "convolution" and axis == at["output_feature"] \
            and at["batch_group_count"] == 1:
        return 1, at["kernel_output"]
    if producer.op == "dot_general":
        a, b = (t.type for t in producer.inputs)
        lhs_free = [d for d in range(a.rank) if d not in at["lhs_batch"] + at["lhs_contract"]]
        rhs_free = [d for d in range(b.rank) if d not in at["rhs_batch"] + at["rhs_contract"]]
        first_rhs = len(at["lhs_batch"]) + len(lhs_free)
        if axis >= first_rhs:
            return 1, rhs_free[axis - first_rhs]
        if axis >= len(at["lhs_batch"]):
            return 0, lhs_free[axis - len(at["lhs_batch"])]
    return None


class _Builder:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.out: list[Node] = []

    def node(self, op: str, inputs: list[Tensor], ty: TensorType, attrs: dict, loc) -> Tensor:
        n = Node(op, inputs, [], attrs, loc)
        n.outputs = [Tensor(ty, "", n)]
        self.out.append(n)
        return n.outputs[0]

    def channel(self, v: np.ndarray, axis: int | None, like: TensorType, loc) -> Tensor:
        """A constant vector (or scalar) broadcast to `like` along `axis`."""
        c = self.node("constant", [], TensorType(v.shape, like.dtype), {"value": v}, loc)
        return self.node("broadcast_in_dim", [c], like,
                         {"dims": () if axis is None else (axis,), "shape": like.shape}, loc)


# Ops that round a float to an integer value: a division feeding one must stay exact.
_ROUNDING = frozenset({"round_nearest_afz", "round_nearest_even", "floor", "ceil"})
# Ops a value may pass on its way to that rounding and still be rounded there (ONNX's
# QuantizeLinear to FLOAT4E2M1 adds the zero point, its float8 saturation clamps).
_ON_THE_WAY = frozenset({"add", "subtract", "clamp"})


def _rounds(node: Node) -> bool:
    """Whether node rounds its operand to a coarse grid: to integers, or to a small float
    (8 bits or fewer), where one ulp of f32 moves a value across a tie."""
    if node.op in _ROUNDING:
        return True
    if node.op != "convert" or not node.outputs:
        return False
    dt = node.output.type.dtype
    return not dt.is_float or dt.bits <= 8


def _rounded(graph: Graph) -> set[int]:
    """Ids of the tensors some op rounds to an integer or a small float, directly or
    through _ON_THE_WAY ops."""
    out: set[int] = set()
    for node in reversed(graph.nodes):
        if _rounds(node) or (node.op in _ON_THE_WAY and node.outputs
                             and id(node.output) in out):
            out.update(id(t) for t in node.inputs)
    return out


def fold_affine(graph: Graph) -> Graph:
    """Collapses per-channel affine chains and folds their scale into weights."""
    uses = _uses(graph)
    rounded = _rounded(graph)
    affine: dict[int, _Affine] = {}  # node output id -> its composed affine form
    chain_end: set[int] = set()
    for node in graph.nodes:
        if node.outputs and id(node.outputs[0]) in rounded:
            continue  # rewritten, it could round differently (x / c is not x * (1/c))
        a = _as_affine(node)
        if a is None:
            continue
        inner = affine.get(id(a.x))
        if inner is not None and uses[id(a.x)] == 1:
            composed = _compose(inner, a)
            if composed is not None:
                chain_end.discard(id(a.x))
                a = composed
        affine[id(node.output)] = a
        chain_end.add(id(node.output))
    if not chain_end:
        return graph
    b = _Builder(graph)
    for node in graph.nodes:
        key = id(node.outputs[0]) if len(node.outputs) == 1 else None
        if key not in chain_end:
            b.out.append(node)
            continue
        a = affine[key]
        ty = node.output.type
        x, scale = a.x, a.scale
        producer = x.producer
        target = None
        if (producer is not None and a.axis is not None and uses[id(x)] == 1
                and producer.op in ("convolution", "dot_general")):
            target = _weight_axis(producer, a.axis)
            if target is not None and _constant_value(producer.inputs[target[0]]) is None:
                target = None
        if target is not None:
            pos, waxis = target
            w = producer.inputs[pos]
            wv = np.asarray(_constant_value(w))
            shape = [1] * wv.ndim
            shape[waxis] = -1
            scaled = (wv * scale.reshape(shape)).astype(wv.dtype)
            new_w = b.node("constant", [], w.type, {"value": scaled}, producer.loc)
            # The contraction already sits earlier in the list; point it at new weights.
            producer.inputs[pos] = new_w
            b.out.remove(new_w.producer)
            b.out.insert(b.out.index(producer), new_w.producer)
            scale = np.ones_like(scale)
        y = x
        if not np.all(scale == 1):
            y = b.node("multiply", [y, b.channel(scale, a.axis, ty, node.loc)], ty, {}, node.loc)
        if not np.all(a.shift == 0):
            y = b.node("add", [y, b.channel(a.shift, a.axis, ty, node.loc)], ty, {}, node.loc)
        if y is x:  # the whole chain was the identity
            y = b.node("multiply", [x, b.channel(np.ones_like(scale), None, ty, node.loc)], ty,
                       {}, node.loc)
        # Keep the node object (and its output tensor) so consumers need no rewiring.
        last = y.producer
        b.out.remove(last)
        node.op, node.inputs, node.attrs = last.op, last.inputs, last.attrs
        b.out.append(node)
    graph.nodes = b.out
    eliminate_dead_nodes(graph)
    return graph
