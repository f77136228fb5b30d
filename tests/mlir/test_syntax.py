"""The MLIR text parser on small inline snippets, one construct at a time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mlir_trees import same_tree

from toolchain.diagnostics import CompileError
from toolchain.mlir import parse_text
from toolchain.mlir.ir import (
    ArrayAttr,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    DictAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    StringAttr,
    StructAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
)
from toolchain.mlir.printer import print_generic
from toolchain.types import DTYPES, FunctionType, OpaqueType, QuantParams, TensorType, dtype

F32 = dtype("f32")


def tt(shape, name: str = "f32") -> TensorType:
    return TensorType(tuple(shape) if shape is not None else None, dtype(name))


def top_ops(text: str) -> list[Operation]:
    module = parse_text(text, "snippet.mlir")
    assert module.name == "builtin.module"
    return module.regions[0].blocks[0].ops


def body(text: str) -> list[Operation]:
    """The ops of the first function's body."""
    func = next(op for op in top_ops(text) if op.name == "func.func")
    return func.regions[0].blocks[0].ops


def one(text: str) -> Operation:
    """The single op of a function body that ends in `return`."""
    ops = body(text)
    assert ops[-1].name == "func.return"
    return ops[-2]


def const(literal: str) -> np.ndarray:
    """The numpy array of `stablehlo.constant <literal>`."""
    op = top_ops(f"%0 = stablehlo.constant {literal}\n")[0]
    value = op.attr("value")
    assert isinstance(value, DenseAttr)
    assert op.results[0].type == value.type
    return value.array


# ---------------------------------------------------------------------------- types


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64",
                                  "ui8", "index"])
def test_element_types(name: str) -> None:
    op = top_ops(f'"t.op"() {{t = tensor<2x{name}>, s = {name}}} : () -> ()\n')[0]
    assert op.attr("t") == TypeAttr(TensorType((2,), DTYPES[name]))
    assert op.attr("s") == TypeAttr(DTYPES[name])


def test_signed_alias_is_signless() -> None:
    op = top_ops('"t.op"() {t = si8} : () -> ()\n')[0]
    assert op.attr("t") == TypeAttr(dtype("i8"))


@pytest.mark.parametrize("text, shape", [
    ("tensor<f32>", ()),
    ("tensor<1x640xf32>", (1, 640)),
    ("tensor<0x3xf32>", (0, 3)),
    ("tensor<?x4xf32>", (None, 4)),
    ("tensor<?x?xf32>", (None, None)),
    ("tensor<*xf32>", None),
])
def test_tensor_shapes(text: str, shape) -> None:
    op = top_ops(f'"t.op"() {{t = {text}}} : () -> ()\n')[0]
    ty = op.attr("t").type
    assert ty.shape == shape and ty.dtype == F32
    assert str(ty) == text
    assert ty.is_static == (shape is not None and None not in shape)


def test_function_and_opaque_types() -> None:
    op = top_ops('"t.op"() {f = (tensor<2xf32>, i32) -> (tensor<f32>, i1), '
                 'g = () -> f32, v = vector<4xf32>, d = !foo.bar<1, 2>} : () -> ()\n')[0]
    assert op.attr("f") == TypeAttr(FunctionType((tt((2,)), dtype("i32")),
                                                 (tt(()), dtype("i1"))))
    assert op.attr("g") == TypeAttr(FunctionType((), (F32,)))
    assert op.attr("v") == TypeAttr(OpaqueType("vector<4xf32>"))
    assert op.attr("d") == TypeAttr(OpaqueType("!foo.bar<1, 2>"))


def test_quant_per_tensor() -> None:
    op = top_ops('"t.op"() {t = tensor<2x!quant.uniform<i8:f32, 0.5:-3>>} : () -> ()\n')[0]
    ty = op.attr("t").type
    assert ty.dtype == dtype("i8") and ty.shape == (2,)
    assert ty.quant == QuantParams(dtype("i8"), F32, (0.5,), (-3,))
    assert str(ty) == "tensor<2x!quant.uniform<i8:f32, 0.5:-3>>"


def test_quant_per_axis_with_storage_range() -> None:
    text = "tensor<3x2x!quant.uniform<i8<-127:127>:f32:0, {0.1:0, 0.25:1, 2.0e-3:-1}>>"
    op = top_ops(f'"t.op"() {{t = {text}}} : () -> ()\n')[0]
    q = op.attr("t").type.quant
    assert q.axis == 0
    assert q.scales == (0.1, 0.25, 0.002) and q.zero_points == (0, 1, -1)
    assert (q.storage_min, q.storage_max) == (-127, 127)
    assert q.storage == dtype("i8") and q.expressed == F32


def test_quant_default_zero_point_and_unsigned_storage() -> None:
    op = top_ops('"t.op"() {t = !quant.uniform<ui8:f32, 0.02>} : () -> ()\n')[0]
    q = op.attr("t").type
    assert q.storage == dtype("ui8") and q.scales == (0.02,) and q.zero_points == (0,)


