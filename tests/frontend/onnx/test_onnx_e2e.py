"""End to end: an ONNX MLP, an ONNX CNN (docs/formats.md's example, its dynamic batch pinned
with --input-shape) and a QDQ-quantized ONNX CNN run with `minirt-run --check` on
cortex-m4, riscv32, aarch64 and x86-64, and match onnxruntime where it is installed.

Tolerances against onnxruntime: float models numpy.isclose(rtol=1e-5, atol=1e-5)
(onnxruntime sums in float32 in its own order); the QDQ CNN within one LSB of its output
scale: onnxruntime requantizes with float multipliers, minirt with TFLite's exact
fixed-point ones (onnxruntime's quantizer fuses and rounds the same way, so the same
bound holds for a model it quantized). --check itself compares with the reference: the
int8 layers exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx_e2e_models import (
    CNN_INPUT,
    QDQ_INPUT,
    cnn,
    mlp,
    output_scale,
    qdq_cnn_by_hand,
    qdq_cnn_by_onnxruntime,
)
from onnx_models import import_bytes, randn, run_ort
from test_onnx_qdq import dequantizes

from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli

BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]
# model -> (bytes, --input-shape options, input shape)
MODELS = {
    "mlp": (mlp, [], (2, 64)),
    "cnn": (cnn, ["--input-shape", f"input={'x'.join(map(str, CNN_INPUT))}"], CNN_INPUT),
    "qdq_cnn": (qdq_cnn_by_hand, [], QDQ_INPUT),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("onnx-e2e")
    for name, (make, _, shape) in MODELS.items():
        (root / f"{name}.onnx").write_bytes(make())
        np.savez(root / f"{name}-in.npz", input_0=randn(shape, 7, 1.5))
    return root


def _run(root: Path, name: str, board: str, capsys) -> np.ndarray:
    """minirt-run --board B model.onnx --check; its saved outputs."""
    out = root / f"{name}-{board}-out.npz"
    rc = run_cli.main([str(root / f"{name}.onnx"), "--board", board, "--check", "--inputs",
                       str(root / f"{name}-in.npz"), "--save-outputs", str(out), "-o",
                       str(root / f"{name}-{board}"), *MODELS[name][1]])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "check: outputs match the reference" in captured.out
    return np.load(out)["output_0"]


def _against_onnxruntime(data: bytes, x: np.ndarray, got: np.ndarray, quantized: bool
                         ) -> None:
    want = run_ort(data, [x])
    if want is None:
        return
    want = want[0]
    assert got.shape == want.shape
    if quantized:
        lsb = np.abs(got.astype(np.float64) - want) / output_scale(data)
        assert lsb.max() <= 1 + 1e-4, f"{lsb.max():.3f} LSB from onnxruntime"
    else:
        assert np.isclose(got, want, rtol=1e-5, atol=1e-5).all()


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", MODELS)
def test_check_on_board_and_match_onnxruntime(name: str, board: str, files: Path,
                                              capsys) -> None:
    got = _run(files, name, board, capsys)
    x = np.load(files / f"{name}-in.npz")["input_0"]
    _against_onnxruntime((files / f"{name}.onnx").read_bytes(), x, got, name == "qdq_cnn")


def test_qdq_cnn_is_integer_between_its_edges() -> None:
    """Every layer of the QDQ CNN runs on int8 kernels: the one int -> float conversion
    left is the output's DequantizeLinear."""
    graph = import_bytes(qdq_cnn_by_hand())
    assert len(dequantizes(graph)) == 1
    assert graph.nodes[-1].outputs[0] is graph.outputs[0]


def test_onnxruntime_quantized_cnn(tmp_path: Path, capsys) -> None:
    """A CNN quantized by onnxruntime's own quantize_static (QDQ, per-channel int8
    weights) compiles to int8 kernels and runs with --check on cortex-m4, within one
    LSB of onnxruntime on 8 inputs."""
    pytest.importorskip("onnxruntime", reason="onnxruntime (dev extra) is not installed")
    data = qdq_cnn_by_onnxruntime(tmp_path)
    assert len(dequantizes(import_bytes(data))) == 1
    (tmp_path / "q.onnx").write_bytes(data)
    xs = np.stack([randn(QDQ_INPUT, 300 + i, 1.5) for i in range(8)])
    for x in xs:
        np.savez(tmp_path / "in.npz", input_0=x)
        rc = run_cli.main([str(tmp_path / "q.onnx"), "--board", "cortex-m4", "--check",
                           "--inputs", str(tmp_path / "in.npz"), "--save-outputs",
                           str(tmp_path / "out.npz"), "-o", str(tmp_path / "fw")])
        captured = capsys.readouterr()
        assert rc == 0, captured.err
        _against_onnxruntime(data, x, np.load(tmp_path / "out.npz")["output_0"], True)


def test_reference_and_dump_ir(files: Path, capsys) -> None:
    model = str(files / "cnn.onnx")
    pin = MODELS["cnn"][1]
    assert run_cli.main([model, "--reference", *pin]) == 0
    assert "output_0: float32 [1, 4]" in capsys.readouterr().out
    assert build_cli.main(["--dump-ir", model, "--input-shape", "input=3x1x12x12"]) == 0
    out = capsys.readouterr().out
    assert "graph @main(%arg0: tensor<3x1x12x12xf32>) -> (tensor<3x4xf32>)" in out
    assert "convolution(" in out


def test_input_shape_is_part_of_the_build_stamp(files: Path, capsys) -> None:
    """A build for one --input-shape is not reused for another."""
    model, out = str(files / "cnn.onnx"), str(files / "cnn-stamp")
    for batch in (1, 2):
        rc = run_cli.main([model, "--board", "x86-64", "-o", out, "--input-shape",
                           f"input={batch}x1x12x12"])
        captured = capsys.readouterr()
        assert rc == 0, captured.err
        assert "building" in captured.err
        assert f"output_0: float32 [{batch}, 4]" in captured.out


def test_minirt_build_records_the_input_shape(files: Path, capsys) -> None:
    """minirt-build on an .onnx model: the size report, and the pin in the build stamp
    (minirt-run reuses a build only for the same pins)."""
    import json

    out = files / "cnn-build"
    rc = build_cli.main([str(files / "cnn.onnx"), "--board", "cortex-m4", "-o", str(out),
                         *MODELS["cnn"][1]])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "minirt-build: wrote" in captured.out
    stamp = json.loads((out / "build.json").read_text())["stamp"]
    assert stamp["input_shapes"] == {"input": list(CNN_INPUT)}
    assert (out / "size.json").exists()
