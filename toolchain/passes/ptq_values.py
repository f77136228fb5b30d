"""The values of the int8 rewrite (passes/ptq.py): how a float tensor of the old graph
becomes an int8 one of the new graph, and the clamps and bias adds an op's rewrite may
take over from the ops that follow it.

Every per-op rule (passes/ptq_rules.py) and every rewrite of several ops at once
(passes/ptq_fused.py) asks these questions of the same state: the calibrated ranges,
the tensors already mapped, the nodes already absorbed. They share it as methods of
_RewriterBase, which the rewriter (passes/ptq.py) derives from with the rules.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.passes.calibrate import Ranges, activation_quant
from toolchain.quant import build, tflm, tflm_tables
from toolchain.quant.fixedpoint import round_half_away
from toolchain.reference.kernels import KERNELS
from toolchain.types import F32, QuantParams, TensorType, dtype

__all__ = ["SOFTMAX_QUANT", "quantize_values"]

I8, I32 = dtype("i8"), dtype("i32")
QMIN, QMAX = -128, 127
WEIGHT_MAX = 127  # symmetric weights use -127..127, as TFLite's converter does
INT32_MAX = (1 << 31) - 1
# float32's largest finite value: TFLite writes unbounded clamps (RELU) with it.
FLT_MAX = float(np.finfo(np.float32).max)
# TFLite's int8 SOFTMAX writes 1/256 steps from -128 and checks its output for them.
SOFTMAX_QUANT = QuantParams(I8, F32, (1.0 / 256.0,), (-128,))


class _Unsupported(Exception):
    """An op (instance) this pass cannot compute in integers."""


def quantize_values(values: np.ndarray, q: QuantParams) -> np.ndarray:
    """Float values as int8 of per-tensor quantization `q`: round(v / scale) (half away
    from zero, in float32 as TFLite's quantize) + zero point, saturated. NaN becomes the
    zero point (the real 0), infinities saturate."""
    scale, zp = np.float32(q.scales[0]), q.zero_points[0]
    with np.errstate(all="ignore"):
        v = np.asarray(values, dtype=np.float32) / scale
        v = np.where(np.isnan(v), np.float32(0), v)
        v = np.clip(v, np.float32(-1e6), np.float32(1e6))  # integers beyond int8 anyway
    return np.clip(round_half_away(v).astype(np.int64) + zp, QMIN, QMAX).astype(np.int8)


def _dequantized(q: QuantParams, values: np.ndarray) -> np.ndarray:
    """TFLite's DEQUANTIZE of int8 `values`: float32(double(scale) * (q - zp))."""
    return tflm.dequantize(values, q.scales[0], q.zero_points[0])


def _per_tensor(q: QuantParams | None) -> tuple[float, int]:
    assert q is not None and q.axis is None, q
    return float(q.scales[0]), int(q.zero_points[0])


@dataclass
class _Bounds:
    """A clamp to [lo, hi] (None: unbounded) fused into the op before it."""

    lo: float | None = None
    hi: float | None = None

    def meet(self, lo: float | None, hi: float | None) -> _Bounds | None:
        """The clamp after this one as one clamp: their intersection, or None when the
        intervals are disjoint (the composition is then no single interval)."""
        new_lo = lo if self.lo is None else self.lo if lo is None else max(lo, self.lo)
        new_hi = hi if self.hi is None else self.hi if hi is None else min(hi, self.hi)
        if new_lo is not None and new_hi is not None and new_lo > new_hi:
            return None
        return _Bounds(new_lo, new_hi)


class _RewriterBase:
    """The state of one pass over the float graph in order, building the int8 graph
    beside it, and what every rule asks of it (passes/ptq.py's _Rewriter runs it)."""

    def __init__(self, graph: Graph, ranges: Ranges, int8_io: bool) -> None:
        self.old = graph
        self.ranges = ranges
        self.int8_io = int8_io
        self.new = Graph(graph.name, input_names=list(graph.input_names),
                         states=list(graph.states))
        self.b = GraphBuilder(self.new)
        self.mapped: dict[int, Tensor] = {}
        self.users: dict[int, list[Node]] = {}
        for node in graph.nodes:
            for t in node.inputs:
                self.users.setdefault(id(t), []).append(node)
        self.graph_outputs = {id(t) for t in graph.outputs}
        # Nodes computed as part of an earlier rewrite (id -> node, in the order fused).
        self.absorbed: dict[int, Node] = {}
        self.softmax: dict[int, tuple[Tensor, float]] = {}  # divide node -> (x, beta)
        self.consts: dict[int, np.ndarray | None] = {}
        self.quants: dict[int, QuantParams] = {}
        self.errors: list[CompileError] = []

    # ------------------------------------------------------------------ values

    def _bind(self, old: Tensor, new: Tensor) -> None:
        self.mapped[id(old)] = new

    def _const(self, t: Tensor) -> np.ndarray | None:
        """t's value when it depends on constants only (computed by the reference)."""
        key = id(t)
        if key in self.consts:
            return self.consts[key]
        node = t.producer
        value = None
        if node is not None and len(node.outputs) == 1:
            if node.op == "constant":
                value = np.asarray(node.attrs["value"])
            else:
                args = [self._const(i) for i in node.inputs]
                if all(a is not None for a in args):
                    value = np.asarray(KERNELS[node.op](node, *args)).reshape(t.type.shape)
        self.consts[key] = value
        return value

    def _splat(self, t: Tensor) -> float | None:
        """The one value of a constant tensor whose elements are all equal."""
        v = self._const(t)
        if v is None or v.size == 0 or v.dtype.kind != "f":
            return None
        first = v.reshape(-1)[0]
        if not np.all((v == first) | (np.isnan(v) & np.isnan(first))):
            return None
        return float(first)

    def _quant(self, t: Tensor) -> QuantParams:
        """The calibrated quantization of float tensor t."""
        key = id(t)
        if key not in self.quants:
            self.quants[key] = activation_quant(*self.ranges[key])
        return self.quants[key]

    def _value(self, t: Tensor) -> Tensor:
        """t in the new graph: int8 for a float tensor (constants quantized by their own
        range), as it was otherwise."""
        if id(t) in self.mapped:
            return self.mapped[id(t)]
        value = self._const(t)
        if value is None:
            raise _Unsupported(f"operand {t.type} has no integer form")  # not reached
        if not t.type.dtype.is_float:
            new = self.b.const(value, t.type.dtype)
        else:
            new = self._const_as(t, self._own_quant(value))
        self.mapped[id(t)] = new
        return new

    @staticmethod
    def _own_quant(value: np.ndarray) -> QuantParams:
        finite = value[np.isfinite(value)]
        if finite.size == 0:
            return activation_quant(0.0, 0.0)
        return activation_quant(float(finite.min()), float(finite.max()))

    def _const_as(self, t: Tensor, q: QuantParams) -> Tensor:
        """Constant float tensor t as int8 of quantization q. A broadcast or reshape of a
        smaller constant stays one, so flash holds the small one."""
        node = t.producer
        if node is not None and node.op in ("broadcast_in_dim", "reshape") and \
                self._const(node.inputs[0]) is not None:
            return self.b.op(node.op, [self._const_as(node.inputs[0], q)], quant=q,
                             **node.attrs)
        return self.b.const(quantize_values(self._const(t), q), I8, q)

    def _as_quant(self, t: Tensor, q: QuantParams) -> Tensor:
        """Float tensor t in the new graph with quantization q: constants quantized so,
        tensors of another quantization requantized (TFLite's int8 QUANTIZE, a table)."""
        if id(t) not in self.mapped and self._const(t) is not None:
            return self._const_as(t, q)
        x = self._value(t)
        if x.type.quant == q:
            return x
        (s_in, z_in), (s_out, z_out) = _per_tensor(x.type.quant), _per_tensor(q)
        params = tflm.requantize_params(s_in, z_in, s_out, z_out)
        return build.lookup(self.b, x, tflm_tables.lookup_table("REQUANTIZE", params), quant=q)

    def _placeholder(self, t: Tensor) -> Tensor:
        if not t.type.dtype.is_float:
            return self.b.const(np.zeros(t.type.shape, t.type.dtype.np_dtype), t.type.dtype)
        q = self._quant(t) if id(t) in self.ranges else activation_quant(0.0, 0.0)
        return self.b.const(np.zeros(t.type.shape, np.int8), I8, q)

    # ------------------------------------------------------------------ the ends

    def _entry(self, t: Tensor) -> Tensor:
        ty = t.type
        if not ty.dtype.is_float:
            return self.new.add_input(ty, t.name)
        if ty.dtype != F32:
            raise CompileError(f"--quantize int8: an input of type {ty} is not supported "
                               "(float32 inputs only)")
        q = self._quant(t)
        if self.int8_io:
            return self.new.add_input(TensorType(ty.shape, I8, q), t.name)
        x = self.new.add_input(ty, t.name)
        return _quantize_f32(self.b, x, q)

    def _exit(self, t: Tensor) -> Tensor:
        y = self._value(t)
        if not t.type.dtype.is_float or self.int8_io:
            return y
        scale, zp = _per_tensor(y.type.quant)
        return build.dequantize(self.b, y, scale=scale, zero_point=zp)

    # ------------------------------------------------------------------ fusion

    def _single_user(self, t: Tensor) -> Node | None:
        """The one node reading t once, when t is no graph output: an op it can be
        fused into."""
        users = self.users.get(id(t), [])
        if len(users) != 1 or id(t) in self.graph_outputs:
            return None
        node = users[0]
        if id(node) in self.absorbed or id(node) in self.softmax:
            return None
        return node

    def _clamp_bounds(self, node: Node, t: Tensor) -> tuple[float | None, float | None] | None:
        """(lo, hi) when `node` clamps t by constants: maximum / minimum with a uniform
        constant, or clamp with uniform constant bounds (float32's largest value
        meaning unbounded, as TFLite writes RELU)."""
        def bound(v: float | None, sign: int) -> float | None:
            return None if v is None or sign * v >= FLT_MAX else v

        if node.op in ("maximum", "minimum"):
            other = node.inputs[1] if node.inputs[0] is t else node.inputs[0]
            c = self._splat(other)
            if c is None or np.isnan(c):
                return None
            return (bound(c, -1), None) if node.op == "maximum" else (None, bound(c, 1))
        if node.op == "clamp" and node.inputs[1] is t:
            lo, hi = self._splat(node.inputs[0]), self._splat(node.inputs[2])
            if lo is None or hi is None or np.isnan(lo) or np.isnan(hi):
                return None
            return bound(lo, -1), bound(hi, 1)
        return None

    def _absorb_activation(self, t: Tensor) -> tuple[Tensor, _Bounds]:
        """Follows t through the clamps that read it alone: (last tensor, their bounds)."""
        bounds = _Bounds()
        while (node := self._single_user(t)) is not None:
            found = self._clamp_bounds(node, t)
            met = bounds.meet(*found) if found is not None else None
            if met is None:
                break
            bounds = met
            self.absorbed[id(node)] = node
            t = node.output
        return t, bounds

    def _absorb_bias(self, t: Tensor, axis: int | None) -> tuple[Tensor, np.ndarray | None]:
        """t + B (or t - B) with B constant along all but `axis` (uniform when axis is
        None): (the sum, B as one float value per channel)."""
        node = self._single_user(t)
        if node is None or node.op not in ("add", "subtract"):
            return t, None
        if node.op == "subtract" and node.inputs[0] is not t:
            return t, None
        other = node.inputs[1] if node.inputs[0] is t else node.inputs[0]
        value = self._const(other)
        if value is None or other is t:
            return t, None
        vec = _along(np.broadcast_to(value, t.type.shape), axis)
        if vec is None or not np.isfinite(vec).all():
            return t, None
        self.absorbed[id(node)] = node
        return node.output, (-vec if node.op == "subtract" else vec)

    @staticmethod
    def _act_range(bounds: _Bounds, q: QuantParams) -> tuple[int, int]:
        """The int8 clamp of real bounds in the output's quantization, each bound
        quantized as TFLite's CalculateActivationRangeQuantized does."""
        lo = QMIN if bounds.lo is None else int(quantize_values(np.float32(bounds.lo), q))
        hi = QMAX if bounds.hi is None else int(quantize_values(np.float32(bounds.hi), q))
        return lo, hi


def _along(value: np.ndarray, axis: int | None) -> np.ndarray | None:
    """The values of `value` along `axis` when it varies along no other dim (one value
    when axis is None and it is uniform); else None."""
    if axis is None:
        first = value.reshape(-1)[:1]
        return first if value.size and np.all(value == first[0]) else None
    index = tuple(slice(None) if d == axis else 0 for d in range(value.ndim))
    vec = np.asarray(value[index])
    shape = [-1 if d == axis else 1 for d in range(value.ndim)]
    return vec if np.array_equal(np.broadcast_to(vec.reshape(shape), value.shape),
                                 value) else None


def _quantize_f32(b: GraphBuilder, x: Tensor, q: QuantParams) -> Tensor:
    """The entry QUANTIZE f32 -> int8 (TFLite's AffineQuantize: x / scale in float32,
    rounded half away from zero, + zero point, saturated). The clamp comes before the
    conversion to integers, so no input, however large, overflows it."""
    scale, zp = _per_tensor(q)
    shape = tuple(x.type.shape)
    v = b.op("divide", [x, b.splat(np.float32(scale), F32, shape)])
    v = b.op("round_nearest_afz", [v])
    v = b.op("clamp", [b.const(QMIN - zp, F32), v, b.const(QMAX - zp, F32)])
    v = b.op("add", [b.op("convert", [v], dtype="i32"), b.splat(zp, I32, shape)])
    return b.op("convert", [v], quant=q, dtype="i8")