def test_type_alias() -> None:
    ops = body("!t = tensor<4xf32>\n!q = !quant.uniform<i8:f32, 0.5>\n"
               "func.func @main(%a: !t, %b: tensor<4x!q>) -> !t {\n"
               "  %0 = stablehlo.abs %a : !t\n  return %0 : !t\n}\n")
    assert ops[0].results[0].type == tt((4,))
    func = top_ops("!t = tensor<4xf32>\nfunc.func @f(%a: !t) -> !t {\n  return %a : !t\n}\n")[0]
    assert func.attr("function_type").type == FunctionType((tt((4,)),), (tt((4,)),))


# ---------------------------------------------------------------------------- attributes


def test_generic_attribute_kinds() -> None:
    op = top_ops(
        '"t.op"() <{p = 7 : i64}> {i = 3, f = 1.5 : f32, neg = -2 : i32, s = "a\\"b\\n", '
        'u, b = true, c = false, arr = [1, "x", [2]], d = array<i64: 1, -2>, e = array<i64>, '
        'fa = array<f32: 1.5, 0x7F800000>, ba = array<i1: true, false>, sym = @foo, '
        'dict = {x = 1 : i8, y}, "quoted key" = unit, hexint = 0x10 : i32, '
        'ty = tensor<2xi8>} : () -> ()\n')[0]
    assert op.properties == {"p": IntAttr(7, dtype("i64"))}
    a = op.attributes
    assert a["i"] == IntAttr(3)
    assert a["f"] == FloatAttr(1.5, F32)
    assert a["neg"] == IntAttr(-2, dtype("i32"))
    assert a["s"] == StringAttr('a"b\n')
    assert a["u"] == UnitAttr() and a["quoted key"] == UnitAttr()
    assert a["b"] == BoolAttr(True) and a["c"] == BoolAttr(False)
    assert a["arr"] == ArrayAttr((IntAttr(1), StringAttr("x"), ArrayAttr((IntAttr(2),))))
    assert a["d"] == DenseArrayAttr(dtype("i64"), (1, -2))
    assert a["e"] == DenseArrayAttr(dtype("i64"), ())
    assert a["fa"].values[0] == 1.5 and math.isinf(a["fa"].values[1])
    assert a["ba"] == DenseArrayAttr(dtype("i1"), (True, False))
    assert a["sym"] == SymbolRefAttr("foo")
    assert a["dict"] == DictAttr((("x", IntAttr(1, dtype("i8"))), ("y", UnitAttr())))
    assert a["hexint"] == IntAttr(16, dtype("i32"))
    assert a["ty"] == TypeAttr(tt((2,), "i8"))
    assert op.attr("p") == IntAttr(7, dtype("i64"))  # properties are found by attr() too


def test_float_attribute_spellings() -> None:
    op = top_ops('"t.op"() {a = 1.0e-3 : f32, b = -2.5E+2 : f64, c = 1 : f32, '
                 'd = 0x7FC00000 : f32} : () -> ()\n')[0]
    assert op.attr("a") == FloatAttr(1e-3, F32)
    assert op.attr("b") == FloatAttr(-250.0, dtype("f64"))
    assert op.attr("c") == FloatAttr(1.0, F32)  # an integer spelling of a float attribute
    d = op.attr("d")  # a hexadecimal float is the type's bit pattern: a quiet NaN
    assert isinstance(d, FloatAttr) and d.type == F32 and math.isnan(d.value)


@pytest.mark.parametrize(("text", "value"), [
    ("0x3F800000 : f32", 1.0), ("0xC0000000 : f32", -2.0), ("0x3C00 : f16", 1.0),
    ("0x3F80 : bf16", 1.0), ("0x3FF0000000000000 : f64", 1.0),
    ("0x7F800000 : f32", math.inf)])
def test_hexadecimal_float_attributes_are_bit_patterns(text: str, value: float) -> None:
    op = top_ops(f'"t.op"() {{a = {text}}} : () -> ()\n')[0]
    assert op.attr("a").value == value


@pytest.mark.parametrize(("text", "message"), [
    # The parser fuzz found the first: a bit pattern wider than the type was converted as
    # a number and ended in OverflowError.
    ("0xFFFFFFFFFFFFFFFFFFFFFF : f32", "hexadecimal float literal of 88 bits does not fit "
                                       "in f32"),
    ("0x1FFFFFFFF : f32", "hexadecimal float literal 0x1ffffffff does not fit in f32"),
    ("0x1FFFF : f16", "does not fit in f16"),
    ("-0x3F800000 : f32", "hexadecimal float literal cannot have a sign")])
def test_bad_hexadecimal_float_attributes_are_located_errors(text: str, message: str) -> None:
    with pytest.raises(CompileError, match=message) as err:
        top_ops(f'"t.op"() {{a = {text}}} : () -> ()\n')
    assert "1:" in str(err.value)


def test_dialect_attributes() -> None:
    op = top_ops('"t.op"() {c = #stablehlo<comparison_direction GT>, '
                 'dot = #stablehlo.dot<lhs_batching_dimensions = [0], '
                 'lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>, '
                 'g = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], '
                 'start_index_map = [0], index_vector_dim = 1>, '
                 'o = #foo.thing<"anything" [x] <y>>} : () -> ()\n')[0]
    assert op.attr("c") == OpaqueAttr("stablehlo", "comparison_direction GT")
    dot = op.attr("dot")
    assert isinstance(dot, StructAttr) and dot.name == "stablehlo.dot"
    assert dot.get("lhs_batching_dimensions") == (0,)
    assert dot.get("rhs_contracting_dimensions") == (1,)
    assert op.attr("g").get("index_vector_dim") == 1
    assert op.attr("o") == OpaqueAttr("foo.thing", '"anything" [x] <y>')


