"""The host side of the device harness's serial protocol (docs/device.md;
runtime_c/harness/device/mrt_device.c is the device side).

Every frame, both ways: ``M`` ``R``, a type byte, the payload length (u32 little endian),
the payload, and CRC-32/IEEE (zlib.crc32, u32 LE) of type, length and payload. The host
sends ``P`` (ping) or ``I`` (the inputs); the device answers ``H`` (its input and output
byte counts), ``O`` (status, cycles, outputs), ``E`` (a frame it refused) or, after a CPU
fault, ``F`` (the fault record, then it stops).

The port is opened with pyserial's ``serial_for_url``: a device path (``/dev/ttyACM0``,
``COM3``, a QEMU pty) or a URL such as ``socket://host:port``.
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from toolchain.emu.diagnose import STATUS, decode_fault
from toolchain.emu.run import EmuError, EmuTimeout

__all__ = [
    "DEFAULT_BAUD",
    "DeviceFault",
    "DeviceLink",
    "DeviceReply",
    "FrameError",
    "FrameReader",
    "PortError",
    "describe_status",
    "encode_frame",
]

SYNC = b"MR"
PING, INPUTS = b"P", b"I"
HELLO, OUTPUTS, ERROR, FAULT = b"H", b"O", b"E", b"F"
DEFAULT_BAUD = 115200
# Seconds between two pings while waiting for a device to answer (DeviceLink.hello).
PING_INTERVAL = 0.5
# The device's 'E' codes (MRT_DEVICE_ERR_* in mrt_device.c).
FRAME_ERRORS = {1: "the frame's CRC did not match (bytes lost or changed on the line)",
                2: "the frame's length is not the model's input bytes",
                3: "a frame type the device does not serve"}
# No answer can be longer than this: the largest I/O a module format holds (30-bit
# offsets), plus status and cycles. A longer length is a corrupted header.
MAX_PAYLOAD = (1 << 30) + 12


class FrameError(EmuError):
    """A frame from the device that cannot be read: bad CRC, impossible length, unknown
    type, or an error the device itself reported about the host's frame."""


class PortError(EmuError):
    """The serial port does not open (a wrong name, no such device, no permission)."""


class DeviceFault(EmuError):
    """The device took a CPU fault (its fault record, decoded, is the message)."""


def encode_frame(kind: bytes, payload: bytes = b"") -> bytes:
    """One frame of type ``kind`` (one byte) carrying ``payload``."""
    body = kind + struct.pack("<I", len(payload)) + payload
    return SYNC + body + struct.pack("<I", zlib.crc32(body))


class FrameReader:
    """Reads frames from ``read(n)`` (returns up to n bytes; fewer only when its own
    timeout passed). Bytes before a frame's sync are skipped (a board's boot noise);
    ``timeout`` bounds the wait for one whole frame."""

    def __init__(self, read: Callable[[int], bytes], timeout: float, where: str) -> None:
        self._read = read
        self.timeout = timeout
        self.where = where

    def _exactly(self, n: int, deadline: float, timeout: float) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self._read(n - len(data))
            data += chunk
            if len(data) < n and time.monotonic() > deadline:
                got = f" (a frame stopped after {len(data)} of {n} bytes)" if data else ""
                raise EmuTimeout(f"{self.where}: no answer within {timeout:g} s{got}: is "
                                 "the board flashed with this build's device image "
                                 "(minirt-build --harness device), running, and on this "
                                 "port at its baud rate?")
        return data

    def read(self, timeout: float | None = None) -> tuple[bytes, bytes]:
        """The next frame's (type, payload), within `timeout` seconds (default: the
        reader's). FrameError when it is malformed."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        previous = b""
        while True:  # the sync hunt
            byte = self._exactly(1, deadline, timeout)
            if previous + byte == SYNC:
                break
            previous = byte
        head = self._exactly(5, deadline, timeout)
        kind, (length,) = head[:1], struct.unpack("<I", head[1:])
        if kind not in (HELLO, OUTPUTS, ERROR, FAULT):
            raise FrameError(f"{self.where}: a frame of unknown type {kind!r} (not a minirt "
                             "device image, or the line is garbled)")
        if length > MAX_PAYLOAD:
            raise FrameError(f"{self.where}: a frame announcing {length} bytes (a garbled "
                             "header)")
        payload = self._exactly(length, deadline, timeout)
        (crc,) = struct.unpack("<I", self._exactly(4, deadline, timeout))
        if crc != zlib.crc32(head + payload):
            raise FrameError(f"{self.where}: a {kind.decode()} frame with a bad CRC (bytes "
                             "lost or changed on the line: check the baud rate and the "
                             "cable)")
        return kind, payload


@dataclass(frozen=True)
class DeviceReply:
    """One inference on the device: its mrt_status_t, the cycles the core counted (DWT,
    SysTick or mcycle) and the outputs' bytes (empty unless the status is 0)."""

    status: int
    cycles: int
    outputs: bytes


