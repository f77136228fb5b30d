"""Element types at import: every type minirt knows is taken (the sub-byte integers
wrapping at their width), a literal too wide for its type is a located error; bf16
literals enter the graph rounded to bf16."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.cli import run as run_cli
from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.frontend.stablehlo import UNSUPPORTED_DTYPES
from toolchain.graph.ir import Graph
from toolchain.mlir import parse_text
from toolchain.reference import run_graph
from toolchain.types import DTYPES, round_to_bf16


def load(text: str) -> Graph:
    return import_module(parse_text(text, "m.mlir"))


def errors(text: str) -> list[tuple[str, tuple[int, int] | None]]:
    with pytest.raises(CompileError) as info:
        load(text)
    return [(e.message, e.loc.line_col if e.loc else None)
            for e in [info.value, *info.value.notes]]


def test_every_known_type_is_imported() -> None:
    # Of the element types the backends know (DTYPES), none is refused since the
    # sub-byte integers compute (tests/e2e/test_sub_byte.py). Complex types are DTYPES
    # too: the ops that take them are graph/ops.py's COMPLEX_OPS, any other is an error
    # at the op (tests/frontend/test_stablehlo_complex.py).
    assert set(UNSUPPORTED_DTYPES) <= set(DTYPES)
    assert {"i2", "i4", "ui2", "ui4"} <= set(DTYPES) - set(UNSUPPORTED_DTYPES)


def test_sub_byte_values_wrap_at_their_width() -> None:
    g = load("""
func.func @main(%x: tensor<3xi4>, %y: tensor<3xui2>)
    -> (tensor<3xi4>, tensor<3xui2>, tensor<3xi8>) {
  %a = stablehlo.add %x, %x : tensor<3xi4>
  %b = stablehlo.add %y, %y : tensor<3xui2>
  %c = stablehlo.convert %a : (tensor<3xi4>) -> tensor<3xi8>
  return %a, %b, %c : tensor<3xi4>, tensor<3xui2>, tensor<3xi8>
}
""")
    a, b, c = run_graph(g, [np.array([7, -8, 3], np.int8), np.array([3, 2, 1], np.uint8)])
    np.testing.assert_array_equal(a, [-2, 0, 6])  # 14 and -16 wrap
    np.testing.assert_array_equal(b, [2, 0, 2])
    np.testing.assert_array_equal(c, [-2, 0, 6])


def test_i4_quantized_storage_dequantizes() -> None:
    g = load("""
func.func @main() -> tensor<2xf32> {
  %w = stablehlo.constant dense<[1, -2]> : tensor<2x!quant.uniform<i4:f32, 0.5>>
  %x = stablehlo.uniform_dequantize %w : (tensor<2x!quant.uniform<i4:f32, 0.5>>) -> tensor<2xf32>
  return %x : tensor<2xf32>
}
""")
    (x,) = run_graph(g, [])
    np.testing.assert_array_equal(x, [0.5, -1.0])


def test_command_line_reports_a_literal_too_wide_for_i4(tmp_path, capsys) -> None:
    model = tmp_path / "m.mlir"
    model.write_text("func.func @main() -> tensor<2xi4> {\n"
                     "  %c = stablehlo.constant dense<[1, 16]> : tensor<2xi4>\n"
                     "  return %c : tensor<2xi4>\n}\n")
    assert run_cli.main([str(model), "--reference"]) == 2
    err = capsys.readouterr().err
    assert f"{model}:2:" in err and "integer literal 16 does not fit in i4" in err
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
