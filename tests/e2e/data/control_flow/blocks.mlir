// A function of several blocks (cf.br, cf.cond_br) for tests/e2e/test_control_flow.py
// and tests/schedule/test_control.py: a loop of blocks carrying two values, a diamond
// whose join takes a block argument, values used in later blocks without being passed
// (their blocks dominate), and ^prep printed last though it runs second (a forward
// reference from ^after, which MLIR allows).
func.func @main(%n: tensor<i32>, %x: tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %scale = stablehlo.constant dense<0.75> : tensor<4xf32>
  %base = stablehlo.multiply %x, %scale : tensor<4xf32>
  cf.br ^prep
^head(%i: tensor<i32>, %v: tensor<4xf32>):
  %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %c = "builtin.unrealized_conversion_cast"(%lt) : (tensor<i1>) -> i1
  cf.cond_br %c, ^body, ^after
^body:
  %two = stablehlo.constant dense<2> : tensor<i32>
  %rem = stablehlo.remainder %i, %two : tensor<i32>
  %odd = stablehlo.compare NE, %rem, %zero : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %o = "builtin.unrealized_conversion_cast"(%odd) : (tensor<i1>) -> i1
  cf.cond_br %o, ^odd, ^even(%base : tensor<4xf32>)
^odd:
  %r = stablehlo.reverse %v, dims = [0] : tensor<4xf32>
  cf.br ^join(%r : tensor<4xf32>)
^even(%e: tensor<4xf32>):
  %s = stablehlo.add %v, %e : tensor<4xf32>
  cf.br ^join(%s : tensor<4xf32>)
^join(%w: tensor<4xf32>):
  %one = stablehlo.constant dense<1> : tensor<i32>
  %next = stablehlo.add %i, %one : tensor<i32>
  cf.br ^head(%next, %w : tensor<i32>, tensor<4xf32>)
^after:
  %t = stablehlo.add %late, %v : tensor<4xf32>
  return %i, %v, %t : tensor<i32>, tensor<4xf32>, tensor<4xf32>
^prep:
  %late = stablehlo.tanh %x : tensor<4xf32>
  cf.br ^head(%zero, %late : tensor<i32>, tensor<4xf32>)
}
