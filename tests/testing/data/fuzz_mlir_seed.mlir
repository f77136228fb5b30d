// A seed for tests/testing/test_fuzz_mlir.py: one site for each structured edit.
func.func @main(%x: tensor<1x8x8x1xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<1x8x8x4xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<1x8x8x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<1x8x8x4xf32>
  %s = stablehlo.add %y, %z : tensor<1x8x8x4xf32>
  %t = "stablehlo.transpose"(%s) <{permutation = array<i64: 0, 1, 2, 3>}> : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %g = "stablehlo.gather"(%t, %t) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1>}> : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  return %t : tensor<1x8x8x4xf32>
}
