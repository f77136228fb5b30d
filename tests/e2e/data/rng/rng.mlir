// The older rng op, UNIFORM and NORMAL (tests/e2e/test_rng.py).
func.func @main(%lo: tensor<f32>, %hi: tensor<f32>, %ilo: tensor<i32>, %ihi: tensor<i32>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xi32>) {
  %shape = stablehlo.constant dense<[64, 32]> : tensor<2xi64>
  %0 = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<64x32xf32>
  %1 = "stablehlo.rng"(%lo, %hi, %shape) {rng_distribution = #stablehlo<rng_distribution NORMAL>} : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<64x32xf32>
  %2 = stablehlo.rng %ilo, %ihi, %shape, distribution = UNIFORM : (tensor<i32>, tensor<i32>, tensor<2xi64>) -> tensor<64x32xi32>
  return %0, %1, %2 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xi32>
}
