// Seed for bench/fuzz_parse.py: loops, conditionals, sorting, scatter, argmax, calls.
#loc = loc("control_flow.py":1:1)
module @control_flow attributes {mhlo.num_partitions = 1 : i32} {
  func.func private @body(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.multiply %x, %x : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func public @main(%n: tensor<i32>, %x: tensor<4xf32> {jax.arg_info = "x"}, %p: tensor<i1>) -> (tensor<4xf32> {jax.result_info = ""}, tensor<i32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c, %acc = %x) : tensor<i32>, tensor<4xf32>
     cond {
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      %y = func.call @body(%acc) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %next, %y : tensor<i32>, tensor<4xf32>
    } loc(#loc)
    %1 = "stablehlo.if"(%p) ({
      stablehlo.return %0#1 : tensor<4xf32>
    }, {
      %neg = stablehlo.negate %0#1 : tensor<4xf32>
      stablehlo.return %neg : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %2 = "stablehlo.case"(%n) ({
      stablehlo.return %1 : tensor<4xf32>
    }, {
      %abs = stablehlo.abs %1 : tensor<4xf32>
      stablehlo.return %abs : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    %3 = "stablehlo.sort"(%2) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %lt = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %idx = stablehlo.constant dense<[[1], [3]]> : tensor<2x1xi32>
    %upd = stablehlo.constant dense<[10.0, 30.0]> : tensor<2xf32>
    %4 = "stablehlo.scatter"(%3, %idx, %upd) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = true}> ({
    ^bb0(%old: tensor<f32>, %new: tensor<f32>):
      stablehlo.return %new : tensor<f32>
    }) : (tensor<4xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4xf32>
    %iota = stablehlo.iota dim = 0 : tensor<4xi32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %5:2 = stablehlo.reduce(%4 init: %ninf), (%iota init: %zero) across dimensions = [0] : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
      reducer(%a: tensor<f32>, %b: tensor<f32>) (%ia: tensor<i32>, %ib: tensor<i32>)  {
      %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %v = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<f32>
      %j = stablehlo.select %gt, %ia, %ib : tensor<i1>, tensor<i32>
      stablehlo.return %v, %j : tensor<f32>, tensor<i32>
    }
    %6 = "stablehlo.reduce_window"(%4, %ninf) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 1>, padding = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %6, %5#1 : tensor<4xf32>, tensor<i32>
  }
}
