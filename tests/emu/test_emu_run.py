"""Running tiny images under QEMU on every board: files round-trip, instruction counts
are exact and repeatable, hangs time out and faults are reported."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.emu import (
    EmuError,
    EmuTimeout,
    bench_markers,
    build_plugin,
    qemu_command,
    run_image,
)
from toolchain.target import Board, list_boards, load_board

Firmware = Callable[[str], tuple[Board, Path]]
BOARDS = ["x86-64", "aarch64", "riscv32", "cortex-m4"]  # the boards every change must pass
ALL_BOARDS = list_boards()
BARE_METAL = [b for b in ALL_BOARDS if load_board(b).target_info.os == "none"]
# Boards QEMU runs, and so counts the instructions of (a native board's run counts none).
COUNTED = [b for b in ALL_BOARDS if not load_board(b).simulation.native]
FAULT_EXIT = 139  # MRT_PLATFORM_FAULT_EXIT_CODE in runtime_c/platform/common
HARNESS_SHORT_EXIT = 17  # MRT_HARNESS_EXIT_SHORT_IN in runtime_c/harness/harness.h

# Input modes of tests/link/doubles/image_double.c
MODE_RUN, MODE_HANG, MODE_FAULT, MODE_FLOAT = 0, 1, 2, 3


def pack_input(mode: int, iterations: int, data: bytes = bytes(range(8))) -> bytes:
    """The 16-byte input the image double reads."""
    return struct.pack("<II8s", mode, iterations, data)


def expected_output(mode: int, iterations: int, data: bytes = bytes(range(8))) -> bytes:
    """What the image double writes for MODE_RUN."""
    acc = 12345
    for _ in range(iterations):
        acc = (acc * 1664525 + 1013904223) & 0xFFFFFFFF
    return struct.pack("<II8s", mode, acc, bytes((b + 1) & 0xFF for b in data))


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_round_trip(name: str, firmware: Firmware) -> None:
    board, elf = firmware(name)
    data = bytes([7, 0, 255, 1, 2, 3, 4, 5])
    result = run_image(board, elf, pack_input(MODE_RUN, 5, data), count_instructions=False)
    assert result.exit_code == 0, result.console + result.stderr
    assert result.outputs == expected_output(MODE_RUN, 5, data)
    assert result.instructions is None


@pytest.mark.parametrize("name", COUNTED)
def test_instruction_count_exact_and_repeatable(name: str, firmware: Firmware) -> None:
    board, elf = firmware(name)
    counts = {}
    for iterations in (10, 10, 20, 30):
        result = run_image(board, elf, pack_input(MODE_RUN, iterations))
        assert result.exit_code == 0, result.console + result.stderr
        assert result.outputs == expected_output(MODE_RUN, iterations)
        assert result.instructions is not None and result.instructions > 0
        counts.setdefault(iterations, set()).add(result.instructions)
    assert len(counts[10]) == 1, f"count not repeatable: {counts[10]}"
    (c10,), (c20,), (c30,) = counts[10], counts[20], counts[30]
    assert c20 > c10
    # The loop body costs the same every iteration: the count is linear in the input.
    assert c30 - c20 == c20 - c10


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_float_work_runs(name: str, firmware: Firmware) -> None:
    """Exercises the FPU enable on bare metal and libgcc soft-float helpers."""
    board, elf = firmware(name)
    result = run_image(board, elf, pack_input(MODE_FLOAT, 9), count_instructions=False)
    assert result.exit_code == 0, result.console + result.stderr
    lcg = int.from_bytes(expected_output(MODE_RUN, 9)[4:8], "little")
    assert int.from_bytes(result.outputs[4:8], "little") == (lcg + 21) & 0xFFFFFFFF


@pytest.mark.parametrize("name", BOARDS)
def test_hang_times_out(name: str, firmware: Firmware) -> None:
    board, elf = firmware(name)
    with pytest.raises(EmuTimeout, match=rf"board {name}: firmware.elf did not finish within 2 s"):
        run_image(board, elf, pack_input(MODE_HANG, 0), timeout=2)


@pytest.mark.parametrize("name", BARE_METAL)
def test_fault_is_reported(name: str, firmware: Firmware) -> None:
    board, elf = firmware(name)
    result = run_image(board, elf, pack_input(MODE_FAULT, 0))
    assert result.exit_code == FAULT_EXIT
    assert result.fault is not None  # the handler's raw record, decoded on the host
    if board.simulation.qemu == "qemu-system-arm":
        assert result.diagnosis.startswith("HardFault pc=0x")
    else:
        assert result.diagnosis.startswith("RISC-V trap mcause=0x")
    assert result.outputs is None
    assert result.instructions is None  # mrt_bench_end never ran


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_short_input_is_an_error(name: str, firmware: Firmware) -> None:
    board, elf = firmware(name)
    result = run_image(board, elf, b"\x00\x01\x02", count_instructions=False)
    assert result.exit_code == HARNESS_SHORT_EXIT
    assert result.diagnosis == "mrt.in is shorter than the model's inputs"


def test_markers_and_command(firmware) -> None:  # type: ignore[no-untyped-def]
    board, elf = firmware("cortex-m4")
    begin, end = bench_markers(elf)
    assert begin % 2 == 0 and end % 2 == 0 and begin != end  # Thumb bit cleared
    cmd = qemu_command(board, elf)
    assert cmd[1:3] == ["-M", "mps2-an386"] and cmd[-2:] == ["-kernel", str(elf)]


def test_plugin_build_is_cached() -> None:
    first = build_plugin()
    assert first.is_file() and first.suffix == ".so"
    assert build_plugin() == first


def test_unreadable_images_are_emu_errors(tmp_path: Path, firmware: Firmware) -> None:
    """A garbage or truncated ELF, or one QEMU user mode cannot execute, is an EmuError
    naming the file (not an ELFError traceback, not the image's 'argument error')."""
    board, elf = firmware("x86-64")
    garbage = tmp_path / "garbage.elf"
    garbage.write_text("garbage")
    with pytest.raises(EmuError, match="garbage.elf: not a valid ELF file"):
        bench_markers(garbage)
    truncated = tmp_path / "truncated.elf"
    truncated.write_bytes(elf.read_bytes()[:200])
    truncated.chmod(0o755)
    with pytest.raises(EmuError, match="truncated.elf: not a valid ELF file"):
        run_image(board, truncated, pack_input(MODE_RUN, 1))
    copy = tmp_path / "copy.elf"
    copy.write_bytes(elf.read_bytes())  # without the executable bit
    with pytest.raises(EmuError, match="copy.elf: not executable"):
        run_image(board, copy, pack_input(MODE_RUN, 1), count_instructions=False)


def test_cycles_off_keeps_the_count(firmware: Firmware) -> None:
    """cycles=False (the stack-measuring run's) drops only the cycle estimate: the
    instruction count and the outputs are the counted run's."""
    board, elf = firmware("cortex-m4")
    counted = run_image(board, elf, pack_input(MODE_RUN, 10))
    bare = run_image(board, elf, pack_input(MODE_RUN, 10), cycles=False)
    assert counted.cycles is not None and bare.cycles is None
    assert bare.instructions == counted.instructions
    assert bare.outputs == counted.outputs == expected_output(MODE_RUN, 10)
