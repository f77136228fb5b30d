// Complex elementwise functions on firmware (tests/e2e/test_complex_math.py):
// passes/complex_math.py's lowerings to real ops.
func.func @main(%z: tensor<6xcomplex<f32>>, %w: tensor<6xcomplex<f32>>) -> (tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>) {
  %0 = stablehlo.sine %z : tensor<6xcomplex<f32>>
  %1 = stablehlo.cosine %z : tensor<6xcomplex<f32>>
  %2 = stablehlo.tan %z : tensor<6xcomplex<f32>>
  %3 = stablehlo.tanh %z : tensor<6xcomplex<f32>>
  %4 = stablehlo.exponential_minus_one %z : tensor<6xcomplex<f32>>
  %5 = stablehlo.log_plus_one %z : tensor<6xcomplex<f32>>
  %6 = stablehlo.logistic %z : tensor<6xcomplex<f32>>
  %7 = stablehlo.rsqrt %z : tensor<6xcomplex<f32>>
  %8 = stablehlo.cbrt %z : tensor<6xcomplex<f32>>
  %9 = stablehlo.power %z, %w : tensor<6xcomplex<f32>>
  %10 = stablehlo.atan2 %z, %w : tensor<6xcomplex<f32>>
  %11 = stablehlo.maximum %z, %w : tensor<6xcomplex<f32>>
  %12 = stablehlo.minimum %z, %w : tensor<6xcomplex<f32>>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12 : tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<6xcomplex<f32>>
}
