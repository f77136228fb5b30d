"""The host side of the device protocol (toolchain/emu/device_link.py): frames, the
sync hunt, and each way a frame or an answer can be wrong, against a scripted device on
a pseudo-terminal (no QEMU: tests/cli/test_device_cli.py runs the real images)."""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections.abc import Iterator

import pytest

pytest.importorskip("serial", reason="pyserial is not installed (pip install pyserial)")

from toolchain.emu.device_link import (  # noqa: E402
    DeviceFault,
    DeviceLink,
    FrameError,
    FrameReader,
    PortError,
    encode_frame,
)
from toolchain.emu.run import EmuError, EmuTimeout  # noqa: E402


def test_frame_layout() -> None:
    frame = encode_frame(b"I", b"\x01\x02\x03")
    assert frame[:2] == b"MR"
    assert frame[2:3] == b"I"
    assert struct.unpack("<I", frame[3:7]) == (3,)
    assert frame[7:10] == b"\x01\x02\x03"
    assert struct.unpack("<I", frame[10:]) == (zlib.crc32(frame[2:10]),)


def _reader(data: bytes, timeout: float = 0.3) -> FrameReader:
    stream = iter([data])
    buffer = bytearray()

    def read(n: int) -> bytes:
        if not buffer:
            buffer.extend(next(stream, b""))
        chunk = bytes(buffer[:n])
        del buffer[:n]
        return chunk

    return FrameReader(read, timeout, "test")


def test_noise_before_the_sync_is_skipped() -> None:
    data = b"boot\x00MMZ" + encode_frame(b"O", b"x" * 12)
    assert _reader(data).read() == (b"O", b"x" * 12)


def test_bad_crc_is_a_frame_error() -> None:
    frame = bytearray(encode_frame(b"O", b"x" * 12))
    frame[9] ^= 0x40
    with pytest.raises(FrameError, match="bad CRC"):
        _reader(bytes(frame)).read()


def test_unknown_type_is_a_frame_error() -> None:
    with pytest.raises(FrameError, match="unknown type b'Z'"):
        _reader(encode_frame(b"Z", b"")).read()


def test_impossible_length_is_a_frame_error() -> None:
    head = b"MRO" + struct.pack("<I", 0xFFFFFFF0)
    with pytest.raises(FrameError, match="garbled header"):
        _reader(head).read()


def test_truncated_frame_times_out() -> None:
    with pytest.raises(EmuTimeout, match=r"no answer within 0.3 s \(a frame stopped after 3 "
                                         r"of 12 bytes\)"):
        _reader(encode_frame(b"O", b"x" * 12)[:10]).read()


@pytest.fixture
def device() -> Iterator[tuple[str, list[bytes]]]:
    """A pty whose far end answers each frame the host sends with the next scripted
    bytes; yields its path and the script (filled by the test)."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    script: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if data and script:
                os.write(master, script.pop(0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, script
    stop.set()
    os.close(slave)
    os.close(master)
    thread.join(2)


def test_hello_and_inference(device) -> None:  # type: ignore[no-untyped-def]
    path, script = device
    script += [encode_frame(b"H", struct.pack("<2I", 4, 8)),
               encode_frame(b"O", struct.pack("<IQ", 0, 1234) + b"outputs!")]
    with DeviceLink(path, timeout=5) as link:
        assert link.hello() == (4, 8)
        reply = link.infer(b"\x00" * 4)
    assert (reply.status, reply.cycles, reply.outputs) == (0, 1234, b"outputs!")


@pytest.mark.parametrize(("answer", "error", "match"), [
    (encode_frame(b"E", struct.pack("<I", 1)), FrameError, "refused the frame: the frame's CRC"),
    (encode_frame(b"E", struct.pack("<I", 2)), FrameError, "length is not the model's input"),
    (encode_frame(b"F", struct.pack("<6I", 1, 0x1234, 0x5678, 3, 0, 0x40000000)), DeviceFault,
     "CPU fault: HardFault pc=0x00001234"),
    (encode_frame(b"O", b"\x00" * 4), FrameError, "shorter than its status and cycles"),
])
def test_bad_answers(device, answer: bytes, error: type, match: str) -> None:  # type: ignore[no-untyped-def]
    path, script = device
    script.append(answer)
    with DeviceLink(path, timeout=5) as link, pytest.raises(error, match=match):
        link.infer(b"\x00" * 4)


def test_wrong_answer_to_a_ping(device) -> None:  # type: ignore[no-untyped-def]
    path, script = device
    script.append(encode_frame(b"O", struct.pack("<IQ", 0, 1)))
    with DeviceLink(path, timeout=5) as link, pytest.raises(FrameError, match="expected a H "
                                                                          "frame, got O"):
        link.hello()


def test_late_hello_is_skipped(device) -> None:  # type: ignore[no-untyped-def]
    """A repeated ping's answer that arrives after the inference request is not taken for
    the inference's answer."""
    path, script = device
    script.append(encode_frame(b"H", struct.pack("<2I", 4, 8))
                  + encode_frame(b"O", struct.pack("<IQ", 0, 7) + b"out"))
    with DeviceLink(path, timeout=5) as link:
        assert link.infer(b"\x00" * 4).outputs == b"out"


def test_silent_device_times_out(device) -> None:  # type: ignore[no-untyped-def]
    path, _ = device
    with DeviceLink(path, timeout=1.2) as link, pytest.raises(EmuTimeout, match="no answer to "
                                                                             "1.2 s of pings"):
        link.hello()
    with DeviceLink(path, timeout=0.5) as link, pytest.raises(EmuTimeout, match="no answer "
                                                                             "within 0.5 s"):
        link.infer(b"\x00" * 4)


def test_missing_port() -> None:
    with pytest.raises(PortError, match="--device /dev/no-such-port: cannot open the serial "
                                        "port"):
        DeviceLink("/dev/no-such-port")


def test_port_that_goes_away() -> None:
    """The far end closing (a board unplugged, QEMU gone) is an EmuError, not pyserial's."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    with DeviceLink(path, timeout=5) as link:
        os.close(master)
        with pytest.raises(EmuError, match="the serial port failed"):
            link.hello()
    os.close(slave)
