// Structural fuzz model with several dispatches and arena reuse: a softmax, then a
// second one over its result; reductions are never fused, so intermediate buffers are
// placed in the arena and freed holes are taken again.
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1]
       : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x16xf32>
  %d = stablehlo.subtract %x, %mb : tensor<4x16xf32>
  %e = stablehlo.exponential %d : tensor<4x16xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
       : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x16xf32>
  %p = stablehlo.divide %e, %sb : tensor<4x16xf32>
  %m2 = stablehlo.reduce(%p init: %ninf) applies stablehlo.maximum across dimensions = [1]
       : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  %m2b = stablehlo.broadcast_in_dim %m2, dims = [0] : (tensor<4xf32>) -> tensor<4x16xf32>
  %d2 = stablehlo.subtract %p, %m2b : tensor<4x16xf32>
  %e2 = stablehlo.exponential %d2 : tensor<4x16xf32>
  %s2 = stablehlo.reduce(%e2 init: %zero) applies stablehlo.add across dimensions = [1]
       : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  %s2b = stablehlo.broadcast_in_dim %s2, dims = [0] : (tensor<4xf32>) -> tensor<4x16xf32>
  %y = stablehlo.divide %e2, %s2b : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
