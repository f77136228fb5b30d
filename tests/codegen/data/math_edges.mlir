// Issue 11's math-library edges through a whole model: expm1 (JAX's elu) far below
// -111, sin / cos / tan of arguments up to 1e38, log1p at its pole. The values come in
// as an input (a constant would be folded on the host and never reach the firmware).
func.func @main(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>,
                                         tensor<16xf32>, tensor<16xf32>) {
  %0 = stablehlo.exponential_minus_one %x : tensor<16xf32>
  %1 = stablehlo.sine %x : tensor<16xf32>
  %2 = stablehlo.cosine %x : tensor<16xf32>
  %3 = stablehlo.tan %x : tensor<16xf32>
  %4 = stablehlo.log_plus_one %x : tensor<16xf32>
  return %0, %1, %2, %3, %4 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>,
                              tensor<16xf32>
}
