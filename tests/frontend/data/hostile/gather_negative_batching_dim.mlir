// error: 5:8: 'gather': collapsed_slice_dims + operand_batching_dims [0, -1] out of range for rank 2
// operand_batching_dims = [-1] passed the verifier (Python read it as the last dim)
// and the reference ran it with a meaning StableHLO does not give it.
func.func @main(%x: tensor<3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x1xf32> {
  %g = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [-1], start_indices_batching_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>}> : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x1xf32>
  return %g : tensor<2x1xf32>
}
