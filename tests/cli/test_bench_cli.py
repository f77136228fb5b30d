"""`minirt-bench`: the figures on a native board, JSON, and one-line refusals (exit 2)
of boards this host cannot run and of bad options, before anything is built."""

from __future__ import annotations

import importlib.util
import json
import platform
import re
import shutil
from pathlib import Path

import pytest

from toolchain.cli import bench
from toolchain.module.reader import read_module

MODEL = """func.func @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0]
       : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "square.mlir"
    path.write_text(MODEL)
    return path


def _native() -> None:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("an x86-64 host")
    if shutil.which("clang") is None or shutil.which("ld.lld") is None:
        pytest.skip("needs clang and ld.lld")


def test_table_and_json(model: Path, tmp_path: Path, capsys) -> None:
    _native()
    out = tmp_path / "prog"
    assert bench.main([str(model), "--board", "x86-64", "--repeat", "5", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"on x86-64: 5 samples of \d+ inferences?\n", text)
    median = float(re.search(r"^median: ([\d.]+) us per inference$", text, re.M).group(1))
    least = float(re.search(r"^min: +([\d.]+) us per inference$", text, re.M).group(1))
    assert 0 < least <= median
    assert re.search(r"^CPU time: [\d.]+ us per inference \(median\)$", text, re.M)
    assert (out / "bench.elf").is_file()
    assert bench.main([str(model), "--board", "x86-64", "--repeat", "3", "--batch", "2",
                       "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["repeat"] == 3 and data["batch"] == 2 and data["board"] == "x86-64"
    assert 0 < data["min_us"] <= data["median_us"] and data["cpu_median_us"] > 0
    assert data["image_bytes"] > 0 and data["compile_seconds"] > 0


@pytest.mark.parametrize("args, words", [
    (["--board", "cortex-m4"], "board cortex-m4 cannot run natively on this host"),
    (["--board", "no-such-board"], "no-such-board"),
    (["--board", "x86-64", "--repeat", "0"], "--repeat: must be at least 1"),
    (["--board", "x86-64", "--batch", "-1"], "--batch"),
])
def test_refusals_are_one_line_and_exit_2(args, words, model: Path, tmp_path: Path,
                                          capsys) -> None:
    out = tmp_path / "prog"
    assert bench.main([str(model), *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0] and words in err[0], err
    assert not out.exists()


def test_relative_build_dir_as_the_readme_types_it(model: Path, tmp_path: Path,
                                                   monkeypatch, capsys) -> None:
    """`-o DIR` relative to the working directory (and the default build/...): the
    program runs in a scratch directory, and was once looked for there (a traceback)."""
    _native()
    monkeypatch.chdir(tmp_path)
    assert bench.main([str(model), "--board", "x86-64", "--repeat", "3", "-o", "prog"]) == 0
    assert "median:" in capsys.readouterr().out
    assert (tmp_path / "prog" / "bench.elf").is_file()
    assert bench.main([str(model), "--board", "x86-64", "--repeat", "3"]) == 0
    assert (tmp_path / "build" / "square-x86-64-bench" / "bench.elf").is_file()


def _onnx_cnn(tmp_path: Path) -> Path:
    """docs/formats.md's ONNX CNN, whose batch 'N' is dynamic."""
    pytest.importorskip("onnx")
    example = Path(__file__).resolve().parents[2] / "examples" / "onnx" / "make_cnn.py"
    spec = importlib.util.spec_from_file_location("make_cnn", example)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / "cnn.onnx"
    path.write_bytes(module.make_cnn().SerializeToString())
    return path


def test_input_shape_pins_an_onnx_batch(tmp_path: Path, capsys) -> None:
    """--input-shape as minirt-build and minirt-run take it: without it the dynamic
    batch is refused in one line, with it the program takes that shape's inputs."""
    cnn = _onnx_cnn(tmp_path)
    out = tmp_path / "prog"
    assert bench.main([str(cnn), "--board", "x86-64", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--input-shape" in err[0], err
    assert bench.main([str(cnn), "--board", "x86-64", "--input-shape", "input=1x1",
                       "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--input-shape input=1x1" in err[0], err
    _native()
    assert bench.main([str(cnn), "--board", "x86-64", "--repeat", "3", "--input-shape",
                       "input=3x1x12x12", "-o", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["repeat"] == 3
    module = read_module((out / "model.mrt").read_bytes())
    assert [tuple(s.shape) for s in module.inputs] == [(3, 1, 12, 12)]
