// Found by the random graph fuzzer (seed 8000141): a ui32 start of 4294967295 wrapped to
// -1 as an index and clamped to 0; StableHLO clamps it to the last valid start.
func.func @main(%x: tensor<5x6x3xi8>, %i: tensor<6x1xui32>) -> tensor<6x3xi8> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      collapsed_slice_dims = [2], operand_batching_dims = [1], start_indices_batching_dims = [0],
      start_index_map = [2], index_vector_dim = 1>, slice_sizes = array<i64: 3, 1, 1>}>
      : (tensor<5x6x3xi8>, tensor<6x1xui32>) -> tensor<6x3xi8>
  return %0 : tensor<6x3xi8>
}
