"""Input channels of 16x8 layers padded to whole int16 pairs for the SMLAD steps
(issue 21).

A 16x8 convolution or dense layer (int16 activations, int8 weights) takes the packed
int16 steps (codegen/dot.py `dsp16`, weights widened by schedule/widen16.py) only where
both operands' words stay aligned along the input channels: a word holds two int16
channels, so every stride but the channels' own must be even (loops/access.py
`_word_packable` with dot_align 2). With an odd channel count (3, 13, 61: a pixel of 13
int16 is 26 bytes) every other pixel starts mid-word and the layer ran scalar: load,
sign-extend and multiply-add each product, 3 to 7 instructions a MAC on cortex-m4
(bench/results/converter_models.md, odd_cnn_16x8).

An int16 pair is already a SMLAD operand (no SXTB16), so the count needs padding to a
multiple of 2 only, not to a word of 4 int8: the layer is rewritten here, before the
graph is lowered, into
- a `pad` of its input along the channels to C2 = C rounded up to PAIR (value 0), kept
  in RAM as a dispatch of its own (there is no staged int16 window to fuse it into: a
  fused pad would be a bounds check on every channel load, which the packed steps do
  not take). A convolution's own zero border goes into the same pad (`_take_border`),
  so that every pixel of the layer is interior;
- the layer over C2 channels, with the int8 weights padded with zeros at build time.
The padded channels' products are x * 0 = 0, so every sum, and output, is the same
integer as before (16x8 activations are symmetric, zero point 0, and the pad adds
nothing whatever its value). A last pair of channels past the steps of 4 is one SMLAD
(codegen/packed.py `_packed_remainder`).

Depthwise layers are not rewritten: their channels are not reduced.
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph, Node
from toolchain.loops.rules import SIMD
from toolchain.schedule.pad_channels import MIN_MACS_PER_BYTE, SITES, _constant, _node, _weights
from toolchain.target.descriptors import Target

__all__ = ["pad_int16_channels"]

PAIR = 2  # int16 elements per word: one SMLAD operand


def _padded_count(node: Node) -> tuple[int, int, int] | None:
    """(input dim, weight dim, C2) of a 16x8 contraction worth padding, else None."""
    find = SITES.get(node.op)
    if find is None or len(node.inputs) != 2:
        return None
    x, w = node.inputs
    if x.type.dtype.name != "i16" or _weights(w) is None:
        return None
    site = find(node)
    if site is None:
        return None
    c = x.type.shape[site.x_dim]
    if c % PAIR == 0 or c == 1:
        # One channel padded to a pair is one useful product a SMLAD, as many as the
        # scalar multiply-add gives, plus the pad's dispatch: kws_ref_model_float32's
        # hybrid first layer (1 channel, i16) ran 8.94 -> 9.61 M instructions so.
        return None
    # Outputs x taps each input value feeds, per pixel: the MACs a padded element buys
    # (the pad copies the input once).
    per_pixel = node.output.type.num_elements * site.taps * c // x.type.num_elements
    if per_pixel < MIN_MACS_PER_BYTE:
        return None
    return site.x_dim, site.w_dim, c + PAIR - c % PAIR


def _take_border(node: Node, low: list[int], high: list[int]) -> None:
    """Moves a convolution's own zero border (its `padding`) into the pad's widths
    `low` and `high`, leaving the convolution VALID: the pad is written out anyway, and
    a border in the layer is a bounds test and a select on every word of a border
    pixel's packed steps (a 3x3 dilated-2 window on 12x12 has 80 border pixels of 144).
    Both borders are raw zeros, so the sums are the same."""
    if node.op != "convolution" or any(f != 1 for f in node.attrs["lhs_dilation"]):
        return
    padding = [tuple(p) for p in node.attrs["padding"]]
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        return  # a negative padding crops: left to the layer
    for d, (lo, hi) in zip(node.attrs["input_spatial"], padding, strict=True):
        low[d] += lo
        high[d] += hi
    node.attrs = {**node.attrs, "padding": tuple((0, 0) for _ in padding)}


def _reads_reshaped(node: Node) -> bool:
    """Whether `node` is a 16x8 dense layer (dot_general) over a reshaped input (a
    Conv1D's feature map flattened): fused into it, the reshape is a divide and a
    remainder in every input index, which the packed steps cannot read as words; kept
    as its own buffer (a view, or a copy of one row), the layer's input is a plain row."""
    if node.op != "dot_general" or len(node.inputs) != 2:
        return False
    x, w = node.inputs
    return x.type.dtype.name == "i16" and _weights(w) is not None and \
        x.producer is not None and x.producer.op == "reshape"


def pad_int16_channels(graph: Graph, target: Target) -> set[int]:
    """Rewrites, in place, the 16x8 convolutions and dense layers of `graph` (not its
    regions) with an odd input channel count, on targets with int16 packed steps
    (loops/tables.py `SimdRow.int16_dot`). Returns the ids of the pads, which must stay
    materialized (schedule()'s `materialize`)."""
    if not SIMD[target.capabilities.simd].int16_dot:
        return set()
    out: list[Node] = []
    keep: set[int] = set()
    for node in graph.nodes:
        found = _padded_count(node)
        if found is None:
            if _reads_reshaped(node):
                keep.add(id(node.inputs[0]))
            out.append(node)
            continue
        x_dim, w_dim, c2 = found
        x, w = node.inputs
        rank = x.type.rank
        low, high = [0] * rank, [0] * rank
        high[x_dim] = c2 - x.type.shape[x_dim]
        _take_border(node, low, high)
        shape = [n + lo + hi for n, lo, hi in zip(x.type.shape, low, high, strict=True)]
        zero = _constant(np.zeros((), np.int16), x.type.with_shape(()), node.source)
        pad = _node("pad", [x, zero.output], x.type.with_shape(tuple(shape)),
                    {"low": tuple(low), "high": tuple(high), "interior": (0,) * rank}, node)
        value = _weights(w)
        assert value is not None
        widths: list[tuple[int, int]] = [(0, 0)] * value.ndim
        widths[w_dim] = (0, c2 - value.shape[w_dim])
        padded = np.pad(value, widths)
        weights = _constant(padded, w.type.with_shape(padded.shape), node.source)
        node.inputs = [pad.output, weights.output]
        keep.add(id(pad.output))
        out += [zero, pad, weights, node]
    graph.nodes = out
    return keep
