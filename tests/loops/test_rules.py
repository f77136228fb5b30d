"""Choosing schedules from the target's capabilities: interiors, register blocking within
the registers, FMA where the target has it, partial sums for long float sums, phases."""

from __future__ import annotations

import dataclasses
from math import prod
from pathlib import Path

import pytest
import yaml
from model_zoo import MISSING_REASON, MODELS_DIR

from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule, interior_ranges, phases_of, rules
from toolchain.loops.cold import packed_dot
from toolchain.loops.rules import plain_schedule
from toolchain.pipeline import prepare_graph
from toolchain.schedule import schedule
from toolchain.target import load_target
from toolchain.types import TensorType, dtype

M4, M0, X86 = (load_target(n) for n in ("cortex-m4", "cortex-m0plus", "x86-64"))


def _named(dispatches, part: str):
    return next(k for k, _ in dispatches if part in k.name)


def test_interior_of_a_padded_window(float_dispatches) -> None:
    same, strided, depthwise = (k for k, _ in float_dispatches[:3])
    # 3x3, pad 1, on 7x9: every tap is inside for rows 1..5 and columns 1..7.
    assert interior_ranges(same) == {1: (1, 6), 2: (1, 8)}
    # Stride 2, rows padded (1, 2) with row dilation 2: only output row 1 of 3 has all
    # of its taps inside; columns padded (0, 1): the last column's window leaves it.
    assert interior_ranges(strided) == {1: (1, 2), 2: (0, 4)}
    assert interior_ranges(depthwise) == {1: (1, 6), 2: (1, 5)}


def _registers_used(nest, float_acc: bool) -> int:
    # A float tile in vector lanes (FloatLanes) holds `vector` outputs per register.
    lanes = nest.vector if float_acc and nest.vector else 1
    return prod(f for _, f in nest.blocks) * nest.partials // lanes


def test_blocking_fits_the_registers(float_dispatches, int8_dispatches) -> None:
    for target in (M4, M0, X86):
        caps = target.capabilities
        for k, _ in float_dispatches + int8_dispatches:
            for nest in choose_schedule(k, target).nests:
                accs = _registers_used(nest, k.acc_dtype.is_float)
                room = caps.float_registers if k.acc_dtype.is_float and caps.float_registers \
                    else caps.int_registers
                assert accs < room, (target.name, k.name, nest.format())
    # Cortex-M4's 32 float registers take a real tile: 4 outputs x 4 partial sums.
    nest = choose_schedule(_named(float_dispatches, "dot_general"), M4).nests[0]
    assert _registers_used(nest, True) >= 12


def test_fma_where_the_target_has_it(float_dispatches) -> None:
    k = float_dispatches[0][0]
    assert choose_schedule(k, M4).fma
    assert not choose_schedule(k, X86).fma  # baseline x86-64 has no FMA
    assert not choose_schedule(k, M0).fma  # no FPU at all


def test_no_f64_fma_on_a_single_precision_fpu(float_dispatches) -> None:
    """Cortex-M4's FPU does f32 only: a fused f64 multiply-add would be a call to libm's
    fma, which no firmware links (found by the random graph fuzzer: an f64 convolution
    failed to link on cortex-m4)."""
    k = float_dispatches[0][0]
    f64 = dataclasses.replace(k, result=k.result.with_dtype(dtype("f64")), accumulator=None)
    assert choose_schedule(k, M4).fma and not choose_schedule(f64, M4).fma
    assert choose_schedule(f64, load_target("aarch64")).fma  # its FPU does f64


def test_long_float_sums_fold_into_partial_sums(float_dispatches, int8_dispatches) -> None:
    dot = _named(float_dispatches, "dot_general")
    assert choose_schedule(dot, M4).nests[0].partials >= 2  # 189 terms
    for k, _ in float_dispatches[:3] + int8_dispatches:
        assert choose_schedule(k, M4).nests[0].partials == 1  # short, or exact (ints)
    maxpool = float_dispatches[5][0]
    assert maxpool.combine == "maximum"
    assert all(n.partials == 1 for n in choose_schedule(maxpool, M4).nests)


def test_transposed_convolutions_get_a_nest_per_phase(float_dispatches) -> None:
    transposed = float_dispatches[3][0]
    nests = choose_schedule(transposed, M4).nests
    assert len(nests) == len(phases_of(transposed)) == 2 * 3  # lhs_dilation (2, 3)
    assert {tuple((p.dim, p.residue) for p in n.phases) for n in nests} == {
        ((2, c), (1, r)) for r in range(2) for c in range(3)}


