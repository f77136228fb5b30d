"""Input channels padded to whole words for the packed int8 steps (issue 21).

The DSP targets' packed steps (`dot dsp`: SXTB16 + SMLAD, loops/access.py
`_word_packable`) read 4 int8 elements per aligned word, so an int8 convolution whose
input channel count C is not a multiple of 4 has every pixel start at an unaligned byte
and falls back to scalar MACs: 0.46 MAC per instruction with 61 input channels where 64
reach 1.0 (bench/results/shapes.md). Such a convolution is rewritten here, before the
graph is lowered, into
- a `pad` of its input along the channels to C4 = C rounded up to 4 (value 0), kept
  in RAM as a dispatch of its own (`materialize`): fused into the convolution it would
  be a bounds check on every channel load, which the packed steps cannot take;
- the convolution over C4 channels, with the weights padded with zeros at build time.

The padded channels' products are 0 * 0 = 0, so the accumulator, and every output, is
the same integer as before (the input zero point is folded into the bias, kernel
operands are the raw int8 values). The pad costs about 5 instructions per byte of the
padded input (a pixel's C4 bytes), once, against the C x outputs x taps MACs per pixel
it speeds up (MIN_MACS_PER_BYTE).
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.loops.rules import SIMD
from toolchain.target.descriptors import Target
from toolchain.types import TensorType

__all__ = ["pad_int8_channels"]

WORD = 4  # int8 elements per packed step (loops/tables.py DOT_WIDTH)
# Which SIMD rows need it: only the word steps of the DSP extension; vector kinds load
# from any address (loops/access.py, align 1).
PADDED_DOT_KINDS = frozenset({"dsp"})
# The fewest input channels padded, by the window's taps: (at least this many taps,
# from this many channels), first match. Padding 2 or 3 channels to 4 multiplies the
# MACs by 2 or 1.33, which windows of 10 taps and more (5x5, 1x7) repay 1.7-3.1x, but
# a 3x3 window over 3 channels, stride 2 (vww's and resnet's first layers) ran 0.63x as
# fast and a pointwise one 0.78x (bench/results/shapes.md); 5 to 7 channels gain
# everywhere. One channel is never padded: the gathered packed step reads a window row
# of taps instead (kws's first layer, docs/architecture.md).
MIN_CHANNELS_BY_TAPS: tuple[tuple[int, int], ...] = ((10, 2), (1, 5))
# Rewrite only when the convolution does at least this many MACs per byte the pad
# copies (its outputs x taps per input channel): below it the copy costs more than the
# packed steps save (measured on bench/shapes.py's sweep).
MIN_MACS_PER_BYTE = 4


def _weights(t: Tensor) -> np.ndarray | None:
    """The int8 constant behind `t`, or None."""
    p = t.producer
    if p is None or p.op != "constant" or "scales_of" in p.attrs:
        return None
    value = np.asarray(p.attrs["value"])
    return value if value.dtype == np.int8 else None


def _padded_channels(node: Node) -> int | None:
    """C4 for an int8 convolution worth rewriting, else None."""
    a = node.attrs
    if node.op != "convolution" or a["feature_group_count"] != 1 or \
            a["batch_group_count"] != 1 or len(node.inputs) != 2:
        return None
    x, w = node.inputs
    if x.type.dtype.name != "i8" or _weights(w) is None:
        return None
    c = x.type.shape[a["input_feature"]]
    least = next(n for taps, n in MIN_CHANNELS_BY_TAPS if _taps(node) >= taps)
    if c % WORD == 0 or c < least:
        return None
    outputs_per_pixel = node.output.type.shape[a["output_feature"]] * _taps(node)
    if outputs_per_pixel < MIN_MACS_PER_BYTE:
        return None
    return -(-c // WORD) * WORD


def _taps(node: Node) -> int:
    """The convolution's window taps (1: a pointwise convolution)."""
    w = node.inputs[1].type.shape
    return int(np.prod([w[d] for d in node.attrs["kernel_spatial"]]))


def pad_int8_channels(graph: Graph, target: Target) -> set[int]:
    """Rewrites, in place, the int8 convolutions of `graph` (not its regions) whose
    input channels are not a multiple of 4 on a target with word-packed int8 steps.
    Returns the ids of the padded inputs, which must stay materialized (schedule()'s
    `materialize`)."""
    if SIMD[target.capabilities.simd].int8_dot not in PADDED_DOT_KINDS:
        return set()
    out: list[Node] = []
    keep: set[int] = set()
    for node in graph.nodes:
        c4 = _padded_channels(node)
        if c4 is None:
            out.append(node)
            continue
        new = _rewrite(node, c4)
        if _taps(node) == 1:
            keep.add(id(new[1].output))  # the pad
        out += new
    graph.nodes = out
    return keep


def _constant(value: np.ndarray, ty: TensorType, source: object) -> Node:
    node = Node("constant", [], [], {"value": value}, source=source)  # type: ignore[arg-type]
    node.outputs = [Tensor(ty, "", node)]
    return node


def _node(op: str, inputs: list[Tensor], ty: TensorType, attrs: dict, like: Node) -> Node:
    node = Node(op, inputs, [], attrs, like.loc, source=like.source)
    node.outputs = [Tensor(ty, "", node)]
    return node


def _rewrite(conv: Node, c4: int) -> list[Node]:
    """[zero, pad, padded weights, conv]: the convolution node itself, reading them."""
    a = conv.attrs
    x, w = conv.inputs
    rank = x.type.rank
    high = [0] * rank
    high[a["input_feature"]] = c4 - x.type.shape[a["input_feature"]]
    shape = list(x.type.shape)
    shape[a["input_feature"]] = c4
    zero = _constant(np.zeros((), np.int8), TensorType((), x.type.dtype), conv.source)
    pad = _node("pad", [x, zero.output], x.type.with_shape(tuple(shape)),
                {"low": (0,) * rank, "high": tuple(high), "interior": (0,) * rank}, conv)
    value = _weights(w)
    assert value is not None
    widths: list[tuple[int, int]] = [(0, 0)] * value.ndim
    widths[a["kernel_input"]] = (0, c4 - value.shape[a["kernel_input"]])
    padded = np.pad(value, widths)
    weights = _constant(padded, w.type.with_shape(padded.shape), conv.source)
    conv.inputs = [pad.output, weights.output]
    return [zero, pad, weights, conv]
