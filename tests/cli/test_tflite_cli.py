"""`.tflite` models wherever `.mlir` ones go: minirt-build (--dump-ir, firmware),
minirt-run (--reference, --board --check), and the errors a .tflite gets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model, single_op_model

from toolchain.cli import build, run


def _model() -> bytes:
    rng = np.random.default_rng(0)
    x = Tensor((1, 4, 4, 2), "float32", name="image")
    w = Tensor((3, 3, 3, 2), "float32", data=rng.standard_normal((3, 3, 3, 2)))
    c, r, y = (Tensor(s, "float32") for s in ((1, 4, 4, 3), (1, 48), (1, 48)))
    return build_model([
        Op("CONV_2D", [x, w, None], [c], {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                                           "fused_activation_function": "RELU6"}),
        Op("RESHAPE", [c, Tensor((2,), "int32", data=np.array([1, 48]))], [r]),
        Op("SOFTMAX", [r], [y], {"beta": 1.0})], [x], [y])


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "net.tflite"
    path.write_bytes(_model())
    return path


def test_dump_ir(model: Path, capsys) -> None:
    assert build.main(["--dump-ir", str(model)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("graph @main(%arg0: tensor<1x4x4x2xf32>) -> (tensor<1x48xf32>) {")
    assert "convolution(" in out and "exponential(" in out


def test_dump_generic_is_for_mlir(model: Path, capsys) -> None:
    assert build.main(["--dump-generic", str(model)]) == 2
    err = capsys.readouterr().err
    assert err == (f"minirt-build: error: {model}: --dump-generic prints MLIR in generic op "
                   "form; a .tflite model is no MLIR (--dump-ir prints its graph)\n")


def test_reference_run_with_npz_keys(model: Path, tmp_path: Path, capsys) -> None:
    x = np.random.default_rng(1).standard_normal((1, 4, 4, 2)).astype(np.float32)
    np.savez(tmp_path / "in.npz", input_0=x)
    out = tmp_path / "out.npz"
    assert run.main(["--reference", str(model), "--inputs", str(tmp_path / "in.npz"),
                     "--save-outputs", str(out)]) == 0
    assert "output_0: float32 [1, 48]" in capsys.readouterr().out
    saved = np.load(out)
    assert saved.files == ["output_0"]
    np.testing.assert_allclose(saved["output_0"].sum(), 1.0, rtol=1e-6)


def test_unsupported_ops_exit_2_in_one_line(tmp_path: Path, capsys) -> None:
    x, a, b, c = (Tensor((2, 3), "float32") for _ in range(4))
    path = tmp_path / "odd.tflite"
    path.write_bytes(build_model([Op("REAL", [x], [a], {}), Op("IMAG", [a], [b], {}),
                                  Op("REAL", [b], [c], {})], [x], [c]))
    for main, args in ((run.main, ["--reference"]), (build.main, ["--dump-ir"]),
                       (build.main, ["--board", "x86-64", "-o", str(tmp_path / "fw")])):
        assert main([*args, str(path)]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"{path}: 3 operators are not supported: REAL x2 (operators 0, 2), IMAG x1 "
            "(operator 1)"]
    assert not (tmp_path / "fw").exists()


def test_unreadable_model(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "dir.tflite"
    folder.mkdir()
    assert run.main(["--reference", str(folder)]) == 2
    assert capsys.readouterr().err.startswith(f"minirt-run: error: {folder}: cannot read the "
                                              "model: ")


def test_other_suffixes_are_named(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.pb"
    path.write_bytes(b"\0")
    assert build.main(["--dump-ir", str(path)]) == 2
    assert ("expected an MLIR text file (.mlir), a TFLite flatbuffer (.tflite) or an ONNX "
            "model (.onnx)") in capsys.readouterr().err


def test_help_mentions_tflite(capsys) -> None:
    for main in (build.main, run.main):
        with pytest.raises(SystemExit):
            main(["--help"])
        assert ".tflite" in capsys.readouterr().out


def test_check_tolerance_is_tflites_for_tflite_models() -> None:
    assert run.check_tolerance("m.tflite") == (1e-4, 1e-5)
    assert run.check_tolerance("m.mlir") == (run.RTOL, run.ATOL)
    # An element 2e-5 off on an output of 0.19 (what f32 summation order does to ad01):
    got, want = [np.array([0.19162, 42.0], np.float32)], [np.array([0.19164, 42.0], np.float32)]
    assert run.compare(got, want, rtol=1e-4, atol=1e-5) == []
    assert run.compare(got, want)[0].startswith("output_0: 1 of 2 elements differ")


def test_board_run_and_check(model: Path, tmp_path: Path, capsys) -> None:
    assert run.main([str(model), "--board", "x86-64", "--check", "-o",
                     str(tmp_path / "fw")]) == 0
    out = capsys.readouterr().out
    assert "check: outputs match the reference" in out and "instructions: " in out


def test_int8_data_movement_builds_and_checks(tmp_path: Path, capsys) -> None:
    """An int8 model of data movement only: int8 I/O and arena, exact --check."""
    x = Tensor((1, 4, 4, 2), "int8", scale=0.1, zero_point=-5)
    y = Tensor((1, 2, 2, 2), "int8", scale=0.1, zero_point=-5)
    path = tmp_path / "pool.tflite"
    path.write_bytes(single_op_model("MAX_POOL_2D", [x], [y], padding="VALID", stride_w=2,
                                     stride_h=2, filter_width=2, filter_height=2,
                                     fused_activation_function="RELU6"))
    assert run.main([str(path), "--board", "x86-64", "--check", "-o",
                     str(tmp_path / "fw")]) == 0
    out = capsys.readouterr().out
    assert "output_0: int8 [1, 2, 2, 2]" in out and "check: outputs match" in out
