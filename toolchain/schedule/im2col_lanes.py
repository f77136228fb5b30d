"""First layers that a core with both the DSP extension and a vector row's int8 steps
(Helium: cortex-m55) gives the DSP im2col kernel rather than its vectors.

A window of 2x2 or 3x3 taps over 1-3 input channels has no row of 16 contiguous
elements: Helium pads its channels to 4 (schedule/pad_channels.py), writes the padded
input out, and takes one 4-lane step (VMLADAVA.S32) per tap and output. cortex-m4's
im2col kernel (schedule/first_layer_records.py, runtime_c/ukernel/dsp/
mrt_im2col_dsp.c) stages each pixel's window once as 16-bit pairs and loops over the
output channels with an SMLAD per staged word; it runs on cortex-m55 too (its DSP
microkernels are linked beside Helium's) at cortex-m4's count. Which one is cheaper
depends on the layer (bench/shapes.py and single layers, cortex-m4 for the kernel,
cortex-m55 for the lanes, instructions an output pixel):

| layer | im2col | lanes |
|---|---|---|
| 3x3 10x10 3 -> 8 | 299.9 | 293.1 |
| 3x3 32x32 3 -> 16 (pretrainedResnet's first) | 542.3 | 526.8 |
| 3x3 19x6 3 -> 32 | 967.5 | 1,010.6 |
| 3x3 10x10 3 -> 64 | 1,853.9 | 1,998.1 |
| 3x3 s2 96x96 3 -> 8 (vww_96's first) | 312.6 | 336.9 |
| 3x3 s2 16x16 3 -> 32 | 966.8 | 1,068.0 |
| 3x3 d2 19x6 3 -> 16 | 519.5 | 552.0 |
| 3x3 10x10 2 -> 32 / 1 -> 32 | 718.8 / 428.8 | 1,006.9 / 1,008.5 |
| 2x2 10x10 3 -> 16 | 259.3 | 303.7 |

Both are a cost per pixel and one per output channel: the kernel's staging
(IM2COL_PIXEL, the most measured: 78-98) and per channel its requantization and a
multiply per staged word (27.75 over 3x3x3's 14 words, 10.9 over 3x3x1's 5); the lanes'
pad and loops per pixel (LANES_PIXEL: more where the padded input is read with a stride
or dilation) and per channel a step per tap (30.5 for 3x3, 16 for 2x2). `im2col_beats_
lanes` compares the two; the graph's channel pads and written-out borders
(pad_channels.py, pad_helium.py) and the scheduler's requantization fold (program.py)
ask it of the layer, so such a layer reaches the kernel as it does on cortex-m4:
unpadded, its border fused, its requantization folded. Not under --optimize size, which
binds no records in flash (the unpadded layer would run Helium's scalar tails).

One input channel is never padded (pad_channels.py), and its lanes step along a
window row of kw taps: wider windows whose rows are no whole 4-lane steps (5x5, 1x7)
and 1x1 windows (the kernel's table of outputs) take the kernel as well
(ONE_CHANNEL_ROW_STEP); kws's 10x4 rows are whole steps, 4 rows a vector step.
"""

from __future__ import annotations

from toolchain.graph.ir import Node
from toolchain.kernel.form import Kernel
from toolchain.loops.tables import SIMD
from toolchain.schedule.first_layer_plan import first_layer_plan
from toolchain.target.descriptors import Target

__all__ = ["im2col_beats_lanes", "kernel_takes_im2col", "node_takes_im2col"]

IM2COL_DOT = "dsp"  # the SIMD row whose layers take the kernel anyway
MAX_CHANNELS = 3  # 4 channels need no pad: the lanes win (3x3 19x6 4 -> 32: 0.87x)
MAX_TAPS_SIDE = 3  # windows of 2x2 to 3x3 measured; from 4 columns a row is a vector step
IM2COL_PIXEL = 98.0
IM2COL_OUTPUT = 1.55
IM2COL_WORD = 1.87
# By (strided, dilated): the lanes read a padded input written out whole.
LANES_PIXEL = {(False, False): 48.0, (False, True): 64.0, (True, False): 92.0,
               (True, True): 92.0}
