"""Post-training int8 quantization (`--quantize int8`): a float graph -> an integer graph.

The float graph (folded, batch norms in the weights) is run on calibration samples
(toolchain/passes/calibrate.py) and every float tensor gets per-tensor asymmetric int8
quantization from its range. Then each op is rewritten into the int8 kernels of
toolchain/quant/build.py, with TFLite's integer arithmetic and TFLite Micro's parameter
derivation (toolchain/quant/tflm*.py):

- convolution (any dimension numbers, depthwise and grouped ones included) and
  dot_general by constant weights: weights symmetric int8 per output channel (scale =
  max|w| / 127), the bias add that follows as an int32 bias at input scale x weight
  scale, and the clamps that follow (ReLU: maximum with 0; ReLU6; any clamp by constants)
  as the kernel's activation range;
- add / subtract / multiply of two tensors (or of a tensor and a non-uniform constant,
  quantized by its own range): TFLite's ADD / SUB / MUL, with a following clamp fused;
- average pooling (an NHWC window sum by 1 / window size, no padding): TFLite's
  AVERAGE_POOL_2D, whose output keeps its input's quantization, as TFLite requires;
  the mean over dimensions (a sum by 1 / count): TFLite's MEAN; other window or
  dimension sums, scaled by a constant or not: an int32 sum requantized once;
- softmax over the last axis written as max / subtract / (x beta) / exp / sum / divide:
  TFLite's int8 SOFTMAX, output scale 1/256, zero point -128 as TFLite requires;
- max / min pooling and reductions, reshape, transpose, broadcast, slice, reverse,
  gather, pad (by the quantized pad value): the same integers, the same quantization;
  concatenate, select, maximum and minimum of tensors: every operand requantized to the
  result's quantization first (one shared quantization);
- any other element-wise float function of one tensor (constants aside: exp, tanh,
  x * 0.5, a clamp, ...; a chain of them becomes one table): an int8 -> int8 lookup table
  computed from the float function itself, table[q] = quantize(f(dequantize(q))).

Float graph inputs are quantized at the entry and float outputs dequantized at the exit,
or, with `int8_io`, they become int8 tensors carrying their quantization. Anything else
that computes in float is reported as `--quantize int8: ...` at the op's location (all
such ops at once); so between the entry and the exit the result computes in integers
only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS
from toolchain.loader import UsageError
from toolchain.passes.calibrate import Ranges, activation_quant, calibrate, load_calibration
from toolchain.passes.fold import eliminate_dead_nodes, fold_constants
from toolchain.passes.quantize import QuantizeOptions
from toolchain.quant import build, tflm, tflm_activations, tflm_tables
from toolchain.quant.fixedpoint import quantize_multiplier, round_half_away
from toolchain.reference.kernels import KERNELS
from toolchain.types import F32, QuantParams, TensorType, dtype

__all__ = ["SOFTMAX_QUANT", "dequantize_outputs", "io_quantization", "quantize_graph",
           "quantize_inputs", "quantize_int8", "quantize_values"]

I8, I32 = dtype("i8"), dtype("i32")
QMIN, QMAX = -128, 127
WEIGHT_MAX = 127  # symmetric weights use -127..127, as TFLite's converter does
INT32_MAX = (1 << 31) - 1
# float32's largest finite value: TFLite writes unbounded clamps (RELU) with it.
FLT_MAX = float(np.finfo(np.float32).max)
# TFLite's int8 SOFTMAX writes 1/256 steps from -128 and checks its output for them.
SOFTMAX_QUANT = QuantParams(I8, F32, (1.0 / 256.0,), (-128,))

# Ops that move or pick elements: their int8 result is the same integers, so it keeps
# the operand's quantization.
_CARRIED = ("reshape", "transpose", "broadcast_in_dim", "slice", "reverse", "gather")
# Ops whose result is one of their float operands' values: right on integers once every
# float operand shares the result's quantization.
_SHARED = ("maximum", "minimum", "clamp", "select", "concatenate")
# Reduction kinds that pick an element (int8 start values for them).
_PICKING = {"maximum": QMIN, "minimum": QMAX}


class _Unsupported(Exception):
    """An op (instance) this pass cannot compute in integers."""


def quantize_int8(graph: Graph, options: QuantizeOptions) -> Graph:
    """`--quantize int8`: the graph (already folded) quantized in place with the
    calibration samples of `options.calibration`; see quantize_graph."""
    if not options.calibration:
        raise UsageError("--quantize int8 needs --calibration FILE: an .npz of samples "
                         "(input_0, ... each with a leading axis of samples)")
    samples = load_calibration(options.calibration, graph)
    return quantize_graph(graph, samples, int8_io=options.int8_io)


def quantize_graph(graph: Graph, samples: list[np.ndarray], int8_io: bool = False) -> Graph:
    """Rewrites the float `graph` in place into int8 with ranges calibrated on `samples`
    (one array of shape (S, *input shape) per input) and returns it. Raises a
    CompileError listing every op it cannot compute in integers."""
    ranges = calibrate(graph, samples)
    _Rewriter(graph, ranges, int8_io).run()
    return fold_constants(graph)


def io_quantization(graph: Graph) -> dict[str, list[dict]]:
    """The quantization of a graph's int8 inputs and outputs (`--int8-io`), named as in
    npz files: {"inputs": [{"name": "input_0", "scale": s, "zero_point": z}, ...],
    "outputs": [...]}; float and unquantized ones are left out."""
    def rows(prefix: str, tensors: list[Tensor]) -> list[dict]:
        return [{"name": f"{prefix}_{i}", "scale": t.type.quant.scales[0],
                 "zero_point": t.type.quant.zero_points[0]}
                for i, t in enumerate(tensors) if t.type.quant is not None]

    return {"inputs": rows("input", graph.inputs), "outputs": rows("output", graph.outputs)}


def quantize_inputs(graph: Graph, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Float inputs as `graph` takes them: quantized (quantize_values) for its int8
    quantized inputs, unchanged for the others."""
    return [quantize_values(x, t.type.quant) if t.type.quant is not None
            and np.asarray(x).dtype.kind == "f" else x for t, x in zip(graph.inputs, arrays)]


