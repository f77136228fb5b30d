"""Weight quantization of float constants: fp16 storage or symmetric int8; and the options
of every quantization mode, including full int8 post-training quantization (`int8`,
toolchain/passes/ptq.py).

A large float constant C is replaced by a constant holding its stored form and a cheap
node that widens it back, which fusion inlines into every kernel that reads C:
- fp16: `convert(Q: f16)`; Q is C rounded to nearest even.
- int8-weights: `dequantize(Q: i8, scales: f32, axis)` with real = scale * stored.
  Scales are symmetric (zero point 0, stored range -127..127) and per output channel
  when C is the weight of a dot_general or convolution, per tensor otherwise.
- int4-weights: the same with Q: i4, stored range -7..7. The range is symmetric, as
  int8's -127..127: zero stays exactly 0 with no zero point to subtract in the kernel,
  and both signs get the same resolution; using -8 too would buy one level on one side
  only. With 15 levels the scale matters more than at int8: max|w| / 7 spends them on
  the rare largest weights, so each channel's scale is a * max|w| / 7 with `a` the
  value of CLIP_GRID (1.0 down to 0.5) that minimises the channel's squared rounding
  error, the weights beyond the scale clipped to +-7 (int4_symmetric). The module
  stores i4 constants two to a byte (schedule/sub_byte.py) and the kernels unpack them
  where they read them.
Eligible: f32 constants with at least `min_elements` elements that are not vectors
(biases and normalization vectors, one value per channel, always stay f32).
So no float copy of a weight ever exists in RAM, and the reference executor, which
runs the same rewritten graph, computes exactly what the firmware computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.loader import UsageError
from toolchain.types import F32, QuantParams, TensorType, dtype

# int8: the whole graph in integers, activations calibrated (toolchain/passes/ptq.py).
MODES = ("none", "fp16", "int8-weights", "int4-weights", "int8")
# Tiny tensors save nothing worth their precision.
DEFAULT_MIN_ELEMENTS = 64
INT8_MAX = 127
INT4_MAX = 7
# int4-weights: the fractions of a channel's largest |w| its scale's +-7 may stand for,
# largest first (a tie keeps the larger: nothing clipped). Measured on the shared JAX
# models (8 seeded inputs): resnet8's cosine with float 0.912 -> 0.982 (top-1 0 -> 100 %)
# against max|w| / 7, the autoencoder's 0.944 -> 0.958, the others' gain smaller.
CLIP_GRID = np.linspace(1.0, 0.5, 26)


@dataclass(frozen=True)
class QuantizeOptions:
    """How a build quantizes. Every field is plain data: the build stamp records them all,
    so a build is reused only with the same options (and, for int8, the same calibration
    file contents: `calibration_sha256`)."""

    mode: str = "none"
    min_elements: int = DEFAULT_MIN_ELEMENTS
    # int8 only: the .npz of calibration samples (input_0, ... with a leading batch axis).
    calibration: str | None = None
    calibration_sha256: str | None = None
    # int8 only: the model's inputs and outputs are int8 too (else f32, quantized at the
    # entry and dequantized at the exit).
    int8_io: bool = False


def _channel_axis(graph: Graph, t: Tensor) -> int | None:
    """The output-channel axis of a weight, if every user agrees on one; else None."""
    axes = set()
    for node in graph.nodes:
        for pos, inp in enumerate(node.inputs):
            if inp is not t:
                continue
            axis = None
            if node.op == "convolution" and pos == 1:
                axis = node.attrs["kernel_output"]
            elif node.op == "dot_general":
                side = "rhs" if pos == 1 else "lhs"
                used = node.attrs[f"{side}_batch"] + node.attrs[f"{side}_contract"]
                free = [d for d in range(t.type.rank) if d not in used]
                axis = free[0] if len(free) == 1 else None
            axes.add(axis)
    return axes.pop() if len(axes) == 1 else None


def _is_vector(t: TensorType) -> bool:
    """One value per channel (a bias, a normalization vector): at most one dim > 1.
    These are a sliver of a model's bytes and the most precision-sensitive, so they
    stay f32 whatever their size."""
    return sum(d > 1 for d in t.shape) <= 1


def int8_symmetric(w: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(stored int8 values, f32 scales): per channel along `axis`, or per tensor."""
    w = w.astype(np.float32)
    if axis is None:
        peak = np.abs(w).max(initial=0.0)
    else:
        peak = np.abs(w).max(axis=tuple(d for d in range(w.ndim) if d != axis), initial=0.0)
    scale = (np.where(peak > 0, peak, 1.0) / INT8_MAX).astype(np.float32)
    s = scale if axis is None else scale.reshape([-1 if d == axis else 1 for d in range(w.ndim)])
    q = np.clip(np.rint(w / s), -INT8_MAX, INT8_MAX).astype(np.int8)
    return q, scale


