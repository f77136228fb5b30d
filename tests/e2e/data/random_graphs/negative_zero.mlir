// Found by the random graph fuzzer (seed 998): round_nearest_afz(-0.0) and sign(-0.0) are
// -0.0, which atan2 and a divide tell apart from +0.0; the reference gave +0.0.
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = stablehlo.round_nearest_afz %x : tensor<4xf32>
  %a = stablehlo.atan2 %r, %r : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %s = stablehlo.sign %x : tensor<4xf32>
  %d = stablehlo.divide %one, %s : tensor<4xf32>
  return %a, %d : tensor<4xf32>, tensor<4xf32>
}
