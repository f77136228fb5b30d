// error: 5:3: 'stablehlo.convert': has 0 results; it needs at least 1
// A convert with no result: the importer took its result 0 (an IndexError).
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = stablehlo.tanh %x : tensor<4xf32>
  "stablehlo.convert"(%x) : (tensor<4xf32>) -> ()
  return %y : tensor<4xf32>
}
