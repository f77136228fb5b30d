"""minirt-run --device end to end under QEMU: the device image of each real board runs
with its UART wired to a pseudo-terminal (emu/device_qemu.py), and minirt-run --device
<pty> gives the outputs the semihosting image gives under QEMU, with a cycle count.

QEMU models the UARTs of netduinoplus2 (USART6), hifive1 (UART0) and the RISC-V virt
boards (NS16550A), whose images run unchanged; the other four real Arm boards run the copy
built for their MPS2 sibling's UART0 (verify/), the ESP32 boards the copy built for their
virt sibling's NS16550A.
minirt-run --device cannot tell a pty from a board, so it prints "counted on the
device"; the cycles are those of QEMU's -icount clock (docs/device.md), asserted here to
be more than zero, and on hifive1, where mcycle then counts instructions, close to the
semihosting image's instruction count.
"""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("serial", reason="pyserial is not installed (pip install pyserial)")

from toolchain.cli import build as build_cli  # noqa: E402
from toolchain.cli import run as run_cli  # noqa: E402
from toolchain.emu.device_link import DeviceLink, FrameReader, encode_frame  # noqa: E402
from toolchain.emu.device_qemu import qemu_serving  # noqa: E402
from toolchain.target import load_board  # noqa: E402

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed.mlir"
REAL = ("netduinoplus2", "hifive1", "nrf52840dk", "nucleo-l4r5zi", "stm32f746g-disco",
        "feather-m4-express")
CYCLES_RE = re.compile(r"^cycles: ([\d,]+) \(one inference, counted on the device, "
                       r"[\d.]+ ms at [\d.]+ MHz\)$", re.M)
# Beside it, the estimate of the semihosting twin under QEMU (docs/cycles.md).
ESTIMATE_RE = re.compile(r"^estimated cycles: (?:[\d,]+ on \S+|n/a) .*semihosting image", re.M)


