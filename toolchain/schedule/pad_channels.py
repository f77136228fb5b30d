"""Input channels padded to whole words for the packed int8 steps (issue 21).

The DSP targets' packed steps (`dot dsp`: SXTB16 + SMLAD, loops/access.py
`_word_packable`) read 4 int8 elements per aligned word, so an int8 convolution whose
input channel count C is not a multiple of 4 has every pixel start at an unaligned byte
and falls back to scalar MACs: 0.46 MAC per instruction with 61 input channels where 64
reach 1.0 (bench/results/shapes.md); a dense layer over 61 inputs, whose weight rows
start at unaligned bytes, 0.31 where 64 reach 0.8. Such a convolution or dense layer
is rewritten here, before the graph is lowered, into
- a `pad` of its input along the channels to C4 = C rounded up to 4 (value 0). For a
  pointwise layer (a 1x1 convolution) it is kept in RAM as a dispatch
  of its own (`materialize`): fused into the layer it would be a bounds check on every
  channel load, gathered tile by tile (0.29 MAC per instruction with 61 channels). A
  dense layer's (one pixel) is fused: the dense-rows kernel pairs the input once and
  pads its last word itself (loops/dense_rows.py; the pad's dispatch took 5
  instructions a byte, 67 -> 10 on cortex-m4 1,179 -> 858 instructions). A
  window's pad is fused: the window is staged once per pixel for all its channel
  tiles (loops/rules.py `_staged_window_candidates`), the checks paid there (3x3 over
  13 channels on 19x6: 0.91; the pad kept in RAM: 0.75). But where the window's input
  is already a `pad` (a SAME border, written as an op by the TFLite frontend) read by
  it alone, that pad's channels are widened instead and it is kept in RAM: a pad of a
  pad kept the border's in RAM anyway, copied byte by byte (14.8 K instructions for
  13 channels on 19x6), and the widened one fused cost more (its staged rows are
  never wholly inside the input: 466 K against 449 K). On the DSP targets a kept pad
  is runtime calls (codegen/pad_rows.py: 3.8 K), and the convolution reads a whole
  padded map (3x3 over 13 channels on 19x6: 0.949 -> 0.984);
- the layer over C4 channels, with the weights padded with zeros at build time.

A pointwise layer the im2col kernel takes (schedule/first_layer_records.py
`takes_pointwise`) is left unpadded where the pipeline asks (`leave_staged`): that
kernel stages a pixel's bytes into 16-bit words itself, so the pad only copied the
input (`PadRow.staged_pointwise`).

The padded channels' products are 0 * 0 = 0, so the accumulator, and every output, is
the same integer as before (the input zero point is folded into the bias, kernel
operands are the raw int8 values). The pad costs about 5 instructions per byte of the
padded input (a pixel's C4 bytes), once, against the C x outputs x taps MACs per pixel
it speeds up (MIN_MACS_PER_BYTE).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.kernel.form import Kernel
from toolchain.loops.patterns import dot_operands
from toolchain.loops.rules import SIMD
from toolchain.schedule.first_layer_plan import MAX_POINTWISE_CHANNELS, takes_pointwise
from toolchain.schedule.im2col_lanes import node_takes_im2col
from toolchain.schedule.program import Program
from toolchain.schedule.window_rows import FLAT_MIN_CHANNELS, merged_row_extent
from toolchain.target.descriptors import Target
from toolchain.types import TensorType

__all__ = ["missed_staged_pointwise", "pad_int8_channels", "pointwise_backup",
           "staged_pointwise_layers"]

WORD = 4  # int8 elements per packed step (loops/tables.py DOT_WIDTH)


@dataclass(frozen=True)
class PadRow:
    """How the int8 dot steps of a SIMD row (its `int8_dot` kind) want a contraction's
    input channels padded: to a multiple of `widths`' second value for counts from its
    first (first match), and whether a window's pad is written out too
    (`keep_windows`) rather than fused into the layer."""

    widths: tuple[tuple[int, int], ...]
    keep_windows: bool = False
    # The fewest channels padded: MIN_CHANNELS_BY_TAPS and MIN_CHANNELS_MERGED_ROWS
    # (the DSP steps' measurements), or this for every window.
    least: int = 0
    # Pointwise and dense layers (one tap), when `vector` is set: padded only where the
    # channels past the last whole vector of `vector` are at least `rest`, or where
    # there is no whole vector and the count is no multiple of `whole`.
    vector: int = 0
    rest: int = 0
    whole: int = 0
    # A dense layer's (one pixel) pad fused into it rather than written out: the DSP
    # dense-rows kernel pairs its input once and pads the last word itself
    # (loops/dense_rows.py), where the pad's own dispatch took 5 instructions a byte.
    fuses_dense: bool = False
    # Pointwise layers up to this many channels are left as they are (`leave_staged`):
    # the im2col kernel (schedule/first_layer_records.py MAX_POINTWISE_CHANNELS) stages
    # a pixel's values into 16-bit words itself, from any byte, so the pad's dispatch
    # bought nothing (1x1 19x6 7 -> 32 on cortex-m4: 1,728 of 43,519 instructions, and
    # 13 channels staged as 8 words where 7 do). Where the kernel does not take such a
    # layer after all, the packed steps over unaligned pixels ran 1.5x slower than
    # padded (7 channels under --optimize size), so the pipeline schedules the graph
    # again with every pad (pipeline.schedule_for_board).
    staged_pointwise: int = 0

    def pads_pointwise(self, c: int) -> bool:
        """Whether a one-tap layer over `c` input channels is padded (see `vector`)."""
        if not self.vector:
            return True
        return c % self.vector >= self.rest if c >= self.vector else c % self.whole != 0


# Which SIMD rows need it. The DSP extension's word steps: whole words of 4. Helium's
# steps load from any address (loops/access.py, align 1), but a window over channels
# that are not a whole vector of 16 ran scalar tails and, with SAME padding, every
# border tap tested (cortex-m55, bench/shapes.py --grid small: 5x5 over 13 channels
# 2.39 M instructions, 2.0x cortex-m4's 1.18 M; over 3 channels 2.9x). Padded to 16
# (from 5 channels on) or to 4 (the 4-lane step, 2 or 3) with the pad written out, so
# every pixel is interior: 13 -> 16 on 5x5 0.35 M, 3 -> 4 0.13 M, 61 -> 64 1.20 M
# against cortex-m4's 4.61 M. Pointwise layers (1x1 to 32 channels, full grid): 7 ->
# 16 97 K -> 27 K (cortex-m4 82 K), 13 0.10 M -> 29 K, 61 0.17 M -> 71 K, 31 0.17 M ->
# 43 K, 2 or 3 to 4 0.5-0.66x; but 8 ran as fast as 16 unpadded (padded 1.13-1.18x),
# and 3 or 10 channels past whole vectors (67, a dense 250) lost 4-39 % padded: those
# stay as they are (`vector`, `rest`, `whole`).
PAD_ROWS: dict[str, PadRow] = {
    "dsp": PadRow(widths=((1, WORD),), fuses_dense=True,
                  staged_pointwise=MAX_POINTWISE_CHANNELS),
    "mve": PadRow(widths=((5, 16), (1, WORD)), keep_windows=True, least=2,
                  vector=16, rest=11, whole=8),
}
PADDED_DOT_KINDS = frozenset(PAD_ROWS)
# The fewest input channels padded, by the window's taps: (at least this many taps,
# from this many channels), first match. Padding 2 or 3 channels to 4 multiplies the
# MACs by 2 or 1.33, which windows of 10 taps and more (5x5, 1x7) repay 1.7-3.1x, but
# a 3x3 window over 3 channels, stride 2 (vww's and resnet's first layers) ran 0.63x as
# fast and a pointwise one 0.78x (bench/results/shapes.md); 5 to 7 channels gain
# everywhere. One channel is never padded: the gathered packed step reads a window row
# of taps instead (kws's first layer, docs/architecture.md).
MIN_CHANNELS_BY_TAPS: tuple[tuple[int, int], ...] = ((10, 2), (1, 5))
# Where window_rows.py merges a window's rows (columns x channels as one dim, padded to
# whole words a row), 2 and 3 channels are left to it: a 5x5 row of 2 channels is 12
# elements merged, 20 padded to 4 channels. On cortex-m4 (bench/results/shapes.md) 5x5
# over 2 channels 0.55 -> 0.64-0.67 MAC per instruction, stride 2 0.42 -> 0.49, 3
# channels 0.79-0.81 either way (0.59 -> 0.62 at stride 2).
MIN_CHANNELS_MERGED_ROWS = 5
# A window whose rows window_rows.py merges (KW x C values a row, padded once to whole
# words) is left unpadded where its taps padded to C4 channels each would take at least
# this many times the merged rows' packed steps: 3x3 over 13 channels 48 against 40 a
# row (1.2x), 5x5 over 13 80 against 68 (1.18x). On cortex-m4 (bench/shapes.py) 3x3 over
# 13 on 19x6 0.984 -> 1.115 MAC per instruction, 5x5 1.068 -> 1.213; 5x5 over 7 (40
# against 36, 1.11x) gained at stride 1 (1.097 -> 1.177) but lost at stride 2 (1.008 ->
# 0.977), so it keeps the channel pad.
MERGED_ROW_SAVING = 1.15
# A SAME border before such a window (a `pad` op of its own) is kept in RAM, so the
# window reads a VALID map whose every staged row is copied by words (window_rows.py's
# (N, H*W*C) view), where the layer does at least this many MACs per byte of the
# bordered map: the copy (codegen/pad_rows.py's byte calls, ~1 instruction a byte) is
# paid once. Below it the border is fused and the window's border rows staged value by
# value. On cortex-m4: 3x3 stride 2 on 10x10 over 13 channels, 30 MACs a byte: 45.3 K
# instructions kept, 43.9 K fused; 5x5 stride 2, 59 a byte: 114.0 K kept, 131.7 K
# fused; 3x3 on 19x6, 195 a byte: 371 K kept, 433 K fused.
KEEP_BORDER_MIN_MACS = 45
# The same for windows over whole words of channels (_keeps_word_border), from this many
# channels and where at least this share of the bordered map's pixels is border: the
# copy's cost is the same per pixel, its gain (no border regions) grows with the
# border. pretrainedResnet_quant's 3x3 layers on cortex-m4: all kept, 11.04 M -> 11.10 M
# instructions; kept on its 8x8 maps alone (share 0.36; 16x16: 0.21, 32x32: 0.11)
# 11.03 M. The sweep's 19x6 and 10x10 maps under 3x3: 0.32 and 0.31.
KEEP_WORD_BORDER_MIN_CHANNELS = 8
KEEP_WORD_BORDER_MIN_SHARE = 0.25
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


@dataclass(frozen=True)
class _Site:
    """Where a contraction reads its input channels: the dim of the input (operand 0)
    and of the constant weights (operand 1) they run along, and its window's taps."""

    x_dim: int
    w_dim: int
    taps: int
    # Whether window_rows.py merges its window rows (channels innermost in both
    # operands, the columns undilated, more than one row): see MIN_CHANNELS_BY_TAPS.
    rows_merge: bool = False
    # The same for a window of one row (1x7), which window_rows.py splits into sub-rows
    # from 5 channels (`one_row_parts`); 2-3 channels keep their measured form.
    one_row_merges: bool = False


