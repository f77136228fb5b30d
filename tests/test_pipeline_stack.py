"""A build sizes its stack from a run under QEMU: the image reserves the measured depth
plus emu/stack.py's margin instead of the board's fixed stack_size, reproducibly; Linux
boards and boards whose emulator is absent keep the board's figure; size.json reports
RAM as arena (beside its lower bound) + I/O + stack (beside the measured depth)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from toolchain import pipeline
from toolchain.cli import build as build_cli
from toolchain.emu import stack as stack_mod
from toolchain.emu.run import run_image
from toolchain.emu.stack import StackProbe, stack_probe, stack_reservation, stack_reserved
from toolchain.module.reader import read_module
from toolchain.report.size import size_report
from toolchain.target import load_board

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "examples" / "seed.mlir"
# A convolution (1x6x6x4 f32 outputs: 576 B) read by a dot: one arena buffer.
MODEL = """func.func @main(%x: tensor<1x8x8x2xf32>, %k: tensor<3x3x2x4xf32>,
                %w: tensor<144x3xf32>) -> tensor<1x3xf32> {
  %0 = stablehlo.convolution(%x, %k)
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {stride = [1, 1], pad = [[0, 0], [0, 0]]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  %1 = stablehlo.reshape %0 : (tensor<1x6x6x4xf32>) -> tensor<1x144xf32>
  %2 = stablehlo.dot_general %1, %w, contracting_dims = [1] x [0]
       : (tensor<1x144xf32>, tensor<144x3xf32>) -> tensor<1x3xf32>
  return %2 : tensor<1x3xf32>
}
"""


def _needs(*tools: str) -> None:
    missing = [t for t in ("clang", "ld.lld", *tools) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stack") / "conv_dot.mlir"
    path.write_text(MODEL)
    return path


@pytest.fixture(scope="module")
def m4_build(model: Path, tmp_path_factory: pytest.TempPathFactory) -> pipeline.BuildResult:
    _needs("qemu-system-arm")
    return pipeline.build_model(model, "cortex-m4", tmp_path_factory.mktemp("m4") / "fw",
                                log=lambda m: None)


def test_the_reservation_is_the_measured_depth_plus_the_margin(m4_build) -> None:
    sizing = m4_build.stack
    board = m4_build.board
    assert sizing is not None and 0 < sizing.measured < sizing.reserved < board.stack_size
    assert sizing.reserved == stack_reservation(sizing.measured)
    assert sizing.reserved - sizing.measured >= stack_mod.MARGIN_FIXED
    assert stack_reserved(m4_build.elf) == sizing.reserved  # the linker script's figure
    assert size_report(m4_build).ram["stack"] == sizing.reserved
    # The shipped image (relinked with its own reservation) measures the same depth: the
    # relink moved no code, and its stack grows from the same top.
    module = read_module(m4_build.module)
    probe = stack_probe(board, m4_build.elf)
    inputs = pipeline._measuring_inputs(m4_build.module, m4_build.graph)
    run = run_image(board, m4_build.elf, inputs, probes=[probe])
    assert run.exit_code == 0 and module.outputs
    assert isinstance(probe, StackProbe) and probe.use.depth == sizing.measured


def test_the_sized_build_is_reproducible(model: Path, m4_build, tmp_path: Path) -> None:
    again = pipeline.build_model(model, "cortex-m4", tmp_path / "fw", log=lambda m: None)
    assert again.stack == m4_build.stack
    for name in ("firmware.elf", "firmware.bin", "firmware.hex"):
        assert (again.out_dir / name).read_bytes() == (m4_build.out_dir / name).read_bytes()


def test_without_its_emulator_a_board_keeps_its_stack_size(model: Path, tmp_path: Path,
                                                             monkeypatch) -> None:
    _needs()
    which = shutil.which
    monkeypatch.setattr(stack_mod.shutil, "which",
                        lambda name: None if name.startswith("qemu") else which(name))
    logged: list[str] = []
    build = pipeline.build_model(model, "cortex-m4", tmp_path / "fw", log=logged.append)
    board = load_board("cortex-m4")
    assert build.stack is None and stack_reserved(build.elf) == board.stack_size
    assert any("stack not measured (qemu-system-arm is not installed); reserving the "
               f"board's {board.stack_size} B" in m for m in logged)


def test_a_linux_board_keeps_its_stack_size(tmp_path: Path) -> None:
    _needs("qemu-x86_64")
    build = pipeline.build_model(SEED, "x86-64", tmp_path / "fw", log=lambda m: None)
    assert build.stack is None
    assert stack_reserved(build.elf) == build.board.stack_size


def test_size_json_reports_arena_io_and_stack(model: Path, tmp_path: Path, capsys) -> None:
    _needs("qemu-system-arm")
    out = tmp_path / "fw"
    assert build_cli.main([str(model), "--board", "cortex-m4", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    data = json.loads((out / "size.json").read_text())
    ram = data["ram"]
    # The conv's result is the one arena buffer: 576 B live at once, and the planner
    # gives it no more.
    assert ram["arena"] == data["arena_lower_bound"] == 6 * 6 * 4 * 4
    assert ram["stack"] == data["stack"] == stack_reservation(data["stack_measured"])
    assert data["ram_total"] == sum(ram.values())
    assert (f"RAM: arena {ram['arena']} B (lower bound {data['arena_lower_bound']} B), I/O "
            f"{ram['io']} B, stack {ram['stack']} B ({data['stack_measured']} B measured "
            "under QEMU + margin)") in text


def test_the_same_image_is_measured_once_per_process(m4_build, monkeypatch) -> None:
    """A second measurement of the same bytes (a rebuild in one session) reuses the
    first: exact execution makes it a function of image and inputs."""
    calls: list[Path] = []
    real = stack_mod.run_image

    def counting(board, elf, *args, **kwargs):
        calls.append(elf)
        return real(board, elf, *args, **kwargs)

    monkeypatch.setattr(stack_mod, "run_image", counting)
    board = m4_build.board
    first, _ = stack_mod.measure_stack(board, m4_build.elf, b"\0" * 7 + b"x")
    second, _ = stack_mod.measure_stack(board, m4_build.elf, b"\0" * 7 + b"x")
    other, why = stack_mod.measure_stack(board, m4_build.elf, b"\0" * 8)
    # The inputs are the wrong size: the runs fail, which is never remembered.
    assert first is None and second is None and other is None and "failed" in why
    assert len(calls) == 3
    inputs = pipeline._measuring_inputs(m4_build.module, m4_build.graph)
    calls.clear()
    a, _ = stack_mod.measure_stack(board, m4_build.elf, inputs)
    b, _ = stack_mod.measure_stack(board, m4_build.elf, inputs)
    assert a == b and a is not None and a.depth == m4_build.stack.measured
    assert len(calls) <= 1  # 0 when an earlier build in this process measured it


def _small_ram_board(tmp_path: Path, ram: int) -> Path:
    """cortex-m4 with `ram` bytes of RAM and a 2 KB default stack that the tests make
    too large for it."""
    text = (REPO / "boards" / "cortex-m4.yaml").read_text()
    text = text.replace("identifier: cortex-m4", "identifier: cortex-m4-small-ram")
    text = text.replace("ram: {origin: 0x20000000, length: 0x400000}",
                        f"ram: {{origin: 0x20000000, length: {ram:#x}}}")
    text = text.replace("stack_size: 0x4000", "stack_size: 0x800")
    text = text.replace("budgets: {flash: 0x400000, ram: 0x400000}",
                        f"budgets: {{flash: 0x400000, ram: {ram:#x}}}")
    path = tmp_path / "cortex-m4-small-ram.yaml"
    path.write_text(text)
    return path


def _non_stack_ram(build: pipeline.BuildResult) -> int:
    report = size_report(build)
    return report.ram_total - report.ram["stack"]


def test_a_default_stack_that_does_not_fit_is_measured_in_the_room_left(
        model: Path, m4_build, tmp_path: Path) -> None:
    # hifive1 with kws_ref_model was this case while its arena was 12.4 KB: 4 KB of
    # default stack overflowed its 16 KB, the measured 720 B reservation did not.
    assert m4_build.stack.reserved <= 1024
    ram = _non_stack_ram(m4_build) + 1024
    logged: list[str] = []
    build = pipeline.build_model(model, _small_ram_board(tmp_path, ram), tmp_path / "fw",
                                 log=logged.append)
    assert build.stack == m4_build.stack
    assert stack_reserved(build.elf) == m4_build.stack.reserved
    assert any("the board's 2048 B stack leaves no room in RAM; measuring the stack with "
               "the 1024 B there is" in m for m in logged)
    inputs = pipeline._measuring_inputs(m4_build.module, m4_build.graph)
    small, full = (run_image(b.board, b.elf, inputs) for b in (build, m4_build))
    assert small.exit_code == 0 and small.outputs and small.outputs == full.outputs


def test_a_measured_stack_larger_than_the_room_left_does_not_fit(
        model: Path, m4_build, tmp_path: Path) -> None:
    # Room for MIN_TRIAL_STACK and more, but less than the measured reservation: the
    # error's size table shows the reservation the image needs, and nothing is left.
    room = (pipeline.MIN_TRIAL_STACK + m4_build.stack.reserved) // 2 // 16 * 16
    ram = _non_stack_ram(m4_build) + room
    logged: list[str] = []
    out = tmp_path / "fw"
    with pytest.raises(pipeline.DoesNotFit) as err:
        pipeline.build_model(model, _small_ram_board(tmp_path, ram), out, log=logged.append)
    short = m4_build.stack.reserved - room
    assert f"overflows RAM by {short} bytes" in str(err.value)
    assert f"stack {m4_build.stack.reserved} B" in str(err.value)
    assert not out.exists() and not list(tmp_path.glob(".fw.*"))


def test_no_room_for_a_trial_stack_does_not_fit_without_a_run(
        model: Path, m4_build, tmp_path: Path, monkeypatch) -> None:
    runs: list[Path] = []
    monkeypatch.setattr(stack_mod, "run_image", lambda board, elf, *a, **k: runs.append(elf))
    ram = _non_stack_ram(m4_build) + pipeline.MIN_TRIAL_STACK - 16
    with pytest.raises(pipeline.DoesNotFit, match="stack 2048 B"):
        pipeline.build_model(model, _small_ram_board(tmp_path, ram), tmp_path / "fw",
                             log=lambda m: None)
    assert runs == []