def test_attribute_aliases() -> None:
    ops = top_ops("#dn = #stablehlo.dot<lhs_contracting_dimensions = [1], "
                  "rhs_contracting_dimensions = [0]>\n#one = 1 : i32\n"
                  "#loc0 = loc(\"model.py\":3:7)\n"
                  '"t.op"() {a = #dn, b = #one} : () -> () loc(#loc0)\n')
    assert len(ops) == 1
    assert ops[0].attr("a").get("lhs_contracting_dimensions") == (1,)
    assert ops[0].attr("b") == IntAttr(1, dtype("i32"))


def test_conv_dimension_numbers_both_spellings() -> None:
    short = top_ops('"t.op"() {c = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>}'
                    " : () -> ()\n")[0].attr("c")
    assert short.get("input_batch_dimension") == 0 and short.get("input_feature_dimension") == 3
    assert short.get("input_spatial_dimensions") == (1, 2)
    assert short.get("kernel_input_feature_dimension") == 2
    assert short.get("kernel_output_feature_dimension") == 3
    assert short.get("kernel_spatial_dimensions") == (0, 1)
    raw = top_ops('"t.op"() {c = #stablehlo.conv<raw input_batch_dimension = 0, '
                  "input_feature_dimension = 3, input_spatial_dimensions = [1, 2], "
                  "kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, "
                  "kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, "
                  "output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>}"
                  " : () -> ()\n")[0].attr("c")
    assert raw == short


# ---------------------------------------------------------------------------- dense literals


def test_dense_nested_lists() -> None:
    arr = const("dense<[[1.0, -2.5], [3.0e2, 0.0]]> : tensor<2x2xf32>")
    assert arr.dtype == np.float32
    np.testing.assert_array_equal(arr, [[1.0, -2.5], [300.0, 0.0]])


def test_dense_splats() -> None:
    np.testing.assert_array_equal(const("dense<1.5> : tensor<2x3xf32>"), np.full((2, 3), 1.5))
    np.testing.assert_array_equal(const("dense<-7> : tensor<3xi32>"), [-7, -7, -7])
    assert const("dense<0.0> : tensor<f32>").shape == ()
    np.testing.assert_array_equal(const("dense<1> : tensor<2xf32>"), [1.0, 1.0])


def test_dense_empty() -> None:
    assert const("dense<> : tensor<0xf32>").shape == (0,)
    assert const("dense<[]> : tensor<0x3xi8>").shape == (0, 3)


def test_dense_hex_blob_little_endian() -> None:
    arr = const('dense<"0x0000803F000000C0"> : tensor<2xf32>')
    np.testing.assert_array_equal(arr, [1.0, -2.0])
    arr = const('dense<"0x0100000002000000FFFFFFFF"> : tensor<3xi32>')
    np.testing.assert_array_equal(arr, [1, 2, -1])


def test_dense_hex_splat() -> None:
    arr = const('dense<"0x0000803F"> : tensor<2x2xf32>')
    assert arr.shape == (2, 2)
    np.testing.assert_array_equal(arr, np.ones((2, 2)))


def test_dense_hex_float_specials() -> None:
    arr = const("dense<[0xFF800000, 0x7F800000, 0x7FC00000, 0x80000000, 1.0]> : tensor<5xf32>")
    assert arr[0] == -np.inf and arr[1] == np.inf and np.isnan(arr[2])
    assert arr[3] == 0.0 and np.signbit(arr[3]) and arr[4] == 1.0
    assert const("dense<0xFF800000> : tensor<2xf32>")[1] == -np.inf
    assert const("dense<0xFC00> : tensor<f16>") == -np.inf
    assert const("dense<0xFFF0000000000000> : tensor<f64>") == -np.inf


def test_dense_bf16() -> None:
    arr = const("dense<[1.0, -2.0, 0x3F80, 0xFF80]> : tensor<4xbf16>")
    assert arr.dtype == np.float32  # bf16 values are held as float32
    np.testing.assert_array_equal(arr, [1.0, -2.0, 1.0, -np.inf])
    arr = const('dense<"0x803F00C0"> : tensor<2xbf16>')
    np.testing.assert_array_equal(arr, [1.0, -2.0])


def test_dense_f16_and_f64() -> None:
    assert const("dense<[0.5, 2.0]> : tensor<2xf16>").dtype == np.float16
    arr = const('dense<"0x000000000000F03F"> : tensor<1xf64>')
    assert arr.dtype == np.float64 and arr[0] == 1.0


def test_dense_booleans() -> None:
    arr = const("dense<[true, false, true]> : tensor<3xi1>")
    assert arr.dtype == np.bool_
    np.testing.assert_array_equal(arr, [True, False, True])
    np.testing.assert_array_equal(const("dense<true> : tensor<2xi1>"), [True, True])
    np.testing.assert_array_equal(const("dense<[1, 0]> : tensor<2xi1>"), [True, False])
    np.testing.assert_array_equal(const('dense<"0x0100"> : tensor<2xi1>'), [True, False])
    np.testing.assert_array_equal(const('dense<"0x01"> : tensor<3xi1>'), [True] * 3)


