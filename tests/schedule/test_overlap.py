"""A result placed below (or, with its loops run in reverse, above) its dying operand in
the same memory (schedule/overlap.py, schedule/program.py): the distance is derived from
the loop schedule and checked byte by byte; the planner uses it only with a target (the
schedule depends on it), and the code then follows the schedule that was checked. Under
QEMU a depthwise + pointwise chain computes the reference's outputs in an arena below
two activations, its directions alternating."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import LoopSchedule, Nest
from toolchain.pipeline import prepare_graph
from toolchain.schedule import Program, schedule
from toolchain.schedule.overlap import (
    _NEVER,
    OverlapWalk,
    _least_candidate,
    overlap_distance,
    tile_order,
)
from toolchain.target import load_target

_CONV = """stablehlo.convolution({x}, {k})
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {{stride = [1, 1], pad = [[{p}, {p}], [{p}, {p}]]}}
         {{batch_group_count = 1 : i64, feature_group_count = {g} : i64}}"""
H, W, C = 12, 6, 16
MAP = f"tensor<1x{H}x{W}x{C}xf32>"
MAP_BYTES = H * W * C * 4
ROW, PIXEL = W * C * 4, C * 4


def _conv(x: str, k: str, pad: int, kt: str, groups: int = 1) -> str:
    text = _CONV.format(x=x, k=k, p=pad, g=groups)
    return f"{text} : ({MAP}, {kt}) -> {MAP}"


# A first convolution, then depthwise 3x3 (SAME) and pointwise 1x1 twice, each the last
# reader of its operand, then a maximum over the map (a sum would cancel: its float
# error against the float64 reference is not what this tests): every activation is an
# arena buffer.
CHAIN = f"""func.func @main(%x: {MAP}, %k0: tensor<3x3x{C}x{C}xf32>,
                %kd: tensor<3x3x1x{C}xf32>, %kp: tensor<1x1x{C}x{C}xf32>,
                %kd2: tensor<3x3x1x{C}xf32>, %kp2: tensor<1x1x{C}x{C}xf32>)
                -> tensor<1x{C}xf32> {{
  %y = {_conv("%x", "%k0", 1, f"tensor<3x3x{C}x{C}xf32>")}
  %d = {_conv("%y", "%kd", 1, f"tensor<3x3x1x{C}xf32>", C)}
  %p = {_conv("%d", "%kp", 0, f"tensor<1x1x{C}x{C}xf32>")}
  %d2 = {_conv("%p", "%kd2", 1, f"tensor<3x3x1x{C}xf32>", C)}
  %p2 = {_conv("%d2", "%kp2", 0, f"tensor<1x1x{C}x{C}xf32>")}
  %z = stablehlo.constant dense<-1.0e+30> : tensor<f32>
  %s = stablehlo.reduce(%p2 init: %z) applies stablehlo.maximum across dimensions = [1, 2]
       : ({MAP}, tensor<f32>) -> tensor<1x{C}xf32>
  return %s : tensor<1x{C}xf32>
}}
"""
# A reverse of the first convolution's result before the depthwise one: the reverse's
# kernel reads its operand upside down, so its first stores land where its last loads
# read, whatever the distance below or above the operand, except where the last row
# (read first) was.
REVERSED = CHAIN.replace(
    "  %d = ", f"  %r = stablehlo.reverse %y, dims = [1] : {MAP}\n  %d = ").replace(
    '%d = stablehlo.convolution(%y, %kd)', '%d = stablehlo.convolution(%r, %kd)')


def _program(tmp_path: Path, text: str, target: str | None = "cortex-m4") -> Program:
    model = tmp_path / "m.mlir"
    model.write_text(text)
    return schedule(prepare_graph(load_graph(model)),
                    target=load_target(target) if target else None)


def _steps(program: Program) -> list:
    return [s for s in program.steps if "convolution" in s.kernel.name]


def _nest(k: Kernel, blocks: tuple[tuple[int, int], ...], interior=(),
          reverse: bool = False) -> LoopSchedule:
    nest = Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)),
                tuple(d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1),
                blocks=blocks, interior=interior, reverse=reverse)
    return LoopSchedule(k.name, (nest,))


def _offset(s) -> int:
    """Where a step's result starts relative to its operand map (negative: below)."""
    src = next(b for b in s.buffers[:-1] if b.size == MAP_BYTES)
    return s.buffers[-1].index - src.index


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> tuple[Program, Program]:
    """CHAIN planned with cortex-m4's schedules, and without a target."""
    tmp = tmp_path_factory.mktemp("chain")
    return _program(tmp, CHAIN), _program(tmp, CHAIN, None)


