// error: 9:8: 'tosa.depthwise_conv2d': rhs_dilation [-1, 1] must be positive
// A TOSA depthwise convolution with dilation -1.
func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x8x4x2xf32> {
  %w = "tosa.const"() <{values = dense<0.5> : tensor<3x3x2x1xf32>}> : () -> tensor<3x3x2x1xf32>
  %b = "tosa.const"() <{values = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  // A comment line, so the op is on line 9.
  // Another.
  %y = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: -1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x4x2xf32>
  return %y : tensor<1x8x4x2xf32>
}