def _conv_site(node: Node) -> _Site | None:
    a = node.attrs
    if a["feature_group_count"] != 1 or a["batch_group_count"] != 1:
        return None  # a depthwise convolution's channels are not reduced
    w = node.inputs[1].type.shape
    x_rank = len(node.inputs[0].type.shape)
    spatial = a["kernel_spatial"]
    merges = (len(spatial) == 2 and a["input_feature"] == x_rank - 1
              and a["kernel_input"] == len(w) - 1
              and list(a["rhs_dilation"])[-1] == 1 and list(a["lhs_dilation"]) == [1, 1])
    return _Site(a["input_feature"], a["kernel_input"],
                 int(np.prod([w[d] for d in spatial])), merges and w[spatial[0]] > 1,
                 merges and w[spatial[0]] == 1 and w[spatial[1]] > 1)


def _dense_site(node: Node) -> _Site | None:
    a = node.attrs
    if a["lhs_batch"] or a["rhs_batch"] or len(a["lhs_contract"]) != 1:
        return None
    return _Site(a["lhs_contract"][0], a["rhs_contract"][0], 1)


# The contractions rewritten, and where each reads its channels.
SITES: dict[str, Callable[[Node], _Site | None]] = {
    "convolution": _conv_site,
    "dot_general": _dense_site,
}


