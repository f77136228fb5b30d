// Found by the random graph fuzzer (seed 7000055): an f64 multiply-add was fused on
// single-precision FPUs, a call to libm's fma that no firmware links (cortex-m4, riscv32).
func.func @main(%x: tensor<3x2x3xf64>, %w: tensor<2x2x3xf64>) -> tensor<2x2x5xf64> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [0, b, f]x[o, 0, i]->[f, b, 0],
      window = {pad = [[2, 1]]} {feature_group_count = 1 : i64, batch_group_count = 1 : i64}
      : (tensor<3x2x3xf64>, tensor<2x2x3xf64>) -> tensor<2x2x5xf64>
  return %0 : tensor<2x2x5xf64>
}
