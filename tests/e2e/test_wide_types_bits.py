"""bitcast_convert and the old broadcast under QEMU (tests/e2e/data/bits/bitcast.mlir):
bitcast_convert at the same width (f32 <-> i32), to a narrower type (f64 -> 4 x f16,
f64 -> 2 x ui32, f32 -> 4 x i8: one more trailing dim) and to a wider one (4 x ui8 ->
i32, 2 x f16 -> f32, 2 x ui32 -> f64, i64 -> 2 x f32 and back), little-endian as every
minirt target stores them; broadcast with its sizes prepended, in both forms. Built
once per board for cortex-m4, riscv32, aarch64 and x86-64 and checked against the
reference with --check (integers exactly); the bits are then checked against numpy's
own views of the inputs, independently of the reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

DATA = Path(__file__).resolve().parent / "data" / "bits"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]

F = np.array([[1.5, -0.0, np.inf], [np.nan, 3e-42, -2.25]], np.float32)
# The spec's example: 0x0123456789ABCDEF as f64 is [0xCDEF, 0x89AB, 0x4567, 0x0123] as f16.
D = np.array([np.frombuffer(bytes.fromhex("efcdab8967452301"), "<f8")[0], -1.0, 1e300])
B = np.array([[1, 2, 3, 4], [255, 0, 128, 7]], np.uint8)
H = np.array([[1, 2], [-0.5, 65504], [0, np.inf]], np.float16)
I64 = np.array([0x3F8000004049999A, -1], np.int64)


@pytest.mark.parametrize("board", BOARDS)
def test_bitcast_and_broadcast_on_board(board: str, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", input_0=F, input_1=D, input_2=B, input_3=H, input_4=I64)
    rc = run_cli.main([str(DATA / "bitcast.mlir"), "--board", board, "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    out = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(out["output_0"], F.view(np.int32))
    np.testing.assert_array_equal(out["output_1"][0].view(np.uint16),
                                  [0xCDEF, 0x89AB, 0x4567, 0x0123])
    np.testing.assert_array_equal(out["output_1"].view(np.uint16),
                                  D.view(np.uint16).reshape(3, 4))
    np.testing.assert_array_equal(out["output_2"], D.view(np.uint32).reshape(3, 2))
    np.testing.assert_array_equal(out["output_3"], B.view(np.int32).reshape(2))
    np.testing.assert_array_equal(out["output_4"].view(np.uint32),
                                  H.view(np.uint32).reshape(3))
    np.testing.assert_array_equal(out["output_5"].view(np.uint32),
                                  I64.view(np.uint32).reshape(2, 2))
    np.testing.assert_array_equal(out["output_6"], F.view(np.int8).reshape(2, 3, 4))
    np.testing.assert_array_equal(out["output_7"].view(np.uint64), D.view(np.uint64))
    np.testing.assert_array_equal(out["output_8"].view(np.uint32), F.view(np.uint32))
    np.testing.assert_array_equal(out["output_9"], np.broadcast_to(I64, (4, 2, 2)))
    np.testing.assert_array_equal(out["output_10"], np.broadcast_to(F, (3, 2, 3)))


@pytest.mark.parametrize("op,message", [
    ("stablehlo.bitcast_convert %a : (tensor<3xf32>) -> tensor<3xf64>",
     "bitcast_convert to f64 needs a last dim of 2 f32 values"),
    ("stablehlo.bitcast_convert %a : (tensor<3xf32>) -> tensor<3x3xi8>",
     "gives shape 3x4, not 3x3"),
])
def test_bitcast_shape_errors_are_located(op: str, message: str, tmp_path: Path,
                                          capsys) -> None:
    result = op.split("-> ")[1]
    model = tmp_path / "m.mlir"
    model.write_text(f"func.func @main(%a: tensor<3xf32>) -> {result} {{\n"
                     f"  %0 = {op}\n  return %0 : {result}\n}}\n")
    rc = run_cli.main([str(model), "--reference"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{model}:2:" in err and message in err, err
