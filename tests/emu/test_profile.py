"""The per-dispatch profile and the stack measurement of the QEMU plugin: the profile's
rows add up exactly to the run's instruction count, each dispatch gets its own code's
instructions and its callees', MACs come from the kernel form; the stack depth is exact
(a frame grown by N bytes measures N bytes deeper)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from toolchain.emu import run_image
from toolchain.emu.profile import (
    DISPATCH,
    ProfileProbe,
    dispatch_macs,
    kernel_macs,
    profile_layout,
)
from toolchain.emu.stack import stack_margin, stack_probe, stack_reservation
from toolchain.link import link_firmware
from toolchain.loader import load_graph
from toolchain.pipeline import BuildResult, compile_graph, prepare_graph
from toolchain.schedule import schedule
from toolchain.target import load_board

DATA = Path(__file__).resolve().parent / "data"

# Two identical contractions (4x8 @ 8x8: 256 MACs each) around a tanh: the two dot
# dispatches run the same code on the same shapes, so their counts must be equal.
TWO_DOTS = """func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<8x8xf32>)
    -> tensor<4x8xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = stablehlo.tanh %0 : tensor<4x8xf32>
  %2 = stablehlo.exponential %1 : tensor<4x8xf32>
  %3 = stablehlo.dot_general %2, %v, contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
"""
MACS = 4 * 8 * 8


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory):
    """The model built once per board, on demand."""
    cache: dict[str, BuildResult] = {}

    def build(board_name: str) -> BuildResult:
        if board_name not in cache:
            board = load_board(board_name)
            _need("clang", "ld.lld", board.simulation.qemu)
            tmp = tmp_path_factory.mktemp(f"profile-{board_name}")
            model = tmp / "two_dots.mlir"
            model.write_text(TWO_DOTS)
            cache[board_name] = compile_graph(load_graph(model), board, tmp / "build",
                                              log=lambda _: None)
        return cache[board_name]

    return build


def _inputs(build: BuildResult) -> bytes:
    return bytes(sum(t.num_elements * t.dtype.itemsize for t in build.program.inputs))


def _profile(build: BuildResult):
    probe = ProfileProbe(profile_layout(build.link.map))
    result = run_image(build.board, build.elf, _inputs(build), probes=[probe])
    assert result.exit_code == 0, result.diagnosis
    macs = dispatch_macs([s.kernel for s in build.program.steps])
    return result, probe.profile(macs, build.board.identifier, "two_dots")


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64", "riscv32"])
def test_rows_add_up_to_the_exact_count(builds, board: str) -> None:
    build = builds(board)
    result, profile = _profile(build)
    plain = run_image(build.board, build.elf, _inputs(build))
    assert profile.total == result.instructions == plain.instructions
    assert sum(r.instructions for r in profile.rows) == plain.instructions
    rows = {r.name: r for r in profile.rows}
    dispatches = [r for r in profile.rows if r.kind == DISPATCH]
    # One row per dispatch function of the program, in program order.
    assert [r.name for r in dispatches] == [s.kernel.name for s in build.program.steps]
    # Every dispatch ran, the command loop between them is the runtime's, and no
    # executed instruction fell outside a known function.
    assert all(r.instructions > 0 for r in dispatches)
    # (Before the image, QEMU's riscv virt machine runs 6 instructions of its reset ROM:
    # "other", outside the inference.)
    assert rows["runtime"].instructions > 0 and rows["other"].instructions == 0
    # Start-up (reset, .data/.bss) and the module's load run before the inference.
    assert rows["start-up"].outside > 0 and rows["runtime"].outside > 0
    # The two contractions: 256 MACs each, and the same code on the same shapes.
    dots = [r for r in dispatches if "dot_general" in r.name]
    assert [r.macs for r in dots] == [MACS, MACS]
    assert profile.macs == 2 * MACS
    assert dots[0].per_mac == dots[0].instructions / MACS


def test_callees_are_charged_to_their_dispatch(builds) -> None:
    """Soft float (Armv6-M): every float operation is a libgcc call, charged to the
    dispatch that made it, never to the runtime."""
    build = builds("cortex-m0plus")
    result, profile = _profile(build)
    assert profile.total == result.instructions
    dispatches = [r for r in profile.rows if r.kind == DISPATCH]
    assert all(r.callee_instructions > 0 for r in dispatches)
    for r in dispatches:
        assert r.callee_instructions < r.instructions
    rows = {r.name: r for r in profile.rows}
    assert rows["runtime"].callee_instructions == 0 and rows["other"].instructions == 0
    assert "in callees" in profile.format()


def test_kernel_macs() -> None:
    """Contractions count their domain; reductions that multiply nothing count 0."""
    program = schedule(prepare_graph(load_graph(DATA / "macs.mlir")))
    macs = {s.kernel.name.split("_", 1)[1]: kernel_macs(s.kernel) for s in program.steps}
    # 1x6x6x4 outputs of a 3x3x2 window: 2592 MACs; a 4x5 @ 5x3 dot: 60; a sum: none.
    assert sorted(macs.values()) == [0, 60, 2592], macs


# --------------------------------------------------------------------------- stack


def _stack_image(board_name: str, out: Path, nbytes: int):
    board = load_board(board_name)
    _need("clang", "ld.lld", board.simulation.qemu)
    link = link_firmware(board, [], out, runtime_parts=("platform",),
                         extra_sources=[DATA / "stack_double.c"],
                         extra_cflags=[f"-DTD_STACK_BYTES={nbytes}"])
    return board, link.elf


@pytest.mark.parametrize("board", ["cortex-m4", "riscv32", "x86-64", "aarch64"])
def test_stack_depth_is_exact(board: str, tmp_path: Path) -> None:
    depths = []
    for nbytes in (1024, 3072):
        b, elf = _stack_image(board, tmp_path / str(nbytes), nbytes)
        probe = stack_probe(b, elf)
        result = run_image(b, elf, b"", probes=[probe])
        assert result.exit_code == 0, result.diagnosis
        assert probe.use is not None
        assert nbytes <= probe.use.depth < nbytes + 256
        depths.append(probe.use.depth)
    assert depths[1] - depths[0] == 2048


def test_stack_of_a_model_is_measured_and_deterministic(builds) -> None:
    build = builds("cortex-m4")
    depths = set()
    for _ in range(2):
        probe = stack_probe(build.board, build.elf)
        run_image(build.board, build.elf, _inputs(build), probes=[probe])
        assert probe.use is not None
        depths.add(probe.use.depth)
    (depth,) = depths
    assert 0 < depth < 4096


def test_reservation_margin() -> None:
    """256 B for an exception frame and the fault handlers, an eighth of the depth for
    paths not taken, rounded up to 16 B."""
    assert stack_reservation(0) == 256
    assert stack_reservation(400) == 400 + 256 + 50 + 14  # 720: rounded up to 16
    for depth in range(0, 5000, 7):
        r = stack_reservation(depth)
        assert r % 16 == 0 and r >= depth + 256 + depth // 8 and r - depth == stack_margin(depth)
