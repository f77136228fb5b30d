"""One small program per MLIR op, with its main element type left open as `{T}`.

docs/ops.md's "element types" column is measured, not written by hand: each sample is
instantiated with every element type the parser knows and put through parse + import
+ verify (toolchain/report/ops.py); the types that come through are the ones the op
takes. A sample is `(arguments, body, result type)` of a function whose body defines
`%r`; `{R}` is the real type of a complex `{T}` (else `{T}` itself) and `{ZERO}` a zero
literal of `{T}`. Ops with no sample are listed without measured types.
"""

from __future__ import annotations

Sample = tuple[str, str, str]

_V = "tensor<2x{T}>"
_UNARY = ("%a: " + _V, "%r = stablehlo.{op} %a : " + _V, _V)
_BINARY = ("%a: " + _V, "%r = stablehlo.{op} %a, %a : " + _V, _V)
_REGION_ADD = """^bb0(%p: tensor<{T}>, %q: tensor<{T}>):
    %s = stablehlo.add %p, %q : tensor<{T}>
    stablehlo.return %s : tensor<{T}>"""

STABLEHLO: dict[str, Sample] = {
    **{op: _UNARY for op in (
        "abs", "cbrt", "ceil", "cosine", "count_leading_zeros", "exponential",
        "exponential_minus_one", "floor", "log", "log_plus_one", "logistic", "negate", "not",
        "popcnt", "round_nearest_afz", "round_nearest_even", "rsqrt", "sign", "sine", "sqrt",
        "tan", "tanh")},
    **{op: _BINARY for op in (
        "add", "and", "atan2", "divide", "maximum", "minimum", "multiply", "or", "power",
        "remainder", "shift_left", "shift_right_arithmetic", "shift_right_logical",
        "subtract", "xor")},
    "is_finite": ("%a: " + _V, "%r = stablehlo.is_finite %a : (tensor<2x{T}>) -> tensor<2xi1>",
                  "tensor<2xi1>"),
    "real": ("%a: " + _V, "%r = stablehlo.real %a : (tensor<2x{T}>) -> tensor<2x{R}>",
             "tensor<2x{R}>"),
    "imag": ("%a: " + _V, "%r = stablehlo.imag %a : (tensor<2x{T}>) -> tensor<2x{R}>",
             "tensor<2x{R}>"),
    "complex": ("%a: " + _V, "%r = stablehlo.complex %a, %a : (tensor<2x{T}>, tensor<2x{T}>)"
                " -> tensor<2xcomplex<{T}>>", "tensor<2xcomplex<{T}>>"),
    "compare": ("%a: " + _V, "%r = stablehlo.compare LT, %a, %a : (tensor<2x{T}>, "
                "tensor<2x{T}>) -> tensor<2xi1>", "tensor<2xi1>"),
    "select": ("%p: tensor<2xi1>, %a: " + _V,
               "%r = stablehlo.select %p, %a, %a : tensor<2xi1>, tensor<2x{T}>", _V),
    "clamp": ("%a: " + _V, "%r = stablehlo.clamp %a, %a, %a : " + _V, _V),
    "convert": ("%a: " + _V, "%r = stablehlo.convert %a : (tensor<2x{T}>) -> tensor<2xf32>",
                "tensor<2xf32>"),
    "bitcast_convert": ("%a: " + _V, "%r = stablehlo.bitcast_convert %a : (tensor<2x{T}>) -> "
                        "tensor<2x{T}>", _V),
    "reduce_precision": ("%a: " + _V, "%r = stablehlo.reduce_precision %a, format = e5m10 : "
                         + _V, _V),
    "broadcast_in_dim": ("%a: " + _V, "%r = stablehlo.broadcast_in_dim %a, dims = [0] : "
                         "(tensor<2x{T}>) -> tensor<2x3x{T}>", "tensor<2x3x{T}>"),
    "broadcast": ("%a: " + _V, "%r = stablehlo.broadcast %a, sizes = [3] : (tensor<2x{T}>) "
                  "-> tensor<3x2x{T}>", "tensor<3x2x{T}>"),
    "reshape": ("%a: tensor<2x3x{T}>", "%r = stablehlo.reshape %a : (tensor<2x3x{T}>) -> "
                "tensor<6x{T}>", "tensor<6x{T}>"),
    "transpose": ("%a: tensor<2x3x{T}>", "%r = stablehlo.transpose %a, dims = [1, 0] : "
                  "(tensor<2x3x{T}>) -> tensor<3x2x{T}>", "tensor<3x2x{T}>"),
    "reverse": ("%a: " + _V, "%r = stablehlo.reverse %a, dims = [0] : " + _V, _V),
    "concatenate": ("%a: " + _V, "%r = stablehlo.concatenate %a, %a, dim = 0 : "
                    "(tensor<2x{T}>, tensor<2x{T}>) -> tensor<4x{T}>", "tensor<4x{T}>"),
    "slice": ("%a: " + _V, "%r = stablehlo.slice %a [0:1] : (tensor<2x{T}>) -> tensor<1x{T}>",
              "tensor<1x{T}>"),
    "dynamic_slice": ("%a: " + _V + ", %i: tensor<i32>", "%r = stablehlo.dynamic_slice %a, %i,"
                      " sizes = [1] : (tensor<2x{T}>, tensor<i32>) -> tensor<1x{T}>",
                      "tensor<1x{T}>"),
    "dynamic_update_slice": ("%a: " + _V + ", %u: tensor<1x{T}>, %i: tensor<i32>",
                             "%r = stablehlo.dynamic_update_slice %a, %u, %i : (tensor<2x{T}>, "
                             "tensor<1x{T}>, tensor<i32>) -> tensor<2x{T}>", _V),
    "pad": ("%a: " + _V + ", %z: tensor<{T}>", "%r = stablehlo.pad %a, %z, low = [1], high = "
            "[0], interior = [0] : (tensor<2x{T}>, tensor<{T}>) -> tensor<3x{T}>",
            "tensor<3x{T}>"),
    "iota": ("", "%r = stablehlo.iota dim = 0 : tensor<4x{T}>", "tensor<4x{T}>"),
    # The dynamic ops with constant shape operands (frontend/stablehlo_dynamic.py).
    "dynamic_iota": ("", "%s = stablehlo.constant dense<[4]> : tensor<1xi64>\n  %r = "
                     "stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi64>) -> tensor<4x{T}>",
                     "tensor<4x{T}>"),
    "dynamic_reshape": ("%a: tensor<2x3x{T}>", "%s = stablehlo.constant dense<[6]> : "
                        "tensor<1xi64>\n  %r = stablehlo.dynamic_reshape %a, %s : "
                        "(tensor<2x3x{T}>, tensor<1xi64>) -> tensor<6x{T}>", "tensor<6x{T}>"),
    "dynamic_broadcast_in_dim": ("%a: " + _V, "%s = stablehlo.constant dense<[2, 3]> : "
                                 "tensor<2xi64>\n  %r = stablehlo.dynamic_broadcast_in_dim %a, "
                                 "%s, dims = [0] : (tensor<2x{T}>, tensor<2xi64>) -> "
                                 "tensor<2x3x{T}>", "tensor<2x3x{T}>"),
    "dynamic_pad": ("%a: " + _V + ", %z: tensor<{T}>", "%l = stablehlo.constant dense<[1]> : "
                    "tensor<1xi64>\n  %h = stablehlo.constant dense<[0]> : tensor<1xi64>\n  "
                    "%r = stablehlo.dynamic_pad %a, %z, %l, %h, %h : (tensor<2x{T}>, "
                    "tensor<{T}>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> "
                    "tensor<3x{T}>", "tensor<3x{T}>"),
    "real_dynamic_slice": ("%a: " + _V, "%b = stablehlo.constant dense<[0]> : tensor<1xi64>"
                           "\n  %e = stablehlo.constant dense<[1]> : tensor<1xi64>\n  %r = "
                           "stablehlo.real_dynamic_slice %a, %b, %e, %e : (tensor<2x{T}>, "
                           "tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x{T}>",
                           "tensor<1x{T}>"),
    "constant": ("", "%r = stablehlo.constant dense<{ZERO}> : tensor<2x{T}>", _V),
    "dot_general": ("%a: tensor<2x3x{T}>, %b: tensor<3x4x{T}>", "%r = stablehlo.dot_general "
                    "%a, %b, contracting_dims = [1] x [0] : (tensor<2x3x{T}>, tensor<3x4x{T}>) "
                    "-> tensor<2x4x{T}>", "tensor<2x4x{T}>"),
    "dot": ("%a: tensor<2x3x{T}>, %b: tensor<3x4x{T}>", "%r = stablehlo.dot %a, %b : "
            "(tensor<2x3x{T}>, tensor<3x4x{T}>) -> tensor<2x4x{T}>", "tensor<2x4x{T}>"),
    "einsum": ("%a: tensor<2x3x{T}>, %b: tensor<3x4x{T}>", "%r = stablehlo.einsum %a, %b, "
               'config = "ab,bc->ac" : (tensor<2x3x{T}>, tensor<3x4x{T}>) -> tensor<2x4x{T}>',
               "tensor<2x4x{T}>"),
    "unary_einsum": ("%a: tensor<2x3x{T}>", '%r = stablehlo.unary_einsum %a, config = "ab->a" '
                     ": (tensor<2x3x{T}>) -> tensor<2x{T}>", _V),
    "convolution": ("%x: tensor<1x4x4x1x{T}>, %w: tensor<3x3x1x1x{T}>",
                    "%r = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]"
                    "->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, "
                    "feature_group_count = 1 : i64} : (tensor<1x4x4x1x{T}>, "
                    "tensor<3x3x1x1x{T}>) -> tensor<1x2x2x1x{T}>", "tensor<1x2x2x1x{T}>"),
    "reduce": ("%a: tensor<2x3x{T}>, %z: tensor<{T}>", "%r = stablehlo.reduce(%a init: %z) "
               "applies stablehlo.maximum across dimensions = [1] : (tensor<2x3x{T}>, "
               "tensor<{T}>) -> tensor<2x{T}>", _V),
    "reduce_window": ("%a: tensor<4x{T}>, %z: tensor<{T}>",
                      '%r = "stablehlo.reduce_window"(%a, %z) <{window_dimensions = '
                      "array<i64: 2>, window_strides = array<i64: 2>}> ({\n  " + _REGION_ADD
                      + "\n  }) : (tensor<4x{T}>, tensor<{T}>) -> tensor<2x{T}>", _V),
    "select_and_scatter": (
        "%a: tensor<4x{T}>, %s: tensor<2x{T}>, %z: tensor<{T}>",
        '%r = "stablehlo.select_and_scatter"(%a, %s, %z) <{window_dimensions = array<i64: 2>,'
        " window_strides = array<i64: 2>}> ({\n  ^bb0(%p: tensor<{T}>, %q: tensor<{T}>):\n"
        "    %c = stablehlo.compare GE, %p, %q : (tensor<{T}>, tensor<{T}>) -> tensor<i1>\n"
        "    stablehlo.return %c : tensor<i1>\n  }, {\n  " + _REGION_ADD + "\n  }) : "
        "(tensor<4x{T}>, tensor<2x{T}>, tensor<{T}>) -> tensor<4x{T}>", "tensor<4x{T}>"),
    "gather": ("%a: tensor<5x{T}>, %i: tensor<2x1xi32>",
               '%r = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<'
               "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
               "slice_sizes = array<i64: 1>}> : (tensor<5x{T}>, tensor<2x1xi32>) -> "
               "tensor<2x{T}>", _V),
    "scatter": ("%a: tensor<5x{T}>, %i: tensor<1x1xi32>, %u: tensor<1x{T}>",
                '%r = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers = '
                "#stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = "
                "[0], index_vector_dim = 1>}> ({\n  ^bb0(%p: tensor<{T}>, %q: tensor<{T}>):\n"
                "    stablehlo.return %q : tensor<{T}>\n  }) : (tensor<5x{T}>, tensor<1x1xi32>,"
                " tensor<1x{T}>) -> tensor<5x{T}>", "tensor<5x{T}>"),
    "sort": ("%a: tensor<4x{T}>", '%r = "stablehlo.sort"(%a) <{dimension = 0 : i64}> ({\n'
             "  ^bb0(%p: tensor<{T}>, %q: tensor<{T}>):\n    %c = stablehlo.compare LT, %p, %q"
             " : (tensor<{T}>, tensor<{T}>) -> tensor<i1>\n    stablehlo.return %c : "
             "tensor<i1>\n  }) : (tensor<4x{T}>) -> tensor<4x{T}>", "tensor<4x{T}>"),
    "map": ("%a: " + _V, '%r = "stablehlo.map"(%a, %a) <{dimensions = array<i64: 0>}> ({\n  '
            + _REGION_ADD + "\n  }) : (tensor<2x{T}>, tensor<2x{T}>) -> tensor<2x{T}>", _V),
    "while": ("%a: " + _V, "%c = stablehlo.constant dense<0> : tensor<i32>\n"
              "  %r0, %r = stablehlo.while(%i = %c, %x = %a) : tensor<i32>, tensor<2x{T}>\n"
              "  cond {\n    %n = stablehlo.constant dense<3> : tensor<i32>\n"
              "    %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> "
              "tensor<i1>\n    stablehlo.return %lt : tensor<i1>\n  } do {\n"
              "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
              "    %j = stablehlo.add %i, %one : tensor<i32>\n"
              "    stablehlo.return %j, %x : tensor<i32>, tensor<2x{T}>\n  }", _V),
    "if": ("%p: tensor<i1>, %a: " + _V, '%r = "stablehlo.if"(%p) ({\n    stablehlo.return %a : '
           "tensor<2x{T}>\n  }, {\n    stablehlo.return %a : tensor<2x{T}>\n  }) : "
           "(tensor<i1>) -> tensor<2x{T}>", _V),
    "case": ("%i: tensor<i32>, %a: " + _V, '%r = "stablehlo.case"(%i) ({\n    stablehlo.return '
             "%a : tensor<2x{T}>\n  }, {\n    stablehlo.return %a : tensor<2x{T}>\n  }) : "
             "(tensor<i32>) -> tensor<2x{T}>", _V),
    "optimization_barrier": ("%a: " + _V, "%r, %i = stablehlo.optimization_barrier %a, %a : "
                             + _V + ", " + _V, _V),
    "tuple": ("%a: " + _V, "%t = stablehlo.tuple %a : tuple<tensor<2x{T}>>\n"
              "  %r = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2x{T}>>) -> "
              "tensor<2x{T}>", _V),
    "get_tuple_element": ("%a: " + _V, "%t = stablehlo.tuple %a : tuple<tensor<2x{T}>>\n"
                          "  %r = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2x{T}>>) "
                          "-> tensor<2x{T}>", _V),
    "get_dimension_size": ("%a: " + _V, "%r = stablehlo.get_dimension_size %a, dim = 0 : "
                           "(tensor<2x{T}>) -> tensor<i32>", "tensor<i32>"),
    "batch_norm_inference": (
        "%x: tensor<1x2x2x{T}>, %s: tensor<2x{T}>",
        '%r = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s) <{epsilon = 1.0E-3 : f32, '
        "feature_index = 2 : i64}> : (tensor<1x2x2x{T}>, tensor<2x{T}>, tensor<2x{T}>, "
        "tensor<2x{T}>, tensor<2x{T}>) -> tensor<1x2x2x{T}>", "tensor<1x2x2x{T}>"),
    "batch_norm_training": (
        "%x: tensor<1x2x2x{T}>, %s: tensor<2x{T}>",
        '%r, %m, %v = "stablehlo.batch_norm_training"(%x, %s, %s) <{epsilon = 1.0E-3 : f32, '
        "feature_index = 2 : i64}> : (tensor<1x2x2x{T}>, tensor<2x{T}>, tensor<2x{T}>) -> "
        "(tensor<1x2x2x{T}>, tensor<2x{T}>, tensor<2x{T}>)", "tensor<1x2x2x{T}>"),
    "batch_norm_grad": (
        "%x: tensor<1x2x2x{T}>, %s: tensor<2x{T}>",
        '%r, %gs, %gb = "stablehlo.batch_norm_grad"(%x, %s, %s, %s, %x) <{epsilon = 1.0E-3 : '
        "f32, feature_index = 2 : i64}> : (tensor<1x2x2x{T}>, tensor<2x{T}>, tensor<2x{T}>, "
        "tensor<2x{T}>, tensor<1x2x2x{T}>) -> (tensor<1x2x2x{T}>, tensor<2x{T}>, "
        "tensor<2x{T}>)", "tensor<1x2x2x{T}>"),
    "cholesky": ("%a: tensor<2x2x{T}>", "%r = stablehlo.cholesky %a, lower = true : "
                 "tensor<2x2x{T}>", "tensor<2x2x{T}>"),
    "triangular_solve": (
        "%a: tensor<2x2x{T}>",
        '%r = "stablehlo.triangular_solve"(%a, %a) <{left_side = true, lower = true, '
        "transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : "
        "(tensor<2x2x{T}>, tensor<2x2x{T}>) -> tensor<2x2x{T}>", "tensor<2x2x{T}>"),
    "fft": ("%a: tensor<8x{T}>", "%r = stablehlo.fft %a, type = FFT, length = [8] : "
            "(tensor<8x{T}>) -> tensor<8x{T}>", "tensor<8x{T}>"),
    "rng": ("%lo: tensor<{T}>, %hi: tensor<{T}>", "%s = stablehlo.constant dense<4> : "
            "tensor<1xi64>\n  %r = stablehlo.rng %lo, %hi, %s, distribution = UNIFORM : "
            "(tensor<{T}>, tensor<{T}>, tensor<1xi64>) -> tensor<4x{T}>", "tensor<4x{T}>"),
    "rng_bit_generator": ("%s: tensor<2xui64>", "%n, %r = stablehlo.rng_bit_generator %s, "
                          "algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, "
                          "tensor<4x{T}>)", "tensor<4x{T}>"),
    "torch_index_select": ("%a: tensor<4x{T}>, %i: tensor<2xi32>",
                           '%r = "stablehlo.torch_index_select"(%a, %i) <{dim = 0 : i64, '
                           "batch_dims = 0 : i64}> : (tensor<4x{T}>, tensor<2xi32>) -> "
                           "tensor<2x{T}>", _V),
    "uniform_quantize": ("%a: " + _V, "%r = stablehlo.uniform_quantize %a : (tensor<2x{T}>) -> "
                         "tensor<2x!quant.uniform<i8:f32, 0.5>>",
                         "tensor<2x!quant.uniform<i8:f32, 0.5>>"),
    "uniform_dequantize": ("%a: tensor<2x!quant.uniform<{T}:f32, 0.5>>",
                           "%r = stablehlo.uniform_dequantize %a : (tensor<2x!quant.uniform<"
                           "{T}:f32, 0.5>>) -> tensor<2xf32>", "tensor<2xf32>"),
    "composite": ("%a: " + _V, '%r = stablehlo.composite "my.identity" %a {decomposition = '
                  "@identity} : (tensor<2x{T}>) -> tensor<2x{T}>", _V),
    "replica_id": ("", "%r = stablehlo.replica_id : tensor<{T}>", "tensor<{T}>"),
    "partition_id": ("", "%r = stablehlo.partition_id : tensor<{T}>", "tensor<{T}>"),
}