def test_dense_integers_at_the_limits() -> None:
    np.testing.assert_array_equal(const("dense<[-128, 127]> : tensor<2xi8>"), [-128, 127])
    np.testing.assert_array_equal(const("dense<[0, 255]> : tensor<2xui8>"), [0, 255])
    assert const("dense<[0, 255]> : tensor<2xui8>").dtype == np.uint8
    big = const("dense<[-9223372036854775808, 9223372036854775807]> : tensor<2xi64>")
    assert big.tolist() == [-(2**63), 2**63 - 1]
    np.testing.assert_array_equal(const("dense<[0x10, -0x1]> : tensor<2xi16>"), [16, -1])


def test_integer_literals_with_leading_zeros() -> None:
    """Issue 9: `[01, 02, 03]` is valid MLIR; it raised Python's "invalid literal for
    int() with base 0"."""
    np.testing.assert_array_equal(const("dense<[01, 02, 003]> : tensor<3xi32>"), [1, 2, 3])
    np.testing.assert_array_equal(const("dense<[-01, 00]> : tensor<2xi8>"), [-1, 0])
    np.testing.assert_array_equal(const("dense<010> : tensor<2xi64>"), [10, 10])
    np.testing.assert_array_equal(const("dense<[01.5, 00.25]> : tensor<2xf32>"), [1.5, 0.25])
    op = one(wrap("%0 = stablehlo.iota dim = 00 : tensor<4xf32>"))
    assert op.attr("iota_dimension") == IntAttr(0, dtype("i64"))
    op = one(wrap('%0 = "stablehlo.transpose"(%a) {permutation = array<i64: 00>, k = 07 : i32}'
                  " : (tensor<4xf32>) -> tensor<4xf32>"))
    assert op.attr("permutation") == DenseArrayAttr(dtype("i64"), (0,))
    assert op.attributes["k"] == IntAttr(7, dtype("i32"))


def test_signless_integers_take_the_unsigned_range_too() -> None:
    # As in MLIR: an i8 literal may be written as its unsigned bit pattern.
    np.testing.assert_array_equal(const("dense<[255, 128, -128]> : tensor<3xi8>"),
                                  [-1, -128, -128])
    with pytest.raises(CompileError, match="256 does not fit in i8"):
        const("dense<256> : tensor<i8>")
    with pytest.raises(CompileError, match="-1 does not fit in ui8"):
        const("dense<-1> : tensor<ui8>")


def test_bf16_decimal_literals_are_rounded_to_bf16() -> None:
    # 3.14063 is not a bf16; the literal means the nearest bf16, 3.140625.
    assert const("dense<3.14063> : tensor<bf16>") == np.float32(3.140625)
    assert const("dense<[1.00390625]> : tensor<1xbf16>")[0] == np.float32(1.0)  # a tie: even


def test_complex_element_types_and_literals() -> None:
    a = const("dense<[(1.0, -2.0), (0x7FC00000, 3)]> : tensor<2xcomplex<f32>>")
    assert a.dtype == np.complex64
    assert a[0] == 1 - 2j and np.isnan(a[1].real) and a[1].imag == 3
    b = const('dense<"0x000000000000F03F0000000000000040"> : tensor<complex<f64>>')
    assert b.dtype == np.complex128 and b == 1 + 2j
    assert const("dense<(0.5, 0.25)> : tensor<2xcomplex<f32>>").tolist() == [0.5 + 0.25j] * 2
    with pytest.raises(CompileError, match="expected a complex literal"):
        const("dense<1.0> : tensor<complex<f32>>")
    with pytest.raises(CompileError, match="unsupported element type 'complex<f16>'"):
        const("dense<(1.0, 1.0)> : tensor<complex<f16>>")


def test_dense_in_attribute_and_arith_constant() -> None:
    ops = body("func.func @main() -> (tensor<2xi64>, f32) {\n"
               "  %0 = arith.constant dense<[1, 2]> : tensor<2xi64>\n"
               "  %1 = arith.constant 1.5 : f32\n  return %0, %1 : tensor<2xi64>, f32\n}\n")
    assert ops[0].name == "arith.constant" and ops[0].results[0].type == tt((2,), "i64")
    assert ops[1].attr("value") == FloatAttr(1.5, F32) and ops[1].results[0].type == F32


def test_dense_resource_blob() -> None:
    text = ("func.func @main() -> tensor<2xf32> {\n"
            "  %0 = stablehlo.constant dense_resource<w0> : tensor<2xf32>\n"
            "  %1 = stablehlo.constant dense_resource<\"w 1\"> : tensor<2xi16>\n"
            "  return %0 : tensor<2xf32>\n}\n"
            "{-#\n  dialect_resources: {\n    builtin: {\n"
            '      w0: "0x040000000000803F00000040",\n'
            '      "w 1": "0x0200000001000200"\n'
            "    }\n  },\n  external_resources: {\n    other: {\n"
            '      ignored: "0x00"\n    }\n  }\n#-}\n')
    ops = body(text)
    w0, w1 = ops[0].attr("value"), ops[1].attr("value")
    assert w0.resource == "w0" and w1.resource == "w 1"
    np.testing.assert_array_equal(w0.array, [1.0, 2.0])  # the 4-byte alignment header is skipped
    np.testing.assert_array_equal(w1.array, [1, 2])
    assert w1.array.dtype == np.int16


