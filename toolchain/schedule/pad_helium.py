"""On Helium, the padded input of a convolution read 4 window rows a step is written out.

A convolution whose window rows are 4 int8 elements (a 10x4 window over one input
channel: kws's first layer) takes 16-lane steps of 4 rows where its whole window is
inside the input (codegen/rows_helium.py) and one 4-lane step per row elsewhere, where
rows may be padding lane by lane. kws's SAME padding puts half of the output pixels on
that border (rows 2-21 of 25 and columns 1-3 of 5 are inside). Writing the padded input
out once (a `pad` dispatch of its own, 754 bytes for kws's 49x10 input) makes every
pixel an interior one: the copy costs a few thousand instructions and saves the
border's 4-lane steps and their per-lane tests.

`window_pads` names the pads to keep (schedule()'s `materialize`, as
schedule/pad_channels.py's padded channels are).
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph
from toolchain.loops.tables import SIMD, VECTOR_DOT_KINDS
from toolchain.target.descriptors import Target

__all__ = ["window_pads"]

MIN_ROWS = 8  # window rows: from two 4-row steps on the border's steps are worth a copy


def window_pads(graph: Graph, target: Target) -> set[int]:
    """The ids of the `pad` outputs that feed an int8 convolution whose window rows
    (taps x input channels, contiguous) are exactly the short vector step's width and
    whose window has at least MIN_ROWS rows, on a target with that step; empty
    elsewhere."""
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
                x.producer is None or x.producer.op != "pad":
            continue
        spatial = [w.type.shape[d] for d in a["kernel_spatial"]]
        channels = w.type.shape[a["kernel_input"]]
        if len(spatial) != 2 or spatial[1] * channels != row_width or \
                spatial[0] < MIN_ROWS or np.any(np.asarray(a.get("lhs_dilation", [1])) != 1):
            continue
        keep.add(id(x))
    return keep