def test_plain_schedule_takes_no_liberty(float_dispatches) -> None:
    for k, _ in float_dispatches:
        s = plain_schedule(k)
        (nest,) = s.nests
        assert not (s.fma or nest.blocks or nest.interior or nest.phases or nest.unroll)
        assert nest.partials == 1


def test_printed_schedule(float_dispatches, monkeypatch) -> None:
    # The window model's layers are cold on a microcontroller (Budget.cold_points):
    # printed here is the schedule the rules choose for a layer that is not.
    monkeypatch.setitem(rules.BUDGETS, "size",
                        dataclasses.replace(rules.BUDGETS["size"], cold_points=0))
    text = choose_schedule(float_dispatches[2][0], M4).format()
    name, line = text.splitlines()
    assert name == f"{float_dispatches[2][0].name}: fma"
    assert line.startswith("  loops d0<1> d1") and "d2x5<5>" in line
    # d2's one tile spans it: its border columns are constants in the tile, not a split.
    assert line.endswith("interior d1[1,6)")


def test_a_target_without_the_schedule_capabilities_gets_safe_defaults(tmp_path: Path) -> None:
    data = yaml.safe_load(M4.path.read_text())
    for key in ("fma", "simd", "int_registers", "float_registers"):
        del data["capabilities"][key]
    path = tmp_path / "cortex-m4.yaml"
    path.write_text(yaml.safe_dump(data))
    target = load_target(path)
    caps = target.capabilities
    assert (caps.fma, caps.simd, caps.int_registers, caps.float_registers) == \
        (False, "none", 8, 0)
    assert dataclasses.replace(target.capabilities, fma=True) != caps


def _int8_dense(n_out: int, n_in: int) -> Kernel:
    """y[0, j] = sum_k int32(x[0, k]) * int32(w[j, k]): a dense int8 layer as the .tflite
    importer lowers it (weights stored one output row after another)."""
    i8, i32 = dtype("i8"), dtype("i32")
    x = Apply("convert", (Load(0, (Index(0), Index(2))),), i32)
    w = Apply("convert", (Load(1, (Index(1), Index(2))),), i32)
    return Kernel("dense", (1, n_out, n_in), 2,
                  (TensorType((1, n_in), i8), TensorType((n_out, n_in), i8)),
                  TensorType((1, n_out), i32), Apply("multiply", (x, w), i32),
                  combine="add", init=Const(0, i32))


def test_packed_tiles_count_the_streamed_words(monkeypatch) -> None:
    """Per packed step LLVM loads the streamed operand's words together, ahead of their
    SXTB16s: a dense layer's tile of 6 outputs (6 accumulators, 6 weight words, the two
    unpacked input halves, three pointers and the counter) spilled on cortex-m4 (ad01_int8:
    2.53 instructions per MAC in its 128x128 layers); 4 outputs fit (2.07). (Register
    tiles only: the dense-rows call, which such a layer now takes, aside.)"""
    monkeypatch.setattr(rules, "dense_rows_candidates", lambda *a, **k: [])
    (nest,) = choose_schedule(_int8_dense(128, 128), M4).nests
    assert nest.dot == "dsp" and nest.blocks == ((1, 4),), nest.format()


def _mlperf_kernel(name: str, domain: tuple[int, ...]) -> Kernel:
    """The first dispatch of MLPerf Tiny model `name` whose domain[1:6] is `domain`."""
    model = MODELS_DIR / "mlperf_tiny" / f"{name}.tflite"
    if not model.is_file():
        pytest.skip(f"{model} is absent ({MISSING_REASON})")
    program = schedule(prepare_graph(load_graph(model)))
    return next(s.kernel for s in program.steps if s.kernel.domain[1:6] == domain)


@pytest.fixture(scope="module")
def kws_depthwise() -> Kernel:
    """kws_ref_model's first depthwise dispatch: 3x3, padding 1, 25x5x64 int8, with its
    requantization epilogue."""
    return _mlperf_kernel("kws_ref_model", (25, 5, 64, 3, 3))

def _cost_and_code(k: Kernel, target, budget) -> tuple[float, float]:
    """The cost model's instructions and straight-line code of k's chosen nest."""
    (nest,) = choose_schedule(k, target).nests
    s = rules._shape(k, True)
    factors = dict(nest.blocks)
    return (rules._total(s, k, factors, nest.unroll, nest.reduction, budget, nest.partials,
                         bool(nest.dot)),
            rules._code(s, k, factors, nest.unroll, nest.reduction, interior_ranges(k),
                        bool(nest.dot)))


