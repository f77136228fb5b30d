"""Every TOSA op case (tosa_cases.py) compiled into one image per board and run under
QEMU: `minirt-run --check` compares the firmware with the numpy reference (integers
exactly, floats like numpy.isclose(rtol=1e-5, atol=1e-6)), and each output is compared
with the specification's value as in test_tosa_ops.py.

One program holds all cases (about 90 ops' worth, some 9 s to build and run on x86-64
and 7 s on cortex-m4), so each board costs one build.
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
