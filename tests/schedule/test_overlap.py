"""A result placed below its dying operand in the same memory (schedule/overlap.py,
schedule/program.py): the distance is derived from the loop schedule and checked byte
by byte; the planner uses it only with a target (the schedule depends on it), and the
code then follows the schedule that was checked. Under QEMU a depthwise + pointwise
chain computes the reference's outputs in an arena below two activations."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from toolchain.cli import run
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import LoopSchedule, Nest
from toolchain.pipeline import prepare_graph
from toolchain.schedule import Program, schedule
from toolchain.schedule.overlap import overlap_distance, tile_order
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
# The depthwise convolution reads its operand upside down (a reverse fused into it):
# its first stores land where its last loads read, whatever the distance below the
# operand, so it must keep a buffer of its own.
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


def _nest(k: Kernel, blocks: tuple[tuple[int, int], ...], interior=()) -> LoopSchedule:
    nest = Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)),
                tuple(d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1),
                blocks=blocks, interior=interior)
    return LoopSchedule(k.name, (nest,))


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


def test_the_walk_runs_borders_in_order() -> None:
    """Rows 0, then the interior in tiles of 4 and one of 2, then row 11: increasing, as
    codegen/nest.py runs a border around its interior."""
    nest = Nest((H, 2), 2, (0, 1), blocks=((0, 4),), interior=((0, 1, H - 1),))
    tile, point, most = tile_order(nest)
    firsts = [int(tile[y, 0]) for y in range(H)]
    assert firsts == sorted(firsts) and most == 4
    assert [int(point[y, 0]) for y in range(1, 5)] == [0, 1, 2, 3]


def test_the_chain_needs_less_than_two_activations(chain) -> None:
    """Each depthwise and pointwise result starts a checked distance below its operand:
    the arena holds one activation plus the chain's drift, under two activations; the
    lower bound counts each overlapped pair as its union."""
    program, plain = chain
    assert plain.arena_size >= 2 * MAP_BYTES
    assert program.arena_size < 2 * MAP_BYTES
    steps = _steps(program)[1:]
    assert all(s.schedule is not None for s in steps)
    for s in steps:
        src, dst = s.buffers[0] if s.buffers[0].size == MAP_BYTES else s.buffers[1], \
            s.buffers[-1]
        assert src.kind == dst.kind == "arena" and 0 < src.index - dst.index < MAP_BYTES
    assert plain.arena_lower_bound <= plain.arena_size
    assert MAP_BYTES < program.arena_lower_bound <= program.arena_size


def test_a_reversed_window_keeps_its_own_buffer(tmp_path: Path) -> None:
    program = _program(tmp_path, REVERSED)
    dw = _steps(program)[1]
    assert dw.schedule is None
    src = next(b for b in dw.buffers[:-1] if b.size == MAP_BYTES)
    dst = dw.buffers[-1]
    assert abs(src.index - dst.index) >= MAP_BYTES


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
        assert d is not None and d <= s.buffers[src].index - s.buffers[-1].index