# Functions a sample calls, added to every sample module.
HELPERS = """func.func private @identity(%x: tensor<2x{T}>) -> tensor<2x{T}> {
  return %x : tensor<2x{T}>
}
"""

_CHLO_UNARY = ("%a: " + _V, "%r = chlo.{op} %a : tensor<2x{T}> -> tensor<2x{T}>", _V)
_CHLO_BINARY = ("%a: " + _V, "%r = chlo.{op} %a, %a : (tensor<2x{T}>, tensor<2x{T}>) -> "
                "tensor<2x{T}>", _V)
_CHLO_PREDICATE = ("%a: " + _V, "%r = chlo.{op} %a : tensor<2x{T}> -> tensor<2xi1>",
                   "tensor<2xi1>")

CHLO: dict[str, Sample] = {
    **{op: _CHLO_UNARY for op in (
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "conj", "cosh",
        "digamma", "erf", "erf_inv", "erfc", "lgamma", "sinh", "square", "tan",
        "_asin_acos_kernel")},
    **{op: _CHLO_PREDICATE for op in ("is_inf", "is_neg_inf", "is_pos_inf")},
    **{f"broadcast_{op}": _CHLO_BINARY for op in (
        "add", "and", "atan2", "divide", "maximum", "minimum", "multiply", "next_after", "or",
        "polygamma", "power", "remainder", "shift_left", "shift_right_arithmetic",
        "shift_right_logical", "subtract", "xor", "zeta")},
    **{op: ("%a: " + _V, "%r = chlo.{op} %a, %a : tensor<2x{T}>, tensor<2x{T}> -> "
            "tensor<2x{T}>", _V) for op in ("next_after", "polygamma", "zeta", "mulhi")},
    "broadcast_compare": ("%a: " + _V, "%r = chlo.broadcast_compare %a, %a {comparison_"
                          "direction = #chlo<comparison_direction LT>} : (tensor<2x{T}>, "
                          "tensor<2x{T}>) -> tensor<2xi1>", "tensor<2xi1>"),
    "broadcast_select": ("%p: tensor<2xi1>, %a: " + _V, "%r = chlo.broadcast_select %p, %a, %a"
                         " : (tensor<2xi1>, tensor<2x{T}>, tensor<2x{T}>) -> tensor<2x{T}>", _V),
    "broadcast_complex": ("%a: " + _V, "%r = chlo.broadcast_complex %a, %a : (tensor<2x{T}>, "
                          "tensor<2x{T}>) -> tensor<2xcomplex<{T}>>", "tensor<2xcomplex<{T}>>"),
    "scan": ("%a: " + _V + ", %c: tensor<{T}>", "%r, %f = chlo.scan(%a) inits(%c) "
             "dimension=0 {\n  ^bb0(%x: tensor<{T}>, %y: tensor<{T}>):\n    "
             "stablehlo.return %x, %y : tensor<{T}>, tensor<{T}>\n  } : (tensor<2x{T}>, "
             "tensor<{T}>) -> (tensor<2x{T}>, tensor<{T}>)", _V),
    "top_k": ("%a: tensor<4x{T}>", "%r, %i = chlo.top_k(%a, k = 2) : tensor<4x{T}> -> "
              "(tensor<2x{T}>, tensor<2xi32>)", "tensor<2x{T}>"),
    "ragged_dot": ("%a: tensor<4x2x{T}>, %b: tensor<2x2x3x{T}>, %g: tensor<2xi32>",
                   '%r = "chlo.ragged_dot"(%a, %b, %g) <{ragged_dot_dimension_numbers = '
                   "#chlo.ragged_dot<lhs_batching_dimensions = [], rhs_batching_dimensions = "
                   "[], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
                   "lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>}> : "
                   "(tensor<4x2x{T}>, tensor<2x2x3x{T}>, tensor<2xi32>) -> tensor<4x3x{T}>",
                   "tensor<4x3x{T}>"),
    "constant": ("", "%r = chlo.constant dense<{ZERO}> : tensor<2x{T}>", _V),
    "constant_like": ("%a: " + _V, '%r = "chlo.constant_like"(%a) <{value = 1.0 : f32}> : '
                      "(tensor<2x{T}>) -> tensor<2x{T}>", _V),
}

