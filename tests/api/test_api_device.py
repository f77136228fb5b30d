"""The Python API's device builds (harness="device", docs/device.md): run under QEMU over
a pty, or on a port; refused where the board or the build cannot take them."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("serial", reason="pyserial is not installed (pip install pyserial)")

import minirt  # noqa: E402
from toolchain.emu.device_qemu import qemu_serving  # noqa: E402

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed.mlir"


def _need(qemu: str) -> None:
    missing = [t for t in ("clang", "ld.lld", qemu) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


def test_device_build_runs_and_checks(tmp_path: Path) -> None:
    _need("qemu-system-riscv32")
    build = minirt.build(SEED, "hifive1", harness="device", out_dir=tmp_path / "fw")
    assert build.harness == "device"
    run = build.run(seed=3, check=True)  # under QEMU, its UART on a pty
    assert run.instructions is None and run.cycles and run.cycles > 0
    assert run.reference is not None
    np.testing.assert_array_equal(run.outputs[0], run.reference[0])
    with qemu_serving(build.board, build.elf) as pty:  # the same through a named port
        again = build.run(seed=3, device=pty)
    np.testing.assert_array_equal(again.outputs[0], run.outputs[0])
    with pytest.raises(minirt.InputError, match="this is a device build"):
        build.profile()


def test_device_port_needs_a_device_build(tmp_path: Path) -> None:
    _need("qemu-system-arm")
    build = minirt.build(SEED, "cortex-m4", out_dir=tmp_path / "fw")
    with pytest.raises(minirt.InputError, match="holds the semihosting image; build with "
                                                "harness='device'"):
        build.run(device="/dev/ttyACM0")


@pytest.mark.parametrize(("board", "message"), [
    ("x86-64", "board x86-64 cannot serve inferences over a UART (a hosted board"),
    ("cortex-m55", "board cortex-m55 cannot serve inferences over a UART (cortex-m55.yaml "
                   "has no 'uart:' block)"),
])
def test_device_build_refused(board: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(minirt.InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        minirt.build(SEED, board, harness="device", out_dir=tmp_path / "fw")
    assert not (tmp_path / "fw").exists()


def test_unknown_harness(tmp_path: Path) -> None:
    with pytest.raises(minirt.InputError, match="--harness must be one of semihost, device, "
                                                "got 'uart'"):
        minirt.build(SEED, "cortex-m4", harness="uart", out_dir=tmp_path / "fw")
