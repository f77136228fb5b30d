// JAX 0.10.2: tests/e2e/data/jax_fft/generate.py
module @jit_fft_ops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x8xcomplex<f32>>, %arg1: tensor<3x12xcomplex<f32>>, %arg2: tensor<2x7xf32>, %arg3: tensor<2x17xf32>) -> (tensor<3x8xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<3x12xcomplex<f32>> {jax.result_info = "result[1]"}, tensor<3x8xf32> {jax.result_info = "result[2]"}, tensor<3x2x6xcomplex<f32>> {jax.result_info = "result[3]"}, tensor<2x4xcomplex<f32>> {jax.result_info = "result[4]"}, tensor<2x17xcomplex<f32>> {jax.result_info = "result[5]"}, tensor<3x4xcomplex<f32>> {jax.result_info = "result[6]"}, tensor<3x12xcomplex<f32>> {jax.result_info = "result[7]"}, tensor<3x8xcomplex<f32>> {jax.result_info = "result[8]"}, tensor<3x12xcomplex<f32>> {jax.result_info = "result[9]"}, tensor<3x8xf32> {jax.result_info = "result[10]"}, tensor<3x12xcomplex<f32>> {jax.result_info = "result[11]"}) {
    %0 = call @fft(%arg0) : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    %1 = call @fft_0(%arg1) : (tensor<3x12xcomplex<f32>>) -> tensor<3x12xcomplex<f32>>
    %2 = stablehlo.slice %arg0 [0:3, 0:5] : (tensor<3x8xcomplex<f32>>) -> tensor<3x5xcomplex<f32>>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3 = call @_pad(%2, %c) : (tensor<3x5xcomplex<f32>>, tensor<i32>) -> tensor<3x5xcomplex<f32>>
    %4 = call @fft_1(%3) : (tensor<3x5xcomplex<f32>>) -> tensor<3x8xf32>
    %5 = stablehlo.reshape %arg1 : (tensor<3x12xcomplex<f32>>) -> tensor<3x2x6xcomplex<f32>>
    %6 = call @fft_2(%5) : (tensor<3x2x6xcomplex<f32>>) -> tensor<3x2x6xcomplex<f32>>
    %7 = call @fft_3(%arg2) : (tensor<2x7xf32>) -> tensor<2x4xcomplex<f32>>
    %8 = stablehlo.convert %arg3 : (tensor<2x17xf32>) -> tensor<2x17xcomplex<f32>>
    %cst = stablehlo.constant dense<(0.000000e+00,0.000000e+00)> : tensor<complex<f32>>
    %9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<2x17xcomplex<f32>>
    %10 = stablehlo.add %8, %9 : tensor<2x17xcomplex<f32>>
    %11 = call @fft_4(%10) : (tensor<2x17xcomplex<f32>>) -> tensor<2x17xcomplex<f32>>
    %12 = stablehlo.slice %arg0 [0:3, 0:4] : (tensor<3x8xcomplex<f32>>) -> tensor<3x4xcomplex<f32>>
    %13 = stablehlo.slice %arg1 [0:3, 0:4] : (tensor<3x12xcomplex<f32>>) -> tensor<3x4xcomplex<f32>>
    %14 = stablehlo.multiply %12, %13 : tensor<3x4xcomplex<f32>>
    %15 = stablehlo.slice %arg0 [0:3, 4:8] : (tensor<3x8xcomplex<f32>>) -> tensor<3x4xcomplex<f32>>
    %cst_0 = stablehlo.constant dense<(1.500000e+00,0.000000e+00)> : tensor<complex<f32>>
    %16 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<complex<f32>>) -> tensor<3x4xcomplex<f32>>
    %17 = stablehlo.add %15, %16 : tensor<3x4xcomplex<f32>>
    %18 = stablehlo.divide %14, %17 : tensor<3x4xcomplex<f32>>
    %19 = stablehlo.exponential %arg1 : tensor<3x12xcomplex<f32>>
    %20 = stablehlo.log %arg0 : tensor<3x8xcomplex<f32>>
    %21 = stablehlo.sqrt %arg1 : tensor<3x12xcomplex<f32>>
    %22 = stablehlo.abs %arg0 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %23 = stablehlo.sign %arg1 : tensor<3x12xcomplex<f32>>
    return %0, %1, %4, %6, %7, %11, %18, %19, %20, %21, %22, %23 : tensor<3x8xcomplex<f32>>, tensor<3x12xcomplex<f32>>, tensor<3x8xf32>, tensor<3x2x6xcomplex<f32>>, tensor<2x4xcomplex<f32>>, tensor<2x17xcomplex<f32>>, tensor<3x4xcomplex<f32>>, tensor<3x12xcomplex<f32>>, tensor<3x8xcomplex<f32>>, tensor<3x12xcomplex<f32>>, tensor<3x8xf32>, tensor<3x12xcomplex<f32>>
  }
  func.func private @fft(%arg0: tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = FFT, length = [8] : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    return %0 : tensor<3x8xcomplex<f32>>
  }
  func.func private @fft_0(%arg0: tensor<3x12xcomplex<f32>>) -> tensor<3x12xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = IFFT, length = [12] : (tensor<3x12xcomplex<f32>>) -> tensor<3x12xcomplex<f32>>
    return %0 : tensor<3x12xcomplex<f32>>
  }
  func.func private @_pad(%arg0: tensor<3x5xcomplex<f32>>, %arg1: tensor<i32>) -> tensor<3x5xcomplex<f32>> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<complex<f32>>
    %1 = stablehlo.pad %arg0, %0, low = [0, 0], high = [0, 0], interior = [0, 0] : (tensor<3x5xcomplex<f32>>, tensor<complex<f32>>) -> tensor<3x5xcomplex<f32>>
    return %1 : tensor<3x5xcomplex<f32>>
  }
  func.func private @fft_1(%arg0: tensor<3x5xcomplex<f32>>) -> tensor<3x8xf32> {
    %0 = stablehlo.fft %arg0, type = IRFFT, length = [8] : (tensor<3x5xcomplex<f32>>) -> tensor<3x8xf32>
    return %0 : tensor<3x8xf32>
  }
  func.func private @fft_2(%arg0: tensor<3x2x6xcomplex<f32>>) -> tensor<3x2x6xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = FFT, length = [2, 6] : (tensor<3x2x6xcomplex<f32>>) -> tensor<3x2x6xcomplex<f32>>
    return %0 : tensor<3x2x6xcomplex<f32>>
  }
  func.func private @fft_3(%arg0: tensor<2x7xf32>) -> tensor<2x4xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = RFFT, length = [7] : (tensor<2x7xf32>) -> tensor<2x4xcomplex<f32>>
    return %0 : tensor<2x4xcomplex<f32>>
  }
  func.func private @fft_4(%arg0: tensor<2x17xcomplex<f32>>) -> tensor<2x17xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = FFT, length = [17] : (tensor<2x17xcomplex<f32>>) -> tensor<2x17xcomplex<f32>>
    return %0 : tensor<2x17xcomplex<f32>>
  }
}
