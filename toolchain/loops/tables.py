"""The measured data the loop-schedule rules (loops/rules.py) read: one row per SIMD
instruction set (what its registers and int8 dot steps offer a tile), per vector or
microkernel dot step (what it costs), and per code budget (how much code a tile may
become: microcontroller code is optimised for size, hosted code for speed).

These are tables apart from the rules because codegen and schedule read them too (the
kinds of dot step, the microkernels' symbols, the paired-operand layouts): they name
what a target offers, not how a schedule is chosen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from toolchain.target.descriptors import Target

__all__ = ["BUDGETS", "DOT_WIDTH", "INT16_DOT_KINDS", "LANE_KIND", "SIMD", "UKERNELS",
           "VECTOR_DOT_KINDS", "Budget", "SimdRow", "Ukernel", "VectorDot", "dot_align",
           "dot_width", "packed_written_out", "tiles_for_cold_kernels"]


@dataclass(frozen=True)
class SimdRow:
    """What a SIMD instruction set offers the loops: f32 lanes per register, the kind
    of packed int8 dot step (codegen/dot.py's DOT_KINDS or codegen/dot_vector.py's
    VECTOR_DOT_KINDS; "" for none), whether its constant operands (weights) are stored
    pre-extended in the paired layout (kernel/paired.py, schedule/paired.py: twice their
    flash, no unpacking), and the vector registers a vector dot tile may hold (its
    accumulators and operand vectors)."""

    float_lanes: int
    int8_dot: str = ""
    paired_operands: bool = False
    vector_registers: int = 0
    # int8 outputs a tile computes in the lanes of vector accumulators, one lane per
    # output along a parallel dim both operands are contiguous in (a depthwise
    # convolution's channels; codegen/dot_vector.py's LANE_KIND); 0 for none.
    int8_lanes: int = 0
    # Whether float tiles are blocked in whole vectors along an output-channel dim
    # (FloatLanes), for LLVM's SLP vectorizer to make vector FMAs of them.
    float_lane_tiles: bool = False
    # The packed dot step of a dot product of two int16 operands (a 16x8 layer whose
    # int8 weights are stored widened, schedule/widen16.py), codegen/dot.py's
    # DOT_KINDS; "" for none.
    int16_dot: str = ""
    # The vector dot kind of a window none of whose reduced dims is long enough for
    # `int8_dot`'s steps (VECTOR_DOT_KINDS; "" for none): Helium's 4-lane step reads a
    # 10x4 window's rows of 4 taps over one input channel (kws's first layer).
    int8_dot_short: str = ""
    # Whether a depthwise tile in lanes requantizes its outputs in vectors too
    # (loops/requant_lanes.py, codegen/requant_helium.py): Helium's VQRDMULH and VRSHL
    # are TFLite's two rounding steps, 4 lanes at a time.
    lane_requant: bool = False
    # Vector registers a FloatLanes tile may hold (loops/cost.py), where they differ
    # from `vector_registers` (0: the same).
    float_vector_registers: int = 0
    # Whether a float vector tile may run over a window's border with its loads
    # checked rather than split the blocked dim into border and interior
    # (loops/rules.py _nest): where a checked scalar load costs little (a masked load).
    float_checked_tiles: bool = False


SIMD: dict[str, SimdRow] = {
    "none": SimdRow(float_lanes=1),
    # SXTB16 + SMLAD in core registers; paired weights: docs/architecture.md, "Where the
    # int8 instructions go (Cortex-M4)", has the measured gain and flash.
    "dsp": SimdRow(float_lanes=1, int8_dot="dsp", paired_operands=True, int16_dot="dsp16"),
    # No float lane tiles: on cortex-m55 they cost dscnn_kws 20% more instructions
    # (4.22 M -> 5.06 M) and leave resnet8 as it was.
    "mve": SimdRow(float_lanes=4, int8_dot="mve", vector_registers=8,  # Q0-Q7
                   int8_lanes=16, int8_dot_short="mve4", lane_requant=True),
    # Float lane tiles on aarch64 (instructions under QEMU): resnet8 15.9 M -> 7.4 M,
    # dscnn_kws 3.43 M -> 2.06 M, autoencoder 566 K -> 185 K, cnn 170 K -> 56 K.
    "neon": SimdRow(float_lanes=4, int8_dot="neon", vector_registers=32,  # V0-V31
                    int8_lanes=16, float_lane_tiles=True),
    "neon-dotprod": SimdRow(float_lanes=4, int8_dot="sdot", vector_registers=32,
                            int8_lanes=16, float_lane_tiles=True),
    "sse2": SimdRow(float_lanes=4, float_lane_tiles=True),
    "avx2": SimdRow(float_lanes=8, int8_dot="avx2", vector_registers=16,  # YMM0-YMM15
                    int8_lanes=16, float_lane_tiles=True),
    # AVX-512 (x86-64-v4): f32 tiles in zmm vectors of 16 lanes, and AVX2's int8 dot
    # steps (VPMOVSXBW + VPMADDWD, codegen/dot_vector.py) with AVX2's register budget,
    # which LLVM encodes with EVEX for this CPU. Measured with minirt-bench (CPU us per
    # inference, a loaded host) against 8 lanes: cnn 4.4 -> 3.3; with 512-bit
    # vectorization (target -prefer-256-bit) resnet8 449 -> ~350-420. The float tiles
    # budget all 32 zmm since they are explicit vector IR (codegen/float_lanes.py) and
    # the window a tile holds is counted (loops/cost.py _fits): resnet8's 8x8 and 16x16
    # layers take 4-8 pixels x 64 or 32 channels, -6% of its time under perf (3,874 ->
    # 3,626 samples of 3,000 inferences; d8 985 -> 891, d6 459 -> 375). Before the
    # explicit vectors, 32 registers made larger tiles that the SLP vectorizer left
    # slower (resnet8 744 us with 16 lanes, 638 with 8).
    "avx512": SimdRow(float_lanes=16, int8_dot="avx2", vector_registers=16,
                      int8_lanes=16, float_lane_tiles=True, float_vector_registers=32,
                      float_checked_tiles=True),
}
LANE_KIND = "lanes"  # a nest's `dot` when its outputs are computed in vector lanes
# Instructions per group of lanes and reduction step besides the two loads: widening
# multiply of both halves, widening adds into the four (NEON, Helium) or two (AVX2)
# int32 accumulator registers.
LANE_OPS = 6
DOT_WIDTH = 4  # int8 elements per packed DSP step (a vector kind's width is its own)
# The packed DSP steps whose operands are int16 as stored: a step reads 4 elements as
# two words of 16-bit pairs (no unpacking), so a word needs only 2 elements' alignment.
INT16_DOT_KINDS = frozenset({"dsp16"})
# A packed DSP loop of at most this many steps is written out (codegen/nest.py) when
# its steps read at most PACKED_ROWS_UNROLLED paired weight rows: LLVM kept a loop of
# two (vww_96's 8-channel pointwise layer on cortex-m4, 2 pixels x 2 channels: a flag
# toggled per pass, the addresses recomputed; 973 K -> 779 K instructions written
# out); a tile of 4 rows written out loads all 8 LDRDs ahead and spills (ad01_int8's
# 8 -> 128 layer: 3,664 -> 4,370).
PACKED_STEPS_UNROLLED = 2
PACKED_ROWS_UNROLLED = 2


def packed_written_out(steps: int, paired_rows: int) -> bool:
    """Whether a packed DSP loop of `steps` steps whose tile reads `paired_rows` rows of
    paired weights per step is written out instead of looped."""
    return steps <= PACKED_STEPS_UNROLLED and paired_rows <= PACKED_ROWS_UNROLLED
# Instructions a packed DSP step spends on one operand value (4 elements): a word load
# and its 2 SXTB16, or for an operand in the paired layout (kernel/paired.py) one LDRD.
UNPACKED_LOAD = 3
PAIRED_LOAD = 1
# An operand gathered element by element (loops/access.py _packing): 4 byte loads and
# 2 packs into the 16-bit pairs (PKHBT).
GATHERED_LOAD = 6


@dataclass(frozen=True)
class VectorDot:
    """What the cost model knows of a vector int8 dot step (codegen/dot_vector.py):
    int8 lanes per step, the int32 lanes of each output's accumulator (0: a scalar
    register), and instructions per output per step, per distinct operand vector per
    step (its load and any extension) and per output to reduce its accumulator."""

    width: int
    acc_lanes: int
    step_ops: int
    load_ops: int
    finish_ops: int
    # A packed loop of at most this many steps is written out when its body has no
    # unrolled taps (0: always a loop).
    written_out: int = 0


VECTOR_DOT_KINDS: dict[str, VectorDot] = {
    # SMULL, SMULL2, 2 SADALP; LDR q; ADDV + FMOV
    "neon": VectorDot(width=16, acc_lanes=4, step_ops=4, load_ops=1, finish_ops=2),
    # SDOT; LDR q; ADDV + FMOV (Armv8.2-A's dot product, where the target says so)
    "sdot": VectorDot(width=16, acc_lanes=4, step_ops=1, load_ops=1, finish_ops=2),
    # VPMADDWD + VPADDD; VPMOVSXBW from memory; extract, 2 x (shuffle, add), VMOVD
    "avx2": VectorDot(width=16, acc_lanes=8, step_ops=2, load_ops=1, finish_ops=6),
    # VMLADAVA.S8 into the scalar sum; VLDRB.8
    # Written out up to 4 steps (kws's 64-channel pointwise rows): the loop's zeroed
    # accumulators, its counter and the register moves LLVM put in it cost 2.5
    # instructions an output of a 2 x 4 tile.
    "mve": VectorDot(width=16, acc_lanes=0, step_ops=1, load_ops=1, finish_ops=0,
                     written_out=4),
    # VMLADAVA.S32 into the scalar sum; VLDRB.S32 (4 lanes sign-extended as loaded)
    "mve4": VectorDot(width=4, acc_lanes=0, step_ops=1, load_ops=1, finish_ops=0),
}


@dataclass(frozen=True)
class Ukernel:
    """A runtime_c microkernel for the packed loop of a tile of `rows` outputs that
    read one input word and `rows` paired weight rows (codegen/dot_ukernel.py): its
    symbol, the packed steps from which a tile is costed with (and makes) the call,
    the steps from which a tile with unrolled taps, costed as generated code, calls it
    per tap, and the instructions of a call besides its steps (arguments, the
    accumulators through memory, saving registers)."""

    symbol: str
    rows: int
    min_steps: int
    min_tap_steps: int
    call_cost: int
    # The same over several runs of contiguous inputs with a jump between them (a
    # window's rows) and contiguous weights: one call for all the taps of a tile, used
    # from `min_run_tap_steps` steps per tap on.
    runs_symbol: str = ""
    min_run_tap_steps: int = 0
    # The same for an input already in the paired layout (Nest.stage), and the function
    # that pairs a pixel's input for it.
    staged_symbol: str = ""
    pair_symbol: str = ""
    # The same for a tile of two pixels, staged together (`pair_two_symbol`), against
    # weights whose rows are interleaved (kernel/paired.py `to_paired_rows`).
    two_pixel_symbol: str = ""
    pair_two_symbol: str = ""
    # The same for two pixels' inputs at any byte (a merged window row of channels that
    # are no multiple of 4: schedule/window_rows.py), and `pair_symbol` reads them so.
    pair_two_unaligned_symbol: str = ""
    # Two pixels' whole window of two-word taps that do not follow one another (a
    # dilated window over 8 channels): dst, a, b, cols, rows, col_jump, row_next.
    pair_two_window2_symbol: str = ""
    # Two pixels' whole window of 16-channel taps whose last 3 weights are zero
    # (Nest.tap_rest): each tap's first 3 words, then the taps' 13th values 4 a step.
    pair_two_tap_rest_symbol: str = ""
    # A tile of one pixel against those interleaved rows (an odd dim's last pixel),
    # staged by `pair_symbol`.
    one_pixel_symbol: str = ""
    # Rows of those interleaved rows, fewer than a group, for two pixels and for one (the
    # same stagings): (rows, two-pixel symbol, one-pixel symbol), the most rows first.
    # The output channels past the last whole group take them, the most rows a call,
    # up to `row_call_max` channels; more take the two-pixel call over the group padded
    # with zero rows (schedule/paired.py `_interleave_rows`).
    row_calls: tuple[tuple[int, str, str], ...] = ()
    row_call_max: int = 0


# By dot kind. "dsp": runtime_c/ukernel/dsp/mrt_dot_dsp.c, 16 instructions per 16 MACs.
# Measured on cortex-m4: a tile without taps takes it from 4 steps on (vww_96's 32- and
# 16-channel pointwise layers: 14.52 M -> 13.91 M instructions with 4 instead of 16;
# 2 gains nothing more); a call per tap pays from 16 steps (pretrainedResnet's 3x3
# layers with 4 or 8 steps per tap lose 4 to 23% with it), one call for the window's
# three rows from 8 (its 32-channel layers -6%, the 64-channel one -8% against a call
# per tap; with 4 steps, 16 channels, the generated loop is 4.6% faster).
UKERNELS: dict[str, Ukernel] = {
    "dsp": Ukernel(symbol="mrt_dot_s8_paired_1x4", rows=4, min_steps=4, min_tap_steps=16,
                   call_cost=28, runs_symbol="mrt_dot_s8_paired_1x4_runs",
                   min_run_tap_steps=8, staged_symbol="mrt_dot_s16_paired_1x4",
                   pair_symbol="mrt_pair4_s8", two_pixel_symbol="mrt_dot_s16_paired_2x4",
                   pair_two_symbol="mrt_pair2_s8", pair_two_unaligned_symbol="mrt_pair2u_s8",
                   pair_two_window2_symbol="mrt_pair2w2_s8",
                   pair_two_tap_rest_symbol="mrt_pair2w3r_s8",
                   one_pixel_symbol="mrt_dot_s16_paired_1x4i",
                   row_calls=((2, "mrt_dot_s16_paired_2x2i", "mrt_dot_s16_paired_1x2i"),
                              (1, "mrt_dot_s16_paired_2x1i", "mrt_dot_s16_paired_1x1i")),
                   row_call_max=2),
}
# A pixel's input is paired once (4 instructions a word, and the call) when its output
# channels are at least this many tiles: each saves 2 instructions a step (the SXTB16s).
STAGE_MIN_TILES = 3
# But where there is more than one pixel (then called two at a time, the 2x4 kernel)
# from two: cortex-m4, 1x1 19x6 32 -> 8 0.601 -> 0.766 MAC per instruction, where a
# dense 16 -> 10 (one pixel) went 408 -> 415 instructions.
STAGE_MIN_TILES_PIXELS = 2
# A window (its taps unrolled) is staged from two tiles on: the staged call runs over
# all its taps, where the alternative is a packed loop per tap. On cortex-m4 a 5x5 over
# 32 channels to 8 outputs went 0.49 -> 0.92 MAC per instruction, a 3x3 to 8 0.81 ->
# 0.89; from one tile, 5x5 to 4 outputs 0.49 -> 0.76 but 3x3 to 4 0.81 -> 0.75.
STAGE_MIN_WINDOW_TILES = 2


def dot_width(kind: str) -> int:
    """int8 elements per packed step of dot kind `kind`."""
    vk = VECTOR_DOT_KINDS.get(kind)
    return vk.width if vk is not None else DOT_WIDTH


def dot_align(kind: str) -> int:
    """The multiple of elements a packed step of dot kind `kind` must start at: any for
    a vector kind (unaligned vector loads), 2 for an int16 kind (a word of two int16
    elements), else a whole word of 4 int8 elements."""
    if kind in VECTOR_DOT_KINDS:
        return 1
    return 2 if kind in INT16_DOT_KINDS else DOT_WIDTH


# Vector registers a vector dot step needs besides the tile's accumulators and operand
# vectors: NEON's two 16-bit product registers between SMULL and SADALP.
VECTOR_TEMPS = 2


@dataclass(frozen=True)
class Budget:
    """How much code a tile may become."""

    max_tile: int  # outputs computed together (accumulators)
    max_copies: int  # copies of the body in one tile: outputs x unrolled taps
    max_unroll: int  # a reduced dim longer than this stays a loop
    loop_cost: int  # instructions a loop iteration costs besides its body
    # A cap on the straight-line code of a nest (_code: instructions, every tile shape
    # and region counted once). When the cheapest tile exceeds it, the cheapest tile
    # under it is taken instead if it costs at most `code_slack` more (else the
    # cheapest stays). docs/architecture.md, "Code size", has the measured trade.
    max_code: float = float("inf")
    code_slack: float = 0.0
    # A kernel of at most this many points (outputs x reduction steps) keeps its loops
    # as written (plain_schedule, with FMA where the target has it): a tile can save it
    # only a few thousand instructions, and costs its code. The int8 softmax's scalar
    # steps and dense head on cortex-m4: kws_ref_model 288 B less code for 3,805 more
    # instructions (0.07%), pretrainedResnet 468 B for 3,077; ad01's 8x128 layers
    # (1,024 points) would lose 3%, so they stay above it.
    cold_points: int = 0
    # Whether a scalar integer tile may block a parallel dim every load of its body
    # depends on (a depthwise convolution's channels: input and weights both change
    # with it) in tiles that do not span it. Such a block shares no loaded value between
    # its outputs, only holds more registers: the cost model sees no difference (each
    # output pays its own loads either way) but the extra live values spill. On
    # cortex-m4 a 3x3 depthwise on 10x10 took 4 columns x 2 channels, 0.20 MAC per
    # instruction; 5 columns x 1 channel, 0.24 (4 to 64 channels: +12 to +20%).
    # loops/rules.py `_shares_nothing`.
    block_unshared: bool = True


BUDGETS: dict[str, Budget] = {
    "size": Budget(max_tile=24, max_copies=72, max_unroll=4, loop_cost=3, max_code=800,
                   code_slack=0.01, cold_points=1000, block_unshared=False),
    "speed": Budget(max_tile=32, max_copies=256, max_unroll=8, loop_cost=2),
}

FACTORS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
PARTIALS = (1, 2, 4)
# A float sum whose innermost loop runs at least this many times folds into 2 or more
# partial sums (when the registers allow): shorter chains of roundings. With one chain,
# the shared autoencoder's 128- and 640-term dots drift past --check's tolerance under
# FMA (worst element 1.15x the tolerance; 0.30x with partial sums). Convolutions, whose
# innermost loop is their input channels (at most 64 in the shared models), stay well
# within it (worst 0.02x) and keep their registers for larger tiles.
LONG_SUM = 128
# Registers a tile leaves for pointers and loop counters, beyond one per operand.
RESERVED_INT_REGISTERS = 2


@contextmanager
def tiles_for_cold_kernels() -> Iterator[None]:
    """Within it, microcontrollers tile every kernel however few its points (the size
    budget's cold_points is 0). The random-graph campaign builds in it: its graphs'
    tensors hold at most 96 elements, so nearly all their kernels are cold and would
    take the plain schedule, and the campaign is there to test the register tiles,
    interiors and packed steps the rules choose (the plain schedule is what every
    other schedule is checked against)."""
    saved = BUDGETS["size"]
    BUDGETS["size"] = dataclasses.replace(saved, cold_points=0)
    try:
        yield
    finally:
        BUDGETS["size"] = saved


def _budget(target: Target) -> Budget:
    return BUDGETS["size" if target.os == "none" else "speed"]
