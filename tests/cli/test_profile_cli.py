"""`minirt-run --profile`: the per-dispatch table and its JSON form, whose rows add up
to the run's exact instruction count; misuse is one line and exit 2."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from toolchain.cli import run

# A convolution (1x6x6x4 outputs of a 3x3x2 window: 2592 MACs) with its ReLU, and a
# dot (2 x 144 @ 144 x 3: 864 MACs) reading it.
MODEL = """func.func @main(%x: tensor<1x8x8x2xf32>, %k: tensor<3x3x2x4xf32>,
                %w: tensor<144x3xf32>) -> tensor<1x3xf32> {
  %0 = stablehlo.convolution(%x, %k)
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {stride = [1, 1], pad = [[0, 0], [0, 0]]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<1x6x6x4xf32>
  %1 = stablehlo.maximum %0, %z : tensor<1x6x6x4xf32>
  %2 = stablehlo.reshape %1 : (tensor<1x6x6x4xf32>) -> tensor<1x144xf32>
  %3 = stablehlo.dot_general %2, %w, contracting_dims = [1] x [0]
       : (tensor<1x144xf32>, tensor<144x3xf32>) -> tensor<1x3xf32>
  return %3 : tensor<1x3xf32>
}
"""
CONV_MACS, DOT_MACS = 6 * 6 * 4 * 3 * 3 * 2, 144 * 3


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The model and its cortex-m4 build directory (built by the first run)."""
    missing = [t for t in ("clang", "ld.lld", "qemu-system-arm") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")
    tmp = tmp_path_factory.mktemp("profile-cli")
    model = tmp / "conv_dot.mlir"
    model.write_text(MODEL)
    return model, tmp / "fw"


def _run(built: tuple[Path, Path], capsys, *extra: str) -> tuple[int, str, str]:
    model, out = built
    code = run.main([str(model), "--board", "cortex-m4", "-o", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_profile_table(built, capsys) -> None:
    code, plain, _ = _run(built, capsys, "--check")
    assert code == 0
    count = int(re.search(r"instructions: (\d+)", plain).group(1))
    code, out, _ = _run(built, capsys, "--profile", "--check")
    assert code == 0, out
    assert f"instructions: {count} " in out
    assert re.search(r"dispatch +MACs +instructions +insn/MAC +share +est. cycles +est. ms",
                     out)
    rows = {m.group(1): m for m in re.finditer(
        r"^(\S+) +([\d,]*) +([\d,]+) +([\d.]*) +([\d.]+)%"
        r" +([\d,]+) +([\d.]+)$", out, re.M)}
    # The model names no op (no loc): each dispatch is named by its main op's kind.
    conv, dot = rows["convolution"], rows["dot_general"]
    assert conv.group(2) == f"{CONV_MACS:,}" and dot.group(2) == f"{DOT_MACS:,}"
    total = rows["total"]
    assert total.group(3) == f"{count:,}" and total.group(5) == "100.0"
    assert total.group(2) == f"{CONV_MACS + DOT_MACS:,}"
    # The rows above the total add up to it.
    assert sum(int(m.group(3).replace(",", "")) for n, m in rows.items() if n != "total") \
        == count
    # So do the estimated cycles, and the total is the one the plain run prints.
    cycles = int(re.search(r"estimated cycles: ([\d,]+) on Cortex-M4", plain).group(1)
                 .replace(",", ""))
    assert total.group(6) == f"{cycles:,}"
    assert sum(int(m.group(6).replace(",", "")) for n, m in rows.items() if n != "total") \
        == cycles
    assert float(total.group(7)) == pytest.approx(cycles / 25e3, abs=1e-3)  # 25 MHz
    assert re.search(r"^outside the inference: .*start-up [\d,]+", out, re.M)
    assert re.search(r"^stack: [\d,]+ B used \(measured\), [\d,]+ B reserved$", out, re.M)
    assert "check: outputs match the reference" in out


def test_profile_json(built, capsys) -> None:
    code, out, err = _run(built, capsys, "--profile", "--json", "--check")
    assert code == 0, err
    data = json.loads(out)  # stdout is the document alone
    assert "check: outputs match the reference" in err
    rows = data["dispatches"] + data["other_rows"]
    assert sum(r["instructions"] for r in rows) == data["instructions"]
    assert abs(sum(r["share"] for r in rows) - 100.0) < 1e-9
    assert data["macs"] == CONV_MACS + DOT_MACS
    for r in data["dispatches"]:
        assert re.fullmatch(r"d\d+_\w+", r["name"]) and r["kind"] == "dispatch"
        assert r["label"] == r["op"] and r["sources"] == []  # an unnamed model
        if r["macs"]:
            assert r["instructions_per_mac"] == pytest.approx(r["instructions"] / r["macs"])
        else:
            assert r["instructions_per_mac"] is None
    assert data["outside_inference"]["start-up"] > 0
    assert 0 < data["stack"]["measured"] < data["stack"]["reserved"]


@pytest.mark.parametrize("args, words", [
    (["--board", "cortex-m4", "--json"], "--json goes with --profile"),
    (["--reference", "--profile"], "--profile counts instructions on a board"),
    (["--board", "cortex-m4", "--names", "full"], "--names goes with --profile"),
])
def test_misuse_is_one_line_and_exit_2(args, words, tmp_path: Path, capsys) -> None:
    model = tmp_path / "m.mlir"
    model.write_text(MODEL)
    assert run.main([str(model), *args, "-o", str(tmp_path / "fw")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("minirt-run: error: ") and words in err[0]
    assert not (tmp_path / "fw").exists()


def test_profile_of_a_deep_model(tmp_path: Path, capsys) -> None:
    """A shared int8 model of 26 dispatches (its graph too deep to copy recursively): the
    profile's MACs come from the build's own dispatch list, every dispatch has its row,
    and the rows add up to the run's count."""
    from model_zoo import MISSING_REASON, MODELS_DIR, have_models

    model = MODELS_DIR / "mlperf_tiny" / "kws_ref_model.tflite"
    if not have_models() or not model.is_file():
        pytest.skip(MISSING_REASON)
    if shutil.which("qemu-system-arm") is None:
        pytest.skip("missing tool: qemu-system-arm")
    out = tmp_path / "fw"
    code = run.main([str(model), "--board", "cortex-m4", "-o", str(out), "--profile",
                     "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)
    listed = json.loads((out / "dispatches.json").read_text())["dispatches"]
    assert len(data["dispatches"]) == len(listed) >= 20
    assert [r["name"] for r in data["dispatches"]] == [r["name"] for r in listed]
    assert [r["macs"] for r in data["dispatches"]] == [r["macs"] for r in listed]
    # The model's convolutions and its dense layer: 2.66 M MACs in all.
    assert data["macs"] == sum(r["macs"] for r in listed) == 2_656_768
    rows = data["dispatches"] + data["other_rows"]
    assert sum(r["instructions"] for r in rows) == data["instructions"]