# ---------------------------------------------------------------------------- values, regions


def test_result_groups_and_uses() -> None:
    ops = body("func.func @main(%a: tensor<4xf32>) -> tensor<4xi32> {\n"
               '  %0:2 = "t.pair"(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>)\n'
               '  %1, %2:2 = "t.three"(%0#1) : (tensor<4xi32>) -> (f32, i8, i16)\n'
               "  %3 = stablehlo.abs %0#1 : tensor<4xi32>\n"
               "  %4 = stablehlo.abs %0#0 : tensor<4xf32>\n"
               "  return %3 : tensor<4xi32>\n}\n")
    pair, three, abs_i, abs_f = ops[:4]
    assert len(pair.results) == 2
    assert three.operands[0] is pair.results[1]
    assert [r.type for r in three.results] == [F32, dtype("i8"), dtype("i16")]
    assert abs_i.operands[0] is pair.results[1]
    assert abs_f.operands[0] is pair.results[0]
    assert ops[-1].operands[0] is abs_i.results[0]


def test_named_values_with_odd_spellings() -> None:
    ops = body("func.func @main(%arg.0: tensor<f32>) -> tensor<f32> {\n"
               "  %cst_1 = stablehlo.constant dense<1.0> : tensor<f32>\n"
               "  %x$y-z = stablehlo.add %arg.0, %cst_1 : tensor<f32>\n"
               "  return %x$y-z : tensor<f32>\n}\n")
    assert ops[1].operands[1] is ops[0].results[0]


def test_region_block_arguments_and_scoping() -> None:
    ops = body("func.func @main(%a: tensor<4xf32>, %c: tensor<f32>) -> tensor<f32> {\n"
               '  %0 = "stablehlo.reduce"(%a, %c) <{dimensions = array<i64: 0>}> ({\n'
               "  ^bb0(%x: tensor<f32> loc(\"x\"), %y: tensor<f32>):\n"
               "    %s = stablehlo.add %x, %y : tensor<f32>\n"
               "    %outer = stablehlo.add %s, %c : tensor<f32>\n"
               '    "stablehlo.return"(%s) : (tensor<f32>) -> ()\n'
               "  }) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
               "  return %0 : tensor<f32>\n}\n")
    red = ops[0]
    block = red.regions[0].blocks[0]
    assert [a.type for a in block.args] == [tt(()), tt(())]
    assert block.ops[0].operands == block.args
    func = top_ops("func.func @f(%a: tensor<4xf32>, %c: tensor<f32>) -> tensor<f32> {\n"
                   "  return %c : tensor<f32>\n}\n")[0]
    assert block.ops[1].operands[1].type == func.regions[0].blocks[0].args[1].type
    assert block.ops[2].name == "stablehlo.return"


def test_values_defined_in_a_region_are_not_visible_after_it() -> None:
    with pytest.raises(CompileError, match="undefined value '%s'"):
        parse_text("func.func @main(%a: tensor<f32>) -> tensor<f32> {\n"
                   '  %0 = "t.wrap"() ({\n    %s = stablehlo.abs %a : tensor<f32>\n'
                   '    "t.yield"(%s) : (tensor<f32>) -> ()\n  }) : () -> tensor<f32>\n'
                   "  return %s : tensor<f32>\n}\n")


def test_generic_op_full_form() -> None:
    op = top_ops(
        '%0 = "d.op"() <{p = 1 : i64}> ({\n  "d.inner"() : () -> ()\n}, {\n}) '
        '{a = 2 : i32} : () -> tensor<2xf32> loc("x.py":1:2)\n')[0]
    assert op.name == "d.op" and op.properties == {"p": IntAttr(1, dtype("i64"))}
    assert op.attributes == {"a": IntAttr(2, dtype("i32"))}
    assert len(op.regions) == 2 and op.regions[0].blocks[0].ops[0].name == "d.inner"
    assert op.results[0].type == tt((2,))
    assert op.loc is not None and op.loc.line_col == (1, 6)


# ---------------------------------------------------------------------------- loc and comments


def test_locations_and_comments_everywhere() -> None:
    text = ("// leading comment\n"
            '#loc = loc("model.py":1:1)\n'
            '#loc1 = loc(fused[#loc, "f"])\n'
            "module @m attributes {a.b = 1 : i32} {  // trailing\n"
            "  // a comment line inside a region\n"
            "  func.func public @main(%arg0: tensor<4xf32> {jax.arg_info = \"x\"} loc(#loc),\n"
            "                         %arg1: tensor<4xf32> loc(\"y\"))\n"
            "      -> (tensor<4xf32> {jax.result_info = \"r\"} loc(#loc1)) {\n"
            "    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32> loc(#loc1) // c\n"
            "    %1 = \"stablehlo.abs\"(%0) : (tensor<4xf32>) -> tensor<4xf32> loc(callsite("
            "\"a\" at \"b\"))\n"
            "    return %1 : tensor<4xf32> loc(unknown)\n"
            "  } loc(#loc)\n"
            "} loc(#loc)\n"
            "// trailing comment without newline")
    module = parse_text(text, "m.mlir")
    assert module.attr("sym_name") == StringAttr("m")
    assert module.attr("a.b") == IntAttr(1, dtype("i32"))
    func = module.regions[0].blocks[0].ops[0]
    assert func.attr("arg_attrs") == ArrayAttr((DictAttr((("jax.arg_info", StringAttr("x")),)),
                                                DictAttr(())))
    assert func.attr("res_attrs") == ArrayAttr((DictAttr((("jax.result_info",
                                                            StringAttr("r")),)),))
    ops = func.regions[0].blocks[0].ops
    assert [o.name for o in ops] == ["stablehlo.add", "stablehlo.abs", "func.return"]
    assert ops[0].loc.line_col == (9, 10)


