// error: 4:8: 'convolution': lhs_dilation has 1 entries for 2 dimensions
// lhs_dilate has one entry for two spatial dimensions.
func.func @main(%x: tensor<1x8x8x1xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<1x8x8x4xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<1x8x8x4xf32>
  return %y : tensor<1x8x8x4xf32>
}
