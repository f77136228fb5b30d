// Seed for bench/fuzz_parse.py: CHLO as JAX writes it, complex numbers, rng, dense forms.
!t = tensor<4xf32>
#dims = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0],>
func.func @main(%x: !t, %y: tensor<1xf32>, %m: tensor<2x4xf32>, %k: tensor<4x3xbf16>, %s: tensor<2xui64>) -> (!t, tensor<2xi32>, tensor<2x3xf32>, tensor<5xf32>) {
  %sq = chlo.square %x : tensor<4xf32> -> tensor<4xf32>
  %e = chlo.erf %sq : tensor<4xf32> -> tensor<4xf32>
  %c = chlo.erfc %e : tensor<4xf32> -> tensor<4xf32>
  %lg = chlo.lgamma %c : tensor<4xf32> -> tensor<4xf32>
  %b = chlo.broadcast_add %lg, %y {broadcast_dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %cmp = chlo.broadcast_compare %b, %y {comparison_direction = #chlo<comparison_direction GT>} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi1>
  %sel = chlo.broadcast_select %cmp, %b, %x : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v, %ix = chlo.top_k(%sel, k = 2) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)
  %w = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [01, 02, 3.5e+00]]> : tensor<4x3xf32>
  %kf = stablehlo.convert %k : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %wk = stablehlo.add %w, %kf : tensor<4x3xf32>
  %d = "stablehlo.dot_general"(%m, %wk) <{dot_dimension_numbers = #dims, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %re = stablehlo.slice %x [0:4] : (tensor<4xf32>) -> tensor<4xf32>
  %cx = stablehlo.complex %re, %x : tensor<4xcomplex<f32>>
  %f = stablehlo.fft %cx, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  %r = stablehlo.real %f : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %pad0 = stablehlo.constant dense<(0.0, 0.0)> : tensor<complex<f32>>
  %st, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5xui32>)
  %fb = stablehlo.convert %bits : (tensor<5xui32>) -> tensor<5xf32>
  %bc = stablehlo.bitcast_convert %r : (tensor<4xf32>) -> tensor<4xi32>
  %i0 = stablehlo.constant dense<1> : tensor<i32>
  %up = stablehlo.dynamic_update_slice %r, %y, %i0 : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
  %bb = stablehlo.broadcast %up, sizes = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
  %rs = stablehlo.reshape %bb : (tensor<1x4xf32>) -> tensor<4xf32>
  return %rs, %ix, %d, %fb : tensor<4xf32>, tensor<2xi32>, tensor<2x3xf32>, tensor<5xf32>
}
