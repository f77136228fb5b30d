"""Control flow under QEMU: loops and branches (while, if, case, nested, and functions
of several blocks with cf.br / cf.cond_br) built for
cortex-m4, riscv32, aarch64 and x86-64 and checked against the reference with
`minirt-run --check` on inputs that take every branch and run loops zero, one and
several times; a loop that never ends is stopped by --timeout (exit 124), on the
reference too, or, built with --max-cycles, by the runtime itself (exit 3).

The programs (tests/e2e/data/control_flow) are in generic form for the ops with regions.
Each board builds a program once; the other inputs rerun the same firmware.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

DATA = Path(__file__).resolve().parent / "data" / "control_flow"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]
X = np.array([1.5, -2.0, 3.25, 4.0], np.float32)


def run(model: Path, board: str, out: Path, inputs: dict, capsys, *extra: str) -> tuple[int, str]:
    np.savez(out / "in.npz", **inputs)
    rc = run_cli.main([str(model), "--board", board, "-o", str(out / "fw"), "--inputs",
                       str(out / "in.npz"), *extra])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


@pytest.mark.parametrize("board", BOARDS)
def test_loops(board: str, tmp_path: Path, capsys) -> None:
    for n in (0, 1, 4):
        rc, text = run(DATA / "loops.mlir", board, tmp_path,
                       {"input_0": X, "input_1": np.int32(n)}, capsys, "--check")
        assert rc == 0, text
        assert "check: outputs match the reference" in text


@pytest.mark.parametrize("board", BOARDS)
def test_branches(board: str, tmp_path: Path, capsys) -> None:
    # Every branch of the if and the case (3 and -1 are out of range: the last branch),
    # and the loop with an if inside running 0, 2 and 3 times.
    for p, k in ((True, 0), (False, 1), (True, 2), (False, 3), (True, -1)):
        rc, text = run(DATA / "branches.mlir", board, tmp_path,
                       {"input_0": np.bool_(p), "input_1": np.int32(k), "input_2": X},
                       capsys, "--check")
        assert rc == 0, text
        assert "check: outputs match the reference" in text


@pytest.mark.parametrize("board", BOARDS)
def test_blocks(board: str, tmp_path: Path, capsys) -> None:
    """A function of several blocks joined by cf.br / cf.cond_br."""
    for n in (0, 1, 5):
        rc, text = run(DATA / "blocks.mlir", board, tmp_path,
                       {"input_0": np.int32(n), "input_1": X}, capsys, "--check")
        assert rc == 0, text
        assert "check: outputs match the reference" in text


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_runaway_loop_is_caught_by_the_timeout(board: str, tmp_path: Path, capsys) -> None:
    """The trip count comes from the input: with n = 0 the loop ends at once, with n = 1
    its counter never moves and the firmware spins until --timeout stops it."""
    model = DATA / "runaway.mlir"
    rc, text = run(model, board, tmp_path, {"input_0": X, "input_1": np.int32(0)}, capsys,
                   "--check")
    assert rc == 0, text
    start = time.monotonic()
    rc, text = run(model, board, tmp_path, {"input_0": X, "input_1": np.int32(1)}, capsys,
                   "--check", "--timeout", "2")
    assert rc == 124, text
    assert f"timeout: board {board}: firmware.elf did not finish within 2 s" in text
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("limit", ["0.5", "5"])
def test_runaway_loop_on_the_reference_is_caught_by_the_timeout(limit: str, tmp_path: Path,
                                                                capsys) -> None:
    """--timeout bounds the host reference too: the endless while stops with exit 124
    and the same message style as under QEMU, soon after the limit."""
    np.savez(tmp_path / "in.npz", input_0=X, input_1=np.int32(1))
    start = time.monotonic()
    rc = run_cli.main([str(DATA / "runaway.mlir"), "--reference", "--inputs",
                       str(tmp_path / "in.npz"), "--timeout", limit])
    elapsed = time.monotonic() - start
    text = capsys.readouterr().err
    assert rc == 124, text
    assert (f"minirt-run: error: timeout: the reference did not finish within {limit} s"
            in text)
    assert float(limit) <= elapsed < float(limit) + 5


def test_reference_time_limits_nest() -> None:
    """The earlier of two nested limits wins, and leaving a block restores the outer
    one (a --check reference run inside a caller's own limit)."""
    from toolchain.reference import ReferenceTimeout, time_limit
    from toolchain.reference.deadline import check_deadline

    with time_limit(60):
        with time_limit(0.0001):
            time.sleep(0.01)
            with pytest.raises(ReferenceTimeout, match="within 0.0001 s"):
                check_deadline()
        check_deadline()  # the outer minute is far from over
    with time_limit(None):
        check_deadline()


def _has_symbol(elf: Path, name: str) -> bool:
    from elftools.elf.elffile import ELFFile

    with elf.open("rb") as f:
        return bool(ELFFile(f).get_section_by_name(".symtab").get_symbol_by_name(name))


# esp32c3-devkitm-1: the budget counts with Espressif's mpccr on the chip, and its copy
# relinked for the virt sibling (what runs here) with mcycle, from the same objects.
@pytest.mark.parametrize("board", ["cortex-m0plus", "cortex-m4", "cortex-m55", "riscv32",
                                   "hifive1", "esp32c3-devkitm-1", "x86-64"])
def test_runaway_loop_is_stopped_by_the_cycle_budget(board: str, tmp_path: Path,
                                                     capsys) -> None:
    """Built with --max-cycles, the runtime ends the endless loop itself (status 9,
    minirt-run exit 3, well before --timeout), while a loop that ends still runs to the
    reference's outputs. Without the option the image has no budget code at all."""
    model = DATA / "runaway.mlir"
    ends, endless = ({"input_0": X, "input_1": np.int32(n)} for n in (0, 1))
    rc, text = run(model, board, tmp_path, ends, capsys, "--check")
    assert rc == 0, text
    assert not _has_symbol(tmp_path / "fw" / "firmware.elf", "mrt_platform_cycles_since")
    budget = ("--max-cycles", "2000000")
    rc, text = run(model, board, tmp_path, ends, capsys, "--check", *budget)
    assert rc == 0, text
    assert _has_symbol(tmp_path / "fw" / "firmware.elf", "mrt_platform_cycles_since")
    start = time.monotonic()
    rc, text = run(model, board, tmp_path, endless, capsys, *budget, "--timeout", "60")
    assert rc == 3, text
    assert ("minirt-run: error: inference stopped: over the cycle budget of 2000000 cycles "
            "(status 9)") in text
    assert time.monotonic() - start < 30