def test_distances_follow_the_schedule(chain) -> None:
    """The distances the walk finds are the ones derived by hand: a pointwise tile along
    channels reads all of its pixel before any store and later tiles read it again, so
    its stores trail by one pixel; a tile of two rows writes its second row while the
    first row's later pixels are unread (a row and a pixel); a 3x3 stride-1 SAME window
    written row by row still needs the row above and the pixel to the left (a row and
    a pixel), and a tile of 4 rows needs 4 rows and a pixel."""
    _, plain = chain
    dw, pw = (s.kernel for s in _steps(plain)[1:3])
    interior = ((1, 1, H - 1), (2, 1, W - 1))
    assert overlap_distance(pw, _nest(pw, ((3, 2),)), {0}) == PIXEL
    assert overlap_distance(pw, _nest(pw, ((1, 2), (3, 2))), {0}) == ROW + PIXEL
    src = next(i for i, t in enumerate(dw.operands) if t.shape == (1, H, W, C))
    assert overlap_distance(dw, _nest(dw, (), interior), {src}) == ROW + PIXEL
    assert overlap_distance(dw, _nest(dw, ((3, 4),), interior), {src}) == ROW + PIXEL
    assert overlap_distance(dw, _nest(dw, ((1, 4),), interior), {src}) == 4 * ROW + PIXEL


def test_reversed_distances_follow_the_schedule(chain) -> None:
    """Run in reverse, the same tiles store their last outputs first and the result goes
    above the operand, by the mirror image of the forward distances: a pointwise tile
    along channels needs the pixel after its own done (one pixel); a tile of two rows
    writes its first row while its second row's earlier pixels (lower channel tiles,
    run later) are unread (a row and a pixel); a 3x3 window row by row still needs the
    row below and the pixel to the right (a row and a pixel)."""
    _, plain = chain
    dw, pw = (s.kernel for s in _steps(plain)[1:3])
    interior = ((1, 1, H - 1), (2, 1, W - 1))
    assert overlap_distance(pw, _nest(pw, ((3, 2),), reverse=True), {0}) == PIXEL
    assert overlap_distance(pw, _nest(pw, ((1, 2), (3, 2)), reverse=True),
                            {0}) == ROW + PIXEL
    src = next(i for i, t in enumerate(dw.operands) if t.shape == (1, H, W, C))
    assert overlap_distance(dw, _nest(dw, (), interior, reverse=True), {src}) == ROW + PIXEL


def test_a_two_pixel_staged_tile_reads_its_pixels_once(chain) -> None:
    """A nest staging two pixels' input before their channel tiles (Nest.stage 2, the
    2x4 microkernel) reads it once, at the pair's first tile: the result may lie on the
    input itself. Paired along the rows, the second row's stores land on input a row
    ahead of the first row's later pixels, so a pixel below is unsafe although 0 is
    (safety is not monotone in the distance: the arena's exact distance is checked,
    safe_at); paired along a row, every distance from 0 is safe."""
    _, plain = chain
    pw = _steps(plain)[2].kernel
    rows = dataclasses.replace(_nest(pw, ((1, 2), (3, 2))), nests=(dataclasses.replace(
        _nest(pw, ((1, 2), (3, 2))).nests[0], stage=2),))
    cols = dataclasses.replace(rows, nests=(dataclasses.replace(
        rows.nests[0], blocks=((2, 2), (3, 2))),))
    walk = OverlapWalk(pw, {0})
    assert walk.distance(rows) == 0 and walk.safe_at(rows, 0)
    assert not walk.safe_at(rows, PIXEL) and not walk.safe_at(rows, 4 * PIXEL)
    assert walk.distance(cols) == 0
    assert all(walk.safe_at(cols, d * PIXEL) for d in range(4))
    # Without the staging each channel tile reads the pixels again: a pixel below.
    assert walk.distance(_nest(pw, ((2, 2), (3, 2)))) > 0


def test_a_two_pixel_staged_tile_stores_channel_by_channel() -> None:
    """A two-pixel staged tile's epilogues run channel by channel, both pixels each
    (codegen/nest.py _tile): its points ranked with the channel dim first; any other
    tile keeps row-major order over its dims."""
    nest = Nest((6, 8), 2, (0, 1), blocks=((0, 2), (1, 4)), stage=2)
    _, point, most = tile_order(nest)
    assert most == 8
    assert [int(point[y, c]) for c in range(4) for y in range(2)] == list(range(8))
    _, plain, _ = tile_order(dataclasses.replace(nest, stage=0))
    assert [int(plain[y, c]) for y in range(2) for c in range(4)] == list(range(8))


def test_the_walk_runs_borders_in_order() -> None:
    """Rows 0, then the interior in tiles of 4 and one of 2, then row 11: increasing, as
    codegen/nest.py runs a border around its interior; in reverse, the same tiles in the
    opposite order."""
    nest = Nest((H, 2), 2, (0, 1), blocks=((0, 4),), interior=((0, 1, H - 1),))
    tile, point, most = tile_order(nest)
    firsts = [int(tile[y, 0]) for y in range(H)]
    assert firsts == sorted(firsts) and most == 4
    assert [int(point[y, 0]) for y in range(1, 5)] == [0, 1, 2, 3]
    back, back_point, _ = tile_order(dataclasses.replace(nest, reverse=True))
    assert (back == tile.max() - tile).all()  # the runs of every dim backwards
    assert (back_point == point).all()  # a tile's points keep their order


