// i64, ui64 and f64 arithmetic, conversions, divisions, shifts, compares and math
// (tests/e2e/test_wide_types.py): on 32-bit boards these are the compiler helpers' work.
func.func @main(%a: tensor<8xi64>, %b: tensor<8xi64>, %s: tensor<8xi64>, %u: tensor<8xui64>, %v: tensor<8xui64>, %x: tensor<8xf64>, %y: tensor<8xf64>) -> (tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi1>, tensor<8xi1>, tensor<8xui64>, tensor<8xui64>, tensor<8xi1>, tensor<8xf64>, tensor<8xf32>, tensor<8xi64>, tensor<8xui64>, tensor<8xi32>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf32>, tensor<8xi1>, tensor<8xf64>, tensor<8xi64>, tensor<8xi64>, tensor<8xf64>) {
  %0 = stablehlo.add %a, %b : tensor<8xi64>
  %1 = stablehlo.subtract %a, %b : tensor<8xi64>
  %2 = stablehlo.multiply %a, %b : tensor<8xi64>
  %3 = stablehlo.divide %a, %b : tensor<8xi64>
  %4 = stablehlo.remainder %a, %b : tensor<8xi64>
  %5 = stablehlo.shift_left %a, %s : tensor<8xi64>
  %6 = stablehlo.shift_right_arithmetic %a, %s : tensor<8xi64>
  %7 = stablehlo.shift_right_logical %a, %s : tensor<8xi64>
  %8 = stablehlo.compare LT, %a, %b : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
  %9 = stablehlo.compare GE, %a, %b, SIGNED : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
  %10 = stablehlo.divide %u, %v : tensor<8xui64>
  %11 = stablehlo.remainder %u, %v : tensor<8xui64>
  %12 = stablehlo.compare GT, %u, %v, UNSIGNED : (tensor<8xui64>, tensor<8xui64>) -> tensor<8xi1>
  %13 = stablehlo.convert %a : (tensor<8xi64>) -> tensor<8xf64>
  %14 = stablehlo.convert %a : (tensor<8xi64>) -> tensor<8xf32>
  %15 = stablehlo.convert %x : (tensor<8xf64>) -> tensor<8xi64>
  %16 = stablehlo.convert %y : (tensor<8xf64>) -> tensor<8xui64>
  %17 = stablehlo.convert %a : (tensor<8xi64>) -> tensor<8xi32>
  %18 = stablehlo.add %x, %y : tensor<8xf64>
  %19 = stablehlo.multiply %x, %y : tensor<8xf64>
  %20 = stablehlo.divide %x, %y : tensor<8xf64>
  %21 = stablehlo.sqrt %y : tensor<8xf64>
  %22 = stablehlo.exponential %x : tensor<8xf64>
  %23 = stablehlo.log %y : tensor<8xf64>
  %24 = stablehlo.sine %x : tensor<8xf64>
  %25 = stablehlo.power %y, %x : tensor<8xf64>
  %26 = stablehlo.convert %u : (tensor<8xui64>) -> tensor<8xf64>
  %27 = stablehlo.convert %x : (tensor<8xf64>) -> tensor<8xf32>
  %28 = stablehlo.compare LT, %x, %y : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xi1>
  %29 = stablehlo.remainder %x, %y : tensor<8xf64>
  %30 = stablehlo.maximum %a, %b : tensor<8xi64>
  %31 = stablehlo.abs %a : tensor<8xi64>
  %32 = stablehlo.cosine %x : tensor<8xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32 : tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi1>, tensor<8xi1>, tensor<8xui64>, tensor<8xui64>, tensor<8xi1>, tensor<8xf64>, tensor<8xf32>, tensor<8xi64>, tensor<8xui64>, tensor<8xi32>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf32>, tensor<8xi1>, tensor<8xf64>, tensor<8xi64>, tensor<8xi64>, tensor<8xf64>
}