class DeviceLink:
    """A serial connection to a board running the device image."""

    def __init__(self, port: str, *, baud: int = DEFAULT_BAUD, timeout: float = 10.0) -> None:
        import serial  # pyserial: only when a device is used

        self.port = port
        try:
            self._serial = serial.serial_for_url(port, baudrate=baud, timeout=0.1)
        except (serial.SerialException, ValueError, OSError) as e:
            raise PortError(f"--device {port}: cannot open the serial port: {e}") from None
        # What pyserial lets through when the far end goes: its own error, OSError, and
        # on POSIX termios.error from the flush of a hung-up tty.
        errors: tuple[type[BaseException], ...] = (serial.SerialException, OSError)
        try:
            import termios

            errors += (termios.error,)
        except ImportError:  # Windows
            pass
        self._serial_error = errors
        self._reader = FrameReader(self._read, timeout, f"--device {port}")

    def _read(self, n: int) -> bytes:
        try:
            return self._serial.read(n)
        except self._serial_error as e:  # a USB port unplugged, QEMU gone
            raise EmuError(f"--device {self.port}: the serial port failed: {e}") from None

    def close(self) -> None:
        """Closes the port."""
        self._serial.close()

    def __enter__(self) -> DeviceLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ask(self, kind: bytes, payload: bytes, answer: bytes,
             timeout: float | None = None) -> bytes:
        try:
            self._serial.reset_input_buffer()  # leftovers of an earlier, abandoned exchange
            self._serial.write(encode_frame(kind, payload))
            self._serial.flush()
        except self._serial_error as e:
            raise EmuError(f"--device {self.port}: the serial port failed: {e}") from None
        got, body = self._reader.read(timeout)
        while got == HELLO and answer != HELLO:  # a late answer to a repeated ping
            got, body = self._reader.read(timeout)
        if got == FAULT:
            raise DeviceFault(f"--device {self.port}: the device took a CPU fault: "
                              f"{decode_fault(body)} (reset the board)")
        if got == ERROR:
            code = struct.unpack("<I", body[:4])[0] if len(body) >= 4 else -1
            raise FrameError(f"--device {self.port}: the device refused the frame: "
                             f"{FRAME_ERRORS.get(code, f'error {code}')}")
        if got != answer:
            raise FrameError(f"--device {self.port}: expected a {answer.decode()} frame, got "
                             f"{got.decode()}")
        return body

    def hello(self) -> tuple[int, int]:
        """(input bytes, output bytes) of the model the device image holds. The ping is
        repeated every PING_INTERVAL seconds until the device answers or the timeout
        passes: a board may still be booting, a USB serial port enumerating, and QEMU
        drops what its UART sends until it notices that a pty has been opened (it looks
        once a second)."""
        deadline = time.monotonic() + self._reader.timeout
        while True:
            try:
                body = self._ask(PING, b"", HELLO, PING_INTERVAL)
                break
            except EmuTimeout:
                if time.monotonic() + PING_INTERVAL > deadline:
                    raise EmuTimeout(f"--device {self.port}: no answer to "
                                     f"{self._reader.timeout:g} s of pings: is the board "
                                     "flashed with this build's device image (minirt-build "
                                     "--harness device), running, and on this port at its "
                                     "baud rate?") from None
        if len(body) != 8:
            raise FrameError(f"--device {self.port}: a hello frame of {len(body)} bytes, not 8")
        return struct.unpack("<2I", body)

    def infer(self, inputs: bytes) -> DeviceReply:
        """Runs one inference on ``inputs`` (every input's bytes, in signature order)."""
        body = self._ask(INPUTS, inputs, OUTPUTS)
        if len(body) < 12:
            raise FrameError(f"--device {self.port}: an output frame of {len(body)} bytes, "
                             "shorter than its status and cycles")
        status, cycles = struct.unpack("<IQ", body[:12])
        return DeviceReply(status, cycles, body[12:])


def describe_status(status: int) -> str:
    """The words for a device's non-zero mrt_status_t."""
    return STATUS.get(status, f"status {status}")