def _site(node: Node, target: Target, leave_staged: bool = False) -> tuple[_Site, int] | None:
    """The site and C4 of an int8 contraction worth rewriting, else None (`leave_staged`:
    also None for a pointwise layer the im2col kernel stages unpadded, `staged_pointwise`)."""
    find = SITES.get(node.op)
    if find is None or len(node.inputs) != 2:
        return None
    x, w = node.inputs
    if x.type.dtype.name != "i8" or _weights(w) is None:
        return None
    site = find(node)
    if site is None:
        return None
    row = PAD_ROWS[SIMD[target.capabilities.simd].int8_dot]
    c = x.type.shape[site.x_dim]
    least = row.least or next(n for taps, n in MIN_CHANNELS_BY_TAPS if site.taps >= taps)
    if site.rows_merge and not row.least:
        least = max(least, MIN_CHANNELS_MERGED_ROWS)
    width = next(w for n, w in row.widths if c >= n)
    if c % width == 0 or c < least or \
            (site.taps == 1 and not row.pads_pointwise(c)) or \
            (leave_staged and _staged(node, site, c, row)):
        return None
    c4 = -(-c // width) * width
    # Outputs x taps each input value feeds, per pixel: the MACs a padded byte buys.
    per_pixel = node.output.type.num_elements * site.taps * c // x.type.num_elements
    # However small, the padded layer is a packed dot product, never cold (loops/cold.py):
    # a 27 -> 10 dense layer is 28 -> 10 in packed steps.
    if per_pixel < MIN_MACS_PER_BYTE:
        return None
    return site, c4


def _staged(node: Node, site: _Site, c: int, row: PadRow) -> bool:
    """Whether `node` is a pointwise NHWC convolution over `c` input channels, c not
    a multiple of 4, that the im2col kernel may stage unpadded (`staged_pointwise`,
    first_layer_records.takes_pointwise)."""
    return node.op == "convolution" and site.taps == 1 and \
        node.inputs[0].type.rank == 4 and site.x_dim == 3 and node.output.type.rank == 4 \
        and WORD < c <= row.staged_pointwise and c % WORD != 0 and \
        takes_pointwise(c, node.output.type.shape[3])


def staged_pointwise_layers(graph: Graph, target: Target) -> int:
    """How many layers of `graph` pad_int8_channels(leave_staged=True) leaves unpadded
    for the im2col kernel (`PadRow.staged_pointwise`) that it would pad otherwise."""
    if SIMD[target.capabilities.simd].int8_dot not in PADDED_DOT_KINDS:
        return 0
    return sum(_site(n, target) is not None and _site(n, target, True) is None
               for n in graph.nodes)


def missed_staged_pointwise(program: Program) -> bool:
    """Whether a step of `program` computes, other than by the im2col kernel, a layer
    pad_int8_channels(leave_staged=True) left unpadded: an int8 dot product of a
    [1, H, W, C] input and [O, 1, 1, C] weights, C within `staged_pointwise` and no
    multiple of 4, with the MACs a padded byte buys that _site pads for."""
    row = PAD_ROWS["dsp"]
    for step in program.steps:
        k = step.kernel
        if not isinstance(k, Kernel) or (step.schedule is not None and
                                         any(n.im2col for n in step.schedule.nests)):
            continue
        ops = dot_operands(k)
        if ops is None:
            continue
        shapes = [k.operands[ld.operand].shape for ld in ops]
        types = [k.operands[ld.operand].dtype.name for ld in ops]
        for (x, w), (tx, tw) in ((shapes, types), (shapes[::-1], types[::-1])):
            c = x[-1] if len(x) == 4 else 0
            if not (tx == tw == "i8" and len(w) == 4 and w[1:] == (1, 1, c) and
                    x[0] == 1 and WORD < c <= row.staged_pointwise and c % WORD and
                    takes_pointwise(c, w[0])):
                continue
            outputs = int(np.prod(k.result.shape))
            if outputs * c // int(np.prod(x)) >= MIN_MACS_PER_BYTE:
                return True
    return False


def pad_int8_channels(graph: Graph, target: Target, leave_staged: bool = False,
                      flash_records: bool = True) -> set[int]:
    """Rewrites, in place, the int8 convolutions and dense layers of `graph` (not its
    regions) whose input channels are not a multiple of their SIMD row's width
    (PAD_ROWS: 4 for the DSP word steps, 16 or 4 for Helium's windows), but with
    `leave_staged` the pointwise layers the im2col kernel takes as they are
    (`PadRow.staged_pointwise`), nor, where microkernel records may be bound in flash
    (`flash_records`), the first layers a Helium core gives the DSP im2col kernel
    (schedule/im2col_lanes.py). Returns the ids
    of the padded inputs that must stay materialized (schedule()'s `materialize`):
    those of pointwise layers, and every one where the row keeps its windows' pads."""
    if SIMD[target.capabilities.simd].int8_dot not in PADDED_DOT_KINDS:
        return set()
    out: list[Node] = []
    keep: set[int] = set()
    readers: dict[int, int] = {}
    for node in graph.nodes:
        for t in node.inputs:
            readers[id(t)] = readers.get(id(t), 0) + 1
    for t in graph.outputs:
        readers[id(t)] = readers.get(id(t), 0) + 1
    for node in graph.nodes:
        found = None if flash_records and node_takes_im2col(node, target) else \
            _site(node, target, leave_staged)
        if found is None:
            if _keeps_word_border(node, readers, target):
                keep.add(id(node.inputs[0]))
            out.append(node)
            continue
        site, c4 = found
        if _rows_merge_instead(node, site, c4, target):
            # window_rows.py merges its rows, each padded once; a SAME border before it
            # is kept in RAM so the window reads a VALID map (every staged row by words).
            x = node.inputs[0]
            border = _border_pad(x, readers)
            if border is not None and _macs_per_byte(node, x) >= \
                    KEEP_BORDER_MIN_MACS:
                keep.add(id(x))
            out.append(node)
            continue
        weights = _widened(node, site, c4, readers)
        if weights is not None:
            out += [weights, node]
            keep.add(id(node.inputs[0]))
            continue
        new = _rewrite(node, site, c4)
        row = PAD_ROWS[SIMD[target.capabilities.simd].int8_dot]
        x = node.inputs[0]
        dense = x.type.num_elements == x.type.shape[site.x_dim]
        if (site.taps == 1 and not (dense and row.fuses_dense)) or row.keep_windows:
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


def _widened(conv: Node, site: _Site, c4: int, readers: dict[int, int]) -> Node | None:
    """Where the input is already a `pad` (a window's SAME border, which TFLite's
    frontend writes as an op) read by this layer alone, that pad's channels are widened
    to c4 (its own value in the new lanes: the zero weights make any value contribute
    nothing) and the weights padded; one pad then reads the input, where a pad of a pad
    kept the first one in RAM (3x3 over 13 channels on 19x6: a 14.8 K instruction copy
    of the bordered input). Returns the padded weights' constant node (`conv` reads
    it), or None where the input is no such pad."""
    x, w = conv.inputs
    pad = x.producer
    if pad is None or pad.op != "pad" or readers.get(id(x), 0) != 1 or \
            any(pad.attrs["interior"]):
        return None
    high = list(pad.attrs["high"])
    high[site.x_dim] += c4 - x.type.shape[site.x_dim]
    shape = list(x.type.shape)
    shape[site.x_dim] = c4
    pad.attrs = {**pad.attrs, "high": tuple(high)}
    x.type = x.type.with_shape(tuple(shape))
    weights = _padded_weights(conv, w, site, c4)
    conv.inputs = [x, weights.output]
    return weights


def _padded_weights(conv: Node, w: Tensor, site: _Site, c4: int) -> Node:
    """The constant weights of `conv` with zeros for input channels c..c4."""
    value = _weights(w)
    assert value is not None
    widths: list[tuple[int, int]] = [(0, 0)] * value.ndim
    widths[site.w_dim] = (0, c4 - value.shape[site.w_dim])
    padded = np.pad(value, widths)
    return _constant(padded, w.type.with_shape(padded.shape), conv.source)


def _rewrite(conv: Node, site: _Site, c4: int) -> list[Node]:
    """[zero, pad, padded weights, conv]: the contraction node itself, reading them."""
    x, w = conv.inputs
    rank = x.type.rank
    high = [0] * rank
    high[site.x_dim] = c4 - x.type.shape[site.x_dim]
    shape = list(x.type.shape)
    shape[site.x_dim] = c4
    zero = _constant(np.zeros((), np.int8), TensorType((), x.type.dtype), conv.source)
    pad = _node("pad", [x, zero.output], x.type.with_shape(tuple(shape)),
                {"low": (0,) * rank, "high": tuple(high), "interior": (0,) * rank}, conv)
    value = _weights(w)
    assert value is not None
    widths: list[tuple[int, int]] = [(0, 0)] * value.ndim
    widths[site.w_dim] = (0, c4 - value.shape[site.w_dim])
    padded = np.pad(value, widths)
    weights = _constant(padded, w.type.with_shape(padded.shape), conv.source)
    conv.inputs = [pad.output, weights.output]
    return [zero, pad, weights, conv]



def _rows_merge_instead(conv: Node, site: _Site, c4: int, target: Target) -> bool:
    """Whether a window whose rows window_rows.py merges is left unpadded (see
    MERGED_ROW_SAVING): its merged rows, padded to words, take enough fewer packed
    steps than its taps padded to c4 channels each."""
    # window_rows.py merges on the DSP targets only (Helium's steps read any address and
    # pad by their own row).
    if SIMD[target.capabilities.simd].int8_dot != "dsp" or \
            not (site.rows_merge or site.one_row_merges):
        return False
    w = conv.inputs[1].type.shape
    spatial = conv.attrs["kernel_spatial"]
    kh, kw, c = w[spatial[0]], w[spatial[-1]], w[site.w_dim]
    if c < FLAT_MIN_CHANNELS and site.one_row_merges:
        return False
    return merged_row_extent(kh, kw, c) * MERGED_ROW_SAVING <= kw * c4


def _border_pad(x: Tensor, readers: dict[int, int]) -> Node | None:
    """The `pad` op (a SAME border, no interior padding) that writes x for its one
    reader, else None."""
    pad = x.producer
    if pad is None or pad.op != "pad" or readers.get(id(x), 0) != 1 or \
            any(pad.attrs["interior"]):
        return None
    return pad


def _macs_per_byte(conv: Node, x: Tensor) -> float:
    """The convolution's MACs per byte of its bordered input `x` (its pad's output)."""
    w = conv.inputs[1].type.shape
    taps = int(np.prod([w[d] for d in conv.attrs["kernel_spatial"]]))
    return conv.output.type.num_elements * taps * w[conv.attrs["kernel_input"]] \
        / x.type.num_elements



def _keeps_word_border(conv: Node, readers: dict[int, int], target: Target) -> bool:
    """Whether the SAME border (a `pad` op) before an int8 window over whole words of
    channels, at least KEEP_WORD_BORDER_MIN_CHANNELS, is kept in RAM on the DSP
    targets, as for merged rows (KEEP_BORDER_MIN_MACS), for a window of stride 1 (5x5
    stride 2 on 10x10 over 64 channels lost 0.1 % kept): the window then reads a VALID
    map, so its tiles pair two pixels everywhere and its staging tests nothing, where a
    fused border split the map into border regions whose pixels were staged tap by tap
    and, where a region was one pixel wide, called the one-pixel kernel. The copy is
    codegen/pad_rows.py's byte calls. On cortex-m4 (bench/shapes.py) 3x3 over 8 channels
    on 19x6 1.061 -> 1.081 MAC per instruction, on 10x10 1.053 -> 1.083, 5x5 1.149 ->
    1.255, 3x3 dilation 2 over 12 0.999 -> 1.087."""
    if SIMD[target.capabilities.simd].int8_dot != "dsp" or conv.op != "convolution" \
            or len(conv.inputs) != 2:
        return False
    x, w = conv.inputs
    if x.type.dtype.name != "i8" or _weights(w) is None:
        return False
    site = _conv_site(conv)
    if site is None or site.taps == 1:
        return False
    c = x.type.shape[site.x_dim]
    border = _border_pad(x, readers)
    # A window wider than the map (1x7 on 19x6: every pixel's window leaves it) has no
    # interior, so its fused border splits nothing; kept, it lost 0.3-0.7 % over 32-64
    # channels.
    w = conv.inputs[1].type.shape
    spatial = conv.attrs["kernel_spatial"]
    reach = [(w[d] - 1) * r + 1 for d, r in zip(spatial, conv.attrs["rhs_dilation"],
                                                 strict=True)]
    x_in = border.inputs[0].type.shape if border is not None else ()
    fits = border is not None and all(
        x_in[d] >= k for d, k in zip(conv.attrs["input_spatial"], reach, strict=True))
    return c % WORD == 0 and c >= KEEP_WORD_BORDER_MIN_CHANNELS and fits \
        and _macs_per_byte(conv, x) >= KEEP_BORDER_MIN_MACS \
        and all(s == 1 for s in conv.attrs["strides"]) \
        and _border_share(border) >= KEEP_WORD_BORDER_MIN_SHARE


def _border_share(pad: Node) -> float:
    """The share of the pixels of `pad`'s output (a bordered map) that are border."""
    shape = pad.output.type.shape
    inner = pad.inputs[0].type.shape
    return 1 - int(np.prod(inner[:-1])) / int(np.prod(shape[:-1]))


def pointwise_backup(graph: Graph, target: Target) -> Graph | None:
    """A deep copy of `graph` to schedule again with every pad, where some pointwise
    layer is left unpadded for the im2col kernel (staged_pointwise_layers); None where
    none is, or where some attribute cannot be copied (every pad is then kept, as
    before)."""
    if not staged_pointwise_layers(graph, target):
        return None
    try:
        return copy.deepcopy(graph)
    except (TypeError, copy.Error, RecursionError):
        return None
