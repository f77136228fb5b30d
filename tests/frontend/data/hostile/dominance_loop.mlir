// error: 8:8: operand %next does not dominate this use
// %next is defined in ^latch, which runs after ^head, and read by ^head through the
// loop's back edge: the first visit of ^head would read it before anything wrote it.
func.func @main(%n: tensor<i32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  cf.br ^head(%zero : tensor<i32>)
^head(%i: tensor<i32>):
  %s = stablehlo.add %next, %x : tensor<4xf32>
  %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %c = "builtin.unrealized_conversion_cast"(%lt) : (tensor<i1>) -> i1
  cf.cond_br %c, ^latch, ^done
^latch:
  %one = stablehlo.constant dense<1> : tensor<i32>
  %j = stablehlo.add %i, %one : tensor<i32>
  %next = stablehlo.tanh %x : tensor<4xf32>
  cf.br ^head(%j : tensor<i32>)
^done:
  return %s : tensor<4xf32>
}
