// i4, ui4, i2 and ui2 arithmetic (tests/e2e/test_sub_byte.py): the StableHLO
// interpreter's sub-byte cases, with the operands as inputs so that the firmware computes.
func.func @main(%a: tensor<5xi4>, %b: tensor<5xi4>, %c: tensor<3xui4>, %d: tensor<3xui4>, %e: tensor<4xi2>, %f: tensor<4xi2>, %g: tensor<2xui2>, %h: tensor<2xui2>, %w: tensor<5xi32>) -> (tensor<5xi4>, tensor<5xi4>, tensor<5xi4>, tensor<5xi4>, tensor<5xi4>, tensor<3xui4>, tensor<3xui4>, tensor<3xui4>, tensor<4xi2>, tensor<2xui2>, tensor<5xi4>, tensor<5xi8>, tensor<3xi32>, tensor<3x4xi4>, tensor<5xf32>) {
  %0 = stablehlo.add %a, %b : tensor<5xi4>
  %1 = stablehlo.subtract %a, %b : tensor<5xi4>
  %2 = stablehlo.negate %b : tensor<5xi4>
  %3 = stablehlo.multiply %a, %b : tensor<5xi4>
  %4 = stablehlo.maximum %a, %b : tensor<5xi4>
  %5 = stablehlo.subtract %c, %d : tensor<3xui4>
  %6 = stablehlo.not %c : tensor<3xui4>
  %7 = stablehlo.negate %c : tensor<3xui4>
  %8 = stablehlo.add %e, %f : tensor<4xi2>
  %9 = stablehlo.add %g, %h : tensor<2xui2>
  %10 = stablehlo.convert %w : (tensor<5xi32>) -> tensor<5xi4>
  %11 = stablehlo.convert %b : (tensor<5xi4>) -> tensor<5xi8>
  %12 = stablehlo.convert %d : (tensor<3xui4>) -> tensor<3xi32>
  %13 = stablehlo.iota dim = 0 : tensor<3x4xi4>
  %14 = stablehlo.convert %b : (tensor<5xi4>) -> tensor<5xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14 : tensor<5xi4>, tensor<5xi4>, tensor<5xi4>, tensor<5xi4>, tensor<5xi4>, tensor<3xui4>, tensor<3xui4>, tensor<3xui4>, tensor<4xi2>, tensor<2xui2>, tensor<5xi4>, tensor<5xi8>, tensor<3xi32>, tensor<3x4xi4>, tensor<5xf32>
}
