"""`minirt-run` on bad input, stale builds and mismatches: every bad input is one line
and exit 2, a build is reused only when nothing it depends on changed, and a mismatch
report never hides a NaN."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from generated_models import elementwise_chain

from toolchain.cli import run

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"
MODEL = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<4xi8>) -> (tensor<2x3xf32>, tensor<4xi8>) {
  %0 = stablehlo.tanh %a : tensor<2x3xf32>
  %1 = stablehlo.add %b, %b : tensor<4xi8>
  return %0, %1 : tensor<2x3xf32>, tensor<4xi8>
}
"""  # noqa: E501


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.mlir"
    path.write_text(MODEL)
    return path


def _one_line_error(err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("minirt-run: error: ") and "Traceback" not in err
    for p in parts:
        assert p in lines[0], lines[0]


def _damaged_npz(tmp_path: Path) -> Path:
    path = tmp_path / "bad.npz"
    np.savez(path, input_0=np.zeros((2, 3), np.float32), input_1=np.zeros(4, np.int8))
    raw = bytearray(path.read_bytes())
    for i in range(70, 110):
        raw[i] ^= 0x55
    path.write_bytes(bytes(raw))
    return path


def _object_npz(tmp_path: Path) -> Path:
    path = tmp_path / "obj.npz"
    np.savez(path, input_0=np.array([[1, 2, 3], [4, 5, 6]], dtype=object),
             input_1=np.zeros(4, np.int8))
    return path


def _narrowing_npz(tmp_path: Path) -> Path:
    path = tmp_path / "wide.npz"
    np.savez(path, input_0=np.zeros((2, 3), np.float32),
             input_1=np.array([300, -300, 127, 1000], np.int64))
    return path


def _overflowing_npz(tmp_path: Path) -> Path:
    path = tmp_path / "f64.npz"
    np.savez(path, input_0=np.array([[1.0, 2.0, 1e300], [0, 0, 0]]),
             input_1=np.zeros(4, np.int8))
    return path


# (id, extra arguments given the model's tmp_path, words the error line must hold)
BAD = [
    ("corrupt-zip", lambda p: ["--inputs", str(_damaged_npz(p))],
     ["bad.npz: cannot read 'input_0'", "CRC"]),
    ("object-array", lambda p: ["--inputs", str(_object_npz(p))],
     ["obj.npz: cannot read 'input_0'", "Object arrays"]),
    ("int64-to-int8", lambda p: ["--inputs", str(_narrowing_npz(p))],
     ["'input_1'[0] is 300, outside i8's range -128..127"]),
    ("float64-overflow", lambda p: ["--inputs", str(_overflowing_npz(p))],
     ["'input_0'[0, 2] is 1e+300, outside f32's range (it would be inf)"]),
    ("negative-seed", lambda p: ["--seed", "-1"], ["argument --seed: must be >= 0, got -1"]),
    ("nan-timeout", lambda p: ["--timeout", "nan"], ["argument --timeout", "'nan'"]),
    ("negative-timeout", lambda p: ["--timeout", "-1"], ["argument --timeout", "'-1'"]),
    ("save-into-missing-dir", lambda p: ["--save-outputs", str(p / "no" / "out.npz")],
     ["out.npz: directory", "does not exist"]),
    ("save-onto-a-directory", lambda p: ["--save-outputs", str(p)], ["is a directory"]),
]


@pytest.mark.parametrize("where", ["--reference", "--board"])
@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_is_one_line_and_exit_2(case, where: str, model: Path, tmp_path: Path,
                                          capsys) -> None:
    _, extra, words = case
    target = ["--reference"] if where == "--reference" else [
        "--board", "x86-64", "-o", str(tmp_path / "fw")]
    assert run.main([str(model), *target, *extra(tmp_path)]) == 2
    _one_line_error(capsys.readouterr().err, *words)
    assert not (tmp_path / "fw").exists()  # refused before anything was built


# --max-cycles refused in one line before anything is built: (id, arguments, words).
BAD_BUDGET = [
    ("zero", ["--board", "x86-64", "--max-cycles", "0"], ["argument --max-cycles",
                                                         "must be >= 1, got 0"]),
    ("not-a-number", ["--board", "x86-64", "--max-cycles", "1e6"],
     ["argument --max-cycles", "'1e6'"]),
    ("over-64-bits", ["--board", "x86-64", "--max-cycles", str(1 << 63)],
     ["--max-cycles must be between 1 and 9223372036854775807"]),
    ("no-counter", ["--board", "aarch64", "--max-cycles", "1000"],
     ["--max-cycles: board aarch64 has no cycle counter the runtime reads"]),
    ("reference", ["--reference", "--max-cycles", "1000"],
     ["--max-cycles is a budget of the firmware on a board"]),
]


@pytest.mark.parametrize("case", BAD_BUDGET, ids=[c[0] for c in BAD_BUDGET])
def test_bad_cycle_budget_is_one_line_and_exit_2(case, model: Path, tmp_path: Path,
                                                 capsys) -> None:
    _, args, words = case
    assert run.main([str(model), "-o", str(tmp_path / "fw"), *args]) == 2
    _one_line_error(capsys.readouterr().err, *words)
    assert not (tmp_path / "fw").exists()


def test_build_refuses_a_budget_the_board_cannot_count(model: Path, tmp_path: Path,
                                                       capsys) -> None:
    from toolchain.cli import build

    assert build.main([str(model), "--board", "aarch64", "-o", str(tmp_path / "fw"),
                       "--max-cycles", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("minirt-build: error: --max-cycles: board aarch64 has no cycle counter "
                   "the runtime reads (it counts on Cortex-M, RISC-V and x86-64 boards)")
    assert not (tmp_path / "fw").exists()


def test_build_dir_that_is_a_file(model: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "fw").write_text("not a build")
    assert run.main([str(model), "--board", "x86-64", "-o", str(tmp_path / "fw")]) == 2
    _one_line_error(capsys.readouterr().err, "fw: exists and is not a directory")
    assert (tmp_path / "fw").read_text() == "not a build"


def _script() -> list[str]:
    exe = Path(sys.executable).parent / "minirt-run"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "toolchain.cli.run"]


SUBPROCESS = ["corrupt-zip", "object-array", "negative-seed", "nan-timeout",
              "save-into-missing-dir"]


@pytest.mark.parametrize("case", [c for c in BAD if c[0] in SUBPROCESS], ids=SUBPROCESS)
def test_bad_input_subprocess(case, model: Path, tmp_path: Path) -> None:
    _, extra, words = case
    proc = subprocess.run([*_script(), str(model), "--reference", *extra(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    _one_line_error(proc.stderr, *words)


def test_model_too_large_for_the_format(tmp_path: Path, capsys) -> None:
    """tensor<100000x100000xf32> used to end in MemoryError (--reference) or PackError
    (--board): it is a located error now."""
    path = tmp_path / "big.mlir"
    path.write_text("func.func @main(%a: tensor<100000x100000xf32>) -> tensor<2xf32> {\n"
                    "  %0 = stablehlo.constant dense<1.0> : tensor<2xf32>\n"
                    "  return %0 : tensor<2xf32>\n}\n")
    for where in (["--reference"], ["--board", "x86-64", "-o", str(tmp_path / "fw")]):
        assert run.main([str(path), *where]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{path}:1:1: error: argument 0 of '@main': "
                              "'tensor<100000x100000xf32>' takes 40000000000 bytes")
        assert "Traceback" not in err


def test_reference_that_would_exhaust_host_memory(tmp_path: Path, capsys) -> None:
    """300 tensors of 1 GiB each: every one is within the format, but the reference
    keeps them all, about 300 GiB; refused up front rather than a MemoryError."""
    path = tmp_path / "huge.mlir"
    path.write_text(elementwise_chain(300, "16384x16384"))
    assert run.main([str(path), "--reference"]) == 2
    _one_line_error(capsys.readouterr().err, "the reference run would need about 30",
                    "GiB of host memory")


def test_long_chain_runs_on_a_board(tmp_path: Path, capsys) -> None:
    """A 1000-op elementwise chain used to end in a RecursionError in fusion (300 ops)."""
    path = tmp_path / "chain.mlir"
    path.write_text(elementwise_chain(1000))
    assert run.main([str(path), "--board", "x86-64", "--check", "-o", str(tmp_path / "fw")]) == 0
    out = capsys.readouterr().out
    assert "check: outputs match the reference" in out
    # A hosted board has no core timing: said so, not a number.
    assert "estimated cycles: n/a (x86-64 runs as a Linux process" in out


def _runs(argv: list[str], capsys) -> tuple[bool, str]:
    """(whether minirt-run built, its stdout) for a successful run."""
    assert run.main(argv) == 0
    out, err = capsys.readouterr()
    return "minirt-run: building" in err, out


def test_build_is_reused_only_when_nothing_changed(tmp_path: Path, capsys) -> None:
    fw = tmp_path / "fw"
    argv = [str(SEED), "-o", str(fw), "--check"]
    assert _runs([*argv, "--board", "cortex-m4"], capsys)[0]
    assert not _runs([*argv, "--board", "cortex-m4"], capsys)[0]
    # A board of the same name given by path, with another stack size: used to be reused.
    board = yaml.safe_load((REPO / "boards" / "cortex-m4.yaml").read_text())
    board["stack_size"] *= 2
    edited = tmp_path / "boards" / "cortex-m4.yaml"
    edited.parent.mkdir()
    edited.write_text(yaml.safe_dump(board))
    assert _runs([*argv, "--board", str(edited)], capsys)[0]
    assert not _runs([*argv, "--board", str(edited)], capsys)[0]
    assert _runs([*argv, "--board", "cortex-m4"], capsys)[0]
    assert _runs([*argv, "--board", "cortex-m4", "--quantize", "fp16"], capsys)[0]


@pytest.mark.parametrize("damage", ["delete-module", "garbage-elf", "truncate-elf"])
def test_damaged_build_directory_is_rebuilt(damage: str, tmp_path: Path, capsys) -> None:
    """model.mrt deleted or firmware.elf overwritten used to be reused (a traceback)."""
    fw = tmp_path / "fw"
    argv = [str(SEED), "--board", "x86-64", "-o", str(fw), "--check"]
    assert _runs(argv, capsys)[0]
    if damage == "delete-module":
        (fw / "model.mrt").unlink()
    elif damage == "garbage-elf":
        (fw / "firmware.elf").write_text("garbage")
    else:
        elf = fw / "firmware.elf"
        elf.write_bytes(elf.read_bytes()[:200])
    built, out = _runs(argv, capsys)
    assert built and "check: outputs match the reference" in out


def test_nan_mismatches_are_reported_honestly() -> None:
    """Three NaN where the reference has numbers used to be 'max abs error 0'."""
    want = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = want.copy()
    got[0, 1] = got[1, 2] = got[1, 3] = np.nan
    got[0, 3] += 0.5
    lines = run.compare([got], [want])
    assert lines[0] == ("output_0: 4 of 8 elements differ (3 NaN where the reference is a "
                        "number; max abs error inf)")
    listed = lines[1:]
    assert len(listed) == 4
    assert all("got np.float32(nan)" in ln and "error inf" in ln for ln in listed[:3])
    assert listed[3].startswith("  [0, 3] got np.float32(3.5)") and "error 0.5" in listed[3]


def test_numbers_where_the_reference_is_nan() -> None:
    want = np.array([np.nan, 1.0, np.nan], np.float32)
    got = np.array([np.nan, 1.0, 2.0], np.float32)
    assert run.compare([got], [want])[0] == (
        "output_0: 1 of 3 elements differ (1 number where the reference is NaN; max abs "
        "error inf)")
    assert run.compare([want], [want]) == []  # NaN where the reference has NaN is fine


def test_integer_mismatch_of_64_bit_values() -> None:
    """uint64 values used to be compared as int64: 2**64 - 1 against 0 showed an error of
    1. Differences float64 cannot resolve still count at least 1."""
    want = np.array([2**64 - 1, 2**63 + 1, 5], np.uint64)
    got = np.array([0, 2**63, 5], np.uint64)
    lines = run.compare([got], [want])
    assert lines[0] == "output_0: 2 of 3 elements differ (max abs error 1.84e+19)"
    assert lines[1].startswith("  [0] got np.uint64(0)")
    assert lines[2].startswith("  [1] got") and lines[2].endswith("error 1")
