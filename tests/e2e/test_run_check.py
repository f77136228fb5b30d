"""`minirt-run --board B --check` on seed.mlir and every JAX model, on every board.

This is issue 3's acceptance matrix: each model is built, run under QEMU and compared
with the numpy reference (floats like numpy.isclose(rtol=1e-5, atol=1e-6), see
toolchain/cli/run.py for why).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain import pipeline
from toolchain.cli import run as run_cli
from toolchain.reference.state import StateRunner

REPO = Path(__file__).resolve().parents[2]
BOARDS = ["x86-64", "aarch64", "riscv32", "cortex-m4"]
JAX = ["mlp", "cnn", "dscnn_kws", "resnet8", "autoencoder"]


def _check(model: Path, board: str, tmp_path: Path, capsys, *extra: str) -> str:
    rc = run_cli.main([str(model), "--board", board, "--check", "-o", str(tmp_path / "fw"),
                       *extra])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "check: outputs match the reference" in out
    assert "instructions: " in out
    return out


@pytest.mark.parametrize("board", BOARDS)
def test_seed(board: str, tmp_path: Path, capsys) -> None:
    _check(REPO / "examples" / "seed.mlir", board, tmp_path, capsys)


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", JAX)
def test_jax_models(name: str, board: str, tmp_path: Path, capsys) -> None:
    jax = MODELS_DIR / "jax"
    _check(jax / f"{name}.mlir", board, tmp_path, capsys, "--inputs", str(jax / f"{name}.npz"))


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("mode", ["fp16", "int8-weights", "int4-weights"])
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", JAX)
def test_jax_models_quantized(name: str, board: str, mode: str, tmp_path: Path,
                              capsys) -> None:
    jax = MODELS_DIR / "jax"
    _check(jax / f"{name}.mlir", board, tmp_path, capsys, "--inputs", str(jax / f"{name}.npz"),
           "--quantize", mode)


def test_mismatch_exits_1_and_shows_worst_elements(tmp_path: Path, capsys, monkeypatch) -> None:
    real = StateRunner.step  # the reference minirt-run --check compares with

    def off_by_one(self, inputs):
        outs = real(self, inputs)
        outs[0] = outs[0].copy()
        outs[0][1, 2] += 1.0
        return outs

    monkeypatch.setattr(StateRunner, "step", off_by_one)
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", "x86-64", "--check",
                       "-o", str(tmp_path / "fw")])
    err = capsys.readouterr().err
    assert rc == 1
    assert "1 of 16 elements differ" in err and "[1, 2] got" in err


# A branch to itself, as the bytes that replace an instruction (little-endian).
_BRANCH_TO_SELF = {"EM_ARM": b"\xfe\xe7",  # Thumb: b .
                   "EM_X86_64": b"\xeb\xfe",  # jmp .
                   "EM_AARCH64": b"\x00\x00\x00\x14",  # b .
                   "EM_RISCV": b"\x6f\x00\x00\x00"}  # jal x0, .


def _hanging_copy(elf: Path, out: Path) -> Path:
    """A copy of a firmware whose mrt_bench_begin loops forever on its first instruction:
    start-up and input reading run as usual, then the image hangs like a broken kernel."""
    from elftools.elf.elffile import ELFFile

    from toolchain.emu import bench_markers

    begin, _ = bench_markers(elf)
    data = bytearray(elf.read_bytes())
    with elf.open("rb") as f:
        e = ELFFile(f)
        loop = _BRANCH_TO_SELF[e["e_machine"]]
        text = next(s for s in e.iter_sections()
                    if s["sh_addr"] <= begin < s["sh_addr"] + s["sh_size"] and
                    s["sh_type"] == "SHT_PROGBITS")
        offset = text["sh_offset"] + begin - text["sh_addr"]
    data[offset:offset + len(loop)] = loop
    out.write_bytes(bytes(data))
    out.chmod(elf.stat().st_mode)  # QEMU user mode runs only executables
    return out


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_hang_is_a_timeout(board: str, tmp_path: Path, capsys, monkeypatch) -> None:
    """A firmware that really loops forever (the old test's --timeout 0.001 only ever
    timed out QEMU's start-up): exit 124 with the timeout message."""
    seed = str(REPO / "examples" / "seed.mlir")
    argv = [seed, "--board", board, "-o", str(tmp_path / "fw"), "--timeout", "3"]
    assert run_cli.main(argv) == 0  # the unpatched image finishes well within 3 s
    capsys.readouterr()
    # minirt-run's QEMU run is pipeline.run_firmware's (shared with the Python API).
    real = pipeline.run_image
    monkeypatch.setattr(pipeline, "run_image", lambda board_, elf, *args, **kwargs: real(
        board_, _hanging_copy(Path(elf), tmp_path / "hang.elf"), *args, **kwargs))
    start = time.monotonic()
    rc = run_cli.main(argv)
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert rc == 124, err
    assert (f"minirt-run: error: timeout: board {board}: hang.elf did not finish within 3 s "
            "(hang?)") in err
    assert 3 <= elapsed < 30


def test_unknown_board_is_a_usage_error(capsys) -> None:
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", "pdp-11"])
    err = capsys.readouterr().err
    assert rc == 2 and "pdp-11" in err and "Traceback" not in err


def test_save_outputs_from_board(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.npz"
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", "riscv32",
                       "-o", str(tmp_path / "fw"), "--save-outputs", str(out)])
    assert rc == 0
    assert np.load(out)["output_0"].shape == (4, 4)
