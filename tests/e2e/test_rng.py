"""rng_bit_generator and the older rng op.

The reference (reference/rng.py) is checked bit for bit against published values:
Random123's known-answer tests for Threefry-2x32-20 and Philox-4x32-10 (the keys and
counters of all zeros, all ones and pi's digits), and XLA's own output for THREE_FRY
with state [0, 0] and a 3x2 result (the layout: words of a pair side by side along the
first even dimension, and the counter advanced by 3). The firmware computes
rng_bit_generator through passes/random.py's integer graph; every algorithm, state
size (2 and 3 values, a counter that carries) and result type (ui8 .. ui64, i16, i64,
f32) runs on cortex-m4, riscv32, aarch64 and x86-64 and must equal the reference
exactly (`--check` compares integers exactly). rng (UNIFORM over floats and integers,
NORMAL) runs on the same boards; its numbers are the documented function of
frontend/stablehlo_random.py, and their distribution is checked here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli
from toolchain.reference import rng

DATA = Path(__file__).resolve().parent / "data" / "rng"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]
ONES = 0xFFFFFFFF
PI = (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0)


def _u32(*v: int) -> list[np.ndarray]:
    return [np.array([x], np.uint32) for x in v]


@pytest.mark.parametrize("counter,key,want", [
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((ONES, ONES), (ONES, ONES), (0x1CB996FC, 0xBB002BE7)),
    (PI[:2], PI[2:4], (0xC4923A9C, 0x483DF7A0)),
])
def test_threefry_known_answers(counter, key, want) -> None:
    got = rng.threefry2x32(*_u32(*counter), *key)
    assert [int(w[0]) for w in got] == list(want)


@pytest.mark.parametrize("counter,key,want", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((ONES,) * 4, (ONES, ONES), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (PI[:4], PI[4:], (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(counter, key, want) -> None:
    got = rng.philox4x32(_u32(*counter), *key)
    assert [int(w[0]) for w in got] == list(want)


def test_three_fry_layout_as_xla_computes_it() -> None:
    state = np.array([0, 0], np.uint64)
    got = rng.rng_bits(state, "THREE_FRY", 32, (3, 2))
    np.testing.assert_array_equal(got, [[1797259609, 2579123966], [1351547692, 3235790642],
                                        [1688610540, 4229293427]])
    np.testing.assert_array_equal(rng.new_state(state, "THREE_FRY", 32, (3, 2)), [0, 3])


def _run(model: str, board: str, tmp_path: Path, inputs: dict, capsys) -> dict:
    np.savez(tmp_path / "in.npz", **inputs)
    rc = run_cli.main([str(DATA / model), "--board", board, "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    return dict(np.load(tmp_path / "out.npz"))


@pytest.mark.parametrize("board", BOARDS)
def test_rng_bit_generator_on_board(board: str, tmp_path: Path, capsys) -> None:
    # Counters that wrap: THREE_FRY's 64-bit counter, PHILOX's 128-bit one carrying into
    # the state's third value.
    s2 = np.array([0x0123456789ABCDEF, 2**64 - 3], np.uint64)
    s3 = np.array([7, 2**64 - 2, 2**64 - 1], np.uint64)
    out = _run("bits.mlir", board, tmp_path, {"input_0": s2, "input_1": s3}, capsys)
    np.testing.assert_array_equal(out["output_0"], [s2[0], 0])  # 3 blocks
    np.testing.assert_array_equal(out["output_2"], [s2[0], 2])  # 5 blocks
    np.testing.assert_array_equal(out["output_6"], [7, 0, 0])  # carried
    np.testing.assert_array_equal(
        out["output_3"], rng.rng_bits(s2, "THREE_FRY", 64, (5,)))


INPUTS = {"input_0": np.float32(-2), "input_1": np.float32(3), "input_2": np.int32(-5),
          "input_3": np.int32(7)}


def _check_distributions(u: np.ndarray | None, z: np.ndarray, k: np.ndarray) -> None:
    # 2048 draws: the mean of U[-2, 3) is 0.5 (sd of the mean 0.032), of N(-2, 3) is -2
    # (sd 0.066); five standard deviations of slack.
    if u is not None:
        assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.16
    assert abs(z.mean() + 2) < 0.33 and 2.7 < z.std() < 3.3
    assert k.min() == -5 and k.max() == 6  # [a, b): every value of 12 is drawn


def test_rng_distributions_on_the_reference(tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", **INPUTS)
    rc = run_cli.main([str(DATA / "rng.mlir"), "--reference", "--inputs",
                       str(tmp_path / "in.npz"), "--save-outputs", str(tmp_path / "o.npz")])
    assert rc == 0, capsys.readouterr().err
    out = np.load(tmp_path / "o.npz")
    _check_distributions(out["output_0"], out["output_1"], out["output_2"])


@pytest.mark.parametrize("board", BOARDS)
def test_rng_distributions_on_board(board: str, tmp_path: Path, capsys) -> None:
    # rng_board.mlir: NORMAL (its float uniform draws included) and an integer UNIFORM;
    # a float UNIFORM would cost a third Threefry kernel to build and add nothing.
    out = _run("rng_board.mlir", board, tmp_path, INPUTS, capsys)
    _check_distributions(None, out["output_0"], out["output_1"])
