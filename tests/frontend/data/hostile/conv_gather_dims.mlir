// error: 5:8: 'stablehlo.convolution': attribute 'dimension_numbers' must be a #stablehlo.conv<...>, not a #stablehlo.gather<...>
// A convolution whose dimension_numbers is a gather's: the importer read fields the
// attribute does not have (a TypeError).
func.func @main(%x: tensor<1x8x8x1xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<1x8x8x4xf32> {
  %y = "stablehlo.convolution"(%x, %w) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, feature_group_count = 1 : i64, batch_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>}> : (tensor<1x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<1x8x8x4xf32>
  return %y : tensor<1x8x8x4xf32>
}