def test_the_chain_needs_less_than_two_activations(chain) -> None:
    """Each depthwise and pointwise result starts a checked distance below or above its
    operand: the arena holds one activation plus the chain's drift, under two
    activations; the lower bound counts each overlapped pair as its union. The
    directions alternate (a reversed step goes up), so the four pairs drift by less
    than two of their distances (only down, they drifted by four: 4 x (ROW + PIXEL))."""
    program, plain = chain
    assert plain.arena_size >= 2 * MAP_BYTES
    assert program.arena_size < 2 * MAP_BYTES
    steps = _steps(program)[1:]
    assert all(s.schedule is not None for s in steps)
    for s in steps:
        src = next(b for b in s.buffers[:-1] if b.size == MAP_BYTES)
        assert src.kind == s.buffers[-1].kind == "arena"
        assert 0 < abs(_offset(s)) < MAP_BYTES
        assert (_offset(s) > 0) == s.schedule.nests[0].reverse
    ups = [_offset(s) > 0 for s in steps]
    assert all(a != b for a, b in zip(ups, ups[1:]))
    assert program.arena_size < MAP_BYTES + 2 * (ROW + PIXEL)
    assert plain.arena_lower_bound <= plain.arena_size
    assert MAP_BYTES < program.arena_lower_bound <= program.arena_size


def test_a_reversed_read_saves_one_row_at_most(tmp_path: Path) -> None:
    """The reverse's first stores (row 0) land where its last loads read (row 11, at
    the map's end): only a distance that puts row 0 past row 10 of the operand, in
    either direction, is safe; the checked placement keeps to it."""
    program = _program(tmp_path, REVERSED)
    rev = next(s for s in program.steps if "reverse" in s.kernel.name)
    assert abs(_offset(rev)) >= MAP_BYTES - ROW


@pytest.mark.parametrize("board,qemu", [("cortex-m4", "qemu-system-arm"),
                                        ("riscv32", "qemu-system-riscv32")])
@pytest.mark.parametrize("model", ["chain", "reversed"])
def test_overlapped_code_computes_the_reference(board: str, qemu: str, model: str,
                                                tmp_path: Path, capsys) -> None:
    missing = [t for t in ("clang", "ld.lld", qemu) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")
    path = tmp_path / f"{model}.mlir"
    path.write_text(CHAIN if model == "chain" else REVERSED)
    assert run.main([str(path), "--board", board, "--check", "-o", str(tmp_path / "fw")]) == 0
    out = capsys.readouterr().out
    assert "check: outputs match the reference" in out


def test_every_pair_is_checked_against_the_schedule_it_runs(chain) -> None:
    """The schedule recorded on a step is one the walk accepts for the placement made."""
    program, _ = chain
    for s in _steps(program)[1:]:
        src = next(i for i, b in enumerate(s.buffers[:-1]) if b.size == MAP_BYTES)
        d = overlap_distance(dataclasses.replace(s.kernel), s.schedule, {src})
        up = s.schedule.nests[0].reverse
        assert d is not None and d <= (_offset(s) if up else -_offset(s))


def _safe(last: np.ndarray, write: np.ndarray, d: int, reverse: bool) -> bool:
    """Whether no output byte's store lands on an input byte read after it, the result
    starting d bytes below (above, `reverse`) the input: the definition, byte by byte."""
    for b in range(write.size):
        i = b + d if reverse else b - d
        if 0 <= i < last.size and last[i] > write[b]:
            return False
    return True


@pytest.mark.parametrize("reverse", [False, True], ids=["below", "above"])
def test_the_search_starts_below_the_least_safe_distance(reverse: bool) -> None:
    """The walk starts its byte-by-byte check at a lower bound (_least_candidate); on
    random read and store times (stores in tiles, out of order inside each, input and
    result of different sizes) that bound never passes the least safe distance found
    by checking every distance from 0."""
    rng = np.random.default_rng(8)
    for _ in range(300):
        n_in, n_out = (int(x) for x in rng.integers(1, 60, 2))
        write = np.arange(n_out) * 3 + rng.integers(0, 12, n_out)
        if reverse:
            write = write[::-1].copy()
        last = np.where(rng.random(n_in) < 0.2, _NEVER,
                        rng.integers(0, 3 * max(n_in, n_out) + 12, n_in))
        least = next((d for d in range(n_out + n_in + 1)
                      if _safe(last, write, d, reverse)), None)
        assert least is not None and _least_candidate(last, write, reverse) <= least
