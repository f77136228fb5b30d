// The random graph fuzzer's lhs-dilation finding: the spec multiplies the zeros between
// dilated input elements by the kernel, so an infinite or NaN weight makes NaN on those
// taps; the compiled convolution skipped them (each output phase only visits the taps
// that meet real elements) and gave a number. Here the kernel is a graph input.
func.func @main(%x: tensor<1x2x4xf32>, %w: tensor<2x2x3xf32>) -> tensor<1x2x8xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],
      window = {pad = [[2, 1]], lhs_dilate = [2]}
      {feature_group_count = 1 : i64, batch_group_count = 1 : i64}
      : (tensor<1x2x4xf32>, tensor<2x2x3xf32>) -> tensor<1x2x8xf32>
  return %0 : tensor<1x2x8xf32>
}