_TOSA_UNARY = ("%a: " + _V, "%r = tosa.{op} %a : (tensor<2x{T}>) -> tensor<2x{T}>", _V)
_TOSA_BINARY = ("%a: " + _V, "%r = tosa.{op} %a, %a : (tensor<2x{T}>, tensor<2x{T}>) -> "
                "tensor<2x{T}>", _V)
_TOSA_COMPARE = ("%a: " + _V, "%r = tosa.{op} %a, %a : (tensor<2x{T}>, tensor<2x{T}>) -> "
                 "tensor<2xi1>", "tensor<2xi1>")

TOSA: dict[str, Sample] = {
    **{op: _TOSA_UNARY for op in (
        "abs", "bitwise_not", "ceil", "clz", "cos", "erf", "exp", "floor", "log", "logical_not",
        "reciprocal", "rsqrt", "sigmoid", "sin", "tanh")},
    **{op: _TOSA_BINARY for op in (
        "add", "bitwise_and", "bitwise_or", "bitwise_xor", "intdiv", "logical_and",
        "logical_left_shift", "logical_or", "logical_right_shift", "logical_xor", "maximum",
        "minimum", "pow", "sub")},
    **{op: _TOSA_COMPARE for op in ("equal", "greater", "greater_equal")},
}

__all__ = ["CHLO", "HELPERS", "STABLEHLO", "Sample", "TOSA"]