# ---------------------------------------------------------------------------- func / module


def test_func_pretty_form() -> None:
    (func,) = top_ops("func.func private @helper(%a: tensor<f32>) -> (tensor<f32>, tensor<f32>)"
                      " attributes {foo} {\n  return %a, %a : tensor<f32>, tensor<f32>\n}\n")
    assert func.attr("sym_name") == StringAttr("helper")
    assert func.attr("sym_visibility") == StringAttr("private")
    assert func.attr("function_type") == TypeAttr(FunctionType((tt(()),), (tt(()), tt(()))))
    assert func.attributes == {"foo": UnitAttr()}
    ret = func.regions[0].blocks[0].ops[0]
    assert ret.name == "func.return" and len(ret.operands) == 2


def test_func_without_arguments_or_results() -> None:
    (func,) = top_ops("func.func @main() {\n  return\n}\n")
    assert func.attr("function_type") == TypeAttr(FunctionType((), ()))
    (func,) = top_ops("func.func @main() -> tensor<f32> {\n"
                      "  %0 = stablehlo.constant dense<1.0> : tensor<f32>\n"
                      "  return %0 : tensor<f32>\n}\n")
    assert func.attr("function_type") == TypeAttr(FunctionType((), (tt(()),)))


def test_call_and_quoted_symbols() -> None:
    ops = top_ops('func.func @"odd name"(%a: tensor<f32>) -> tensor<f32> {\n'
                  "  return %a : tensor<f32>\n}\n"
                  "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n"
                  '  %0 = call @"odd name"(%a) : (tensor<f32>) -> tensor<f32>\n'
                  "  %1 = func.call @main2(%0) : (tensor<f32>) -> tensor<f32>\n"
                  "  return %1 : tensor<f32>\n}\n")
    assert ops[0].attr("sym_name") == StringAttr("odd name")
    calls = ops[1].regions[0].blocks[0].ops
    assert calls[0].name == calls[1].name == "func.call"
    assert calls[0].attr("callee") == SymbolRefAttr("odd name")
    assert calls[1].attr("callee") == SymbolRefAttr("main2")


def test_top_level_without_module_is_wrapped() -> None:
    module = parse_text("func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n")
    assert module.name == "builtin.module"
    assert [o.attr("sym_name").value for o in module.regions[0].blocks[0].ops] == ["a", "b"]


# ---------------------------------------------------------------------------- StableHLO pretty ops

T4 = "tensor<4xf32>"
HEAD = ("func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %p: tensor<4xi1>)"
        " -> tensor<4xf32> {\n")


def wrap(line: str, ret: str = "%0 : tensor<4xf32>") -> str:
    return f"{HEAD}  {line}\n  return {ret}\n}}\n"


ELEMENTWISE = ["abs", "cbrt", "ceil", "cosine", "exponential", "exponential_minus_one", "floor",
               "log", "log_plus_one", "logistic", "negate", "round_nearest_afz",
               "round_nearest_even", "rsqrt", "sign", "sine", "sqrt", "tan", "tanh"]
BINARY = ["add", "atan2", "divide", "maximum", "minimum", "multiply", "power", "remainder",
          "subtract"]


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_unary_pretty_equals_generic(name: str) -> None:
    same_tree(wrap(f"%0 = stablehlo.{name} %a : {T4}"),
              wrap(f'%0 = "stablehlo.{name}"(%a) : ({T4}) -> {T4}'))


@pytest.mark.parametrize("name", BINARY)
def test_binary_pretty_equals_generic(name: str) -> None:
    same_tree(wrap(f"%0 = stablehlo.{name} %a, %b : {T4}"),
              wrap(f'%0 = "stablehlo.{name}"(%a, %b) : ({T4}, {T4}) -> {T4}'))
    same_tree(wrap(f"%0 = stablehlo.{name} %a, %b : ({T4}, {T4}) -> {T4}"),
              wrap(f'%0 = "stablehlo.{name}"(%a, %b) : ({T4}, {T4}) -> {T4}'))


