// Loops for the control-flow tests (tests/e2e/test_control_flow.py,
// tests/schedule/test_control.py), in generic form for the ops with regions.
// %n counts iterations at run time, so nothing here is folded away.
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>)
    -> (tensor<4xf32>, tensor<i32>, tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>,
        tensor<4xf32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %half = stablehlo.constant dense<0.5> : tensor<4xf32>
  %z4 = stablehlo.constant dense<0.0> : tensor<4xf32>

  // acc = acc * 0.5 + x, n times: a loop-carried vector and captured values.
  %l1:2 = "stablehlo.while"(%zero, %z4) ({
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %acc: tensor<4xf32>):
    %m = stablehlo.multiply %acc, %half : tensor<4xf32>
    %a = stablehlo.add %m, %x : tensor<4xf32>
    %j = stablehlo.add %i, %one : tensor<i32>
    "stablehlo.return"(%j, %a) : (tensor<i32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)

  // (a, b) = (b + 1, a * 2), n times: each new value reads the other's old one.
  %a0 = stablehlo.constant dense<3> : tensor<i32>
  %b0 = stablehlo.constant dense<5> : tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  %l2:3 = "stablehlo.while"(%zero, %a0, %b0) ({
  ^bb0(%i: tensor<i32>, %a: tensor<i32>, %b: tensor<i32>):
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %a: tensor<i32>, %b: tensor<i32>):
    %na = stablehlo.add %b, %one : tensor<i32>
    %nb = stablehlo.multiply %a, %two : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    "stablehlo.return"(%j, %na, %nb) : (tensor<i32>, tensor<i32>, tensor<i32>) -> ()
  }) : (tensor<i32>, tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>, tensor<i32>)

  // A plain swap of two vectors and a reversal (a remap that reads other elements).
  %l3:3 = "stablehlo.while"(%zero, %x, %l1#1) ({
  ^bb0(%i: tensor<i32>, %u: tensor<4xf32>, %v: tensor<4xf32>):
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %u: tensor<4xf32>, %v: tensor<4xf32>):
    %r = stablehlo.reverse %u, dims = [0] : tensor<4xf32>
    %j = stablehlo.add %i, %one : tensor<i32>
    "stablehlo.return"(%j, %v, %r) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>)

  // Nested loops: s += i * j for i < n, j <= i; the inner bound is the outer counter.
  %l4:2 = "stablehlo.while"(%zero, %zero) ({
  ^bb0(%i: tensor<i32>, %s: tensor<i32>):
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %s: tensor<i32>):
    %inner:2 = "stablehlo.while"(%zero, %s) ({
    ^bb0(%j: tensor<i32>, %t: tensor<i32>):
      %c = stablehlo.compare LE, %j, %i, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%c) : (tensor<i1>) -> ()
    }, {
    ^bb0(%j: tensor<i32>, %t: tensor<i32>):
      %p = stablehlo.multiply %i, %j : tensor<i32>
      %u = stablehlo.add %t, %p : tensor<i32>
      %k = stablehlo.add %j, %one : tensor<i32>
      "stablehlo.return"(%k, %u) : (tensor<i32>, tensor<i32>) -> ()
    }) : (tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)
    %j = stablehlo.add %i, %one : tensor<i32>
    "stablehlo.return"(%j, %inner#1) : (tensor<i32>, tensor<i32>) -> ()
  }) : (tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)

  // A value computed before the loop and one passed through unchanged, both read early
  // in the body and live through the next iteration (while temporaries come and go).
  %y = stablehlo.multiply %x, %x : tensor<4xf32>
  %w0 = stablehlo.subtract %x, %half : tensor<4xf32>
  %l5:3 = "stablehlo.while"(%zero, %x, %w0) ({
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>, %w: tensor<4xf32>):
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>, %w: tensor<4xf32>):
    %a = stablehlo.add %v, %y : tensor<4xf32>
    %r = stablehlo.reverse %a, dims = [0] : tensor<4xf32>
    %b = stablehlo.multiply %r, %w : tensor<4xf32>
    %e = stablehlo.reverse %b, dims = [0] : tensor<4xf32>
    %f = stablehlo.multiply %e, %half : tensor<4xf32>
    %j = stablehlo.add %i, %one : tensor<i32>
    "stablehlo.return"(%j, %f, %w) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> ()
  }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>)

  %sum = stablehlo.add %l2#1, %l2#2 : tensor<i32>
  return %l1#1, %sum, %l4#1, %l3#1, %l3#2, %l2#1, %l5#1
    : tensor<4xf32>, tensor<i32>, tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>,
      tensor<4xf32>
}
