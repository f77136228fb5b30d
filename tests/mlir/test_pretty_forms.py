"""Every pretty form parses to the tree its generic form gives (issue 9).

Each case is one function written twice: as `stablehlo-opt` prints it, and in generic
form as MLIR would print the same ops. `same_tree` checks the two parse to the same
op tree and that `print_generic` output parses back to it (a fixed point).
"""

# MLIR lines are kept whole, as the tools print them.
# ruff: noqa: E501

from __future__ import annotations

import pytest
from mlir_trees import same_tree


def func(args: str, body: str, results: str, ret: str) -> str:
    return f"func.func @main({args}) -> ({results}) {{\n{body}\n  return {ret} : {results}\n}}\n"


# name: (arguments, pretty body, generic body, result types, returned values)
CASES: dict[str, tuple[str, str, str, str, str]] = {
    "while": (
        "%n: tensor<i32>, %x: tensor<4xf32>",
        """  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c, %acc = %x) : tensor<i32>, tensor<4xf32>
   cond {
    %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %next = stablehlo.add %i, %one : tensor<i32>
    %twice = stablehlo.add %acc, %acc : tensor<4xf32>
    stablehlo.return %next, %twice : tensor<i32>, tensor<4xf32>
  }""",
        """  %c = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %0:2 = "stablehlo.while"(%c, %x) ({
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %lt = "stablehlo.compare"(%i, %n) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %one = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %next = "stablehlo.add"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %twice = "stablehlo.add"(%acc, %acc) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "stablehlo.return"(%next, %twice) : (tensor<i32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)""",
        "tensor<4xf32>", "%0#1"),
    "while_without_arguments_with_attributes": (
        "%x: tensor<f32>",
        """  stablehlo.while() attributes {mhlo.frontend = "jax"}
   cond {
    %f = stablehlo.constant dense<false> : tensor<i1>
    stablehlo.return %f : tensor<i1>
  } do {
    stablehlo.return
  }""",
        """  "stablehlo.while"() ({
    %f = stablehlo.constant dense<false> : tensor<i1>
    "stablehlo.return"(%f) : (tensor<i1>) -> ()
  }, {
    "stablehlo.return"() : () -> ()
  }) {mhlo.frontend = "jax"} : () -> ()""",
        "tensor<f32>", "%x"),
    "argmax_reduce_with_a_reducer_region": (
        "%x: tensor<4x8xf32>",
        """  %iota = stablehlo.iota dim = 1 : tensor<4x8xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%x init: %ninf), (%iota init: %zero) across dimensions = [1] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%ia: tensor<i32>, %ib: tensor<i32>)  {
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<f32>
    %i = stablehlo.select %gt, %ia, %ib : tensor<i1>, tensor<i32>
    stablehlo.return %v, %i : tensor<f32>, tensor<i32>
  }""",
        """  %iota = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<4x8xi32>
  %ninf = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
  %zero = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %0:2 = "stablehlo.reduce"(%x, %iota, %ninf, %zero) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f32>, %ia: tensor<i32>, %b: tensor<f32>, %ib: tensor<i32>):
    %gt = "stablehlo.compare"(%a, %b) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = "stablehlo.select"(%gt, %a, %b) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %i = "stablehlo.select"(%gt, %ia, %ib) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    "stablehlo.return"(%v, %i) : (tensor<f32>, tensor<i32>) -> ()
  }) : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)""",
        "tensor<4xi32>", "%0#1"),
    "reduce_applies_on_integers": (
        "%x: tensor<2x3xi32>",
        """  %z = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xi32>, tensor<i32>) -> tensor<i32>""",
        """  %z = stablehlo.constant dense<0> : tensor<i32>
  %0 = "stablehlo.reduce"(%x, %z) <{dimensions = array<i64: 0, 1>}> ({
  ^bb0(%p: tensor<i32>, %q: tensor<i32>):
    %s = "stablehlo.add"(%p, %q) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    "stablehlo.return"(%s) : (tensor<i32>) -> ()
  }) : (tensor<2x3xi32>, tensor<i32>) -> tensor<i32>""",
        "tensor<i32>", "%0"),
    "complex_and_fft": (
        "%re: tensor<8xf32>, %im: tensor<8xf32>",
        """  %c = stablehlo.complex %re, %im : tensor<8xcomplex<f32>>
  %f = stablehlo.fft %c, type = FFT, length = [8] : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
  %r = stablehlo.fft %re, type = RFFT, length = [8] : (tensor<8xf32>) -> tensor<5xcomplex<f32>>
  %0 = stablehlo.real %f : (tensor<8xcomplex<f32>>) -> tensor<8xf32>""",
        """  %c = "stablehlo.complex"(%re, %im) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xcomplex<f32>>
  %f = "stablehlo.fft"(%c) <{fft_length = array<i64: 8>, fft_type = #stablehlo<fft_type FFT>}> : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
  %r = "stablehlo.fft"(%re) {fft_type = #stablehlo<fft_type RFFT>, fft_length = array<i64: 8>} : (tensor<8xf32>) -> tensor<5xcomplex<f32>>
  %0 = "stablehlo.real"(%f) : (tensor<8xcomplex<f32>>) -> tensor<8xf32>""",
        "tensor<8xf32>", "%0"),
    "rng_and_rng_bit_generator": (
        "%lo: tensor<f32>, %hi: tensor<f32>, %state: tensor<2xui64>",
        """  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %u = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>
  %s, %bits = stablehlo.rng_bit_generator %state, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui32>)""",
        """  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %u = "stablehlo.rng"(%lo, %hi, %shape) <{rng_distribution = #stablehlo<rng_distribution UNIFORM>}> : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>
  %s, %bits = "stablehlo.rng_bit_generator"(%state) <{rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>}> : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui32>)""",
        "tensor<2x3xui32>", "%bits"),
    "slices_and_broadcast": (
        "%x: tensor<4xf32>, %u: tensor<2xf32>, %i: tensor<i32>",
        """  %b = stablehlo.bitcast_convert %x : (tensor<4xf32>) -> tensor<4xi32>
  %d = stablehlo.dynamic_update_slice %x, %u, %i : (tensor<4xf32>, tensor<2xf32>, tensor<i32>) -> tensor<4xf32>
  %s = stablehlo.dynamic_slice %d, %i, sizes = [2] : (tensor<4xf32>, tensor<i32>) -> tensor<2xf32>
  %0 = stablehlo.broadcast %s, sizes = [3] : (tensor<2xf32>) -> tensor<3x2xf32>""",
        """  %b = "stablehlo.bitcast_convert"(%x) : (tensor<4xf32>) -> tensor<4xi32>
  %d = "stablehlo.dynamic_update_slice"(%x, %u, %i) : (tensor<4xf32>, tensor<2xf32>, tensor<i32>) -> tensor<4xf32>
  %s = "stablehlo.dynamic_slice"(%d, %i) <{slice_sizes = array<i64: 2>}> : (tensor<4xf32>, tensor<i32>) -> tensor<2xf32>
  %0 = "stablehlo.broadcast"(%s) <{broadcast_sizes = array<i64: 3>}> : (tensor<2xf32>) -> tensor<3x2xf32>""",
        "tensor<3x2xf32>", "%0"),
    "custom_call_and_composite": (
        "%x: tensor<4xf32>",
        """  %0 = stablehlo.custom_call @my.target(%x) {backend_config = "cfg", has_side_effect = true, mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.composite "my.square" %0 {composite_attributes = {k = 2 : i64}, decomposition = @square, version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>""",
        """  %0 = "stablehlo.custom_call"(%x) <{backend_config = "cfg", call_target_name = "my.target", has_side_effect = true}> {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "stablehlo.composite"(%0) <{composite_attributes = {k = 2 : i64}, decomposition = @square, name = "my.square", version = 1 : i32}> : (tensor<4xf32>) -> tensor<4xf32>""",
        "tensor<4xf32>", "%1"),
    "small_attribute_forms": (
        "%x: tensor<2x2xf32>, %y: tensor<3xi32>",
        """  %a = stablehlo.reduce_precision %x, format = e5m10 : tensor<2x2xf32>
  %b = stablehlo.cholesky %a, lower = true : tensor<2x2xf32>
  %t = stablehlo.tuple %b, %y : tuple<tensor<2x2xf32>, tensor<3xi32>>
  %g = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2x2xf32>,tensor<3xi32>>) -> tensor<3xi32>
  %o:2 = stablehlo.optimization_barrier %g, %b : tensor<3xi32>, tensor<2x2xf32>
  %e = stablehlo.einsum %o#1, %o#1, config = "ab,bc->ac" : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %u = stablehlo.unary_einsum %e, config = "ab->a" : (tensor<2x2xf32>) -> tensor<2xf32>
  %n = stablehlo.get_dimension_size %u, dim = 0 : (tensor<2xf32>) -> tensor<i32>
  %r = stablehlo.replica_id : tensor<ui32>
  %p = stablehlo.partition_id : tensor<ui32>
  %k = stablehlo.create_token : !stablehlo.token
  %k2 = stablehlo.after_all %k, %k : !stablehlo.token""",
        """  %a = "stablehlo.reduce_precision"(%x) {exponent_bits = 5 : i32, mantissa_bits = 10 : i32} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %b = "stablehlo.cholesky"(%a) {lower = true} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %t = "stablehlo.tuple"(%b, %y) : (tensor<2x2xf32>, tensor<3xi32>) -> tuple<tensor<2x2xf32>, tensor<3xi32>>
  %g = "stablehlo.get_tuple_element"(%t) <{index = 1 : i32}> : (tuple<tensor<2x2xf32>, tensor<3xi32>>) -> tensor<3xi32>
  %o:2 = "stablehlo.optimization_barrier"(%g, %b) : (tensor<3xi32>, tensor<2x2xf32>) -> (tensor<3xi32>, tensor<2x2xf32>)
  %e = "stablehlo.einsum"(%o#1, %o#1) <{einsum_config = "ab,bc->ac"}> : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %u = "stablehlo.unary_einsum"(%e) <{einsum_config = "ab->a"}> : (tensor<2x2xf32>) -> tensor<2xf32>
  %n = "stablehlo.get_dimension_size"(%u) <{dimension = 0 : i64}> : (tensor<2xf32>) -> tensor<i32>
  %r = "stablehlo.replica_id"() : () -> tensor<ui32>
  %p = "stablehlo.partition_id"() : () -> tensor<ui32>
  %k = "stablehlo.create_token"() : () -> !stablehlo.token
  %k2 = "stablehlo.after_all"(%k, %k) : (!stablehlo.token, !stablehlo.token) -> !stablehlo.token""",
        "tensor<i32>", "%n"),
    "elementwise_forms": (
        "%x: tensor<4xf32>, %q: tensor<4xi1>",
        """  %f = stablehlo.is_finite %x : (tensor<4xf32>) -> tensor<4xi1>
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %c = stablehlo.clamp %lo, %x, %lo : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %s = stablehlo.select %q, %c, %x : tensor<4xi1>, tensor<4xf32>
  %t = stablehlo.compare LT, %s, %x, TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %e = stablehlo.exponential %s {result_accuracy = #stablehlo.result_accuracy<ulps = 2, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>} : tensor<4xf32>
  %0 = stablehlo.and %f, %t : tensor<4xi1>""",
        """  %f = "stablehlo.is_finite"(%x) : (tensor<4xf32>) -> tensor<4xi1>
  %lo = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %c = "stablehlo.clamp"(%lo, %x, %lo) : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %s = "stablehlo.select"(%q, %c, %x) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = "stablehlo.compare"(%s, %x) <{compare_type = #stablehlo<comparison_type TOTALORDER>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %e = "stablehlo.exponential"(%s) <{result_accuracy = #stablehlo.result_accuracy<atol = 0.0, rtol = 0.0, ulps = 2, mode = #stablehlo.result_accuracy_mode<TOLERANCE>,>}> : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "stablehlo.and"(%f, %t) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>""",
        "tensor<4xi1>", "%0"),
    "dot_with_precision_and_algorithm": (
        "%a: tensor<2x3xf32>, %b: tensor<3x4xf32>",
        """  %d = stablehlo.dot %a, %b, precision = [DEFAULT, HIGHEST] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT], algorithm = <lhs_precision_type = tf32, rhs_precision_type = tf32, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1, allow_imprecise_accumulation = false> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>""",
        """  %d = "stablehlo.dot"(%a, %b) {precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %0 = "stablehlo.dot_general"(%a, %b) <{algorithm = #stablehlo.dot_algorithm<
      allow_imprecise_accumulation = false, lhs_precision_type = tf32,
      rhs_precision_type = tf32, accumulation_type = f32, lhs_component_count = 1,
      rhs_component_count = 1, num_primitive_operations = 1,
    >,
    dot_dimension_numbers = #stablehlo.dot<
      lhs_batching_dimensions = [],
      rhs_contracting_dimensions = [0],
      lhs_contracting_dimensions = [1],
    >,
    precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>""",
        "tensor<2x4xf32>", "%0"),
    "generic_only_ops_after_their_bare_name": (
        "%p: tensor<i1>, %i: tensor<i32>, %x: tensor<5xf32>",
        """  %0 = stablehlo.if(%p) ({
    stablehlo.return %x : tensor<5xf32>
  }, {
    %n = stablehlo.negate %x : tensor<5xf32>
    stablehlo.return %n : tensor<5xf32>
  }) : (tensor<i1>) -> tensor<5xf32>
  %1 = stablehlo.case(%i) ({
    stablehlo.return %0 : tensor<5xf32>
  }, {
    stablehlo.return %x : tensor<5xf32>
  }) : (tensor<i32>) -> tensor<5xf32>
  %2 = stablehlo.sort(%1) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<5xf32>) -> tensor<5xf32>
  %3 = stablehlo.all_reduce(%2) <{replica_groups = dense<[[0]]> : tensor<1x1xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5xf32>) -> tensor<5xf32>""",
        """  %0 = "stablehlo.if"(%p) ({
    "stablehlo.return"(%x) : (tensor<5xf32>) -> ()
  }, {
    %n = "stablehlo.negate"(%x) : (tensor<5xf32>) -> tensor<5xf32>
    "stablehlo.return"(%n) : (tensor<5xf32>) -> ()
  }) : (tensor<i1>) -> tensor<5xf32>
  %1 = "stablehlo.case"(%i) ({
    "stablehlo.return"(%0) : (tensor<5xf32>) -> ()
  }, {
    "stablehlo.return"(%x) : (tensor<5xf32>) -> ()
  }) : (tensor<i32>) -> tensor<5xf32>
  %2 = "stablehlo.sort"(%1) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = "stablehlo.compare"(%a, %b) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type TOTALORDER>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }) {dimension = 0 : i64, is_stable = true} : (tensor<5xf32>) -> tensor<5xf32>
  %3 = "stablehlo.all_reduce"(%2) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<5xf32>) -> tensor<5xf32>""",
        "tensor<5xf32>", "%3"),
    "scatter_as_jax_writes_x_at_i_set_v": (
        "%x: tensor<5xf32>, %i: tensor<1xi32>, %v: tensor<f32>",
        """  %0 = "stablehlo.scatter"(%x, %i, %v) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0],>, unique_indices = true}> ({
  ^bb0(%old: tensor<f32>, %new: tensor<f32>):
    stablehlo.return %new : tensor<f32>
  }) : (tensor<5xf32>, tensor<1xi32>, tensor<f32>) -> tensor<5xf32>""",
        """  %0 = "stablehlo.scatter"(%x, %i, %v) ({
  ^bb0(%old: tensor<f32>, %new: tensor<f32>):
    "stablehlo.return"(%new) : (tensor<f32>) -> ()
  }) {indices_are_sorted = true, unique_indices = true, scatter_dimension_numbers = #stablehlo.scatter<
      update_window_dims = [],
      inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0],
      index_vector_dim = 0>} : (tensor<5xf32>, tensor<1xi32>, tensor<f32>) -> tensor<5xf32>""",
        "tensor<5xf32>", "%0"),
    "chlo_as_jax_writes_it": (
        "%x: tensor<4xf32>, %y: tensor<1xf32>",
        """  %sq = chlo.square %x : tensor<4xf32> -> tensor<4xf32>
  %e = chlo.erf %sq : tensor<4xf32> -> tensor<4xf32>
  %c = chlo.erfc %e : tensor<4xf32> -> tensor<4xf32>
  %inv = chlo.erf_inv %c : tensor<4xf32> -> tensor<4xf32>
  %lg = chlo.lgamma %inv : tensor<4xf32> -> tensor<4xf32>
  %dg = chlo.digamma %lg : tensor<4xf32> -> tensor<4xf32>
  %i1 = chlo.bessel_i1e %dg : tensor<4xf32> -> tensor<4xf32>
  %t = chlo.tan %i1 : tensor<4xf32> -> tensor<4xf32>
  %na = chlo.next_after %t, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = chlo.broadcast_add %na, %y {broadcast_dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %cmp = chlo.broadcast_compare %b, %y {comparison_direction = #chlo<comparison_direction GT>} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi1>
  %sel = chlo.broadcast_select %cmp, %b, %x : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %k = chlo.constant dense<1.0> : tensor<4xf32>
  %v, %ix = chlo.top_k(%sel, k = 2, is_stable = true) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)""",
        """  %sq = "chlo.square"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %e = "chlo.erf"(%sq) : (tensor<4xf32>) -> tensor<4xf32>
  %c = "chlo.erfc"(%e) : (tensor<4xf32>) -> tensor<4xf32>
  %inv = "chlo.erf_inv"(%c) : (tensor<4xf32>) -> tensor<4xf32>
  %lg = "chlo.lgamma"(%inv) : (tensor<4xf32>) -> tensor<4xf32>
  %dg = "chlo.digamma"(%lg) : (tensor<4xf32>) -> tensor<4xf32>
  %i1 = "chlo.bessel_i1e"(%dg) : (tensor<4xf32>) -> tensor<4xf32>
  %t = "chlo.tan"(%i1) : (tensor<4xf32>) -> tensor<4xf32>
  %na = "chlo.next_after"(%t, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "chlo.broadcast_add"(%na, %y) <{broadcast_dimensions = array<i64: 0>}> : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %cmp = "chlo.broadcast_compare"(%b, %y) <{comparison_direction = #chlo<comparison_direction GT>}> : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi1>
  %sel = "chlo.broadcast_select"(%cmp, %b, %x) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %k = "chlo.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %v, %ix = "chlo.top_k"(%sel) <{is_stable = true, k = 2 : i64}> : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi32>)""",
        "tensor<2xi32>", "%ix"),
    "chlo_scan": (
        "%xs: tensor<3xf32>, %c: tensor<f32>",
        """  %ys, %last = chlo.scan (%xs) inits (%c) dimension=0 {
  ^bb0(%x: tensor<f32>, %carry: tensor<f32>):
    %s = stablehlo.add %x, %carry : tensor<f32>
    stablehlo.return %s, %s : tensor<f32>, tensor<f32>
  } : (tensor<3xf32>, tensor<f32>) -> (tensor<3xf32>, tensor<f32>)""",
        """  %ys, %last = "chlo.scan"(%xs, %c) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<f32>, %carry: tensor<f32>):
    %s = stablehlo.add %x, %carry : tensor<f32>
    stablehlo.return %s, %s : tensor<f32>, tensor<f32>
  }) : (tensor<3xf32>, tensor<f32>) -> (tensor<3xf32>, tensor<f32>)""",
        "tensor<f32>", "%last"),
    "constant_with_attributes_and_its_generic_fallback": (
        "%x: tensor<2xi8>",
        """  %a = stablehlo.constant {attr = 1 : i32} dense<[-2, 4]> : tensor<2xi8>
  %q = stablehlo.constant() <{value = dense<[1, 2]> : tensor<2xi8>}> : () -> tensor<2x!quant.uniform<i8:f32, 2.0:15>>
  %0 = stablehlo.add %a, %x : tensor<2xi8>""",
        """  %a = "stablehlo.constant"() {value = dense<[-2, 4]> : tensor<2xi8>, attr = 1 : i32} : () -> tensor<2xi8>
  %q = "stablehlo.constant"() {value = dense<[1, 2]> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<i8:f32, 2.0:15>>
  %0 = "stablehlo.add"(%a, %x) : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>""",
        "tensor<2xi8>", "%0"),
    "control_flow_with_blocks_and_block_arguments": (
        "%b: i1, %x: tensor<f32>",
        """  %n = stablehlo.negate %x : tensor<f32>
  cf.cond_br %b, ^bb1(%n : tensor<f32>), ^bb2
^bb1(%v: tensor<f32>):
  cf.br ^bb3(%v : tensor<f32>)
^bb2:
  cf.br ^bb3(%x : tensor<f32>)
^bb3(%r: tensor<f32>):
  %0 = stablehlo.abs %r : tensor<f32>""",
        """  %n = "stablehlo.negate"(%x) : (tensor<f32>) -> tensor<f32>
  "cf.cond_br"(%b, %n)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i1, tensor<f32>) -> ()
^bb1(%v: tensor<f32>):
  "cf.br"(%v)[^bb3] : (tensor<f32>) -> ()
^bb2:
  "cf.br"(%x)[^bb3] : (tensor<f32>) -> ()
^bb3(%r: tensor<f32>):
  %0 = "stablehlo.abs"(%r) : (tensor<f32>) -> tensor<f32>""",
        "tensor<f32>", "%0"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pretty_form_is_the_generic_tree(name: str) -> None:
    args, pretty, generic, results, ret = CASES[name]
    same_tree(func(args, pretty, results, ret), func(args, generic, results, ret))


# Every op of the simple forms, generated from the tables: the property holds for each.
def _ops_parsed_by(parser) -> list[str]:
    from toolchain.mlir.custom_syntax import SYNTAX

    return sorted(name for name, p in SYNTAX.items() if p is parser)


def _names(module: str, parser: str) -> list[str]:
    import importlib

    return _ops_parsed_by(getattr(importlib.import_module(f"toolchain.mlir.{module}"), parser))


@pytest.mark.parametrize("op", _names("stablehlo_syntax", "p_elementwise"))
def test_every_plain_stablehlo_form(op: str) -> None:
    t = "tensor<4xf32>"
    same_tree(func(f"%a: {t}", f"  %0 = {op} %a, %a : {t}", t, "%0"),
              func(f"%a: {t}", f'  %0 = "{op}"(%a, %a) : ({t}, {t}) -> {t}', t, "%0"))
    same_tree(func(f"%a: {t}", f"  %0 = {op} %a : ({t}) -> tensor<4xi8>", "tensor<4xi8>",
                   "%0"),
              func(f"%a: {t}", f'  %0 = "{op}"(%a) : ({t}) -> tensor<4xi8>', "tensor<4xi8>",
                   "%0"))


@pytest.mark.parametrize("op", _names("chlo_syntax", "p_arrow"))
def test_every_chlo_arrow_form(op: str) -> None:
    t = "tensor<4xf32>"
    same_tree(func(f"%a: {t}", f"  %0 = {op} %a : {t} -> {t}", t, "%0"),
              func(f"%a: {t}", f'  %0 = "{op}"(%a) : ({t}) -> {t}', t, "%0"))
    same_tree(func(f"%a: {t}", f"  %0 = {op} %a, %a : {t}, {t} -> tensor<4xi1>",
                   "tensor<4xi1>", "%0"),
              func(f"%a: {t}", f'  %0 = "{op}"(%a, %a) : ({t}, {t}) -> tensor<4xi1>',
                   "tensor<4xi1>", "%0"))


@pytest.mark.parametrize("op", _names("stablehlo_syntax", "p_generic_only")
                         + _names("chlo_syntax", "p_generic_only"))
def test_every_generic_only_op_after_its_bare_name(op: str) -> None:
    t = "tensor<4xf32>"
    body = ' <{k = 1 : i64}> ({\n  ^bb0(%x: tensor<f32>):\n    "stablehlo.return"(%x) : ' \
           "(tensor<f32>) -> ()\n  }) {m = 2} : (tensor<4xf32>) -> tensor<4xf32>"
    same_tree(func(f"%a: {t}", f"  %0 = {op}(%a){body}", t, "%0"),
              func(f"%a: {t}", f'  %0 = "{op}"(%a){body}', t, "%0"))


@pytest.mark.parametrize("pretty, generic", [
    ("%0 = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi64>) -> tensor<4xf32>",
     '%0 = "stablehlo.dynamic_iota"(%s) <{iota_dimension = 0 : i64}> : (tensor<1xi64>) -> tensor<4xf32>'),
    ("%0 = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [0] : (tensor<4xf32>, tensor<1xi64>) -> tensor<4xf32>",
     '%0 = "stablehlo.dynamic_broadcast_in_dim"(%a, %s) <{broadcast_dimensions = array<i64: 0>}> : (tensor<4xf32>, tensor<1xi64>) -> tensor<4xf32>'),
    ("%0 = stablehlo.set_dimension_size %a, %i, dim = 0 : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>",
     '%0 = "stablehlo.set_dimension_size"(%a, %i) <{dimension = 0 : i64}> : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>'),
    ("%0 = stablehlo.uniform_quantize %a : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-1>>\n  %1 = stablehlo.uniform_dequantize %0 : (tensor<4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<4xf32>\n  %2 = stablehlo.reverse %1, dims = [0] : tensor<4xf32>",
     '%0 = "stablehlo.uniform_quantize"(%a) : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-1>>\n  %1 = "stablehlo.uniform_dequantize"(%0) : (tensor<4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<4xf32>\n  %2 = "stablehlo.reverse"(%1) <{dimensions = array<i64: 0>}> : (tensor<4xf32>) -> tensor<4xf32>'),
    ("%c = chlo.mulhi %i, %i : tensor<i32>, tensor<i32> -> tensor<i32>\n  %0 = stablehlo.convert %c : (tensor<i32>) -> tensor<4xf32>",
     '%c = "chlo.mulhi"(%i, %i) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n  %0 = "stablehlo.convert"(%c) : (tensor<i32>) -> tensor<4xf32>'),
    ('cf.assert %p, "positive"\n  %0 = stablehlo.abs %a : tensor<4xf32>',
     '"cf.assert"(%p) <{msg = "positive"}> : (i1) -> ()\n  %0 = "stablehlo.abs"(%a) : (tensor<4xf32>) -> tensor<4xf32>'),
])
def test_remaining_forms(pretty: str, generic: str) -> None:
    args = "%a: tensor<4xf32>, %s: tensor<1xi64>, %i: tensor<i32>, %p: i1"
    t = "tensor<4xf32>"
    same_tree(func(args, "  " + pretty, t, "%0" if "%2" not in pretty else "%2"),
              func(args, "  " + generic, t, "%0" if "%2" not in pretty else "%2"))


def test_shardy_mesh_declaration() -> None:
    # Newer JAX exports declare the device mesh at the top of the module.
    module = same_tree(
        'sdy.mesh @mesh = <["x"=2, "y"=1]>\n' + func("%a: tensor<f32>", "", "tensor<f32>", "%a"),
        '"sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=1]>, sym_name = "mesh"}> : () -> ()\n'
        + func("%a: tensor<f32>", "", "tensor<f32>", "%a"))
    from toolchain.frontend import import_module

    assert len(import_module(module).inputs) == 1  # the importer passes over the mesh