def test_compare_select_clamp_convert() -> None:
    same_tree(wrap(f"%c = stablehlo.compare GT, %a, %b, FLOAT : ({T4}, {T4}) -> tensor<4xi1>\n"
                   f"  %0 = stablehlo.select %c, %a, %b : tensor<4xi1>, {T4}"),
              wrap(f'%c = "stablehlo.compare"(%a, %b) <{{comparison_direction = '
                   f'#stablehlo<comparison_direction GT>, compare_type = '
                   f'#stablehlo<comparison_type FLOAT>}}> : ({T4}, {T4}) -> tensor<4xi1>\n'
                   f'  %0 = "stablehlo.select"(%c, %a, %b) : (tensor<4xi1>, {T4}, {T4}) -> {T4}'))
    op = one(wrap(f"%0 = stablehlo.compare  LT, %a, %b : ({T4}, {T4}) -> tensor<4xi1>",
                  "%a : tensor<4xf32>"))
    assert op.attr("comparison_direction") == OpaqueAttr("stablehlo", "comparison_direction LT")
    same_tree(wrap(f"%0 = stablehlo.clamp %a, %b, %a : {T4}"),
              wrap(f'%0 = "stablehlo.clamp"(%a, %b, %a) : ({T4}, {T4}, {T4}) -> {T4}'))
    same_tree(wrap(f"%0 = stablehlo.select %p, %a, %b : ({'tensor<4xi1>'}, {T4}, {T4}) -> {T4}"),
              wrap(f'%0 = "stablehlo.select"(%p, %a, %b) : (tensor<4xi1>, {T4}, {T4}) -> {T4}'))
    op = one(wrap(f"%0 = stablehlo.convert %a : ({T4}) -> tensor<4xi32>", "%a : tensor<4xf32>"))
    assert op.results[0].type == tt((4,), "i32")


def test_shape_ops() -> None:
    same_tree(wrap(f"%0 = stablehlo.broadcast_in_dim %a, dims = [1] : ({T4}) -> tensor<2x4xf32>",
                   "%a : tensor<4xf32>"),
              wrap(f'%0 = "stablehlo.broadcast_in_dim"(%a) <{{broadcast_dimensions = '
                   f"array<i64: 1>}}> : ({T4}) -> tensor<2x4xf32>", "%a : tensor<4xf32>"))
    same_tree(wrap(f"%0 = stablehlo.reshape %a : ({T4}) -> tensor<2x2xf32>", "%a : tensor<4xf32>"),
              wrap(f'%0 = "stablehlo.reshape"(%a) : ({T4}) -> tensor<2x2xf32>',
                   "%a : tensor<4xf32>"))
    same_tree(wrap(f"%0 = stablehlo.concatenate %a, %b, dim = 0 : ({T4}, {T4}) -> tensor<8xf32>",
                   "%a : tensor<4xf32>"),
              wrap(f'%0 = "stablehlo.concatenate"(%a, %b) <{{dimension = 0 : i64}}> : '
                   f"({T4}, {T4}) -> tensor<8xf32>", "%a : tensor<4xf32>"))
    same_tree(wrap(f"%0 = stablehlo.slice %a [1:4:2] : ({T4}) -> tensor<2xf32>",
                   "%a : tensor<4xf32>"),
              wrap(f'%0 = "stablehlo.slice"(%a) <{{start_indices = array<i64: 1>, limit_indices ='
                   f" array<i64: 4>, strides = array<i64: 2>}}> : ({T4}) -> tensor<2xf32>",
                   "%a : tensor<4xf32>"))
    op = one(wrap(f"%0 = stablehlo.slice %a [0:2] : ({T4}) -> tensor<2xf32>",
                  "%a : tensor<4xf32>"))
    assert op.attr("strides") == DenseArrayAttr(dtype("i64"), (1,))
    same_tree(wrap("%c = stablehlo.constant dense<0.0> : tensor<f32>\n"
                   f"  %0 = stablehlo.pad %a, %c, low = [1], high = [-1], interior = [2] : "
                   f"({T4}, tensor<f32>) -> tensor<10xf32>", "%a : tensor<4xf32>"),
              wrap("%c = stablehlo.constant dense<0.0> : tensor<f32>\n"
                   f'  %0 = "stablehlo.pad"(%a, %c) <{{edge_padding_low = array<i64: 1>, '
                   "edge_padding_high = array<i64: -1>, interior_padding = array<i64: 2>}> : "
                   f"({T4}, tensor<f32>) -> tensor<10xf32>", "%a : tensor<4xf32>"))
    same_tree(wrap("%0 = stablehlo.iota dim = 1 : tensor<2x3xi32>", "%a : tensor<4xf32>"),
              wrap('%0 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x3xi32>',
                   "%a : tensor<4xf32>"))
    m = "func.func @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {\n  %0 = "
    same_tree(m + "stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>"
              "\n  return %0 : tensor<3x2xf32>\n}\n",
              m + '"stablehlo.transpose"(%a) <{permutation = array<i64: 1, 0>}> : '
              "(tensor<2x3xf32>) -> tensor<3x2xf32>\n  return %0 : tensor<3x2xf32>\n}\n")


def test_dot_general() -> None:
    m = "func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {\n"
    end = "\n  return %0 : tensor<2x3x5xf32>\n}\n"
    sig = "(tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>"
    pretty = (m + "  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], "
              f"contracting_dims = [2] x [1], precision = [DEFAULT, HIGHEST] : {sig}" + end)
    generic = (m + '  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = '
               "#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
               "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>, "
               "precision_config = [#stablehlo<precision DEFAULT>, "
               f"#stablehlo<precision HIGHEST>]}}> : {sig}" + end)
    same_tree(pretty, generic)
    dn = one(pretty).attr("dot_dimension_numbers")
    assert dn.get("lhs_batching_dimensions") == (0,)
    assert dn.get("rhs_contracting_dimensions") == (1,)


