// bitcast_convert at the same, a narrower and a wider element width, and the old
// broadcast (sizes prepended) (tests/e2e/test_wide_types_bits.py).
func.func @main(%f: tensor<2x3xf32>, %d: tensor<3xf64>, %b: tensor<2x4xui8>, %h: tensor<3x2xf16>, %i: tensor<2xi64>) -> (tensor<2x3xi32>, tensor<3x4xf16>, tensor<3x2xui32>, tensor<2xi32>, tensor<3xf32>, tensor<2x2xf32>, tensor<2x3x4xi8>, tensor<3xf64>, tensor<2x3xf32>, tensor<4x2x2xi64>, tensor<3x2x3xf32>) {
  %0 = stablehlo.bitcast_convert %f : (tensor<2x3xf32>) -> tensor<2x3xi32>
  %1 = stablehlo.bitcast_convert %d : (tensor<3xf64>) -> tensor<3x4xf16>
  %2 = stablehlo.bitcast_convert %d : (tensor<3xf64>) -> tensor<3x2xui32>
  %3 = stablehlo.bitcast_convert %b : (tensor<2x4xui8>) -> tensor<2xi32>
  %4 = stablehlo.bitcast_convert %h : (tensor<3x2xf16>) -> tensor<3xf32>
  %5 = "stablehlo.bitcast_convert"(%i) : (tensor<2xi64>) -> tensor<2x2xf32>
  %6 = stablehlo.bitcast_convert %f : (tensor<2x3xf32>) -> tensor<2x3x4xi8>
  %7 = stablehlo.bitcast_convert %2 : (tensor<3x2xui32>) -> tensor<3xf64>
  %8 = stablehlo.bitcast_convert %0 : (tensor<2x3xi32>) -> tensor<2x3xf32>
  %9 = "stablehlo.broadcast"(%i) {broadcast_sizes = array<i64: 4, 2>} : (tensor<2xi64>) -> tensor<4x2x2xi64>
  %10 = stablehlo.broadcast %f, sizes = [3] : (tensor<2x3xf32>) -> tensor<3x2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<2x3xi32>, tensor<3x4xf16>, tensor<3x2xui32>, tensor<2xi32>, tensor<3xf32>, tensor<2x2xf32>, tensor<2x3x4xi8>, tensor<3xf64>, tensor<2x3xf32>, tensor<4x2x2xi64>, tensor<3x2x3xf32>
}
