// Structural fuzz model with several inputs and outputs of different types and sizes.
func.func @main(%a: tensor<3x5xf32>, %b: tensor<5xi32>, %c: tensor<3x5xf32>)
    -> (tensor<3x5xf32>, tensor<5xi32>, tensor<3xf32>) {
  %bf = stablehlo.convert %b : (tensor<5xi32>) -> tensor<5xf32>
  %bb = stablehlo.broadcast_in_dim %bf, dims = [1] : (tensor<5xf32>) -> tensor<3x5xf32>
  %p = stablehlo.multiply %a, %bb : tensor<3x5xf32>
  %q = stablehlo.add %p, %c : tensor<3x5xf32>
  %two = stablehlo.constant dense<2> : tensor<5xi32>
  %b2 = stablehlo.multiply %b, %two : tensor<5xi32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%q init: %zero) applies stablehlo.add across dimensions = [1]
       : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
  return %q, %b2, %r : tensor<3x5xf32>, tensor<5xi32>, tensor<3xf32>
}
