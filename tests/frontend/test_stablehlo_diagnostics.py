"""The StableHLO importer's error report: an error in a function that several calls
inline is reported once, at the op, with the call sites as notes; errors come out in
source order (issue 9: they were repeated per call site, out of line order)."""

from __future__ import annotations

import pytest

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.mlir import parse_text

MODEL = """func.func private @helper(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.not_an_op"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @twice(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = call @helper(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "stablehlo.also_not_an_op"(%0) : (tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = call @twice(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "stablehlo.third_bad_op"(%0) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = call @helper(%1) : (tensor<3xf32>) -> tensor<3xf32>
  %3 = call @twice(%2) : (tensor<3xf32>) -> tensor<3xf32>
  return %3 : tensor<3xf32>
}
"""


def test_errors_in_called_functions_once_each_in_source_order() -> None:
    with pytest.raises(CompileError) as info:
        import_module(parse_text(MODEL, "m.mlir"))
    errors = [info.value, *info.value.notes]
    assert [(e.message, e.loc.line_col[0]) for e in errors] == [
        ("unsupported op 'stablehlo.not_an_op'", 2),
        ("unsupported op 'stablehlo.also_not_an_op'", 7),
        ("unsupported op 'stablehlo.third_bad_op'", 12),
    ]
    # @helper is called at line 6 (inside @twice, itself called twice) and line 13.
    assert [(m, loc.line_col[0]) for m, loc in errors[0].context] == [
        ("'@helper' is called here", 6), ("'@helper' is called here", 13)]
    assert [loc.line_col[0] for _, loc in errors[1].context] == [11, 14]
    assert errors[2].context == []
    rendered = info.value.render()
    assert rendered.count("error:") == 3 and rendered.count("note:") == 4


# Found while measuring docs/ops.md's element types (and by the fuzzer): tracebacks from
# the importer on well-formed text, now errors at the op.
@pytest.mark.parametrize("body, message", [
    ("%r = stablehlo.convolution(%x, %x) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
     "[b, 0, 1, f], window = {stride = [1, 1]} : (tensor<1x1x1x1xcomplex<f32>>, "
     "tensor<1x1x1x1xcomplex<f32>>) -> tensor<1x1x1x1xcomplex<f32>>",
     "'stablehlo.convolution' does not take complex values in minirt"),
    ("%b = stablehlo.constant dense<true> : tensor<1x1x1x1xi1>\n"
     "  %r = stablehlo.uniform_quantize %b : (tensor<1x1x1x1xi1>) -> "
     "tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>",
     "'stablehlo.uniform_quantize': "),
])
def test_ill_typed_ops_are_errors_at_the_op(body: str, message: str) -> None:
    text = ("func.func @main(%x: tensor<1x1x1x1xcomplex<f32>>) -> tensor<1x1x1x1xf32> {\n"
            f"  {body}\n  %z = stablehlo.constant dense<0.0> : tensor<1x1x1x1xf32>\n"
            "  return %z : tensor<1x1x1x1xf32>\n}\n")
    with pytest.raises(CompileError) as info:
        import_module(parse_text(text, "m.mlir"))
    errors = [info.value, *info.value.notes]
    assert any(message in e.message and e.loc is not None for e in errors), \
        [e.message for e in errors]