def int4_symmetric(w: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(stored values in -7..7 as int8, f32 scales) per channel along `axis`, or per
    tensor: each channel's scale a * max|w| / 7 with the `a` of CLIP_GRID whose rounding
    (and clipping) error sum of squares is least."""
    w = w.astype(np.float32)
    keep = axis is not None
    reduce = tuple(d for d in range(w.ndim) if d != axis) if keep else None
    peak = np.abs(w).max(axis=reduce, keepdims=True, initial=0.0) if keep else \
        np.asarray(np.abs(w).max(initial=0.0)).reshape((1,) * w.ndim)
    peak = np.where(peak > 0, peak, 1.0)
    best_err = best_scale = None
    for a in CLIP_GRID:
        scale = (peak * np.float32(a) / INT4_MAX).astype(np.float32)
        q = np.clip(np.rint(w / scale), -INT4_MAX, INT4_MAX)
        err = ((q * scale - w).astype(np.float64) ** 2).sum(axis=reduce, keepdims=True)
        if best_err is None:
            best_err, best_scale = err, scale
        else:
            better = err < best_err
            best_err = np.where(better, err, best_err)
            best_scale = np.where(better, scale, best_scale)
    q = np.clip(np.rint(w / best_scale), -INT4_MAX, INT4_MAX).astype(np.int8)
    scale = best_scale.reshape(-1) if keep else best_scale.reshape(())
    return q, scale.astype(np.float32)


# Each weight-only integer mode: its stored type, max |q| and how it picks its scales.
WEIGHT_INTS = {"int8-weights": ("i8", INT8_MAX, int8_symmetric),
               "int4-weights": ("i4", INT4_MAX, int4_symmetric)}


def _eligible(node: Node, options: QuantizeOptions) -> bool:
    """Whether fp16 / int8-weights / int4-weights store this node's value in fewer bytes."""
    if node.op != "constant":
        return False
    t = node.outputs[0].type
    return (t.dtype == F32 and t.num_elements >= options.min_elements
            and not _is_vector(t))


def check_not_quantized(graph: Graph, options: QuantizeOptions,
                        what: str = "the model") -> None:
    """Raises UsageError (one line naming ``what``) when ``options`` quantize a model
    that already is: int8 calibrates float activations, which such a model has none of
    (the calibration file would be refused for its dtype), and fp16 / int8-weights find
    no float weight in it to store, so their report would compare the model with
    itself. A quantized model that still has float weights may take fp16 / int8-weights."""
    if options.mode == "none":
        return
    tensors = [*graph.inputs, *(t for node in graph.nodes for t in node.outputs)]
    stored = next((t.type.quant.storage for t in tensors if t.type.quant is not None), None)
    if stored is None:
        return
    if options.mode != "int8" and any(_eligible(n, options) for n in graph.nodes):
        return
    kind = "uint" if stored.kind == "u" else "int"
    raise UsageError(f"{what}: the model is already quantized ({kind}{stored.bits}), and "
                     f"--quantize {options.mode} quantizes float models: drop --quantize")


def quantize_weights(graph: Graph, options: QuantizeOptions) -> Graph:
    """Rewrites eligible constants in place (call after constant folding). Mode int8
    quantizes the whole graph: toolchain.passes.ptq.quantize_int8."""
    if options.mode not in MODES:
        raise ValueError(f"unknown quantization mode {options.mode!r}; choose from {MODES}")
    if options.mode == "int8":
        raise ValueError("mode int8 quantizes activations too: use passes.quantize_int8")
    if options.mode == "none":
        return graph
    check_not_quantized(graph, options)
    nodes: list[Node] = []
    for node in graph.nodes:
        if not _eligible(node, options):
            nodes.append(node)
            continue
        t = node.outputs[0]
        w = np.asarray(node.attrs["value"])
        if options.mode == "fp16":
            half = dtype("f16")
            stored = Node("constant", [], [], {"value": w.astype(np.float16)}, node.loc)
            stored.outputs = [Tensor(TensorType(t.type.shape, half), "", stored)]
            node.op, node.inputs, node.attrs = "convert", [stored.outputs[0]], {"dtype": "f32"}
            nodes += [stored, node]
            continue
        axis = _channel_axis(graph, t)
        storage, q_max, symmetric = WEIGHT_INTS[options.mode]
        q, scale = symmetric(w, axis)
        params = QuantParams(dtype(storage), F32, tuple(float(s) for s in scale.reshape(-1)),
                             (0,) * scale.size, axis, -q_max, q_max)
        stored = Node("constant", [], [], {"value": q}, node.loc)
        stored.outputs = [Tensor(TensorType(t.type.shape, dtype(storage), params), "", stored)]
        # `scales_of` lets the module store these once, in the weight's quantization
        # record, and bind the kernel's scale operand there.
        scales = Node("constant", [], [], {"value": scale, "scales_of": stored.outputs[0]},
                      node.loc)
        scales.outputs = [Tensor(TensorType(scale.shape, F32), "", scales)]
        node.op, node.inputs = "dequantize", [stored.outputs[0], scales.outputs[0]]
        node.attrs = {"axis": axis}
        nodes += [stored, scales, node]
    graph.nodes = nodes
    return graph
