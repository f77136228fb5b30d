// complex<f32> (and complex<f64>: %24-%30) arithmetic, comparisons, conversions and data movement (tests/e2e/test_complex.py).
func.func @main(%a: tensor<2x3xcomplex<f32>>, %b: tensor<2x3xcomplex<f32>>, %re: tensor<2x3xf32>, %im: tensor<2x3xf32>) -> (tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xf32>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f32>>, tensor<3x2xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<2x2xcomplex<f32>>, tensor<4x3xcomplex<f32>>, tensor<3x6xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xf64>) {
  %0 = stablehlo.add %a, %b : tensor<2x3xcomplex<f32>>
  %1 = stablehlo.subtract %a, %b : tensor<2x3xcomplex<f32>>
  %2 = stablehlo.multiply %a, %b : tensor<2x3xcomplex<f32>>
  %3 = stablehlo.divide %a, %b : tensor<2x3xcomplex<f32>>
  %4 = stablehlo.negate %a : tensor<2x3xcomplex<f32>>
  %5 = stablehlo.abs %a : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
  %6 = stablehlo.exponential %a : tensor<2x3xcomplex<f32>>
  %7 = stablehlo.log %b : tensor<2x3xcomplex<f32>>
  %8 = stablehlo.sqrt %a : tensor<2x3xcomplex<f32>>
  %9 = stablehlo.sign %a : tensor<2x3xcomplex<f32>>
  %10 = stablehlo.compare EQ, %a, %b : (tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>) -> tensor<2x3xi1>
  %11 = stablehlo.compare NE, %a, %b : (tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>) -> tensor<2x3xi1>
  %12 = stablehlo.real %a : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
  %13 = stablehlo.imag %a : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
  %14 = stablehlo.convert %b : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xi32>
  %15 = stablehlo.convert %a : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xcomplex<f64>>
  %c = stablehlo.constant dense<[[(1.0, 2.0), (3.0, 4.0), (-0.5, 0.0)], [(0.0, -1.0), (2.5, 2.5), (1.0e+10, -3.0)]]> : tensor<2x3xcomplex<f32>>
  %z = stablehlo.complex %re, %im : tensor<2x3xcomplex<f32>>
  %16 = stablehlo.multiply %z, %c : tensor<2x3xcomplex<f32>>
  %17 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xcomplex<f32>>) -> tensor<3x2xcomplex<f32>>
  %18 = stablehlo.reshape %b : (tensor<2x3xcomplex<f32>>) -> tensor<6xcomplex<f32>>
  %19 = stablehlo.slice %a [0:2, 1:3] : (tensor<2x3xcomplex<f32>>) -> tensor<2x2xcomplex<f32>>
  %20 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>) -> tensor<4x3xcomplex<f32>>
  %pv = stablehlo.constant dense<(7.0, -7.0)> : tensor<complex<f32>>
  %21 = stablehlo.pad %a, %pv, low = [0, 1], high = [1, 2], interior = [0, 0] : (tensor<2x3xcomplex<f32>>, tensor<complex<f32>>) -> tensor<3x6xcomplex<f32>>
  %re_f = stablehlo.convert %re : (tensor<2x3xf32>) -> tensor<2x3xcomplex<f32>>
  %22 = stablehlo.add %re_f, %a : tensor<2x3xcomplex<f32>>
  %p = stablehlo.compare GT, %re, %im : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %23 = stablehlo.select %p, %a, %b : tensor<2x3xi1>, tensor<2x3xcomplex<f32>>
  %24 = stablehlo.multiply %15, %15 : tensor<2x3xcomplex<f64>>
  %25 = stablehlo.divide %15, %15 : tensor<2x3xcomplex<f64>>
  %26 = stablehlo.exponential %15 : tensor<2x3xcomplex<f64>>
  %27 = stablehlo.log %15 : tensor<2x3xcomplex<f64>>
  %28 = stablehlo.sqrt %15 : tensor<2x3xcomplex<f64>>
  %29 = stablehlo.fft %15, type = FFT, length = [3] : (tensor<2x3xcomplex<f64>>) -> tensor<2x3xcomplex<f64>>
  %30 = stablehlo.abs %15 : (tensor<2x3xcomplex<f64>>) -> tensor<2x3xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30 : tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xf32>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f32>>, tensor<3x2xcomplex<f32>>, tensor<6xcomplex<f32>>, tensor<2x2xcomplex<f32>>, tensor<4x3xcomplex<f32>>, tensor<3x6xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f32>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>, tensor<2x3xf64>
}
