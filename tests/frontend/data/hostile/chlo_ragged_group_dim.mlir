// error: 5:13: 'chlo.ragged_dot' lhs_ragged_dimensions [0] or rhs_group_dimensions [5] is past its operand's rank
// rhs_group_dimensions = [5] for an rhs of rank 3: the importer indexed the shape with
// it (an IndexError).
func.func @main(%rx: tensor<6x4xf32>, %rw: tensor<3x4x5xf32>, %gs: tensor<3xi32>) -> tensor<6x5xf32> {
  %ragged = "chlo.ragged_dot"(%rx, %rw, %gs) <{ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = [5]>, precision_config = [#chlo<precision DEFAULT>, #chlo<precision DEFAULT>]}> : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<3xi32>) -> tensor<6x5xf32>
  return %ragged : tensor<6x5xf32>
}
