"""On Helium, the padded input of a convolution read 4 window rows a step is written out.

A convolution whose window rows are 4 int8 elements (a 10x4 window over one input
channel: kws's first layer) takes 16-lane steps of 4 rows where its whole window is
inside the input (codegen/rows_helium.py) and one 4-lane step per row elsewhere, where
rows may be padding lane by lane. kws's SAME padding puts half of the output pixels on
that border (rows 2-21 of 25 and columns 1-3 of 5 are inside). Writing the padded input
out once (a `pad` dispatch of its own, 754 bytes for kws's 49x10 input) makes every
pixel an interior one: the copy costs a few thousand instructions and saves the
border's 4-lane steps and their per-lane tests.

The same holds for any int8 convolution window on Helium whose border outputs (those
with a tap on the padding) do enough MACs per byte of the padded input
(BORDER_MACS_PER_BYTE): those outputs were tiles of their own with every tap tested,
where the interior ran VMLADAVA steps (cortex-m55, bench/shapes.py --grid small: 5x5
over 64 channels to 32 on 19x6 1.82 M -> 1.14 M instructions, 4 channels 435 K ->
126 K, a 1x7 64 -> 32 569 K -> 391 K). A pad whose border does few MACs (3 or 4 output
channels, stride 2 over 16 or 64 channels, pretrainedResnet's 32x32 maps, whose border
is 12 % of the outputs) cost more to copy than it saved (up to 1.65x).

`window_pads` names the pads to keep (schedule()'s `materialize`, as
schedule/pad_channels.py's padded channels are).
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph, Node
from toolchain.loops.tables import SIMD, VECTOR_DOT_KINDS
from toolchain.schedule.im2col_lanes import node_takes_im2col
from toolchain.target.descriptors import Target

__all__ = ["window_pads"]

MIN_ROWS = 8  # window rows: from two 4-row steps on the border's steps are worth a copy
# Any window: the border outputs' MACs per byte of the padded input (border outputs x
# taps x input channels over its elements) from which the copy pays. Measured
# (bench/shapes.py --grid small on cortex-m55): up to 27 lost 10-65 %, from 32 on
# gained 3-71 %, but for a 5x5 stride-2 window over 16 channels to 16 (38: +15 %; the
# same window over 4 or 64 channels gained 57 % and 12 %).
BORDER_MACS_PER_BYTE = 32


def window_pads(graph: Graph, target: Target, flash_records: bool = True) -> set[int]:
    """The ids of the `pad` outputs that feed an int8 convolution whose window rows
    (taps x input channels, contiguous) are exactly the short vector step's width and
    whose window has at least MIN_ROWS rows, or whose window feeds at least
    WRITTEN_OUT_MACS_PER_BYTE MACs per byte of the padded input, on a target with that
    step; empty elsewhere. Not those of the first layers the DSP im2col kernel takes
    instead (schedule/im2col_lanes.py, where `flash_records` may be bound), which read
    their border fused as on cortex-m4."""
    short = SIMD[target.capabilities.simd].int8_dot_short
    if not short:
        return set()
    row_width = VECTOR_DOT_KINDS[short].width
    keep: set[int] = set()
    for node in graph.nodes:
        if node.op != "convolution" or len(node.inputs) != 2:
            continue
        x, w = node.inputs
        a = node.attrs
        if x.type.dtype.name != "i8" or a.get("feature_group_count") != 1 or \
                x.producer is None or x.producer.op != "pad" or \
                (flash_records and node_takes_im2col(node, target)):
            continue
        spatial = [w.type.shape[d] for d in a["kernel_spatial"]]
        channels = w.type.shape[a["kernel_input"]]
        if len(spatial) != 2 or np.any(np.asarray(a.get("lhs_dilation", [1])) != 1):
            continue
        taps = int(np.prod(spatial))
        rows_of_four = spatial[1] * channels == row_width and spatial[0] >= MIN_ROWS
        macs_per_byte = _border_outputs(node, spatial) * taps * channels \
            / x.type.num_elements
        if rows_of_four or (taps > 1 and macs_per_byte >= BORDER_MACS_PER_BYTE):
            keep.add(id(x))
    return keep


def _border_outputs(conv: Node, spatial: list[int]) -> int:
    """How many of `conv`'s outputs (all output channels counted) have a tap on the
    padding its input's `pad` producer adds: the outputs that are not interior."""
    a = conv.attrs
    x = conv.inputs[0]
    pad = x.producer
    assert pad is not None
    interior = conv.output.type.num_elements // conv.output.type.shape[a["output_feature"]]
    pixels = interior
    for i, (d, k) in enumerate(zip(a["input_spatial"], spatial, strict=True)):
        lo, hi = pad.attrs["low"][d], pad.attrs["high"][d]
        n = x.type.shape[d] - lo - hi  # the unpadded extent
        stride, dilation = a["strides"][i], a["rhs_dilation"][i]
        start = -a["padding"][i][0]  # the convolution's own padding, if any
        out = conv.output.type.shape[a["output_spatial"][i]]
        inside = sum(1 for o in range(out) if o * stride + start >= lo
                     and o * stride + start + dilation * (k - 1) <= lo + n - 1)
        interior = interior // out * inside
    return (pixels - interior) * conv.output.type.shape[a["output_feature"]]