def _need_qemu(board_name: str) -> None:
    qemu = load_board(board_name).simulation.qemu
    missing = [t for t in ("clang", "ld.lld", qemu) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


def _device_vs_semihost(model: Path, board: str, tmp_path: Path, capsys,  # type: ignore[no-untyped-def]
                        extra: tuple[str, ...] = ()) -> tuple[int, int]:
    """Builds both images, runs both, asserts the same outputs; returns the device's
    cycles and the semihosting image's instructions."""
    _need_qemu(board)
    dev_dir, host_dir = tmp_path / "device", tmp_path / "semihost"
    assert build_cli.main([str(model), "--board", board, "--harness", "device",
                           "-o", str(dev_dir), *extra]) == 0
    capsys.readouterr()
    with qemu_serving(load_board(board), dev_dir / "firmware.elf") as pty:
        rc = run_cli.main([str(model), "--board", board, "--device", pty, "-o", str(dev_dir),
                           "--check", "--save-outputs", str(tmp_path / "dev.npz"), *extra])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert f"in {dev_dir}" not in err  # minirt-build's device image is what ran
    assert "check: outputs match the reference" in out
    match = CYCLES_RE.search(out)
    assert match, out
    assert ESTIMATE_RE.search(out), out
    assert run_cli.main([str(model), "--board", board, "-o", str(host_dir),
                         "--save-outputs", str(tmp_path / "host.npz"), *extra]) == 0
    instructions = re.search(r"^instructions: (\d+)", capsys.readouterr().out, re.M)
    assert instructions
    with np.load(tmp_path / "dev.npz") as dev, np.load(tmp_path / "host.npz") as host:
        assert sorted(dev.files) == sorted(host.files)
        for key in dev.files:
            np.testing.assert_array_equal(dev[key], host[key])  # the same code, bit for bit
    return int(match.group(1).replace(",", "")), int(instructions.group(1))


@pytest.mark.parametrize("board", REAL)
def test_seed_over_the_uart(board: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    cycles, instructions = _device_vs_semihost(SEED, board, tmp_path, capsys)
    assert cycles > 0
    if board == "hifive1":  # mcycle under -icount: the inference plus the two marker calls
        assert instructions <= cycles <= instructions + 64


# The RISC-V virt boards run their own device images (QEMU's NS16550A); the ESP32 boards
# run the copy built for their virt sibling's NS16550A (verify/).
RISCV_VIRT = ("riscv32", "riscv32-nofpu", "riscv32imc", "esp32c3-devkitm-1",
              "esp32c6-devkitc-1")


@pytest.mark.parametrize("board", RISCV_VIRT)
def test_seed_over_the_ns16550(board: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    cycles, instructions = _device_vs_semihost(SEED, board, tmp_path, capsys)
    # mcycle under -icount counts instructions: the inference and the two marker calls.
    assert 0 < instructions <= cycles <= instructions + 64


def test_kws_over_the_uart_on_esp32(models_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    model = models_dir / "mlperf_tiny" / "kws_ref_model.tflite"
    if not model.is_file():
        pytest.skip(f"{model} is absent")
    cycles, instructions = _device_vs_semihost(model, "esp32c3-devkitm-1", tmp_path, capsys)
    assert 0 < instructions <= cycles <= instructions + 64


@pytest.mark.parametrize("board", ["netduinoplus2", "nucleo-l4r5zi"])
def test_kws_over_the_uart(board: str, models_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    model = models_dir / "mlperf_tiny" / "kws_ref_model.tflite"
    if not model.is_file():
        pytest.skip(f"{model} is absent")
    cycles, _ = _device_vs_semihost(model, board, tmp_path, capsys)
    assert cycles > 0


def test_device_refuses_bad_frames_and_keeps_serving(tmp_path: Path) -> None:
    """The device side of the error paths: a corrupted frame and a frame of the wrong
    length are answered with 'E' frames, and the next good request still runs."""
    import serial

    _need_qemu("netduinoplus2")
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", "netduinoplus2", "--harness", "device",
                           "-o", str(out)]) == 0
    with qemu_serving(load_board("netduinoplus2"), out / "firmware.elf") as pty:
        with DeviceLink(pty, timeout=10) as link:
            inputs, outputs = link.hello()
        port = serial.serial_for_url(pty, timeout=0.1)
        try:
            reader = FrameReader(port.read, 10, "test")
            bad = bytearray(encode_frame(b"I", bytes(inputs)))
            bad[20] ^= 1
            port.write(bytes(bad))
            assert reader.read() == (b"E", struct.pack("<I", 1))
            port.write(encode_frame(b"I", bytes(inputs - 1)))
            assert reader.read() == (b"E", struct.pack("<I", 2))
            port.write(encode_frame(b"Q"))
            assert reader.read() == (b"E", struct.pack("<I", 3))
        finally:
            port.close()
        with DeviceLink(pty, timeout=10) as link:
            for _ in range(2):  # inference after inference
                reply = link.infer(bytes(inputs))
                assert reply.status == 0 and len(reply.outputs) == outputs


def test_device_harness_refused_without_uart(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rc = build_cli.main([str(SEED), "--board", "cortex-m0plus", "--harness", "device",
                         "-o", str(tmp_path / "fw")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == ("minirt-build: error: --harness device: board cortex-m0plus cannot "
                           "serve inferences over a UART (cortex-m0plus.yaml has no 'uart:' "
                           "block)")
    assert not (tmp_path / "fw").exists()


def test_device_and_semihost_harness_conflict(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rc = run_cli.main([str(SEED), "--board", "cortex-m4", "--harness", "semihost",
                       "--device", "/dev/null", "-o", str(tmp_path / "fw")])
    assert rc == 2
    assert "--device talks to the device image; --harness semihost" in capsys.readouterr().err


def test_systick_wraps_are_counted(models_dir: Path, tmp_path: Path) -> None:
    """On Cortex-M under QEMU the device image counts with SysTick (QEMU has no DWT),
    whose 24 bits wrap every 2^24 counts. With 256 ns of QEMU time per instruction
    instead of 1, netduinoplus2's 168 MHz SysTick counts 43 per instruction, and
    kws_ref_model's inference (3.3 M instructions, 0.56 M counts at 1 ns) wraps it 8
    times: the count must still scale by 256 (within 0.5 %: the instructions between
    the counter reads and SysTick's own rounding), which it cannot do mod 2^24."""
    model = models_dir / "mlperf_tiny" / "kws_ref_model.tflite"
    if not model.is_file():
        pytest.skip(f"{model} is absent")
    _need_qemu("netduinoplus2")
    out = tmp_path / "fw"
    assert build_cli.main([str(model), "--board", "netduinoplus2", "--harness", "device",
                           "-o", str(out)]) == 0
    board = load_board("netduinoplus2")
    counts = []
    for shift in (0, 8):
        with (qemu_serving(board, out / "firmware.elf", icount_shift=shift) as pty,
              DeviceLink(pty, timeout=120) as link):
            inputs, _ = link.hello()
            reply = link.infer(bytes(inputs))
        assert reply.status == 0
        counts.append(reply.cycles)
    assert counts[1] > 1 << 24
    assert abs(counts[1] / (256 * counts[0]) - 1) < 0.005, counts


@pytest.mark.parametrize("board", ["hifive1", "nucleo-l4r5zi"])
def test_flash_to_qemu_talks_to_the_device_image(board: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """minirt-flash --method qemu of a device build boots it with its UART on a pty and
    runs one inference over it, rather than waiting for a semihosting exit that never
    comes (nucleo-l4r5zi: the copy relinked for its sibling, with the sibling's UART)."""
    from toolchain.cli import flash as flash_cli

    _need_qemu(board)
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", board, "--harness", "device",
                           "-o", str(out)]) == 0
    capsys.readouterr()
    assert flash_cli.main(["--board", board, "--method", "qemu", str(out)]) == 0
    stdout, err = capsys.readouterr()
    assert "device: status 0" in stdout
    assert "answered over its UART" in err


def test_cycle_budget_on_the_device(models_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A device image built with --max-cycles answers status 9 when the budget stops the
    inference, and minirt-run reports it as over budget (exit 3) as under QEMU. The walk
    and the harness take marks on the same free-running SysTick."""
    model = models_dir / "mlperf_tiny" / "kws_ref_model.tflite"
    if not model.is_file():
        pytest.skip(f"{model} is absent")
    _need_qemu("netduinoplus2")
    rc = run_cli.main([str(model), "--board", "netduinoplus2", "--harness", "device",
                       "--max-cycles", "1000", "-o", str(tmp_path / "fw")])
    assert rc == 3
    assert ("minirt-run: error: inference stopped: over the cycle budget of 1000 cycles "
            "(status 9)") in capsys.readouterr().err


def test_without_device_the_image_runs_under_qemu(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _need_qemu("hifive1")
    rc = run_cli.main([str(SEED), "--board", "hifive1", "--harness", "device", "--check",
                       "-o", str(tmp_path / "fw")])
    out = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"^cycles: \d+ \(one inference, counted under QEMU, 1 ns per "
                     r"instruction: not the board's cycles", out, re.M), out
    assert "check: outputs match the reference" in out


def test_a_device_holding_another_model_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The hello's sizes are compared with the build's before any inference."""
    _need_qemu("netduinoplus2")
    other = tmp_path / "other.mlir"
    other.write_text("func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
                     "  %y = stablehlo.add %x, %x : tensor<3xf32>\n"
                     "  return %y : tensor<3xf32>\n}\n")
    seed_dir = tmp_path / "seed"
    assert build_cli.main([str(SEED), "--board", "netduinoplus2", "--harness", "device",
                           "-o", str(seed_dir)]) == 0
    capsys.readouterr()
    with qemu_serving(load_board("netduinoplus2"), seed_dir / "firmware.elf") as pty:
        rc = run_cli.main([str(other), "--board", "netduinoplus2", "--device", pty,
                           "-o", str(tmp_path / "other")])
    err = capsys.readouterr().err
    assert rc == 1
    assert (f"minirt-run: error: the device on {pty} holds another model (192 input and 64 "
            "output bytes, this build 12 and 12)") in err
