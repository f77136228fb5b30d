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

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.loader import UsageError
from toolchain.passes.calibrate import calibrate, load_calibration
from toolchain.passes.fold import eliminate_dead_nodes, fold_constants
from toolchain.passes.ptq_fused import _FusedRules
from toolchain.passes.ptq_rules import _OpRules
from toolchain.passes.ptq_values import (
    SOFTMAX_QUANT,
    _dequantized,
    _Unsupported,
    quantize_values,
)
from toolchain.passes.quantize import QuantizeOptions, check_not_quantized
from toolchain.types import F32

__all__ = ["SOFTMAX_QUANT", "dequantize_outputs", "io_quantization", "quantize_graph",
           "quantize_inputs", "quantize_int8", "quantize_values"]

# Ops that move or pick elements: their int8 result is the same integers, so it keeps
# the operand's quantization.
_CARRIED = ("reshape", "transpose", "broadcast_in_dim", "slice", "reverse", "gather")
# Ops whose result is one of their float operands' values: right on integers once every
# float operand shares the result's quantization.
_SHARED = ("maximum", "minimum", "clamp", "select", "concatenate")


def quantize_int8(graph: Graph, options: QuantizeOptions) -> Graph:
    """`--quantize int8`: the graph (already folded) quantized in place with the
    calibration samples of `options.calibration`; see quantize_graph."""
    if not options.calibration:
        raise UsageError("--quantize int8 needs --calibration FILE: an .npz of samples "
                         "(input_0, ... each with a leading axis of samples)")
    check_not_quantized(graph, options)
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


class _Rewriter(_OpRules, _FusedRules):
    """One pass over the float graph in order, building the int8 graph beside it: each
    op by the first rewrite that takes it (a softmax, a table, its op's rule)."""

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
