// JAX 0.10.2: tests/e2e/data/jax/generate.py
module @jit_gru attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x4xf32>, %arg1: tensor<8xf32>, %arg2: tensor<4x24xf32>, %arg3: tensor<8x24xf32>, %arg4: tensor<24xf32>, %arg5: tensor<8x5xf32>) -> (tensor<6xi32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:7 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %arg2, %iterArg_1 = %arg4, %iterArg_2 = %arg3, %iterArg_3 = %c, %iterArg_4 = %arg1, %iterArg_5 = %0) : tensor<6x4xf32>, tensor<4x24xf32>, tensor<24xf32>, tensor<8x24xf32>, tensor<i32>, tensor<8xf32>, tensor<6x8xf32>
    cond {
      %c_6 = stablehlo.constant dense<6> : tensor<i32>
      %4 = stablehlo.compare LT, %iterArg_3, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %4 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_3) : (tensor<6x4xf32>, tensor<i32>) -> tensor<4xf32>
      %5:2 = func.call @closed_call(%iterArg_0, %iterArg_1, %iterArg_2, %iterArg_4, %4) : (tensor<4x24xf32>, tensor<24xf32>, tensor<8x24xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>)
      %6 = func.call @dynamic_update_index_in_dim(%iterArg_5, %5#1, %iterArg_3) : (tensor<6x8xf32>, tensor<8xf32>, tensor<i32>) -> tensor<6x8xf32>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %7 = stablehlo.add %iterArg_3, %c_6 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_0, %iterArg_1, %iterArg_2, %7, %5#0, %6 : tensor<6x4xf32>, tensor<4x24xf32>, tensor<24xf32>, tensor<8x24xf32>, tensor<i32>, tensor<8xf32>, tensor<6x8xf32>
    }
    %2 = stablehlo.dot_general %1#6, %arg5, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
    %3 = call @argmax(%2) : (tensor<6x5xf32>) -> tensor<6xi32>
    return %3, %1#5 : tensor<6xi32>, tensor<8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<6x4xf32>, %arg1: tensor<i32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 4] : (tensor<6x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @closed_call(%arg0: tensor<4x24xf32>, %arg1: tensor<24xf32>, %arg2: tensor<8x24xf32>, %arg3: tensor<8xf32>, %arg4: tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %0 = stablehlo.dot_general %arg4, %arg0, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4xf32>, tensor<4x24xf32>) -> tensor<24xf32>
    %1 = stablehlo.add %0, %arg1 : tensor<24xf32>
    %2 = stablehlo.dot_general %arg3, %arg2, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8xf32>, tensor<8x24xf32>) -> tensor<24xf32>
    %3 = stablehlo.slice %1 [0:8] : (tensor<24xf32>) -> tensor<8xf32>
    %4 = stablehlo.slice %2 [0:8] : (tensor<24xf32>) -> tensor<8xf32>
    %5 = stablehlo.add %3, %4 : tensor<8xf32>
    %6 = stablehlo.negate %5 : tensor<8xf32>
    %7 = stablehlo.exponential %6 : tensor<8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %9 = stablehlo.add %8, %7 : tensor<8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %11 = stablehlo.divide %10, %9 : tensor<8xf32>
    %12 = stablehlo.slice %1 [8:16] : (tensor<24xf32>) -> tensor<8xf32>
    %13 = stablehlo.slice %2 [8:16] : (tensor<24xf32>) -> tensor<8xf32>
    %14 = stablehlo.add %12, %13 : tensor<8xf32>
    %15 = stablehlo.negate %14 : tensor<8xf32>
    %16 = stablehlo.exponential %15 : tensor<8xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %18 = stablehlo.add %17, %16 : tensor<8xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %20 = stablehlo.divide %19, %18 : tensor<8xf32>
    %21 = stablehlo.slice %1 [16:24] : (tensor<24xf32>) -> tensor<8xf32>
    %22 = stablehlo.slice %2 [16:24] : (tensor<24xf32>) -> tensor<8xf32>
    %23 = stablehlo.multiply %11, %22 : tensor<8xf32>
    %24 = stablehlo.add %21, %23 : tensor<8xf32>
    %25 = stablehlo.tanh %24 : tensor<8xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %27 = stablehlo.subtract %26, %20 : tensor<8xf32>
    %28 = stablehlo.multiply %27, %25 : tensor<8xf32>
    %29 = stablehlo.multiply %20, %arg3 : tensor<8xf32>
    %30 = stablehlo.add %28, %29 : tensor<8xf32>
    return %30, %30 : tensor<8xf32>, tensor<8xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<6x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<i32>) -> tensor<6x8xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<8xf32>) -> tensor<1x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c : (tensor<6x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<6x8xf32>
    return %1 : tensor<6x8xf32>
  }
  func.func private @argmax(%arg0: tensor<6x5xf32>) -> tensor<6xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<6x5xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<6x5xf32>, tensor<6x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<6xf32>, tensor<6xi32>)
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
    return %1#1 : tensor<6xi32>
  }
}
