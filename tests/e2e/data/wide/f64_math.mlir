// f64 elementwise math on inputs (tests/e2e/test_f64_math.py): computed in f64 on every
// board (codegen/mathlib_f64.py, mathlib_f64_more.py), not through f32.
func.func @main(%x: tensor<8xf64>, %y: tensor<8xf64>) -> (tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>) {
  %0 = stablehlo.tan %x : tensor<8xf64>
  %1 = stablehlo.exponential_minus_one %x : tensor<8xf64>
  %2 = stablehlo.log_plus_one %y : tensor<8xf64>
  %3 = stablehlo.tanh %x : tensor<8xf64>
  %4 = stablehlo.logistic %x : tensor<8xf64>
  %5 = stablehlo.rsqrt %y : tensor<8xf64>
  %6 = stablehlo.cbrt %x : tensor<8xf64>
  %7 = stablehlo.atan2 %x, %y : tensor<8xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>
}
