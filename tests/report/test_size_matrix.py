"""bench/size_report.py (`make size-report`): one compile per target, one link per board,
models that do not fit shown with what overflows, one progress line per build."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.model_zoo import MISSING_REASON, have_models

BENCH = Path(__file__).resolve().parents[2] / "bench" / "size_report.py"
SMALL = """\
func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.tanh %a : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""


def _bench():
    spec = importlib.util.spec_from_file_location("size_report_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_one_compile_links_every_board_of_a_target(tmp_path: Path) -> None:
    bench = _bench()
    small = tmp_path / "small.mlir"
    small.write_text(SMALL)
    big = tmp_path / "big.mlir"  # 32 KB of I/O: more than cortex-m0plus's 16 KB of RAM
    big.write_text(SMALL.replace("4x4", "64x64"))
    rows = bench.build_group(small, ["cortex-m0plus"]) + bench.build_group(big, ["cortex-m0plus"])
    by = {r["model"]: r for r in rows}
    assert by["small"]["status"] == "fits" and by["small"]["flash_total"] > 0
    assert by["big"]["status"] == "does not fit"
    assert by["big"]["ram_total"] > by["big"]["memory"]["ram"] == 16384
    assert by["big"]["note"].startswith("it overflows RAM by ")
    md = bench.markdown(rows, ["small", "big"], ["cortex-m0plus"], 1.0)
    over = (by["big"]["ram_total"] - 16384) / 1024
    assert f"**does not fit**: RAM +{over:.1f}" in md
    assert "| `cortex-m0plus` | " in md and "does not fit 1, fits 1" in md
    # Boards of one target share the compile: the same dispatch code on each.
    pair = bench.build_group(small, ["cortex-m4", "nrf52840dk"])
    assert [r["board"] for r in pair] == ["cortex-m4", "nrf52840dk"]
    assert pair[0]["flash"]["dispatch"] == pair[1]["flash"]["dispatch"]


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
def test_main_writes_the_matrix_with_progress(tmp_path: Path, capsys) -> None:
    bench = _bench()
    assert bench.main(["--models", "resnet8,mlp", "--boards", "cortex-m0plus,cortex-m4",
                       "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    progress = [line for line in out if line.startswith("[")]
    assert len(progress) == 4 and progress[-1].startswith("[  4/4] ")
    data = json.loads((tmp_path / "size_report.json").read_text())
    by = {(r["model"], r["board"]): r for r in data["rows"]}
    assert by[("resnet8", "cortex-m0plus")]["status"] == "does not fit"
    assert by[("resnet8", "cortex-m4")]["status"] == "fits"
    assert by[("mlp", "cortex-m0plus")]["status"] == "fits"
    md = (tmp_path / "size_report.md").read_text()
    assert "| board | mlp | resnet8 |" in md
