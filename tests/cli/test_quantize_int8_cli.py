"""`--quantize int8 --calibration FILE [--int8-io]` on minirt-build and minirt-run: the
options, their one-line exit-2 errors (checked before anything is built), the I/O
quantization in the summary and size.json, and --check of the int8 firmware."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import bench as bench_cli
from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli
from toolchain.loader import UsageError, load_graph
from toolchain.passes import QuantizeOptions
from toolchain.pipeline import prepare_graph

BOARD = "cortex-m4"


def _dense(a: np.ndarray) -> str:
    return f'dense<"0x{np.asarray(a, np.float32).astype("<f4").tobytes().hex().upper()}">'


def _model_text() -> str:
    """conv 3x3 + bias + ReLU, a window mean, a dense layer and a softmax, as JAX writes
    them."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, 2, 4)) * 0.5
    b = rng.standard_normal(4) * 0.2
    d = rng.standard_normal((4, 5)) * 0.5
    return f"""func.func @main(%x: tensor<1x6x6x2xf32>) -> tensor<1x5xf32> {{
  %w = stablehlo.constant {_dense(w)} : tensor<3x3x2x4xf32>
  %b = stablehlo.constant {_dense(b)} : tensor<4xf32>
  %d = stablehlo.constant {_dense(d)} : tensor<4x5xf32>
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {{stride = [1, 1], pad = [[1, 1], [1, 1]]}}
       {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
       : (tensor<1x6x6x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<4xf32>) -> tensor<1x6x6x4xf32>
  %s = stablehlo.add %c, %bb : tensor<1x6x6x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<1x6x6x4xf32>
  %r = stablehlo.maximum %s, %zero : tensor<1x6x6x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%r init: %z) applies stablehlo.add across dimensions = [1, 2]
       : (tensor<1x6x6x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %n = stablehlo.constant dense<36.0> : tensor<1x4xf32>
  %mean = stablehlo.divide %sum, %n : tensor<1x4xf32>
  %l = stablehlo.dot_general %mean, %d, contracting_dims = [1] x [0]
       : (tensor<1x4xf32>, tensor<4x5xf32>) -> tensor<1x5xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %top = stablehlo.reduce(%l init: %ninf) applies stablehlo.maximum across dimensions = [1]
       : (tensor<1x5xf32>, tensor<f32>) -> tensor<1xf32>
  %topb = stablehlo.broadcast_in_dim %top, dims = [0] : (tensor<1xf32>) -> tensor<1x5xf32>
  %sh = stablehlo.subtract %l, %topb : tensor<1x5xf32>
  %e = stablehlo.exponential %sh : tensor<1x5xf32>
  %es = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1]
       : (tensor<1x5xf32>, tensor<f32>) -> tensor<1xf32>
  %esb = stablehlo.broadcast_in_dim %es, dims = [0] : (tensor<1xf32>) -> tensor<1x5xf32>
  %p = stablehlo.divide %e, %esb : tensor<1x5xf32>
  return %p : tensor<1x5xf32>
}}
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.mlir"
    path.write_text(_model_text())
    return path


def _calibration(tmp_path: Path, shape=(16, 1, 6, 6, 2), seed: int = 0,
                 name: str = "calib.npz") -> Path:
    path = tmp_path / name
    np.savez(path, input_0=np.random.default_rng(seed).standard_normal(shape)
             .astype(np.float32))
    return path


def _one_line_error(err: str, tool: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"{tool}: error: "), lines[0]
    for p in parts:
        assert p in lines[0], lines[0]


@pytest.mark.parametrize("tool", [build_cli, run_cli])
def test_help_documents_int8(tool, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        tool.main(["--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "{none,fp16,int8-weights,int4-weights,int8}" in text
    assert "--calibration CALIB.npz" in text and "leading axis of samples" in text
    assert "--int8-io" in text and "dequantized at the exit" in text


@pytest.mark.parametrize("args, message", [
    (["--quantize", "int8"], "--quantize int8 needs --calibration CALIB.npz"),
    (["--quantize", "int8-weights", "--calibration", "c.npz"],
     "--calibration applies to --quantize int8 only (got --quantize int8-weights)"),
    (["--int8-io"], "--int8-io applies to --quantize int8 only (got --quantize none)"),
    (["--quantize", "int8", "--calibration", "absent.npz"],
     "absent.npz: cannot read the calibration file"),
])
@pytest.mark.parametrize("tool, name", [(build_cli, "minirt-build"), (run_cli, "minirt-run")])
def test_bad_options_exit_2_before_building(tool, name: str, args: list[str], message: str,
                                            model: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "fw"
    rc = tool.main([str(model), "--board", BOARD, "-o", str(out), *args])
    assert rc == 2
    _one_line_error(capsys.readouterr().err, name, message)
    assert not out.exists()


@pytest.mark.parametrize("tool, name", [(build_cli, "minirt-build"), (run_cli, "minirt-run")])
def test_calibration_not_matching_the_model_exits_2(tool, name: str, model: Path,
                                                     tmp_path: Path, capsys) -> None:
    calib = _calibration(tmp_path, shape=(16, 6, 6, 2))  # no batch axis of samples
    out = tmp_path / "fw"
    rc = tool.main([str(model), "--board", BOARD, "-o", str(out), "--quantize", "int8",
                    "--calibration", str(calib)])
    assert rc == 2
    _one_line_error(capsys.readouterr().err, name, "'input_0' has shape (16, 6, 6, 2)",
                    "(S, 1, 6, 6, 2)")
    assert not out.exists()


def test_unsupported_op_is_a_located_error(tmp_path: Path, capsys) -> None:
    path = tmp_path / "atan.mlir"
    path.write_text("func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
                    "  %0 = stablehlo.atan2 %a, %b : tensor<4xf32>\n"
                    "  return %0 : tensor<4xf32>\n}\n")
    calib = tmp_path / "c.npz"
    np.savez(calib, input_0=np.ones((2, 4), np.float32), input_1=np.ones((2, 4), np.float32))
    out = tmp_path / "fw"
    assert build_cli.main([str(path), "--board", BOARD, "-o", str(out), "--quantize", "int8",
                           "--calibration", str(calib)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:8: error: --quantize int8: 'atan2': ") and \
        "Traceback" not in err, err
    assert not out.exists()


def test_int8_io_build_reports_io_quantization(model: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "fw"
    calib = _calibration(tmp_path)
    assert build_cli.main([str(model), "--board", BOARD, "-o", str(out), "--quantize", "int8",
                           "--calibration", str(calib), "--int8-io"]) == 0
    text = capsys.readouterr().out
    q = json.loads((out / "size.json").read_text())["quantization"]
    assert q["mode"] == "int8" and q["int8_io"] and q["calibration"] == str(calib)
    (inp,), (outp,) = q["io"]["inputs"], q["io"]["outputs"]
    assert inp["name"] == "input_0" and inp["scale"] > 0 and -128 <= inp["zero_point"] <= 127
    # The softmax output: TFLite's fixed 1/256 steps from -128.
    assert outp == {"name": "output_0", "scale": 1 / 256, "zero_point": -128}
    assert f"int8 I/O: input_0: scale {inp['scale']!r}, zero point {inp['zero_point']}" in text
    assert "int8 I/O: output_0: scale 0.00390625, zero point -128" in text
    assert q["accuracy"]["cosine_similarity"] > 0.99


@pytest.mark.parametrize("int8_io", [False, True])
def test_run_check_on_the_board(int8_io: bool, model: Path, tmp_path: Path, capsys) -> None:
    """The int8 firmware against the reference run of the same quantized graph: int8
    outputs exactly, f32 ones like isclose. With --int8-io the inputs are int8."""
    calib = _calibration(tmp_path)
    x = np.random.default_rng(5).standard_normal((1, 6, 6, 2)).astype(np.float32)
    inputs = tmp_path / "in.npz"
    if int8_io:
        np.savez(inputs, input_0=np.random.default_rng(5).integers(-128, 128, x.shape)
                 .astype(np.int8))
    else:
        np.savez(inputs, input_0=x)
    args = [str(model), "--board", BOARD, "-o", str(tmp_path / "fw"), "--check", "--inputs",
            str(inputs), "--quantize", "int8", "--calibration", str(calib),
            *(["--int8-io"] if int8_io else [])]
    assert run_cli.main(args) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "check: outputs match the reference" in text
    assert f"output_0: {'int8' if int8_io else 'float32'} [1, 5]" in text


def test_float_inputs_to_int8_io_are_refused(model: Path, tmp_path: Path, capsys) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input_0=np.zeros((1, 6, 6, 2), np.float32))
    rc = run_cli.main([str(model), "--reference", "--inputs", str(inputs), "--quantize",
                       "int8", "--calibration", str(_calibration(tmp_path)), "--int8-io"])
    assert rc == 2
    _one_line_error(capsys.readouterr().err, "minirt-run", "has dtype float32",
                    "expects i8")


def test_new_calibration_contents_rebuild(model: Path, tmp_path: Path, capsys) -> None:
    """The build stamp holds the calibration file's hash: the same path with other
    samples is another firmware."""
    calib = _calibration(tmp_path, seed=1)
    args = [str(model), "--board", BOARD, "-o", str(tmp_path / "fw"), "--quantize", "int8",
            "--calibration", str(calib)]
    assert run_cli.main(args) == 0
    assert "building" in capsys.readouterr().err
    assert run_cli.main(args) == 0
    assert "building" not in capsys.readouterr().err
    _calibration(tmp_path, seed=2)  # same name, other samples
    assert run_cli.main(args) == 0
    assert "building" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["int8", "int8-weights", "fp16"])
@pytest.mark.parametrize("tool, name, extra", [
    (build_cli, "minirt-build", ["--board", BOARD]),
    (build_cli, "minirt-build", ["--board", BOARD, "--dump-schedule"]),
    (run_cli, "minirt-run", ["--board", BOARD]),
    (run_cli, "minirt-run", ["--reference"]),
    (bench_cli, "minirt-bench", ["--board", "x86-64"]),
])
def test_an_int8_model_is_already_quantized(tool, name: str, extra: list[str], mode: str,
                                            models_dir: Path, tmp_path: Path,
                                            capsys) -> None:
    """--quantize on an int8 .tflite says so in one line (exit 2): int8 once refused
    the calibration file's dtype, and fp16 / int8-weights built the same model and
    compared it with itself as if it were a float one."""
    kws = models_dir / "mlperf_tiny" / "kws_ref_model.tflite"
    calib = tmp_path / "calib.npz"
    np.savez(calib, input_0=np.zeros((2, 1, 49, 10, 1), np.float32))
    out = tmp_path / "fw"
    args = ["--calibration", str(calib)] if mode == "int8" else []
    rc = tool.main([str(kws), *extra, "-o", str(out), "--quantize", mode, *args])
    assert rc == 2
    _one_line_error(capsys.readouterr().err, name, f"{kws}: the model is already quantized "
                    f"(int8), and --quantize {mode} quantizes float models: drop --quantize")
    assert not out.exists()


def test_the_passes_refuse_an_already_quantized_graph(models_dir: Path, tmp_path: Path) -> None:
    """The Python API's path (prepare_graph) refuses it as the commands do."""
    kws = models_dir / "mlperf_tiny" / "kws_ref_model.tflite"
    calib = tmp_path / "calib.npz"
    np.savez(calib, input_0=np.zeros((2, 1, 49, 10, 1), np.float32))
    for options in (QuantizeOptions("fp16"), QuantizeOptions("int8", calibration=str(calib))):
        with pytest.raises(UsageError, match="the model is already quantized .int8."):
            prepare_graph(load_graph(kws), options)
    assert prepare_graph(load_graph(kws), QuantizeOptions()).inputs  # none: as it is
