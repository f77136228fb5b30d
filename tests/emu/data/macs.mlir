func.func @main(%x: tensor<1x8x8x2xf32>, %k: tensor<3x3x2x4xf32>, %a: tensor<4x5xf32>,
                %b: tensor<5x3xf32>) -> (tensor<1x6x6x4xf32>, tensor<4x3xf32>, tensor<4xf32>) {
  %0 = stablehlo.convolution(%x, %k)
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {stride = [1, 1], pad = [[0, 0], [0, 0]]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  %1 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
       : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1]
       : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<1x6x6x4xf32>, tensor<4x3xf32>, tensor<4xf32>
}