def test_convolution() -> None:
    m = ("func.func @main(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>)"
         " -> tensor<1x4x4x4xf32> {\n")
    end = "\n  return %0 : tensor<1x4x4x4xf32>\n}\n"
    sig = "(tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x4x4x4xf32>"
    pretty = (m + "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]"
              "->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 0], [0, 1]], "
              "lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} "
              "{batch_group_count = 1 : i64, feature_group_count = 1 : i64, "
              f"precision_config = [#stablehlo<precision DEFAULT>]}} : {sig}" + end)
    op = one(pretty)
    assert op.attr("window_strides") == DenseArrayAttr(dtype("i64"), (2, 2))
    np.testing.assert_array_equal(op.attr("padding").array, [[1, 0], [0, 1]])
    assert op.attr("window_reversal") == DenseArrayAttr(dtype("i1"), (False, False))
    assert op.attr("feature_group_count") == IntAttr(1, dtype("i64"))
    assert "feature_group_count" in op.properties and not op.attributes
    dn = op.attr("dimension_numbers")
    assert dn.get("output_spatial_dimensions") == (1, 2)
    text = print_generic(parse_text(pretty))
    assert "#stablehlo.conv<raw " in text
    assert print_generic(parse_text(text)) == text


def test_reduce_applies_form_equals_region_form() -> None:
    m = ("func.func @main(%a: tensor<2x4xf32>) -> tensor<2xf32> {\n"
         "  %c = stablehlo.constant dense<0.0> : tensor<f32>\n")
    end = "\n  return %0 : tensor<2xf32>\n}\n"
    sig = "(tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>"
    short = (m + "  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.add across "
             f"dimensions = [1] : {sig}" + end)
    region = (m + "  %0 = stablehlo.reduce(%a init: %c) across dimensions = [1] : " + sig + "\n"
              "    reducer(%x: tensor<f32>, %y: tensor<f32>) {\n"
              "      %s = stablehlo.add %x, %y : tensor<f32>\n"
              "      stablehlo.return %s : tensor<f32>\n    }" + end)
    generic = (m + '  %0 = "stablehlo.reduce"(%a, %c) <{dimensions = array<i64: 1>}> ({\n'
               "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
               '    %s = "stablehlo.add"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n'
               '    "stablehlo.return"(%s) : (tensor<f32>) -> ()\n'
               f"  }}) : {sig}" + end)
    same_tree(short, generic)
    same_tree(region, generic)
    op = one(short)
    block = op.regions[0].blocks[0]
    assert [o.name for o in block.ops] == ["stablehlo.add", "stablehlo.return"]
    assert block.ops[0].operands == block.args


def test_reduce_window_gather_batch_norm_generic() -> None:
    text = ("func.func @main(%x: tensor<1x4x4x2xf32>, %t: tensor<5x3xf32>, %i: tensor<2xi32>,"
            " %s: tensor<2xf32>) -> tensor<1x2x2x2xf32> {\n"
            "  %c = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
            '  %0 = "stablehlo.reduce_window"(%x, %c) <{padding = dense<0> : tensor<4x2xi64>, '
            "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>"
            "}> ({\n  ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
            "    %m = stablehlo.maximum %p, %q : tensor<f32>\n"
            "    stablehlo.return %m : tensor<f32>\n"
            "  }) : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>\n"
            '  %1 = "stablehlo.gather"(%t, %i) <{dimension_numbers = #stablehlo.gather<'
            "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], "
            "index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}>"
            " : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>\n"
            '  %2 = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s) <{epsilon = 1.0E-3 : f32,'
            " feature_index = 3 : i64}> : (tensor<1x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, "
            "tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>\n"
            "  return %0 : tensor<1x2x2x2xf32>\n}\n")
    rw, gather, bn = body(text)[1:4]
    assert rw.attr("window_dimensions") == DenseArrayAttr(dtype("i64"), (1, 2, 2, 1))
    assert rw.attr("padding").array.shape == (4, 2)
    assert gather.attr("dimension_numbers").get("offset_dims") == (1,)
    assert gather.attr("indices_are_sorted") == BoolAttr(False)
    assert bn.attr("epsilon") == FloatAttr(np.float64(1e-3), F32)
    assert len(bn.operands) == 5


def test_unknown_dialect_op_in_simple_pretty_form() -> None:
    op = one(wrap(f"%0 = mydialect.frob %a, %b {{k = 1}} : {T4}"))
    assert op.name == "mydialect.frob" and op.attributes == {"k": IntAttr(1)}
    assert len(op.operands) == 2


def test_attribute_dictionary_with_a_trailing_comma() -> None:
    # As the StableHLO spec's custom_call example writes it.
    op = one(wrap('%0 = "stablehlo.custom_call"(%a) {\n  call_target_name = "f",\n'
                  "  api_version = 4 : i32,\n} : (tensor<4xf32>) -> tensor<4xf32>"))
    assert op.attr("call_target_name") == StringAttr("f")
    assert op.attr("api_version") == IntAttr(4, dtype("i32"))
    with pytest.raises(CompileError, match="expected attribute name"):
        one(wrap('%0 = "foo.bar"(%a) {,} : (tensor<4xf32>) -> tensor<4xf32>'))
