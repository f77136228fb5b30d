"""`minirt-run --reference` and `minirt-build` from the command line's point of view."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import build, run

MODEL = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xi32>) -> (tensor<2x3xf32>, tensor<3xi32>) {
  %0 = stablehlo.tanh %a : tensor<2x3xf32>
  %1 = stablehlo.add %b, %b : tensor<3xi32>
  return %0, %1 : tensor<2x3xf32>, tensor<3xi32>
}
"""  # noqa: E501


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.mlir"
    path.write_text(MODEL)
    return path


def test_inputs_and_saved_outputs_round_trip(model: Path, tmp_path: Path, capsys) -> None:
    a = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, -2, 3], np.int32)
    np.savez(tmp_path / "in.npz", input_0=a, input_1=b)
    out = tmp_path / "out.npz"
    assert run.main(["--reference", str(model), "--inputs", str(tmp_path / "in.npz"),
                     "--save-outputs", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "output_0: float32 [2, 3]" in printed and "output_1: int32 [3]" in printed
    saved = np.load(out)
    assert sorted(saved.files) == ["output_0", "output_1"]
    np.testing.assert_array_equal(saved["output_0"], np.tanh(a))
    np.testing.assert_array_equal(saved["output_1"], 2 * b)


def test_random_inputs_are_seeded(model: Path, tmp_path: Path, capsys) -> None:
    outs = []
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        path = tmp_path / f"{name}.npz"
        assert run.main(["--reference", str(model), "--seed", seed,
                         "--save-outputs", str(path)]) == 0
        outs.append(np.load(path))
    capsys.readouterr()
    for key in ("output_0", "output_1"):
        np.testing.assert_array_equal(outs[0][key], outs[1][key])
    assert not np.array_equal(outs[0]["output_0"], outs[2]["output_0"])


def test_default_seed_is_stable(model: Path, capsys) -> None:
    assert run.main(["--reference", str(model)]) == 0
    first = capsys.readouterr().out
    assert run.main(["--reference", str(model), "--seed", "0"]) == 0
    assert capsys.readouterr().out == first


def _one_line_error(err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("minirt-run: error: ")
    assert "Traceback" not in err
    for p in parts:
        assert p in lines[0]


def test_missing_input_key(model: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", input_0=np.zeros((2, 3), np.float32))
    code = run.main(["--reference", str(model), "--inputs", str(tmp_path / "in.npz")])
    assert code == 2
    _one_line_error(capsys.readouterr().err, "missing 'input_1'", "takes 2 inputs")


def test_wrong_input_shape(model: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", input_0=np.zeros((3, 2), np.float32),
             input_1=np.zeros(3, np.int32))
    code = run.main(["--reference", str(model), "--inputs", str(tmp_path / "in.npz")])
    assert code == 2
    _one_line_error(capsys.readouterr().err, "'input_0' has shape (3, 2)", "expects (2, 3)")


def test_wrong_input_dtype(model: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", input_0=np.zeros((2, 3), np.float32),
             input_1=np.zeros(3, np.float32))
    assert run.main(["--reference", str(model), "--inputs", str(tmp_path / "in.npz")]) == 2
    _one_line_error(capsys.readouterr().err, "'input_1' has dtype float32")


def test_unreadable_npz(model: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "in.npz"
    bad.write_text("not an npz")
    assert run.main(["--reference", str(model), "--inputs", str(bad)]) == 2
    _one_line_error(capsys.readouterr().err, "cannot read inputs")


def test_entry_option(tmp_path: Path, capsys) -> None:
    path = tmp_path / "two.mlir"
    path.write_text(MODEL + "func.func @zero() -> tensor<2xi32> {\n"
                    "  %0 = stablehlo.iota dim = 0 : tensor<2xi32>\n"
                    "  return %0 : tensor<2xi32>\n}\n")
    out = tmp_path / "o.npz"
    assert run.main(["--reference", str(path), "--entry", "zero",
                     "--save-outputs", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out)["output_0"], [0, 1])
    capsys.readouterr()


def test_run_reports_model_errors_with_location(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(MODEL.replace("tensor<3xi32>) {", "tensor<3xi32>) {\n  %x = foo", 1))
    assert run.main(["--reference", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:") and "Traceback" not in err


def test_build_dump_generic_parses_back(model: Path, tmp_path: Path, capsys) -> None:
    assert build.main(["--dump-generic", str(model)]) == 0
    generic = tmp_path / "g.mlir"
    generic.write_text(capsys.readouterr().out)
    assert build.main(["--dump-ir", str(model)]) == 0
    ir1 = capsys.readouterr().out
    assert build.main(["--dump-ir", str(generic)]) == 0
    ir2 = capsys.readouterr().out
    strip = lambda s: [ln.split("  //")[0] for ln in s.splitlines()]  # noqa: E731
    assert strip(ir1) == strip(ir2)


def test_shared_model_via_cli(jax_model: Path, tmp_path: Path, capsys) -> None:
    npz = jax_model.with_suffix(".npz")
    out = tmp_path / "out.npz"
    assert run.main(["--reference", str(jax_model), "--inputs", str(npz),
                     "--save-outputs", str(out)]) == 0
    capsys.readouterr()
    want, got = np.load(npz), np.load(out)
    for key in got.files:
        assert np.isclose(got[key], want[key], rtol=1e-5, atol=1e-6).all()


def test_a_model_the_module_cannot_hold_is_a_usage_error(capsys) -> None:
    from toolchain.cli.common import EXIT_INPUT, run_tool
    from toolchain.module.pack import PackError

    def body(argv):
        raise PackError("at most 65535 inputs and 65535 outputs")

    assert run_tool("minirt-build", body) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err == ("minirt-build: error: the model does not fit a module: at most 65535 "
                   "inputs and 65535 outputs\n")
