// Two TOSA WHILE_LOOPs: a recurrent cell over time steps and Euclid's algorithm (written by examples/tosa/models.py).
module {
  func.func @main(%xs: tensor<1x6x4xf32>, %h0: tensor<1x1x4xf32>, %a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<1x1x4xf32>, tensor<8xi32>, tensor<i32>) {
    %W = "tosa.const"() <{values = dense<"0x0000C0BE0000C0BE0000983E000000000000C03D0000E03D0000603E0000F8BE000080BC0000B8BE0000C0BD0000E03E0000403D0000E0BE0000403D0000C0BE"> : tensor<1x4x4xf32>}> : () -> tensor<1x4x4xf32>
    %U = "tosa.const"() <{values = dense<"0x0000C83E00002C3F00003C3F0000403E0000103F000050BE000008BF0000803C0000A0BD0000803E0000403F0000B0BE00000C3F00000CBF000070BE0000E03E"> : tensor<1x4x4xf32>}> : () -> tensor<1x4x4xf32>
    %fzero = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xf32>}> : () -> tensor<1xf32>
    %t0 = "tosa.const"() <{values = dense<"0x00000000"> : tensor<i32>}> : () -> tensor<i32>
    %one = "tosa.const"() <{values = dense<"0x01000000"> : tensor<i32>}> : () -> tensor<i32>
    %steps = "tosa.const"() <{values = dense<"0x06000000"> : tensor<i32>}> : () -> tensor<i32>
    %rnn:2 = tosa.while_loop (%h = %h0, %t = %t0) : (tensor<1x1x4xf32>, tensor<i32>) -> (tensor<1x1x4xf32>, tensor<i32>) {
    ^bb0(%h: tensor<1x1x4xf32>, %t: tensor<i32>):
      %more = tosa.greater %steps, %t : (tensor<i32>, tensor<i32>) -> tensor<i1>
      tosa.yield %more : tensor<i1>
    } do {
    ^bb0(%h: tensor<1x1x4xf32>, %t: tensor<i32>):
      %ts = tosa.const_shape {values = dense<[1, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
      %ti = tosa.reshape %t, %ts : (tensor<i32>, !tosa.shape<2>) -> tensor<1x1xi32>
      %xt = tosa.gather %xs, %ti : (tensor<1x6x4xf32>, tensor<1x1xi32>) -> tensor<1x1x4xf32>
      %hw = tosa.matmul %h, %W, %fzero, %fzero : (tensor<1x1x4xf32>, tensor<1x4x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x4xf32>
      %xu = tosa.matmul %xt, %U, %fzero, %fzero : (tensor<1x1x4xf32>, tensor<1x4x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x4xf32>
      %pre = tosa.add %hw, %xu : (tensor<1x1x4xf32>, tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
      %hn = tosa.tanh %pre : (tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
      %tn = tosa.add %t, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
      tosa.yield %hn, %tn : tensor<1x1x4xf32>, tensor<i32>
    }
    %zeros = "tosa.const"() <{values = dense<"0x0000000000000000000000000000000000000000000000000000000000000000"> : tensor<8xi32>}> : () -> tensor<8xi32>
    %ones = "tosa.const"() <{values = dense<"0x0100000001000000010000000100000001000000010000000100000001000000"> : tensor<8xi32>}> : () -> tensor<8xi32>
    %nozp = "tosa.const"() <{values = dense<"0x00"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %gcd:3 = tosa.while_loop (%x = %a, %y = %b, %n = %t0) : (tensor<8xi32>, tensor<8xi32>, tensor<i32>) -> (tensor<8xi32>, tensor<8xi32>, tensor<i32>) {
    ^bb0(%x: tensor<8xi32>, %y: tensor<8xi32>, %n: tensor<i32>):
      %done = tosa.equal %y, %zeros : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
      %all = tosa.reduce_all %done {axis = 0 : i32} : (tensor<8xi1>) -> tensor<1xi1>
      %go = tosa.logical_not %all : (tensor<1xi1>) -> tensor<1xi1>
      tosa.yield %go : tensor<1xi1>
    } do {
    ^bb0(%x: tensor<8xi32>, %y: tensor<8xi32>, %n: tensor<i32>):
      %z = tosa.equal %y, %zeros : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
      %safe = tosa.select %z, %ones, %y : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
      %quo = tosa.intdiv %x, %safe : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
      %prod = tosa.mul %quo, %safe, %nozp : (tensor<8xi32>, tensor<8xi32>, tensor<1xi8>) -> tensor<8xi32>
      %rem = tosa.sub %x, %prod : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
      %x2 = tosa.select %z, %x, %y : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
      %y2 = tosa.select %z, %y, %rem : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
      %n2 = tosa.add %n, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
      tosa.yield %x2, %y2, %n2 : tensor<8xi32>, tensor<8xi32>, tensor<i32>
    }
    return %rnn#0, %gcd#0, %gcd#2 : tensor<1x1x4xf32>, tensor<8xi32>, tensor<i32>
  }
}
