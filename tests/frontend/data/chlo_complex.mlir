// chlo.broadcast_complex and chlo.conj on complex values, for tests/frontend/test_chlo.py.
func.func @main(%re: tensor<2x3xf32>, %im: tensor<3xf32>)
    -> (tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xf32>) {
  %z = chlo.broadcast_complex %re, %im : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xcomplex<f32>>
  %c = chlo.conj %z : tensor<2x3xcomplex<f32>> -> tensor<2x3xcomplex<f32>>
  %im2 = stablehlo.imag %c : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
  return %z, %c, %im2 : tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xf32>
}
