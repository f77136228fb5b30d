// JAX 0.10.2: tests/e2e/data/jax_chlo/generate.py
module @jit_special attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>, %arg2: tensor<2x8xf32>, %arg3: tensor<2x8xf32>, %arg4: tensor<2x8xf32>) -> (tensor<2x8xf32> {jax.result_info = "result[0]"}, tensor<2x8xf32> {jax.result_info = "result[1]"}, tensor<2x8xf32> {jax.result_info = "result[2]"}, tensor<2x8xf32> {jax.result_info = "result[3]"}, tensor<2x8xf32> {jax.result_info = "result[4]"}, tensor<2x8xf32> {jax.result_info = "result[5]"}, tensor<2x8xf32> {jax.result_info = "result[6]"}, tensor<2x8xf32> {jax.result_info = "result[7]"}, tensor<2x8xf32> {jax.result_info = "result[8]"}, tensor<2x8xf32> {jax.result_info = "result[9]"}, tensor<2x8xf32> {jax.result_info = "result[10]"}, tensor<2x8xf32> {jax.result_info = "result[11]"}, tensor<2x8xf32> {jax.result_info = "result[12]"}, tensor<2x8xf32> {jax.result_info = "result[13]"}, tensor<2x8xf32> {jax.result_info = "result[14]"}, tensor<2x8xf32> {jax.result_info = "result[15]"}, tensor<2x3xf32> {jax.result_info = "result[16]"}, tensor<2x3xi32> {jax.result_info = "result[17]"}) {
    %0 = chlo.lgamma %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    %1 = chlo.digamma %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    %2 = chlo.erf_inv %arg1 : tensor<2x8xf32> -> tensor<2x8xf32>
    %3 = chlo.bessel_i1e %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    %4 = chlo.zeta %arg2, %arg4 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    %5 = chlo.polygamma %arg3, %arg4 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    %6 = chlo.next_after %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    %7 = stablehlo.tan %arg0 : tensor<2x8xf32>
    %8 = chlo.asin %arg1 : tensor<2x8xf32> -> tensor<2x8xf32>
    %9 = chlo.acos %arg1 : tensor<2x8xf32> -> tensor<2x8xf32>
    %10 = chlo.atan %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    %11 = chlo.sinh %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    %12 = chlo.cosh %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    %13 = chlo.asinh %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    %14 = call @arccosh(%arg2) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %15 = chlo.atanh %arg1 : tensor<2x8xf32> -> tensor<2x8xf32>
    %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<2x8xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %values, %indices : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x3xi32>
  }
  func.func private @arccosh(%arg0: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = chlo.acosh %arg0 : tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}