def dequantize_outputs(graph: Graph, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """`graph`'s outputs as reals: its quantized ones dequantized (float32), the others
    unchanged."""
    return [_dequantized(t.type.quant, y) if t.type.quant is not None else y
            for t, y in zip(graph.outputs, arrays)]


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


class _Rewriter:
    """One pass over the float graph in order, building the int8 graph beside it."""

    def __init__(self, graph: Graph, ranges: Ranges, int8_io: bool) -> None:
        self.old = graph
        self.ranges = ranges
        self.int8_io = int8_io
        self.new = Graph(graph.name, input_names=list(graph.input_names))
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

    # ------------------------------------------------------------------ driving

    def run(self) -> None:
        for t in self.old.inputs:
            self.mapped[id(t)] = self._entry(t)
        self._find_softmaxes()
        for index, node in enumerate(self.old.nodes):
            if id(node) in self.absorbed:
                continue
            self.b.loc = node.loc
            before = len(self.absorbed)
            try:
                self._rewrite(node)
            except (_Unsupported, ValueError) as e:
                what = f"'{node.op}'" + ("" if node.loc else
                                         f" (node {index}, result {node.outputs[0].type})")
                reason = str(e) if isinstance(e, _Unsupported) else f"cannot quantize it: {e}"
                self.errors.append(CompileError(f"--quantize int8: {what}: {reason}",
                                                node.loc))
                # Stand-ins for what this op (and what it fused) computes, so the pass
                # goes on to find the other unsupported ops.
                fused = list(self.absorbed.values())[before:]
                for t in [t for n in [node, *fused] for t in n.outputs]:
                    if id(t) not in self.mapped:
                        self.mapped[id(t)] = self._placeholder(t)
        if self.errors:
            first, *rest = self.errors
            raise CompileError(first.message, first.loc, notes=rest)
        self.b.loc = None
        self.new.outputs = [self._exit(t) for t in self.old.outputs]
        eliminate_dead_nodes(self.new)
        self.old.inputs, self.old.outputs = self.new.inputs, self.new.outputs
        self.old.nodes = self.new.nodes

    def _rewrite(self, node: Node) -> None:
        floats = [t for t in node.inputs + node.outputs if t.type.dtype.is_float]
        if not floats:  # integer / boolean work is carried over as it is
            inputs = [self._value(t) for t in node.inputs]
            copy = self.new.add(node.op, inputs, [t.type for t in node.outputs],
                                dict(node.attrs), node.loc, node.regions)
            for old, new in zip(node.outputs, copy.outputs):
                self.mapped[id(old)] = new
            return
        if len(node.outputs) == 1 and self._const(node.output) is not None:
            return  # a constant: quantized where it is used, by that use's needs
        for t in floats:
            if t.type.dtype != F32:
                raise _Unsupported(f"{t.type.dtype} tensors are not supported (float32 only)")
        if id(node) in self.softmax:
            self._softmax(node)
            return
        if self._table_chain(node):
            return
        rule = _RULES.get(node.op)
        if rule is None:
            raise _Unsupported(_NO_RULE.get(node.op, "no int8 kernel for this float op"))
        rule(self, node)

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

    # ------------------------------------------------------------------ contractions

    def _weights(self, w: np.ndarray, axis: int | None, bias: np.ndarray | None,
                 input_scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(int8 weights, float32 scales, int32 bias): weights symmetric per channel
        along `axis` (or per tensor), scale = max|w| / 127 (1 / 127 for an all-zero
        channel); the bias at input scale x weight scale, rounded half away from zero.
        A weight scale grows where the bias would not fit int32 at it."""
        w = np.asarray(w, dtype=np.float32)
        reduce = tuple(d for d in range(w.ndim) if d != axis)
        peak = np.abs(w).max(axis=reduce) if axis is not None else np.abs(w).max(initial=0.0)
        peak = np.atleast_1d(peak).astype(np.float32)
        scales = (np.where(peak > 0, peak, np.float32(1)) / np.float32(WEIGHT_MAX))
        scales = scales.astype(np.float32)
        s_in = np.float32(input_scale)
        if bias is not None:
            b = np.broadcast_to(np.asarray(bias, np.float64), scales.shape)
            need = (np.abs(b) / (float(s_in) * INT32_MAX) * 1.001).astype(np.float32)
            scales = np.maximum(scales, need)
        shape = [-1 if d == axis else 1 for d in range(w.ndim)] if axis is not None else []
        per = scales.reshape(shape) if axis is not None else scales[0]
        q = np.clip(round_half_away(w / per), -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)
        bias_q = None
        if bias is not None:
            bias_scale = (s_in * scales).astype(np.float64)  # float32 products, as TFLite
            bias_q = np.clip(round_half_away(np.asarray(bias, np.float64) / bias_scale),
                             -INT32_MAX, INT32_MAX).astype(np.int32)
        return q, scales, bias_q

    def _convolution(self, node: Node) -> None:
        w_t = node.inputs[1]
        w = self._const(w_t)
        if w is None:
            raise _Unsupported("a convolution of two float tensors has no int8 kernel "
                               "(the weights must be constant)")
        attrs = {k: node.attrs[k] for k in build.CONV_ATTRS}
        if attrs["batch_group_count"] != 1:
            raise _Unsupported("batch_group_count > 1 has no int8 kernel")
        tail, xq, qw, qb, params = self._linear(node, w, attrs["kernel_output"],
                                                attrs["output_feature"], tflm.conv_params)
        self._bind(tail, build.convolution(self.b, xq, qw, qb, attrs=attrs, **params))

    def _dot_general(self, node: Node) -> None:
        x, w_t = node.inputs
        w = self._const(w_t)
        if w is None:
            raise _Unsupported("a dot_general of two float tensors has no int8 kernel (the "
                               "right operand must be constant weights)")
        if node.attrs["lhs_batch"] or node.attrs["rhs_batch"]:
            raise _Unsupported("a dot_general with batch dimensions has no int8 kernel")
        contract = tuple(node.attrs["rhs_contract"])
        free = [d for d in range(w.ndim) if d not in contract]
        # Per output channel when the weights have one free dim; else per tensor.
        w_axis = free[0] if len(free) == 1 else None
        channel = x.type.rank - len(node.attrs["lhs_contract"]) if w_axis is not None else None
        tail, xq, qw, qb, params = self._linear(node, w, w_axis, channel,
                                                tflm.fully_connected_params)
        rank = node.output.type.rank
        if qb is not None and channel is not None:  # trailing-aligned, along the channel
            qb = qb.reshape((-1,) + (1,) * (rank - 1 - channel))
        attrs = {k: node.attrs[k] for k in ("lhs_batch", "rhs_batch", "lhs_contract",
                                            "rhs_contract")}
        self._bind(tail, build.dot_general(self.b, xq, qw, qb, attrs=attrs,
                                           channel_axis=channel, **params))

    def _linear(self, node: Node, w: np.ndarray, w_axis: int | None, channel: int | None,
                rescale) -> tuple[Tensor, Tensor, np.ndarray, np.ndarray | None, dict]:
        """What a convolution and a dot_general share: the bias and activation that follow
        `node` absorbed, its input's quantized value, the int8 weights and int32 bias, and
        the keyword arguments of the int8 op (zero points, the per-channel multipliers and
        shifts that `rescale` derives, the clamp, the output's quantization)."""
        tail, bias = self._absorb_bias(node.output, channel)
        tail, bounds = self._absorb_activation(tail)
        xq = self._value(node.inputs[0])
        s_in, z_in = _per_tensor(xq.type.quant)
        out_q = self._quant(tail)
        s_out, z_out = _per_tensor(out_q)
        qw, w_scales, qb = self._weights(w, w_axis, bias, s_in)
        mults, shifts = rescale(s_in, w_scales, s_out)
        lo, hi = self._act_range(bounds, out_q)
        return tail, xq, qw, qb, dict(input_zp=z_in, multipliers=mults, shifts=shifts,
                                      output_zp=z_out, act_min=lo, act_max=hi, quant=out_q)

    # ------------------------------------------------------------------ arithmetic

    def _operands(self, node: Node) -> tuple[Tensor, Tensor]:
        """Both operands in the new graph; a constant one quantized by its own range
        (a uniform constant never gets here: that op is a table)."""
        a, b = node.inputs
        return self._value(a), self._value(b)

    def _add_sub(self, node: Node) -> None:
        tail, bounds = self._absorb_activation(node.output)
        x1, x2 = self._operands(node)
        (s1, z1), (s2, z2) = _per_tensor(x1.type.quant), _per_tensor(x2.type.quant)
        out_q = self._quant(tail)
        so, zo = _per_tensor(out_q)
        p = tflm.add_params(s1, z1, s2, z2, so, zo)
        lo, hi = self._act_range(bounds, out_q)
        kernel = build.add if node.op == "add" else build.sub
        y = kernel(self.b, x1, x2, left_shift=p.left_shift,
                   input1=(z1, p.input1_multiplier, p.input1_shift),
                   input2=(z2, p.input2_multiplier, p.input2_shift),
                   output=(zo, p.output_multiplier, p.output_shift), act_min=lo, act_max=hi,
                   quant=out_q)
        self._bind(tail, y)

    def _mul(self, node: Node, x1: Tensor, x2: Tensor) -> None:
        tail, bounds = self._absorb_activation(node.output)
        (s1, z1), (s2, z2) = _per_tensor(x1.type.quant), _per_tensor(x2.type.quant)
        out_q = self._quant(tail)
        so, zo = _per_tensor(out_q)
        p = tflm.mul_params(s1, z1, s2, z2, so, zo)
        lo, hi = self._act_range(bounds, out_q)
        y = build.mul(self.b, x1, x2, input1_zp=z1, input2_zp=z2, multiplier=p.multiplier,
                      shift=p.shift, output_zp=zo, act_min=lo, act_max=hi, quant=out_q)
        self._bind(tail, y)

    def _multiply(self, node: Node) -> None:
        self._mul(node, *self._operands(node))

    def _divide(self, node: Node) -> None:
        """x / C for a constant C of several values: x times 1 / C (quantized by its own
        range)."""
        x, d = node.inputs
        c = self._const(d)
        if c is None:
            raise _Unsupported("a divide of two float tensors has no int8 kernel (a softmax "
                               "is recognized over the last axis only)")
        with np.errstate(divide="ignore"):
            recip = (np.float32(1) / c.astype(np.float32)).astype(np.float32)
        if not np.isfinite(recip).all():
            raise _Unsupported("a divide by a constant holding 0 has no int8 form")
        q = self._own_quant(recip)
        inv = self.b.const(quantize_values(recip, q), I8, q)
        self._mul(node, self._value(x), inv)

    def _same_quant(self, node: Node) -> None:
        """maximum / minimum / clamp / select / concatenate: every float operand in the
        result's quantization, then the op on the integers."""
        q = self._quant(node.output)
        inputs = [self._as_quant(t, q) if t.type.dtype.is_float else self._value(t)
                  for t in node.inputs]
        self._bind(node.output, self.b.op(node.op, inputs, quant=q, **node.attrs))

    def _carry(self, node: Node) -> None:
        """Data movement: the same integers, the operand's quantization."""
        x = self._value(node.inputs[0])
        rest = [self._value(t) for t in node.inputs[1:]]
        self._bind(node.output, self.b.op(node.op, [x, *rest], quant=x.type.quant,
                                          **node.attrs))

    def _pad(self, node: Node) -> None:
        x = self._value(node.inputs[0])
        value = self._const(node.inputs[1])
        if value is None:
            raise _Unsupported("a pad by a computed value has no int8 kernel")
        pad = self.b.const(quantize_values(value, x.type.quant), I8, x.type.quant)
        self._bind(node.output, self.b.op("pad", [x, pad], quant=x.type.quant, **node.attrs))

    def _convert(self, node: Node) -> None:
        source, result = node.inputs[0].type.dtype, node.output.type.dtype
        if source.is_float and result.is_integer:
            raise _Unsupported(f"the model converts {source} to {result} itself (a hybrid "
                               "model, quantizing activations at run time?); --quantize "
                               "int8 takes float models")
        if source != result:
            raise _Unsupported(f"a convert from {node.inputs[0].type.dtype} to "
                               f"{node.output.type.dtype} has no int8 kernel")
        self._bind(node.output, self._value(node.inputs[0]))

    # ------------------------------------------------------------------ reductions

    def _scale_after(self, t: Tensor) -> tuple[Tensor, float]:
        """t * c or t / c by a uniform constant that reads t alone: (result, factor)."""
        node = self._single_user(t)
        if node is None or node.op not in ("multiply", "divide"):
            return t, 1.0
        if node.op == "divide" and node.inputs[0] is not t:
            return t, 1.0
        other = node.inputs[1] if node.inputs[0] is t else node.inputs[0]
        c = self._splat(other)
        if c is None or other is t or not np.isfinite(c) or c == 0:
            return t, 1.0
        self.absorbed[id(node)] = node
        return node.output, (c if node.op == "multiply" else 1.0 / c)

    def _picking_start(self, node: Node, xq: Tensor) -> Tensor:
        """The int8 start value of a max / min reduction: the float one quantized
        (-inf and float32's lowest become -128)."""
        init = self._const(node.inputs[1])
        if init is None:
            raise _Unsupported("a reduction whose start value is computed has no int8 kernel")
        return self.b.const(quantize_values(init, xq.type.quant), I8, xq.type.quant)

    def _sum_scaled(self, node: Node, xq: Tensor, factor: float, out_q: QuantParams,
                    window: bool) -> Tensor:
        """sum(x - zp) in int32 over the window / dims, times factor, requantized once:
        one multiplier for factor x input scale / output scale."""
        s_in, z_in = _per_tensor(xq.type.quant)
        s_out, z_out = _per_tensor(out_q)
        shape = tuple(xq.type.shape)
        v = self.b.op("subtract", [self.b.op("convert", [xq], dtype="i32"),
                                   self.b.splat(z_in, I32, shape)])
        zero = self.b.const(0, I32)
        if window:
            acc = self.b.op("reduce_window", [v, zero], **node.attrs)
        else:
            acc = self.b.op("reduce", [v, zero], **node.attrs)
        m, s = quantize_multiplier(factor * float(np.float32(s_in)) / float(np.float32(s_out)))
        return build.requantize(self.b, acc, m, s, axis=None, output_zp=z_out, quant=out_q)

    def _reduce(self, node: Node) -> None:
        kind = node.attrs["kind"]
        xq = self._value(node.inputs[0])
        if kind in _PICKING:
            y = self.b.op("reduce", [xq, self._picking_start(node, xq)], quant=xq.type.quant,
                          **node.attrs)
            self._bind(node.output, y)
            return
        if kind != "add" or self._splat(node.inputs[1]) != 0.0:
            raise _Unsupported(f"a '{kind}' reduction has no int8 kernel (sums from 0, "
                               "maximum and minimum have)")
        tail, factor = self._scale_after(node.output)
        out_q = self._quant(tail)
        dims = tuple(node.attrs["dims"])
        count = int(np.prod([node.inputs[0].type.shape[d] for d in dims], dtype=np.int64))
        if count > 0 and np.float32(factor) == np.float32(1.0 / count):  # a mean: MEAN
            s_in, z_in = _per_tensor(xq.type.quant)
            s_out, z_out = _per_tensor(out_q)
            p = tflm.mean_params(s_in, z_in, s_out, z_out)
            y = build.mean(self.b, xq, dims, keep_dims=False, input_zp=z_in,
                           multiplier=p.multiplier, shift=p.shift, output_zp=z_out,
                           quant=out_q)
        else:
            y = self._sum_scaled(node, xq, factor, out_q, window=False)
        self._bind(tail, y)

    def _reduce_window(self, node: Node) -> None:
        kind = node.attrs["kind"]
        xq = self._value(node.inputs[0])
        if kind in _PICKING:
            y = self.b.op("reduce_window", [xq, self._picking_start(node, xq)],
                          quant=xq.type.quant, **node.attrs)
            self._bind(node.output, y)
            return
        if kind != "add" or self._splat(node.inputs[1]) != 0.0:
            raise _Unsupported(f"a '{kind}' window reduction has no int8 kernel (sums "
                               "from 0, maximum and minimum have)")
        tail, factor = self._scale_after(node.output)
        a = node.attrs
        window = tuple(a["window"])
        plain = (len(window) == 4 and window[0] == window[3] == 1
                 and a["strides"][0] == a["strides"][3] == 1
                 and all(d == 1 for d in a["base_dilations"] + a["window_dilations"])
                 and not any(lo or hi for lo, hi in a["padding"]))
        if plain and np.float32(factor) == np.float32(1.0 / (window[1] * window[2])):
            # NHWC average pooling: TFLite's AVERAGE_POOL_2D keeps the input's quantization.
            tail, bounds = self._absorb_activation(tail)
            lo, hi = self._act_range(bounds, xq.type.quant)
            y = build.average_pool(self.b, xq, window=window[1:3], strides=a["strides"][1:3],
                                   padding=((0, 0), (0, 0)), act_min=lo, act_max=hi)
        else:
            y = self._sum_scaled(node, xq, factor, self._quant(tail), window=True)
        self._bind(tail, y)

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


# Why an op has no int8 form, where more can be said than that it has none.
_NO_RULE = {
    **{op: "no int8 kernel for this function of two float tensors"
       for op in ("atan2", "power", "remainder")},
    "compare": "no int8 kernel for comparing float tensors",
}

# op -> how the rewriter computes it in int8 (after softmaxes and one-tensor tables).
_RULES: dict[str, Callable[[_Rewriter, Node], None]] = {
    "convolution": _Rewriter._convolution,
    "dot_general": _Rewriter._dot_general,
    "add": _Rewriter._add_sub,
    "subtract": _Rewriter._add_sub,
    "multiply": _Rewriter._multiply,
    "divide": _Rewriter._divide,
    "pad": _Rewriter._pad,
    "convert": _Rewriter._convert,
    "reduce": _Rewriter._reduce,
    "reduce_window": _Rewriter._reduce_window,
    **{op: _Rewriter._carry for op in _CARRIED},
    **{op: _Rewriter._same_quant for op in _SHARED},
}
