func.func @main(%x: tensor<4x8xf8E4M3FN>, %y: tensor<8x3xf8E4M3FN>, %z: tensor<4x8xf4E2M1FN>) -> (tensor<4x8xf8E4M3FN>, tensor<4x3xf8E4M3FN>, tensor<4xf8E4M3FN>, tensor<4x8xf4E2M1FN>, tensor<4x8xf32>) {
  %e = stablehlo.exponential %x : tensor<4x8xf8E4M3FN>
  %t = stablehlo.tanh %e : tensor<4x8xf8E4M3FN>
  %m = stablehlo.multiply %t, %x : tensor<4x8xf8E4M3FN>
  %d = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<4x8xf8E4M3FN>, tensor<8x3xf8E4M3FN>) -> tensor<4x3xf8E4M3FN>
  %c = stablehlo.constant dense<0.0> : tensor<f8E4M3FN>
  %s = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf8E4M3FN>, tensor<f8E4M3FN>) -> tensor<4xf8E4M3FN>
  %h = stablehlo.constant dense<1.5> : tensor<4x8xf4E2M1FN>
  %a = stablehlo.add %z, %h : tensor<4x8xf4E2M1FN>
  %f = stablehlo.convert %a : (tensor<4x8xf4E2M1FN>) -> tensor<4x8xf32>
  return %m, %d, %s, %a, %f : tensor<4x8xf8E4M3FN>, tensor<4x3xf8E4M3FN>, tensor<4xf8E4M3FN>, tensor<4x8xf4E2M1FN>, tensor<4x8xf32>
}
