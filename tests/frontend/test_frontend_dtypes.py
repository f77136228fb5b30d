"""Element types at import: unsupported ones are refused with a located error naming
the type; bf16 literals enter the graph rounded to bf16."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.cli import run as run_cli
from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.frontend.stablehlo import UNSUPPORTED_DTYPES
from toolchain.graph.ir import Graph
from toolchain.mlir import parse_text
from toolchain.types import DTYPES, round_to_bf16


def load(text: str) -> Graph:
    return import_module(parse_text(text, "m.mlir"))


def errors(text: str) -> list[tuple[str, tuple[int, int] | None]]:
    with pytest.raises(CompileError) as info:
        load(text)
    return [(e.message, e.loc.line_col if e.loc else None)
            for e in [info.value, *info.value.notes]]


def test_i4_is_the_only_type_refused() -> None:
    # Of the element types the backends know (DTYPES). Complex types are DTYPES too:
    # the ops that take them are graph/ops.py's COMPLEX_OPS, any other is an error at
    # the op (tests/frontend/test_stablehlo_complex.py).
    assert {n for n in UNSUPPORTED_DTYPES if n in DTYPES} == {"i4"}
    assert set(UNSUPPORTED_DTYPES) <= set(DTYPES)


def test_i4_arguments_and_results_are_located_errors() -> None:
    found = errors("""
func.func @main(%x: tensor<8xi4>, %y: tensor<8xi8>) -> tensor<8xi8> {
  %a = stablehlo.convert %y : (tensor<8xi8>) -> tensor<8xi4>
  %b = stablehlo.add %a, %x : tensor<8xi4>
  %c = stablehlo.convert %b : (tensor<8xi4>) -> tensor<8xi8>
  return %c : tensor<8xi8>
}
""")
    # Each i4 value is reported once, where it is defined; the convert back to i8 is not.
    assert [loc for _, loc in found] == [(2, 1), (3, 8), (4, 8)]
    assert found[0][0].startswith("argument 0 of '@main' has element type 'i4', which is "
                                  "not supported")
    assert found[1][0].startswith("'stablehlo.convert' result has element type 'i4'")
    assert "widen the model to i8" in found[1][0]


def test_i4_quantized_storage_is_refused() -> None:
    found = errors("""
func.func @main() -> tensor<2xf32> {
  %w = stablehlo.constant dense<[1, -2]> : tensor<2x!quant.uniform<i4:f32, 0.5>>
  %x = stablehlo.uniform_dequantize %w : (tensor<2x!quant.uniform<i4:f32, 0.5>>) -> tensor<2xf32>
  return %x : tensor<2xf32>
}
""")
    assert any("element type 'i4'" in m and loc == (3, 8) for m, loc in found), found


def test_command_line_reports_i4_with_exit_code_2(tmp_path, capsys) -> None:
    model = tmp_path / "m.mlir"
    model.write_text("func.func @main(%x: tensor<2xi4>) -> tensor<2xi4> {\n"
                     "  return %x : tensor<2xi4>\n}\n")
    assert run_cli.main([str(model), "--reference"]) == 2
    err = capsys.readouterr().err
    assert f"{model}:1:1: error: argument 0 of '@main' has element type 'i4'" in err
    assert "Traceback" not in err


def test_bf16_literals_are_rounded_at_import() -> None:
    g = load("""
func.func @main() -> (tensor<3xbf16>, bf16) {
  %c = stablehlo.constant dense<[1.001, 3.3, 0.1]> : tensor<3xbf16>
  %s = arith.constant 1.00390625000001 : bf16
  return %c, %s : tensor<3xbf16>, bf16
}
""")
    dense, scalar = (n.attrs["value"] for n in g.nodes if n.op == "constant")
    want = round_to_bf16(np.array([1.001, 3.3, 0.1], np.float32))
    np.testing.assert_array_equal(dense, want)
    assert dense.tolist() == [1.0, 3.296875, 0.10009765625]
    # Just above the tie between 1 and 1 + 2**-7: rounded once from the literal, up.
    assert scalar.dtype == np.float32 and float(scalar) == 1 + 2**-7
