// error: 13:8: operand %t does not dominate this use
// %t is defined in one branch of a cond_br and used in the join block, which the
// other branch also reaches: MLIR refuses it ("operand does not dominate its use").
func.func @main(%p: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %c = "builtin.unrealized_conversion_cast"(%p) : (tensor<i1>) -> i1
  cf.cond_br %c, ^then, ^else
^then:
  %t = stablehlo.tanh %x : tensor<4xf32>
  cf.br ^join
^else:
  cf.br ^join
^join:
  %r = stablehlo.add %t, %x : tensor<4xf32>
  return %r : tensor<4xf32>
}
