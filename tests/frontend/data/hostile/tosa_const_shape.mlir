// error: 5:8: 'tosa.const': result 0 has type '!tosa.shape<2>', not a tensor
// A tosa.const whose result is a !tosa.shape (an AssertionError): shapes are made by
// tosa.const_shape.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = "tosa.const"() <{values = dense<[2, 2]> : tensor<2xindex>}> : () -> !tosa.shape<2>
  %y = tosa.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
