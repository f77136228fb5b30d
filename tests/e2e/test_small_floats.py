"""The small floats' conversions in firmware under QEMU, bit for bit against ml_dtypes.

One model narrows a sweep of f32 values (tests/small_float_values.py: every value of
every format, every tie and its f32 neighbours, overflow, underflow, NaN, random
patterns) to each of the eleven formats, and widens every code of each back to f32.
The 8-bit formats' codes travel as ui8 through bitcast_convert, so NaN codes and signs
are compared as bits; the 6- and 4-bit ones (no NaN, no inf) as their values. Built with
`minirt-run --check` on an FPU board (cortex-m4), one without (riscv32-nofpu: the
subnormal widening's float subtraction is a libgcc call there), riscv32 and x86-64.

data/small_floats/arithmetic.mlir computes with them (exp, tanh, multiply, a dot and a
reduction of f8E4M3FN, which accumulate in f32; an f4E2M1FN add) on seeded inputs, checked
against the reference by `minirt-run --check`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from small_float_values import codes, sweep

from toolchain.cli import run as run_cli
from toolchain.small_floats import FORMATS, from_bits, to_bits

BOARDS = ["cortex-m4", "riscv32-nofpu", "riscv32", "x86-64"]
EIGHT_BIT = [f for f in FORMATS.values() if f.bits == 8]
NARROWER = [f for f in FORMATS.values() if f.bits < 8]
X = np.unique(np.concatenate([sweep(f, random=256, seed=k) for k, f in
                              enumerate(FORMATS.values())]).view(np.uint32)).view(np.float32)


def _model() -> str:
    """The MLIR text: inputs x (f32), the 256 byte codes, each narrower format's values;
    outputs per 8-bit format its codes of x and its values of the 256 codes, then per
    narrower format its values of x and of its codes."""
    n = X.size
    args = [f"%x: tensor<{n}xf32>", "%c: tensor<256xui8>"]
    args += [f"%v{k}: tensor<{1 << f.bits}x{f.name}>" for k, f in enumerate(NARROWER)]
    body, results = [], []
    for k, f in enumerate(EIGHT_BIT):
        body += [
            f"%n{k} = stablehlo.convert %x : (tensor<{n}xf32>) -> tensor<{n}x{f.name}>",
            f"%b{k} = stablehlo.bitcast_convert %n{k} : (tensor<{n}x{f.name}>) -> "
            f"tensor<{n}xui8>",
            f"%d{k} = stablehlo.bitcast_convert %c : (tensor<256xui8>) -> tensor<256x{f.name}>",
            f"%w{k} = stablehlo.convert %d{k} : (tensor<256x{f.name}>) -> tensor<256xf32>"]
        results += [(f"%b{k}", f"tensor<{n}xui8>"), (f"%w{k}", "tensor<256xf32>")]
    for k, f in enumerate(NARROWER):
        m = 1 << f.bits
        body += [f"%m{k} = stablehlo.convert %x : (tensor<{n}xf32>) -> tensor<{n}x{f.name}>",
                 f"%u{k} = stablehlo.convert %v{k} : (tensor<{m}x{f.name}>) -> tensor<{m}xf32>"]
        results += [(f"%m{k}", f"tensor<{n}x{f.name}>"), (f"%u{k}", f"tensor<{m}xf32>")]
    names = ", ".join(r for r, _ in results)
    types = ", ".join(t for _, t in results)
    lines = "\n".join(f"  {line}" for line in body)
    return (f"func.func @main({', '.join(args)}) -> ({types}) {{\n{lines}\n"
            f"  return {names} : {types}\n}}\n")


def _inputs() -> list[np.ndarray]:
    return [X, codes(EIGHT_BIT[0])] + [from_bits(codes(f), f) for f in NARROWER]


def _expected() -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for f in EIGHT_BIT:
        out += [to_bits(X, f), codes(f).view(f.ml_dtype).astype(np.float32)]
    for f in NARROWER:
        out += [from_bits(to_bits(X, f), f), from_bits(codes(f), f)]
    return out


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype == np.uint8:
        return np.array_equal(got, want)
    # f32 bits, NaN of the same sign equal (a NaN code widens to its sign's quiet NaN)
    same = got.view(np.uint32) == want.view(np.uint32)
    return bool((same | (np.isnan(got) & np.isnan(want)
                         & (np.signbit(got) == np.signbit(want)))).all())


@pytest.mark.parametrize("board", BOARDS)
def test_small_float_conversions_on_board(board: str, tmp_path: Path, capsys) -> None:
    model = tmp_path / "small_floats.mlir"
    model.write_text(_model())
    np.savez(tmp_path / "in.npz", **{f"input_{i}": x for i, x in enumerate(_inputs())})
    rc = run_cli.main([str(model), "--board", board, "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    out = np.load(tmp_path / "out.npz")
    want = _expected()
    bad = [k for k, w in enumerate(want) if not _same(out[f"output_{k}"], w)]
    assert not bad, f"outputs {bad} differ from ml_dtypes"


ARITHMETIC = Path(__file__).resolve().parent / "data" / "small_floats" / "arithmetic.mlir"


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_small_float_arithmetic_on_board(board: str, tmp_path: Path, capsys) -> None:
    rc = run_cli.main([str(ARITHMETIC), "--board", board, "-o", str(tmp_path / "fw"),
                       "--check"])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
