"""The int8 rewrites that take several float ops as one int8 op: a softmax written as
max / subtract / (x beta) / exp / sum / divide becomes TFLite's int8 SOFTMAX, and a
chain of element-wise functions of one tensor becomes one lookup table computed from
the float functions themselves. Apart from the per-op rules (passes/ptq_rules.py)
because they match patterns over the graph before (softmax) or instead of (tables) any
single op's rule.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.graph.ir import Node, Tensor
from toolchain.graph.ops import OPS
from toolchain.passes.ptq_values import (
    FLT_MAX,
    QMAX,
    QMIN,
    SOFTMAX_QUANT,
    _dequantized,
    _per_tensor,
    _RewriterBase,
    quantize_values,
)
from toolchain.quant import build, tflm_activations, tflm_tables
from toolchain.reference.kernels import KERNELS
from toolchain.types import F32, TensorType


class _FusedRules(_RewriterBase):
    """Softmaxes and tables of element-wise functions."""

    # ------------------------------------------------------------------ softmax

    def _find_softmaxes(self) -> None:
        for node in self.old.nodes:
            if node.op == "divide":
                found = self._match_softmax(node)
                if found is not None:
                    x, beta, inner = found
                    self.softmax[id(node)] = (x, beta)
                    self.absorbed.update((id(n), n) for n in inner)

    def _through_broadcasts(self, t: Tensor) -> tuple[Tensor, list[Node], tuple[int, ...]]:
        """Back from t through broadcast_in_dim / reshape: (source, those nodes, where
        each source dim lands in t)."""
        nodes: list[Node] = []
        dims = tuple(range(t.type.rank))
        while (node := t.producer) is not None:
            src = node.inputs[0] if node.inputs else None
            if node.op == "broadcast_in_dim":
                inner = tuple(node.attrs["dims"])
            elif node.op == "reshape" and src is not None and \
                    tuple(t.type.shape) == tuple(src.type.shape) + (1,):
                inner = tuple(range(src.type.rank))  # a trailing 1 appended
            else:
                break
            dims = tuple(dims[d] for d in inner)
            nodes.append(node)
            t = src
        return t, nodes, dims

    def _match_softmax(self, div: Node) -> tuple[Tensor, float, list[Node]] | None:
        """divide(e, broadcast(sum(e))) with e = exp((x - broadcast(max(x))) [* beta]),
        the sum and max over the last axis: (x, beta, the nodes before the divide)."""
        e, d = div.inputs
        exp_node = e.producer
        if exp_node is None or exp_node.op != "exponential":
            return None
        last = e.type.rank - 1
        kept = tuple(range(last))
        total, sum_chain, dims = self._through_broadcasts(d)
        sum_node = total.producer
        if (dims != kept or sum_node is None or sum_node.op != "reduce"
                or sum_node.attrs["kind"] != "add" or sum_node.inputs[0] is not e
                or tuple(sum_node.attrs["dims"]) != (last,)
                or self._splat(sum_node.inputs[1]) != 0.0):
            return None
        s = exp_node.inputs[0]
        beta, inner = 1.0, [exp_node, sum_node, *sum_chain]
        node = s.producer
        if node is not None and node.op == "multiply":
            a, b = node.inputs
            c, s = (self._splat(b), a) if self._splat(b) is not None else (self._splat(a), b)
            if c is None or not c > 0:
                return None
            beta = c
            inner.append(node)
            node = s.producer
        if node is None or node.op != "subtract":
            return None
        x, top_b = node.inputs
        inner.append(node)
        top, top_chain, dims = self._through_broadcasts(top_b)
        inner += top_chain
        top_node = top.producer
        if top_node is not None and top_node.op == "maximum":  # max(-inf, max(x)), JAX's
            a, b = top_node.inputs
            floor, top = (self._splat(a), b) if self._splat(a) is not None else (
                self._splat(b), a)
            if floor is None or floor > -FLT_MAX:
                return None
            inner.append(top_node)
            top_node = top.producer
        if (dims != kept or top_node is None or top_node.op != "reduce"
                or top_node.attrs["kind"] != "maximum" or top_node.inputs[0] is not x
                or tuple(top_node.attrs["dims"]) != (last,)):
            return None
        start = self._splat(top_node.inputs[1])
        if start is None or start > -FLT_MAX:
            return None
        inner.append(top_node)
        # Only a softmax may read what it computes inside.
        members = {id(n) for n in inner} | {id(div)}
        for n in inner:
            for t in n.outputs:
                if id(t) in self.graph_outputs or any(
                        id(u) not in members for u in self.users.get(id(t), [])):
                    return None
        return x, beta, inner

    def _softmax(self, node: Node) -> None:
        x, beta = self.softmax[id(node)]
        xq = self._value(x)
        s_in, _ = _per_tensor(xq.type.quant)
        params = tflm_activations.softmax_params(s_in, beta)
        exp_table, sum_table = tflm_tables.softmax_exp_table(params)
        self._bind(node.output, build.softmax(self.b, xq, exp_table, sum_table,
                                              quant=SOFTMAX_QUANT))

    # ------------------------------------------------------------------ tables

    def _single_input(self, node: Node) -> Tensor | None:
        """The one float tensor an element-wise float op reads when all its other
        operands are uniform constants; else None."""
        if OPS[node.op].group != "elementwise" or len(node.outputs) != 1 \
                or node.output.type.dtype != F32:
            return None
        varying = {id(t): t for t in node.inputs if self._const(t) is None}
        if len(varying) != 1:
            return None
        (x,) = varying.values()
        if x.type.dtype != F32 or x.type.shape != node.output.type.shape:
            return None
        if any(self._splat(t) is None for t in node.inputs if t is not x):
            return None
        return x

    def _table_chain(self, node: Node) -> bool:
        """An element-wise function of one tensor (and the ones that follow it, reading
        it alone) as one int8 lookup table: table[q] = quantize(f(dequantize(q)))."""
        x = self._single_input(node)
        if x is None:
            return False
        chain = [node]
        while (user := self._single_user(chain[-1].output)) is not None and \
                self._single_input(user) is chain[-1].output:
            chain.append(user)
        xq = self._value(x)
        values = _dequantized(xq.type.quant, np.arange(QMIN, QMAX + 1))
        current = x
        for n in chain:
            values = _apply_elementwise(n, current, values, self._splat)
            current = n.output
        out_q = self._quant(current)
        self.absorbed.update((id(n), n) for n in chain[1:])
        table = quantize_values(values, out_q)
        self._bind(current, build.lookup(self.b, xq, table, quant=out_q))
        return True


def _apply_elementwise(node: Node, x: Tensor, values: np.ndarray,
                       splat: Callable[[Tensor], float | None]) -> np.ndarray:
    """`node`'s float function on 256 values of its operand x (the other operands are
    uniform constants), computed by the reference kernel itself."""
    n = values.shape[0]
    ty = TensorType((n,), F32)
    args = [values if t is x else np.full(n, splat(t), np.float32) for t in node.inputs]
    probe = Node(node.op, [Tensor(ty) for _ in node.inputs], [], dict(node.attrs), node.loc)
    probe.outputs = [Tensor(ty, "", probe)]
    with np.errstate(all="ignore"):
        return np.asarray(KERNELS[node.op](probe, *args), dtype=np.float32).reshape(n)