@pytest.fixture(scope="module")
def vww_depthwise() -> Kernel:
    """vww_96_int8's 3x3 depthwise dispatch over 12x12x64 (stride 1, padding 1), with its
    requantization epilogue."""
    return _mlperf_kernel("vww_96_int8", (12, 12, 64, 3, 3))


def test_microcontroller_tiles_are_capped_in_code(vww_depthwise, monkeypatch) -> None:
    """vww_96's 12x12x64 depthwise layer: its cheapest tile (4 columns x 2 channels, 9
    taps unrolled) is written out in several shapes (border / interior, remainders),
    1,004 instructions by the estimate. Under the size budget's cap of 800 a tile costing
    0.5 % more by the model is taken (6 columns x 1 channel, 758). (kws's depthwise
    layer was the example until rows against the window's ky stopped fitting,
    _held_window: its tile is now under the cap by itself.) The example is kept with
    blocks of unshared dims allowed (Budget.block_unshared): without them vww's
    cheapest tile is under the cap too. (On the DSP boards the layer itself now goes to
    the row-pair microkernel, loops/depthwise.py; these are the generated tiles' rules,
    which the layers it does not take keep.)"""
    k = vww_depthwise
    monkeypatch.setattr(rules, "row_pair_nest", lambda *args: None)
    size = dataclasses.replace(rules.BUDGETS["size"], block_unshared=True)
    monkeypatch.setitem(rules.BUDGETS, "size", size)
    cost, code = _cost_and_code(k, M4, size)
    assert code <= size.max_code
    uncapped = dataclasses.replace(size, max_code=float("inf"))
    monkeypatch.setitem(rules.BUDGETS, "size", uncapped)
    best_cost, best_code = _cost_and_code(k, M4, uncapped)
    assert best_code > size.max_code and best_cost < cost <= best_cost * (1 + size.code_slack)
    # Hosted targets are optimised for speed: no cap.
    assert rules.BUDGETS["speed"].max_code == float("inf")


def test_depthwise_channels_are_not_blocked_on_microcontrollers(vww_depthwise,
                                                                 monkeypatch) -> None:
    """A depthwise layer's input and weights both vary with its channels: a tile of
    several channels shares no loaded value and only holds more registers. Under the
    size budget the channel dim is not blocked (a 3x3 over 16 channels on 10x10 on
    cortex-m4: 2 x 4 columns x channels 0.203 -> 0.243 MAC per instruction with 5
    columns), unless one tile spans all of them (its offsets are then constants);
    hosted targets keep such tiles."""
    k = vww_depthwise
    assert rules._shares_nothing(rules._shape(k, False), 3)
    assert not rules._shares_nothing(rules._shape(k, False), 2)  # weights shared
    (nest,) = choose_schedule(k, M4).nests
    assert nest.block(3) == 1 and nest.block(2) > 1, nest.format()
    assert not rules.BUDGETS["size"].block_unshared and rules.BUDGETS["speed"].block_unshared
    # A dense layer's outputs share its input: a row tile stays (a register tile; the
    # dense-rows call aside).
    monkeypatch.setattr(rules, "dense_rows_candidates", lambda *a, **k: [])
    (nest,) = choose_schedule(_int8_dense(128, 128), M4).nests
    assert nest.blocks == ((1, 4),), nest.format()


