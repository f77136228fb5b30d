"""Importing cholesky, triangular_solve, batch_norm_training and batch_norm_grad
(frontend/stablehlo_linalg.py): pretty and generic forms give the same graph op, and
ill-formed uses are located errors (exit code 2 from the command line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.linalg_models import cholesky_op, func, load
from toolchain.cli import run as run_cli
from toolchain.diagnostics import CompileError

T = "tensor<2x3x3xf32>"


def ops(text: str) -> list[tuple[str, dict]]:
    return [(n.op, n.attrs) for n in load(text).nodes]


@pytest.mark.parametrize("lower", [True, False, None])
def test_cholesky_pretty_and_generic(lower: bool | None) -> None:
    forms = [ops(func([f"%a: {T}"], [cholesky_op("%r", "%a", (2, 3, 3), lower,
                                                  generic=generic)], [T], ["%r"]))
             for generic in (False, True)]
    # `lower` is optional and false when absent, as in the dialect.
    assert forms[0] == forms[1] == [("cholesky", {"lower": bool(lower)})]


SOLVE_ATTRS = ("<{left_side = false, lower = true, transpose_a = #stablehlo<transpose "
               "ADJOINT>, unit_diagonal = true}>")


@pytest.mark.parametrize("name", ['"stablehlo.triangular_solve"', "stablehlo.triangular_solve"])
def test_triangular_solve_forms(name: str) -> None:
    # StableHLO prints triangular_solve only in generic form; the bare name takes it too.
    text = func([f"%a: {T}", "%b: tensor<2x4x3xf32>"],
                [f"%r = {name}(%a, %b) {SOLVE_ATTRS} : ({T}, tensor<2x4x3xf32>) -> "
                 "tensor<2x4x3xf32>"], ["tensor<2x4x3xf32>"], ["%r"])
    assert ops(text) == [("triangular_solve", {"left_side": False, "lower": True,
                                               "unit_diagonal": True,
                                               "transpose_a": "ADJOINT"})]


BN_TYPES = ("(tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, "
            "tensor<3xf32>, tensor<3xf32>)")


@pytest.mark.parametrize("name", ['"stablehlo.batch_norm_training"',
                                  "stablehlo.batch_norm_training"])
def test_batch_norm_training_forms(name: str) -> None:
    text = func(["%x: tensor<2x3xf32>", "%s: tensor<3xf32>"],
                [f"%y, %m, %v = {name}(%x, %s, %s) {{epsilon = 1.0e-3 : f32, "
                 f"feature_index = 1 : i64}} : {BN_TYPES}"],
                ["tensor<2x3xf32>", "tensor<3xf32>", "tensor<3xf32>"], ["%y", "%m", "%v"])
    assert ops(text) == [("batch_norm_training", {"epsilon": pytest.approx(1e-3),
                                                  "feature_index": 1})]


def _solve(attrs: str, a: str = "tensor<2x2xf32>", b: str = "tensor<2x2xf32>") -> str:
    return func([f"%a: {a}", f"%b: {b}"],
                [f'%r = "stablehlo.triangular_solve"(%a, %b) {attrs} : ({a}, {b}) -> {b}'],
                [b], ["%r"])


NT = "transpose_a = #stablehlo<transpose NO_TRANSPOSE>"


@pytest.mark.parametrize("text,message", [
    (func(["%a: tensor<2x3xf32>"], ["%r = stablehlo.cholesky %a, lower = true : "
                                    "tensor<2x3xf32>"], ["tensor<2x3xf32>"], ["%r"]),
     "cholesky's operand must be a batch of square matrices, not tensor<2x3xf32>"),
    (func(["%a: tensor<2x2xi32>"], ["%r = stablehlo.cholesky %a : tensor<2x2xi32>"],
          ["tensor<2x2xi32>"], ["%r"]), "cholesky takes float tensors, not i32"),
    (func(["%a: tensor<2x2xcomplex<f32>>"], ["%r = stablehlo.cholesky %a : "
                                             "tensor<2x2xcomplex<f32>>"],
          ["tensor<2x2xcomplex<f32>>"], ["%r"]), "does not take complex values"),
    (_solve("<{left_side = true, lower = true, unit_diagonal = false}>"),
     "missing attribute 'transpose_a'"),
    (_solve(f"<{{left_side = 1 : i64, lower = true, unit_diagonal = false, {NT}}}>"),
     "attribute 'left_side' must be true or false"),
    (_solve(f"<{{left_side = true, lower = true, unit_diagonal = false, {NT}}}>",
            b="tensor<3x2xf32>"),
     "b's dim 0 must be 2 (a's size) when left_side is true, not 3"),
    (_solve("<{left_side = true, lower = true, unit_diagonal = false, transpose_a = "
            "#stablehlo<transpose CONJ>}>"), "unknown transpose_a CONJ"),
    (func(["%x: tensor<2x3xf32>", "%s: tensor<3xf32>"],
          ['%y, %m, %v = "stablehlo.batch_norm_training"(%x, %s, %s) {epsilon = 1.0e-3 : '
           f"f32, feature_index = 0 : i64}} : {BN_TYPES}"],
          ["tensor<2x3xf32>"], ["%y"]), "operand 1 must be tensor<2xf32>, not tensor<3xf32>"),
    (func(["%x: tensor<2x3xf32>", "%s: tensor<3xf32>"],
          [f'%y, %m, %v = "stablehlo.batch_norm_training"(%x, %s, %s) {{feature_index = 1 '
           f": i64}} : {BN_TYPES}"], ["tensor<2x3xf32>"], ["%y"]),
     "missing float attribute 'epsilon'"),
])
def test_located_errors(text: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        load(text)
    assert message in info.value.message
    assert info.value.loc.line_col[0] == 2  # the op's line


def test_bad_model_exits_2(tmp_path: Path, capsys) -> None:
    model = tmp_path / "bad.mlir"
    model.write_text(_solve("<{left_side = true, lower = true, unit_diagonal = false, "
                            "transpose_a = #stablehlo<transpose CONJ>}>"))
    assert run_cli.main([str(model), "--reference"]) == 2
    err = capsys.readouterr().err
    assert f"{model}:2:8: error:" in err and "unknown transpose_a CONJ" in err
    assert "Traceback" not in err