LANES_OUTPUT = 4.4
LANES_TAP = 2.9
# Windows over one channel wider than MAX_TAPS_SIDE: the kernel where the rows are no
# whole 4-lane steps. Measured (instructions, cortex-m4's kernel against cortex-m55's
# lanes): 5x5 19x6 1 -> 32 105,578 against 126,488, 10x10 92,449 against 117,511, stride
# 2 10x10 1 -> 16 12,755 against 15,332, 20x20 1 -> 8 29,028 against 38,638; 1x7 19x6
# 1 -> 32 41,880 against 100,653. kws's first layer (10x4 stride 2, 1 -> 64) keeps the
# lanes: 164,532 with its pad written out, its window 20 staged words in the kernel.
ONE_CHANNEL_ROW_STEP = 4
# A 1x1 window over one channel: the kernel looks each pixel's outputs up in a table of
# every input value's (first_layer_records.py `_table`): 1x1 19x6 1 -> 32 2,798
# instructions on cortex-m4 against 16,231 in Helium's lanes.


def im2col_beats_lanes(target: Target, cin: int, kh: int, kw: int, strided: bool,
                       dilated: bool, cout: int) -> bool:
    """Whether the im2col kernel costs less than `target`'s vector lanes for a window of
    kh x kw taps over `cin` input channels to `cout` (module docstring); False where the
    target has no such choice (no DSP extension, or the DSP row's own steps)."""
    row = SIMD[target.capabilities.simd]
    if not target.capabilities.dsp or row.int8_dot == IM2COL_DOT or not row.int8_dot_short:
        return False
    if cin == 1 and kh * kw == 1:
        return True  # the kernel's table of every input's outputs (ONE_BY_ONE)
    if cin == 1 and max(kh, kw) > MAX_TAPS_SIDE:
        # One channel is never padded: rows of kw taps, a whole 4-lane step each where
        # kw is a multiple of 4 (kws's 10x4, 4 rows a vector step: the lanes), else
        # steps and scalar taps (ONE_CHANNEL_ROWS).
        return kw % ONE_CHANNEL_ROW_STEP != 0
    if not 1 <= cin <= MAX_CHANNELS or kh * kw < 2 or max(kh, kw) > MAX_TAPS_SIDE:
        return False
    words = -(-kh * kw * cin // 2)
    im2col = IM2COL_PIXEL + cout * (IM2COL_OUTPUT + IM2COL_WORD * words)
    lanes = LANES_PIXEL[(strided, dilated)] + cout * (LANES_OUTPUT + LANES_TAP * kh * kw)
    return im2col < lanes


def node_takes_im2col(node: Node, target: Target) -> bool:
    """Whether graph convolution `node` (int8, NHWC) goes to the im2col kernel on
    `target` (`im2col_beats_lanes`)."""
    if node.op != "convolution" or len(node.inputs) != 2:
        return False
    x, w = node.inputs
    a = node.attrs
    if x.type.dtype.name != "i8" or a.get("feature_group_count") != 1 or \
            a.get("batch_group_count", 1) != 1 or len(a["kernel_spatial"]) != 2 or \
            any(d != 1 for d in a.get("lhs_dilation", [1, 1])):
        return False
    kh, kw = (w.type.shape[d] for d in a["kernel_spatial"])
    return im2col_beats_lanes(target, w.type.shape[a["kernel_input"]], kh, kw,
                              any(s != 1 for s in a["strides"]),
                              any(d != 1 for d in a["rhs_dilation"]),
                              node.output.type.shape[a["output_feature"]])


def kernel_takes_im2col(k: Kernel, target: Target) -> bool:
    """Whether folded kernel `k` goes to the im2col kernel on `target`: its plan
    (first_layer_plan.first_layer_plan) and `im2col_beats_lanes`."""
    plan = first_layer_plan(k)
    return plan is not None and im2col_beats_lanes(
        target, plan.cin, plan.kh, plan.kw, max(plan.stride) > 1, max(plan.dilation) > 1,
        k.domain[3])