def test_cold_kernels_keep_their_loops_on_microcontrollers() -> None:
    """A kernel of at most Budget.cold_points points (outputs x reduction steps) gets the
    plain schedule on a microcontroller, with FMA where the target has it; one point
    more, and hosted targets, get tiles. (Rows of 3: no whole packed int8 step.)"""
    cold = rules.BUDGETS["size"].cold_points
    assert cold > 0 and rules.BUDGETS["speed"].cold_points == 0
    small, large = _int8_dense(cold // 3, 3), _int8_dense(cold // 3 + 1, 3)
    s = choose_schedule(small, M4)
    assert s.fma and s.nests == rules.plain_schedule(small).nests
    assert choose_schedule(large, M4).nests[0].blocks
    assert choose_schedule(small, load_target("x86-64")).nests[0].blocks
    with rules.tiles_for_cold_kernels():  # the random-graph campaign's builds
        assert choose_schedule(small, M4).nests[0].blocks
    assert rules.BUDGETS["size"].cold_points == cold


@pytest.mark.parametrize("n_in", [4, 8, 27, 64])
def test_packed_dot_products_are_never_cold(n_in: int) -> None:
    """An int8 dense layer under Budget.cold_points points with at least one whole packed
    step in its rows gets packed tiles where the target has packed steps (cortex-m4: a
    64 -> 10 layer took 4,074 instructions in the plain loops, 980 in packed tiles;
    loops/cold.py) and keeps the plain loops where it has none (cortex-m3)."""
    small = _int8_dense(10, n_in)
    assert prod(small.domain) <= rules.BUDGETS["size"].cold_points
    (nest,) = choose_schedule(small, M4).nests
    # One step a row is cheaper written out as scalar MACs in the tile (no dot kind);
    # from two steps the dense-rows call (loops/dense_rows.py) competes.
    assert nest.blocks and (nest.dot in ("dsp", "dsp_rows") or n_in == 4), nest.format()
    m3 = load_target("cortex-m3")
    assert choose_schedule(small, m3).nests == rules.plain_schedule(small).nests


def test_padded_windows_are_never_cold(int8_dispatches) -> None:
    """A padded window under Budget.cold_points points still gets a tile (its interior
    runs without bounds tests; plain, a 3x3 depthwise over one channel on 10x10 took 29
    instructions per MAC on cortex-m4, tiled 6.4); a small kernel without padding keeps
    the plain loops unless it is a packed dot product (loops/cold.py)."""
    cold = rules.BUDGETS["size"].cold_points
    small = [k for k, _ in int8_dispatches if prod(k.domain) <= cold]
    padded = [k for k in small if interior_ranges(k)]
    assert padded and len(padded) < len(small)
    for k in small:
        plain = choose_schedule(k, M4).nests == plain_schedule(k).nests
        assert plain == (k not in padded and not packed_dot(k, M4)), k.name


def test_vector_int8_dot_kinds_follow_the_simd_row() -> None:
    """The int8 dot step is the target's SIMD row's (data, not a test of the target's
    name): NEON on aarch64, AVX2 on x86-64-v3, Helium on cortex-m55, SXTB16 + SMLAD on
    cortex-m4, none on baseline x86-64 (SSE2). A vector step reads 16 elements from any
    address (a 1,037-long row is no multiple of 4), so a row shorter than 16 stays
    scalar there while the DSP word still packs it (Helium's short 4-lane kind is for
    windows' rows: a lone short row keeps LLVM's loop, `int8_dot_short`)."""
    # 100 rows: 1,200 points, not cold on a microcontroller (Budget.cold_points).
    long_row, short_row = _int8_dense(8, 1037), _int8_dense(100, 12)
    want = {"aarch64": "neon", "x86-64-v3": "avx2", "cortex-m55": "mve", "x86-64": ""}
    for name, kind in want.items():
        (nest,) = choose_schedule(long_row, load_target(name)).nests
        assert nest.dot == kind, (name, nest.format())
        (nest,) = choose_schedule(short_row, load_target(name)).nests
        assert nest.dot == "", (name, nest.format())
    (nest,) = choose_schedule(short_row, M4).nests
    assert nest.dot == "dsp", nest.format()


@pytest.mark.parametrize("name", ["aarch64", "x86-64-v3", "cortex-m55"])
def test_vector_dot_tiles_fit_the_vector_registers(name: str) -> None:
    """A vector dot tile holds its accumulators (Helium's are general registers), the
    input vectors and the step's temporaries in the instruction set's registers (32
    NEON, 16 AVX2, 8 Helium); kws's pointwise layers take 20 accumulators on aarch64
    and ran 94 instructions per 320 MACs with no spill."""
    target = load_target(name)
    kind = rules.VECTOR_DOT_KINDS[target.capabilities.simd]
    row = rules.SIMD[target.capabilities.simd]
    for k in (_int8_dense(128, 128), _int8_dense(8, 640)):
        (nest,) = choose_schedule(k, target).nests
        points = prod(f for _, f in nest.blocks)
        vectors = (points if kind.acc_lanes else 0) + points + 1 + rules.VECTOR_TEMPS
        assert vectors <= row.vector_registers, nest.format()
        if not kind.acc_lanes:
            assert points + 2 + rules.RESERVED_INT_REGISTERS <= \
                target.capabilities.int_registers, nest.format()


def test_depthwise_outputs_go_in_vector_lanes(kws_depthwise) -> None:
    """kws's depthwise layer: both operands are contiguous along the output channels,
    so where the SIMD row has int8 lanes the tile computes 16 channels in the lanes of
    vector accumulators (`dot lanes`); cortex-m4's DSP word has none. cortex-m55 has
    both: its 25x5 map (45 % of the outputs on the border, whose taps the lanes test one
    by one) goes to the DSP row-pair kernel's 4-row tiles (`_lanes_beat_row_pairs`),
    where its lanes would cost 16.8 instructions an output against 15.2."""
    assert rules.lane_dim(kws_depthwise) == 3
    for name in ("aarch64", "x86-64-v3"):
        (nest,) = choose_schedule(kws_depthwise, load_target(name)).nests
        assert nest.dot == rules.LANE_KIND and (3, 16) in nest.blocks, (name, nest.format())
    (nest,) = choose_schedule(kws_depthwise, load_target("cortex-m55")).nests
    assert nest.row_pairs, nest.format()
    assert rules._lane_output_cost(kws_depthwise, 3, 16) > 16.5
    (nest,) = choose_schedule(kws_depthwise, M4).nests
    assert nest.dot == "", nest.format()
    # A dense layer has no such dim: its input does not vary along the outputs.
    assert rules.lane_dim(_int8_dense(32, 64)) is None


def test_rows_against_the_windows_outer_taps_hold_the_window(float_dispatches,
                                                              vww_depthwise,
                                                              monkeypatch) -> None:
    """A tile of rows slides with the window's ky, the outermost unrolled tap: the
    window's values stay live across the taps and count as held registers; a tile of
    columns (against the inner kx) or with ky a loop holds none. (vww's layer below
    goes to the row-pair microkernel on cortex-m4 now, loops/depthwise.py: the
    generated tiles' choice is checked without it.)"""
    monkeypatch.setattr(rules, "row_pair_nest", lambda *args: None)
    same = _named(float_dispatches, "convolution_add_maximum")  # 3x3 over 3 channels
    assert same.domain[4:] == (3, 3, 3)
    # rows 2 + 3 - 1, columns 4 + 3 - 1, 3 channels
    assert rules._held_window(same, {1: 2, 2: 4}, (4, 5, 6)) == 4 * 6 * 3
    assert rules._held_window(same, {2: 4}, (4, 5, 6)) == 0
    assert rules._held_window(same, {1: 2}, (5,)) == 0
    # vww_96's depthwise layer on cortex-m4 takes columns: rows spilled (3.85
    # instructions per MAC with 2 x 4 against 3.4 with 1 x 6).
    (nest,) = choose_schedule(vww_depthwise, M4).nests
    assert nest.block(1) == 1 and nest.block(2) > 1, nest.format()


def test_two_pixels_need_weight_rows_in_the_staged_order() -> None:
    """The 2x4 microkernel multiplies the staged input by each weight row element by
    element in order: a pointwise layer's weights (row per output channel) qualify, the
    same weights read transposed do not, nor does a nest that is not staged, a pixel
    dim the arena plan keeps unblocked, or a float result (its 8 epilogues spill)."""
    from toolchain.loops.schedule import Nest

    i8, i16, i32 = dtype("i8"), dtype("i16"), dtype("i32")

    def pointwise(w_index) -> Kernel:
        body = Apply("multiply", (
            Apply("convert", (Load(0, (Index(0), Index(1), Index(3))),), i32),
            Apply("convert", (Load(1, w_index),), i32)), i32)
        return Kernel("pw", (1, 6, 8, 8), 3,
                      (TensorType((1, 6, 8), i8), TensorType((8, 8), i16)),
                      TensorType((1, 6, 8), i32), body, combine="add",
                      init=Const(0, i32), paired=(1,))

    staged = Nest((1, 6, 8, 8), 3, (0, 1, 2), (3,), blocks=((2, 4),), dot="dsp", stage=1)
    assert rules.two_pixel_dim(pointwise((Index(2), Index(3))), staged) == 1
    assert rules.two_pixel_dim(pointwise((Index(3), Index(2))), staged) is None
    assert rules.two_pixel_dim(pointwise((Index(2), Index(3))),
                               dataclasses.replace(staged, stage=0)) is None
    assert rules.two_pixel_dim(pointwise((Index(2), Index(3))), staged,
                               unblocked=frozenset({1})) is None
    floats = dataclasses.replace(pointwise((Index(2), Index(3))),
                                 result=TensorType((1, 6, 8), dtype("f32")))
    assert rules.two_pixel_dim(floats, staged) is None
