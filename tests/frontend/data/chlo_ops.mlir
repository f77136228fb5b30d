// Every CHLO op minirt takes, in the pretty forms of the CHLO op definitions, on inputs
// chosen in tests/frontend/test_chlo.py: one firmware per board runs them all.
func.func @main(%x: tensor<2x8xf32>, %u: tensor<8xf32>, %s: tensor<8xf32>,
                %q: tensor<8xf32>, %n: tensor<8xf32>, %w: tensor<8xf32>,
                %i: tensor<2x8xi32>, %j: tensor<8xi32>, %c: tensor<2xf32>,
                %t: tensor<6xf32>, %rx: tensor<6x4xf32>, %rw: tensor<3x4x5xf32>,
                %gs: tensor<3xi32>)
    -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
        tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
        tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<2x8xf32>,
        tensor<8xi1>, tensor<8xi1>, tensor<8xi1>,
        tensor<3xf32>, tensor<2x8xf32>,
        tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi1>, tensor<2x8xf32>,
        tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
        tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
        tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>,
        tensor<2x8xi32>, tensor<2x8xi32>,
        tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<2x8xi32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<4xf32>, tensor<4xi32>,
        tensor<6x5xf32>) {
  %erf = chlo.erf %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %erfc = chlo.erfc %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %lgamma = chlo.lgamma %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %digamma = chlo.digamma %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %i1e = chlo.bessel_i1e %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %tan = chlo.tan %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %atan = chlo.atan %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %sinh = chlo.sinh %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %cosh = chlo.cosh %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %asinh = chlo.asinh %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %square = chlo.square %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %conj = chlo.conj %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %erf_inv = chlo.erf_inv %u : tensor<8xf32> -> tensor<8xf32>
  %asin = chlo.asin %u : tensor<8xf32> -> tensor<8xf32>
  %acos = chlo.acos %u : tensor<8xf32> -> tensor<8xf32>
  %atanh = chlo.atanh %u : tensor<8xf32> -> tensor<8xf32>
  %acosh = chlo.acosh %s : tensor<8xf32> -> tensor<8xf32>
  %zeta = chlo.zeta %s, %q : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %polygamma = chlo.polygamma %n, %q : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %x2 = chlo.broadcast_add %x, %u : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %next = chlo.next_after %x, %x2 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %isinf = chlo.is_inf %w : tensor<8xf32> -> tensor<8xi1>
  %ispos = chlo.is_pos_inf %w : tensor<8xf32> -> tensor<8xi1>
  %isneg = chlo.is_neg_inf %w : tensor<8xf32> -> tensor<8xi1>
  %const = chlo.constant dense<[1.5, -2.0, 0.25]> : tensor<3xf32>
  %like = "chlo.constant_like"(%x) <{value = 0.75 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %bmul = chlo.broadcast_multiply %x, %c {broadcast_dimensions = array<i64: 0>} : (tensor<2x8xf32>, tensor<2xf32>) -> tensor<2x8xf32>
  %bcmp = chlo.broadcast_compare %x, %u {comparison_direction = #chlo<comparison_direction LT>} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %bsel = chlo.broadcast_select %bcmp, %x, %u : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %bsub = chlo.broadcast_subtract %x, %u : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %bdiv = chlo.broadcast_divide %x, %s : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %bmax = chlo.broadcast_maximum %x, %u : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %bmin = chlo.broadcast_minimum %u, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %bpow = chlo.broadcast_power %s, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %brem = chlo.broadcast_remainder %x, %s : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %batan2 = chlo.broadcast_atan2 %x, %u : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %band = chlo.broadcast_and %i, %j : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  %bor = chlo.broadcast_or %i, %j : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  %bxor = chlo.broadcast_xor %i, %j : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  %bshl = chlo.broadcast_shift_left %i, %j : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  %bsra = chlo.broadcast_shift_right_arithmetic %i, %j : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  %bsrl = chlo.broadcast_shift_right_logical %i, %j : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  %bnext = chlo.broadcast_next_after %x, %u : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %bzeta = chlo.broadcast_zeta %s, %q : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %bpoly = chlo.broadcast_polygamma %n, %q : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %mulhi = chlo.mulhi %i, %i : tensor<2x8xi32>, tensor<2x8xi32> -> tensor<2x8xi32>
  %topv, %topi = chlo.top_k(%x, k = 3) : tensor<2x8xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
  %tiev, %tiei = chlo.top_k(%t, k = 4) : tensor<6xf32> -> (tensor<4xf32>, tensor<4xi32>)
  %ragged = "chlo.ragged_dot"(%rx, %rw, %gs) <{ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>, precision_config = [#chlo<precision DEFAULT>, #chlo<precision DEFAULT>]}> : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<3xi32>) -> tensor<6x5xf32>
  return %erf, %erfc, %lgamma, %digamma, %i1e, %tan, %atan, %sinh, %cosh, %asinh, %square,
         %conj, %erf_inv, %asin, %acos, %atanh, %acosh, %zeta, %polygamma, %next,
         %isinf, %ispos, %isneg, %const, %like, %x2, %bmul, %bcmp, %bsel, %bsub, %bdiv,
         %bmax, %bmin, %bpow, %brem, %batan2, %band, %bor, %bxor, %bshl, %bsra, %bsrl,
         %bnext, %bzeta, %bpoly, %mulhi, %topv, %topi, %tiev, %tiei, %ragged
    : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
      tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
      tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
      tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
      tensor<8xf32>, tensor<8xf32>, tensor<2x8xf32>,
      tensor<8xi1>, tensor<8xi1>, tensor<8xi1>,
      tensor<3xf32>, tensor<2x8xf32>,
      tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi1>, tensor<2x8xf32>,
      tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
      tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>,
      tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>,
      tensor<2x8xi32>, tensor<2x8xi32>,
      tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>,
      tensor<2x8xi32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<4xf32>, tensor<4xi32>,
      tensor<6x5xf32>
}
