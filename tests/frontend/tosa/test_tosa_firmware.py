"""Every TOSA op case (tosa_cases.py) compiled into one image per board and run under
QEMU: `minirt-run --check` compares the firmware with the numpy reference (integers
exactly, floats like numpy.isclose(rtol=1e-5, atol=1e-6)), and each output is compared
with the specification's value as in test_tosa_ops.py.

One program holds all cases (about 100 ops' worth, control flow included: 13 to 16 s
to build and run per board on a loaded 2-core machine), so each board costs one build.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from tosa_cases import CASES
from tosa_programs import assert_output, expected_of, inputs_of, program

from toolchain.cli import run as run_cli

BOARDS = ["cortex-m4", "x86-64"]
BOARD_CASES = [c for c in CASES if c.boards]


@pytest.fixture(scope="module", params=BOARDS)
def firmware_outputs(request, tmp_path_factory) -> tuple[str, list[np.ndarray], str]:
    board = request.param
    work: Path = tmp_path_factory.mktemp(f"tosa-{board}")
    (work / "ops.mlir").write_text(program(BOARD_CASES))
    np.savez(work / "in.npz", **{f"input_{i}": v for i, v in
                                 enumerate(inputs_of(BOARD_CASES))})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli.main([str(work / "ops.mlir"), "--board", board, "--check",
                           "--inputs", str(work / "in.npz"), "-o", str(work / "fw"),
                           "--save-outputs", str(work / "out.npz")])
    assert rc == 0, err.getvalue()[-3000:]
    with np.load(work / "out.npz") as data:
        outputs = [data[f"output_{i}"] for i in range(len(data.files))]
    return board, outputs, out.getvalue()


def test_firmware_matches_the_reference(firmware_outputs) -> None:
    _, _, log = firmware_outputs
    assert "check: outputs match the reference" in log


def test_firmware_matches_the_specification(firmware_outputs) -> None:
    board, outputs, _ = firmware_outputs
    wanted = expected_of(BOARD_CASES)
    assert len(outputs) == len(wanted)
    for i, (got, (case, want)) in enumerate(zip(outputs, wanted)):
        assert_output(case, got, want, f" on {board} (output {i})")


# RESCALE, MUL's shift and integer AVG_POOL2D compute in 64-bit integers. The boards
# above and the example models cover x86-64, aarch64, riscv32 and cortex-m4; these are
# the other ways a board gets i64 multiply and shift: Armv6-M (libgcc's __aeabi_lmul,
# no long multiply instruction), Armv7-M without DSP and FPU, rv32imac.
I64_BOARDS = ["cortex-m0plus", "cortex-m3", "riscv32-nofpu"]
I64_CASES = [c for c in CASES if c.name.startswith(("rescale", "i32 mul shift",
                                                     "i8 avg_pool2d"))]


@pytest.mark.parametrize("board", I64_BOARDS)
def test_64_bit_integer_ops_on_every_kind_of_board(board: str, tmp_path: Path) -> None:
    assert len(I64_CASES) >= 15
    (tmp_path / "ops.mlir").write_text(program(I64_CASES))
    np.savez(tmp_path / "in.npz", **{f"input_{i}": v for i, v in
                                     enumerate(inputs_of(I64_CASES))})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli.main([str(tmp_path / "ops.mlir"), "--board", board, "--check",
                           "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "fw"),
                           "--save-outputs", str(tmp_path / "out.npz")])
    assert rc == 0, err.getvalue()[-3000:]
    assert "check: outputs match the reference" in out.getvalue()
    with np.load(tmp_path / "out.npz") as data:
        for i, (case, want) in enumerate(expected_of(I64_CASES)):
            assert_output(case, data[f"output_{i}"], want, f" on {board}")
