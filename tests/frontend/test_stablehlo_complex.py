"""Importing complex values, fft, bitcast_convert, broadcast and the rng ops: the graph
they give, and the located errors of ill-typed uses."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.graph.ops import COMPLEX_OPS
from toolchain.graph.verify import verify_graph
from toolchain.mlir import parse_text
from toolchain.passes.complex import RULES, lower_complex
from toolchain.reference import run_graph


def load(text: str):
    graph = import_module(parse_text(text, "m.mlir"))
    verify_graph(graph)
    return graph


def error_lines(text: str) -> list[tuple[str, int]]:
    with pytest.raises(CompileError) as info:
        load(text)
    return [(e.message, e.loc.line_col[0]) for e in [info.value, *info.value.notes]]


def test_every_complex_op_has_a_lowering_rule() -> None:
    # The importer lets complex values into COMPLEX_OPS only; lower_complex must take
    # each of them, or a model would pass --reference and fail to build.
    assert set(RULES) == set(COMPLEX_OPS)


def test_complex_graph_lowers_to_real_tensors() -> None:
    g = load("""
func.func @main(%a: tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {
  %0 = stablehlo.multiply %a, %a : tensor<3xcomplex<f32>>
  return %0 : tensor<3xcomplex<f32>>
}
""")
    low = lower_complex(g)
    assert [t.type.shape for t in low.inputs] == [(3, 2)]
    assert [t.type.shape for t in low.outputs] == [(3, 2)]
    assert not any(t.type.dtype.is_complex for n in low.nodes for t in n.outputs)
    z = np.array([1 + 2j, -3j, 0.5], np.complex64)
    (got,) = run_graph(low, [np.stack([z.real, z.imag], axis=-1)])
    np.testing.assert_allclose(got[..., 0] + 1j * got[..., 1], z * z, rtol=1e-6)


def test_broadcast_pretty_and_generic_are_the_same_graph() -> None:
    pretty = load("""
func.func @main(%a: tensor<2xi32>) -> tensor<3x4x2xi32> {
  %0 = stablehlo.broadcast %a, sizes = [3, 4] : (tensor<2xi32>) -> tensor<3x4x2xi32>
  return %0 : tensor<3x4x2xi32>
}
""")
    generic = load("""
func.func @main(%a: tensor<2xi32>) -> tensor<3x4x2xi32> {
  %0 = "stablehlo.broadcast"(%a) {broadcast_sizes = array<i64: 3, 4>}
    : (tensor<2xi32>) -> tensor<3x4x2xi32>
  return %0 : tensor<3x4x2xi32>
}
""")
    for g in (pretty, generic):
        (node,) = g.nodes
        assert node.op == "broadcast_in_dim" and node.attrs["dims"] == (2,)
    x = np.array([5, -6], np.int32)
    np.testing.assert_array_equal(run_graph(pretty, [x])[0], np.broadcast_to(x, (3, 4, 2)))


@pytest.mark.parametrize("op,message", [
    ("%r = stablehlo.fft %a, type = RFFT, length = [8] : (tensor<2x8xcomplex<f32>>) -> "
     "tensor<2x5xcomplex<f32>>", "RFFT takes f32 or f64, not complex<f32>"),
    ("%r = stablehlo.fft %a, type = FFT, length = [4] : (tensor<2x8xcomplex<f32>>) -> "
     "tensor<2x8xcomplex<f32>>", "FFT of lengths [4] needs an operand ending in them"),
    ("%r = stablehlo.fft %a, type = IRFFT, length = [8] : (tensor<2x8xcomplex<f32>>) -> "
     "tensor<2x8xf32>", "IRFFT of lengths [8] needs an operand ending in [5]"),
    ("%r = stablehlo.compare LT, %a, %a : (tensor<2x8xcomplex<f32>>, "
     "tensor<2x8xcomplex<f32>>) -> tensor<2x8xi1>", "complex values compare EQ or NE only"),
    ("%s = stablehlo.constant dense<[1, 2, 3]> : tensor<3xui64>\n"
     "  %n, %r = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<3xui64>) -> "
     "(tensor<3xui64>, tensor<4xui32>)", "THREE_FRY's state must be a ui64 tensor of 2 values"),
    ("%lo = stablehlo.constant dense<0> : tensor<i1>\n"
     "  %s = stablehlo.constant dense<4> : tensor<1xi64>\n"
     "  %r = stablehlo.rng %lo, %lo, %s, distribution = UNIFORM : (tensor<i1>, tensor<i1>, "
     "tensor<1xi64>) -> tensor<4xi1>", "rng cannot fill i1"),
])
def test_ill_typed_uses_are_errors_at_the_op(op: str, message: str) -> None:
    lines = op.count("\n")
    text = ("func.func @main(%a: tensor<2x8xcomplex<f32>>) -> tensor<f32> {\n"
            f"  {op}\n  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
            "  return %z : tensor<f32>\n}\n")
    found = error_lines(text)
    assert any(message in m and line == 2 + lines for m, line in found), found
