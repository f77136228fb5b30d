// JAX 0.10.2: tests/e2e/data/jax/generate.py
module @jit_regions attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x5xf32>, %arg1: tensor<i1>, %arg2: tensor<i32>, %arg3: tensor<5xf32>, %arg4: tensor<i32>) -> (tensor<3xi32> {jax.result_info = "result[0]"}, tensor<3x5xf32> {jax.result_info = "result[1]"}, tensor<5xf32> {jax.result_info = "result[2]"}, tensor<3x5xf32> {jax.result_info = "result[3]"}, tensor<3x5xf32> {jax.result_info = "result[4]"}, tensor<5xf32> {jax.result_info = "result[5]"}, tensor<3x5xf32> {jax.result_info = "result[6]"}, tensor<3x5xf32> {jax.result_info = "result[7]"}, tensor<3x5xf32> {jax.result_info = "result[8]"}) {
    %0 = call @argmax(%arg0) : (tensor<3x5xf32>) -> tensor<3xi32>
    %1 = call @sort(%arg0) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %2 = stablehlo.slice %arg0 [0:1, 0:5] : (tensor<3x5xf32>) -> tensor<1x5xf32>
    %3 = stablehlo.reshape %2 : (tensor<1x5xf32>) -> tensor<5xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %4:4 = stablehlo.while(%iterArg = %arg0, %iterArg_10 = %c_0, %iterArg_11 = %c, %iterArg_12 = %3) : tensor<3x5xf32>, tensor<i32>, tensor<i32>, tensor<5xf32>
    cond {
      %c_13 = stablehlo.constant dense<5> : tensor<i32>
      %24 = stablehlo.compare LT, %iterArg_10, %c_13, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %24 : tensor<i1>
    } do {
      %24:2 = func.call @closed_call(%iterArg, %iterArg_11, %iterArg_12) : (tensor<3x5xf32>, tensor<i32>, tensor<5xf32>) -> (tensor<i32>, tensor<5xf32>)
      %c_13 = stablehlo.constant dense<1> : tensor<i32>
      %25 = stablehlo.add %iterArg_10, %c_13 : tensor<i32>
      stablehlo.return %iterArg, %25, %24#0, %24#1 : tensor<3x5xf32>, tensor<i32>, tensor<i32>, tensor<5xf32>
    }
    %5 = stablehlo.convert %arg1 : (tensor<i1>) -> tensor<i32>
    %6 = "stablehlo.case"(%5) ({
      %cst_10 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %24 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
      %25 = stablehlo.multiply %arg0, %24 : tensor<3x5xf32>
      stablehlo.return %25 : tensor<3x5xf32>
    }, {
      %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %24 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
      %25 = stablehlo.add %arg0, %24 : tensor<3x5xf32>
      stablehlo.return %25 : tensor<3x5xf32>
    }) : (tensor<i32>) -> tensor<3x5xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<2> : tensor<i32>
    %7 = stablehlo.clamp %c_1, %arg2, %c_2 : tensor<i32>
    %8 = "stablehlo.case"(%7) ({
      %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %24 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
      %25 = stablehlo.subtract %arg0, %24 : tensor<3x5xf32>
      stablehlo.return %25 : tensor<3x5xf32>
    }, {
      %24 = stablehlo.tanh %arg0 : tensor<3x5xf32>
      stablehlo.return %24 : tensor<3x5xf32>
    }, {
      %24 = stablehlo.negate %arg0 : tensor<3x5xf32>
      stablehlo.return %24 : tensor<3x5xf32>
    }) : (tensor<i32>) -> tensor<3x5xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %11:4 = stablehlo.while(%iterArg = %arg0, %iterArg_10 = %c_4, %iterArg_11 = %9, %iterArg_12 = %10) : tensor<3x5xf32>, tensor<i32>, tensor<5xf32>, tensor<3x5xf32>
    cond {
      %c_13 = stablehlo.constant dense<3> : tensor<i32>
      %24 = stablehlo.compare LT, %iterArg_10, %c_13, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %24 : tensor<i1>
    } do {
      %24 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_10) : (tensor<3x5xf32>, tensor<i32>) -> tensor<5xf32>
      %25:2 = func.call @closed_call_0(%iterArg_11, %24) : (tensor<5xf32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>)
      %26 = func.call @dynamic_update_index_in_dim(%iterArg_12, %25#1, %iterArg_10) : (tensor<3x5xf32>, tensor<5xf32>, tensor<i32>) -> tensor<3x5xf32>
      %c_13 = stablehlo.constant dense<1> : tensor<i32>
      %27 = stablehlo.add %iterArg_10, %c_13 : tensor<i32>
      stablehlo.return %iterArg, %27, %25#0, %26 : tensor<3x5xf32>, tensor<i32>, tensor<5xf32>, tensor<3x5xf32>
    }
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.compare LT, %arg4, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_6 = stablehlo.constant dense<3> : tensor<i32>
    %13 = stablehlo.add %arg4, %c_6 : tensor<i32>
    %14 = stablehlo.select %12, %13, %arg4 : tensor<i1>, tensor<i32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %16 = "stablehlo.scatter"(%arg0, %15, %arg3) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<3x5xf32>, tensor<1xi32>, tensor<5xf32>) -> tensor<3x5xf32>
    %17 = stablehlo.iota dim = 0 : tensor<6xf32>
    %18 = stablehlo.reshape %17 : (tensor<6xf32>) -> tensor<2x3xf32>
    %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %20 = stablehlo.multiply %19, %18 : tensor<2x3xf32>
    %cst_8 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %21 = stablehlo.pad %arg0, %cst_8, low = [1, 1], high = [1, 1], interior = [0, 0] : (tensor<3x5xf32>, tensor<f32>) -> tensor<5x7xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %22 = "stablehlo.select_and_scatter"(%21, %20, %cst_9) <{padding = dense<0> : tensor<2x2xi64>, window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 2, 2>}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %24 = stablehlo.compare GE, %arg5, %arg6, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %24 : tensor<i1>
    }, {
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %24 = stablehlo.add %arg5, %arg6 : tensor<f32>
      stablehlo.return %24 : tensor<f32>
    }) : (tensor<5x7xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<5x7xf32>
    %23 = stablehlo.slice %22 [1:4, 1:6] : (tensor<5x7xf32>) -> tensor<3x5xf32>
    return %0, %1, %4#3, %6, %8, %11#2, %11#3, %16, %23 : tensor<3xi32>, tensor<3x5xf32>, tensor<5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>
  }
  func.func private @argmax(%arg0: tensor<3x5xf32>) -> tensor<3xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<3x5xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<3x5xf32>, tensor<3x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<3xi32>
  }
  func.func private @sort(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.compare EQ, %arg1, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.select %1, %cst_0, %arg1 : tensor<i1>, tensor<f32>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_1 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %4 = stablehlo.select %3, %cst_1, %2 : tensor<i1>, tensor<f32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.compare EQ, %arg2, %cst_2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %6 = stablehlo.select %5, %cst_3, %arg2 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %8 = stablehlo.select %7, %cst_4, %6 : tensor<i1>, tensor<f32>
      %9 = stablehlo.compare LT, %4, %8, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    }) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    return %0 : tensor<3x5xf32>
  }
  func.func private @closed_call(%arg0: tensor<3x5xf32>, %arg1: tensor<i32>, %arg2: tensor<5xf32>) -> (tensor<i32>, tensor<5xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %2 = stablehlo.multiply %arg2, %1 : tensor<5xf32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %3 = call @remainder(%arg1, %c_0) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %4 = stablehlo.convert %3 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.compare LT, %4, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<3> : tensor<i32>
    %6 = stablehlo.add %4, %c_2 : tensor<i32>
    %7 = stablehlo.select %5, %6, %4 : tensor<i1>, tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %8 = stablehlo.compare LT, %c_3, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %c_6 = stablehlo.constant dense<5> : tensor<i32>
    %9 = stablehlo.add %c_5, %c_6 : tensor<i32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %10 = stablehlo.select %8, %9, %c_7 : tensor<i1>, tensor<i32>
    %11 = stablehlo.dynamic_slice %arg0, %7, %10, sizes = [1, 5] : (tensor<3x5xf32>, tensor<i32>, tensor<i32>) -> tensor<1x5xf32>
    %12 = stablehlo.reshape %11 : (tensor<1x5xf32>) -> tensor<5xf32>
    %13 = stablehlo.add %2, %12 : tensor<5xf32>
    return %0, %13 : tensor<i32>, tensor<5xf32>
  }
  func.func private @remainder(%arg0: tensor<i32>, %arg1: tensor<i32>) -> tensor<i32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare EQ, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %1 = call @_where(%0, %c_0, %arg1) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %2 = stablehlo.remainder %arg0, %1 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.compare NE, %2, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare LT, %2, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.compare LT, %1, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %6 = stablehlo.compare NE, %4, %5, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %7 = stablehlo.and %6, %3 : tensor<i1>
    %8 = stablehlo.add %2, %1 : tensor<i32>
    %9 = stablehlo.select %7, %8, %2 : tensor<i1>, tensor<i32>
    return %9 : tensor<i32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<3x5xf32>, %arg1: tensor<i32>) -> tensor<5xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 5] : (tensor<3x5xf32>, tensor<i32>, tensor<i32>) -> tensor<1x5xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x5xf32>) -> tensor<5xf32>
    return %1 : tensor<5xf32>
  }
  func.func private @closed_call_0(%arg0: tensor<5xf32>, %arg1: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<5xf32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<5xf32>
    return %0, %1 : tensor<5xf32>, tensor<5xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<3x5xf32>, %arg1: tensor<5xf32>, %arg2: tensor<i32>) -> tensor<3x5xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c : (tensor<3x5xf32>, tensor<1x5xf32>, tensor<i32>, tensor<i32>) -> tensor<3x5xf32>
    return %1 : tensor<3x5xf32>
  }
}
