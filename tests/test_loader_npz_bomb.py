"""An --inputs archive is checked from its .npy header and zip entry before anything is
decompressed: 2 GiB of zeros compressed to a few MB (a decompression bomb) is refused in
one line by a process that never grows past a small fraction of it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "examples" / "seed.mlir"  # three 4x4 f32 inputs
GIB = 1 << 30
CHUNK = 8 << 20

# Loads the inputs in a fresh process and prints the error and the peak resident size:
# VmHWM, the high-water mark of this process's own memory (getrusage's ru_maxrss survives
# exec, so under xdist it reported the test worker's 900 MiB, not the probe's).
PROBE = """\
import sys
from toolchain.loader import UsageError, load_graph, load_inputs
try:
    load_inputs(sys.argv[2], load_graph(sys.argv[1]))
    print("accepted")
except UsageError as e:
    print(e)
status = open("/proc/self/status").read()
print(int(status.split("VmHWM:")[1].split()[0]) * 1024)
"""


def _header(shape: tuple[int, ...]) -> bytes:
    """A .npy version 1.0 header for float32 ``shape`` (numpy's own writer)."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _bomb(path: Path, shape: tuple[int, ...], zeros: int) -> Path:
    """An npz whose input_0 is a header for ``shape`` then ``zeros`` zero bytes, streamed
    through the compressor in chunks (the test never holds them all); input_1 and
    input_2 are honest."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("input_0.npy", "w", force_zip64=True) as f:
            f.write(_header(shape))
            chunk = bytes(CHUNK)
            for _ in range(zeros // CHUNK):
                f.write(chunk)
        for key in ("input_1", "input_2"):
            with z.open(f"{key}.npy", "w") as f:
                np.lib.format.write_array(f, np.zeros((4, 4), np.float32))
    return path


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    return {
        # The header claims 2 GiB of float32: refused from the header alone.
        "wrong shape": _bomb(folder / "shape.npz", (GIB // 4,), 2 * GIB),
        # The header is honest (4x4 f32) but 2 GiB more follow it in the entry.
        "huge entry": _bomb(folder / "size.npz", (4, 4), 2 * GIB),
    }


def _load(npz: Path) -> tuple[str, int]:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(SEED), str(npz)],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    message, peak = proc.stdout.splitlines()
    return message, int(peak)


@pytest.mark.parametrize(("case", "message"), [
    ("wrong shape", "'input_0' has shape (268435456,), the model expects (4, 4)"),
    ("huge entry", "'input_0': its zip entry declares 2147483776 bytes, its .npy header's "
                   "shape (4, 4) and dtype float32 make 192"),
])
def test_a_decompression_bomb_is_refused_from_its_header(case: str, message: str,
                                                         bombs: dict[str, Path]) -> None:
    npz = bombs[case]
    assert npz.stat().st_size < 16 << 20  # a few MB on disk
    got, peak = _load(npz)
    assert got == f"{npz}: {message}"
    assert peak < 512 << 20, f"peak resident size {peak >> 20} MiB"


def test_honest_inputs_still_load(tmp_path: Path) -> None:
    npz = tmp_path / "ok.npz"
    np.savez(npz, **{f"input_{i}": np.full((4, 4), i, np.float32) for i in range(3)})
    from toolchain.loader import load_graph, load_inputs

    got = load_inputs(npz, load_graph(SEED))
    assert [float(x[0, 0]) for x in got] == [0.0, 1.0, 2.0]


def _header_only(path: Path, shape: tuple[int, ...]) -> Path:
    """An npz whose three members are .npy headers for float32 ``shape`` and no data."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for key in ("input_0", "input_1", "input_2"):
            with z.open(f"{key}.npy", "w") as f:
                f.write(_header(shape))
    return path


@pytest.mark.parametrize(("shape", "message"), [
    ((GIB // 4,), "has shape (268435456,); the model's input has shape (4, 4), so "
                  "calibration samples need (S, 4, 4)"),
    ((1 << 27, 4, 4), "declares shape (134217728, 4, 4) of float32, over 1073741824 bytes"),
])
def test_a_calibration_member_is_checked_from_its_header(shape: tuple[int, ...], message: str,
                                                         tmp_path: Path) -> None:
    """Calibration files hold a leading axis of samples, so their size is not the
    model's: the rest of the shape is checked, and the whole is held to 1 GiB, before a
    byte of data is read (these members have none)."""
    from toolchain.loader import UsageError, load_graph
    from toolchain.passes.calibrate import load_calibration

    npz = _header_only(tmp_path / "calib.npz", shape)
    with pytest.raises(UsageError) as caught:
        load_calibration(npz, load_graph(SEED))
    assert str(caught.value).startswith(f"{npz}: 'input_0' ") and message in str(caught.value)
