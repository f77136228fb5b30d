// The lhs-dilation finding with the kernel a constant holding +inf, -inf and NaN (a
// constant kernel skips the holes only when all its values are finite), in two spatial
// dims, beside the same transposed convolution with a finite constant kernel (which
// keeps its per-phase loops).
func.func @main(%x: tensor<1x3x3x1xf32>) -> (tensor<1x6x5x2xf32>, tensor<1x6x5x2xf32>) {
  %w = stablehlo.constant dense<[[[[0x7F800000, 1.5]], [[-2.0, 0.25]]],
                                 [[[0.5, 0xFF800000]], [[0x7FC00000, -1.0]]]]>
      : tensor<2x2x1x2xf32>
  %f = stablehlo.constant dense<[[[[1.0, 1.5]], [[-2.0, 0.25]]],
                                 [[[0.5, -3.0]], [[0.75, -1.0]]]]> : tensor<2x2x1x2xf32>
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {pad = [[1, 1], [1, 0]], lhs_dilate = [2, 2]}
      {feature_group_count = 1 : i64, batch_group_count = 1 : i64}
      : (tensor<1x3x3x1xf32>, tensor<2x2x1x2xf32>) -> tensor<1x6x5x2xf32>
  %1 = stablehlo.convolution(%x, %f) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {pad = [[1, 1], [1, 0]], lhs_dilate = [2, 2]}
      {feature_group_count = 1 : i64, batch_group_count = 1 : i64}
      : (tensor<1x3x3x1xf32>, tensor<2x2x1x2xf32>) -> tensor<1x6x5x2xf32>
  return %0, %1 : tensor<1x6x5x2xf32>, tensor<1x6x5x2xf32>
}
