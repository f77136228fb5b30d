// CHLO's functions on f64, f16 and bf16 (computed through f32, rounded once to the
// result type; next_after steps on each type's own grid), for tests/frontend/test_chlo.py.
func.func @main(%d: tensor<6xf64>, %h: tensor<6xf16>, %b: tensor<6xbf16>,
                %hy: tensor<6xf16>, %by: tensor<6xbf16>)
    -> (tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xf16>, tensor<6xf16>,
        tensor<6xf16>, tensor<6xbf16>, tensor<6xbf16>, tensor<6xbf16>, tensor<3xbf16>,
        tensor<3xi32>) {
  %0 = chlo.erf %d : tensor<6xf64> -> tensor<6xf64>
  %1 = chlo.lgamma %d : tensor<6xf64> -> tensor<6xf64>
  %2 = chlo.broadcast_zeta %d, %d : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xf64>
  %3 = chlo.erfc %h : tensor<6xf16> -> tensor<6xf16>
  %4 = chlo.digamma %h : tensor<6xf16> -> tensor<6xf16>
  %5 = chlo.next_after %h, %hy : tensor<6xf16>, tensor<6xf16> -> tensor<6xf16>
  %6 = chlo.erf_inv %b : tensor<6xbf16> -> tensor<6xbf16>
  %7 = chlo.bessel_i1e %b : tensor<6xbf16> -> tensor<6xbf16>
  %8 = chlo.next_after %b, %by : tensor<6xbf16>, tensor<6xbf16> -> tensor<6xbf16>
  %9, %10 = chlo.top_k(%b, k = 3) : tensor<6xbf16> -> (tensor<3xbf16>, tensor<3xi32>)
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10
    : tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xf16>, tensor<6xf16>,
      tensor<6xf16>, tensor<6xbf16>, tensor<6xbf16>, tensor<6xbf16>, tensor<3xbf16>,
      tensor<3xi32>
}
