// A loop that never ends when %n > 0: its counter is never incremented. Built firmware
// must be stopped by minirt-run --timeout (tests/e2e/test_control_flow.py).
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = "stablehlo.while"(%zero, %x) ({
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):
    %d = stablehlo.add %v, %v : tensor<4xf32>
    "stablehlo.return"(%i, %d) : (tensor<i32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
  return %r#1 : tensor<4xf32>
}
