// Branches for the control-flow tests (tests/e2e/test_control_flow.py,
// tests/schedule/test_control.py), in generic form for the ops with regions.
func.func @main(%p: tensor<i1>, %k: tensor<i32>, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %ione = stablehlo.constant dense<1> : tensor<i32>
  %izero = stablehlo.constant dense<0> : tensor<i32>
  %three = stablehlo.constant dense<3> : tensor<i32>

  // if: x + 1, or x doubled three times by a loop inside the branch.
  %r1 = "stablehlo.if"(%p) ({
    %a = stablehlo.add %x, %one : tensor<4xf32>
    "stablehlo.return"(%a) : (tensor<4xf32>) -> ()
  }, {
    %w:2 = "stablehlo.while"(%izero, %x) ({
    ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):
      %c = stablehlo.compare LT, %i, %three, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%c) : (tensor<i1>) -> ()
    }, {
    ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):
      %d = stablehlo.add %v, %v : tensor<4xf32>
      %j = stablehlo.add %i, %ione : tensor<i32>
      "stablehlo.return"(%j, %d) : (tensor<i32>, tensor<4xf32>) -> ()
    }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
    "stablehlo.return"(%w#1) : (tensor<4xf32>) -> ()
  }) : (tensor<i1>) -> tensor<4xf32>

  // case: three branches with two results; an index out of [0, 3) runs the last.
  %r2:2 = "stablehlo.case"(%k) ({
    %m = stablehlo.multiply %x, %x : tensor<4xf32>
    "stablehlo.return"(%m, %x) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }, {
    %s = stablehlo.subtract %x, %one : tensor<4xf32>
    "stablehlo.return"(%s, %r1) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }, {
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %mx = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [0]
        : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %mx, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %n = stablehlo.negate %x : tensor<4xf32>
    "stablehlo.return"(%b, %n) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>)

  // A loop with an if inside: add 1 on even steps, halve on odd ones, k times.
  %two = stablehlo.constant dense<2> : tensor<i32>
  %half = stablehlo.constant dense<0.5> : tensor<f32>
  %fone = stablehlo.constant dense<1.0> : tensor<f32>
  %s0 = stablehlo.reduce(%x init: %fone) applies stablehlo.add across dimensions = [0]
      : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  %l:2 = "stablehlo.while"(%izero, %s0) ({
  ^bb0(%i: tensor<i32>, %s: tensor<f32>):
    %c = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %s: tensor<f32>):
    %rem = stablehlo.remainder %i, %two : tensor<i32>
    %even = stablehlo.compare EQ, %rem, %izero, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %t = "stablehlo.if"(%even) ({
      %a = stablehlo.add %s, %fone : tensor<f32>
      "stablehlo.return"(%a) : (tensor<f32>) -> ()
    }, {
      %h = stablehlo.multiply %s, %half : tensor<f32>
      "stablehlo.return"(%h) : (tensor<f32>) -> ()
    }) : (tensor<i1>) -> tensor<f32>
    %j = stablehlo.add %i, %ione : tensor<i32>
    "stablehlo.return"(%j, %t) : (tensor<i32>, tensor<f32>) -> ()
  }) : (tensor<i32>, tensor<f32>) -> (tensor<i32>, tensor<f32>)
  return %r1, %r2#0, %r2#1, %l#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
