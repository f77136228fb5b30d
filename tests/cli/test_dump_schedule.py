"""`minirt-build --dump-schedule`: each dispatch's loop schedule for the board's target,
printed without building; bad options are one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.cli import build as build_cli

CONV = """
func.func @main(%x: tensor<1x6x7x8xf32>) -> tensor<1x6x7x4xf32> {
  %w = stablehlo.constant dense<0.5> : tensor<3x3x8x4xf32>
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
       {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x6x7x8xf32>, tensor<3x3x8x4xf32>) -> tensor<1x6x7x4xf32>
  return %c : tensor<1x6x7x4xf32>
}
"""


@pytest.fixture
def conv(tmp_path: Path) -> Path:
    path = tmp_path / "conv.mlir"
    path.write_text(CONV)
    return path


def test_dump_schedule_per_board(conv: Path, capsys) -> None:
    assert build_cli.main([str(conv), "--board", "cortex-m4", "--dump-schedule"]) == 0
    m4 = capsys.readouterr().out.splitlines()
    assert m4[0].startswith("# ") and "cortex-m4" in m4[0] and "1 dispatches" in m4[0]
    assert m4[1].startswith("d0_convolution") and m4[1].endswith(": fma")
    # The padded window's interior, and a register tile of outputs; d1, which one tile
    # spans, is not split (its border rows are constants in the tile).
    assert "d1x6<6>" in m4[2] and m4[2].endswith("interior d2[1,6)")
    assert build_cli.main([str(conv), "--board", "x86-64", "--dump-schedule"]) == 0
    x86 = capsys.readouterr().out.splitlines()
    assert x86[1] == "d0_convolution:"  # no FMA on baseline x86-64


def test_dump_schedule_builds_nothing(conv: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "fw"
    assert build_cli.main([str(conv), "--board", "cortex-m4", "--dump-schedule", "-o",
                           str(out)]) == 0
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    ([], "--dump-schedule needs --board"),
    (["--board", "no-such-board"], "unknown board 'no-such-board'"),
    (["--board", "cortex-m4", "--dump-ir"], "not allowed with argument"),
])
def test_dump_schedule_bad_options(conv: Path, args: list[str], message: str, capsys) -> None:
    assert build_cli.main([str(conv), "--dump-schedule", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
