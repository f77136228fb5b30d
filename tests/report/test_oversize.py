"""A model that does not fit its board: the build prints the size table (from a link
against enlarged memories) and then one error naming each memory that overflows and by
how much; nothing of the image is left behind."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.model_zoo import MISSING_REASON, MODELS_DIR, have_models
from toolchain import pipeline
from toolchain.cli import build as build_cli
from toolchain.loader import load_graph
from toolchain.report.size import size_report
from toolchain.target import load_board

# 64 x 64 f32 in and out: 32 KB of I/O buffers, twice cortex-m0plus's 16 KB of RAM.
BIG_IO = """\
func.func @main(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = stablehlo.tanh %a : tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
"""

# 2048 different f32 constants (0, 1, ..., 2047; a splat would become an immediate): 8 KB
# of flash.
BIG_CONST = """\
func.func @main(%a: tensor<2048xf32>) -> tensor<2048xf32> {
  %c = stablehlo.constant dense<"0xHEX"> : tensor<2048xf32>
  %0 = stablehlo.add %a, %c : tensor<2048xf32>
  return %0 : tensor<2048xf32>
}
""".replace("HEX", np.arange(2048, dtype="<f4").tobytes().hex().upper())


def _model(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _board(tmp_path: Path, base: str, ident: str, **memories: int) -> Path:
    """`base`'s YAML with other flash / RAM lengths (budgets the same): same code."""
    data = yaml.safe_load(load_board(base).path.read_text())
    data["identifier"] = ident
    for memory, length in memories.items():
        data[memory]["length"] = data["budgets"][memory] = length
    path = tmp_path / "boards" / f"{ident}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def _table(out: str) -> dict[str, tuple[int, int]]:
    """{component label: (flash, ram)} from the printed table."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^([a-zA-Z/ ]+?)\s+([\d,]+)\s+([\d,]+)(\s{3}\(budget.*)?$", line)
        if m and m.group(1) != "component":
            rows[m.group(1)] = (int(m.group(2).replace(",", "")),
                                int(m.group(3).replace(",", "")))
    return rows


def test_ram_overflow_prints_the_table_then_one_exact_error(tmp_path: Path, capsys) -> None:
    model = _model(tmp_path, "big_io.mlir", BIG_IO)
    out = tmp_path / "fw"
    rc = build_cli.main([str(model), "--board", "cortex-m0plus", "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 2
    table = _table(captured.out)
    assert 2 * 64 * 64 * 4 <= table["I/O buffers"][1] < 2 * 64 * 64 * 4 + 32  # + alignment
    ram_total = table["total"][1]
    errors = captured.err.strip().splitlines()
    assert len(errors) == 1, captured.err
    assert errors[0].startswith("minirt-build: error: the model for board cortex-m0plus does "
                                "not fit the board's memory: it overflows RAM by "
                                f"{ram_total - 0x4000} bytes (needs {ram_total} B of 16384 B: ")
    assert f"I/O buffers {table['I/O buffers'][1]} B" in errors[0] and "FLASH" not in errors[0]
    # The table comes before the error and says where it comes from.
    assert "link against enlarged memories" in captured.out
    # Nothing is left: no build directory, no temporary one beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big_io.mlir"]

    # The enlarged link measures what a board just large enough links: the same bytes.
    roomy = _board(tmp_path, "cortex-m0plus", "m0plus-roomy", ram=0x10000)
    fits = pipeline.build_model(model, str(roomy), tmp_path / "roomy", log=lambda _: None)
    report = size_report(fits)
    assert table["total"] == (report.flash_total, report.ram_total)
    assert table["arena"][1] == report.ram["arena"]
    assert table["dispatch code"][0] == report.flash["dispatch"]


def test_flash_overflow_names_flash(tmp_path: Path) -> None:
    model = _model(tmp_path, "big_const.mlir", BIG_CONST)
    board = load_board(_board(tmp_path, "cortex-m4", "m4-small", flash=0x1000))
    logged: list[str] = []
    with pytest.raises(pipeline.DoesNotFit) as info:
        pipeline.compile_graph(load_graph(model), board, tmp_path / "fw", log=logged.append)
    report = info.value.report
    assert 2048 * 4 <= report.flash["constants"] < 2048 * 4 + 64  # + the constant table
    assert str(info.value).startswith(
        "the model for board m4-small does not fit the board's memory: it overflows FLASH by "
        f"{report.flash_total - 0x1000} bytes (needs {report.flash_total} B of 4096 B: ")
    assert "RAM" not in str(info.value)
    assert any(line.startswith("component") for line in logged)
    assert not (tmp_path / "fw").exists()


def test_an_earlier_build_is_kept_when_the_new_one_does_not_fit(tmp_path: Path,
                                                              capsys) -> None:
    out = tmp_path / "fw"
    small = _model(tmp_path, "small.mlir", BIG_IO.replace("64x64", "4x4"))
    assert build_cli.main([str(small), "--board", "cortex-m0plus", "-o", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    big = _model(tmp_path, "big_io.mlir", BIG_IO)
    assert build_cli.main([str(big), "--board", "cortex-m0plus", "-o", str(out)]) == 2
    capsys.readouterr()
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big_io.mlir", "fw", "small.mlir"]


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
def test_resnet8_on_cortex_m0plus(tmp_path: Path, capsys) -> None:
    rc = build_cli.main([str(MODELS_DIR / "jax" / "resnet8.mlir"), "--board", "cortex-m0plus",
                         "-o", str(tmp_path / "fw")])
    captured = capsys.readouterr()
    assert rc == 2
    table = _table(captured.out)
    assert table["arena"][1] == 131_072 and table["constants"][0] == 310_800
    err = captured.err.strip()
    assert "it overflows FLASH by" in err and "it overflows RAM by" in err
    assert f"overflows RAM by {table['total'][1] - 16384} bytes" in err
    assert f"overflows FLASH by {table['total'][0] - 262144} bytes" in err
    assert not (tmp_path / "fw").exists()
