// rng_bit_generator with each algorithm, state size and result width (tests/e2e/test_rng.py).
func.func @main(%s2: tensor<2xui64>, %s3: tensor<3xui64>) -> (tensor<2xui64>, tensor<3x2xui32>, tensor<2xui64>, tensor<5xui64>, tensor<2xui64>, tensor<3x5xf32>, tensor<3xui64>, tensor<7xui32>, tensor<3xui64>, tensor<3xi64>, tensor<2xui64>, tensor<2x3xui8>, tensor<2xui64>, tensor<5xi16>) {
  %0:2 = stablehlo.rng_bit_generator %s2, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x2xui32>)
  %1:2 = stablehlo.rng_bit_generator %s2, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5xui64>)
  %2:2 = "stablehlo.rng_bit_generator"(%s2) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xf32>)
  %3:2 = stablehlo.rng_bit_generator %s3, algorithm = PHILOX : (tensor<3xui64>) -> (tensor<3xui64>, tensor<7xui32>)
  %4:2 = stablehlo.rng_bit_generator %s3, algorithm = PHILOX : (tensor<3xui64>) -> (tensor<3xui64>, tensor<3xi64>)
  %5:2 = stablehlo.rng_bit_generator %s2, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui8>)
  %6:2 = stablehlo.rng_bit_generator %s2, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5xi16>)
  return %0#0, %0#1, %1#0, %1#1, %2#0, %2#1, %3#0, %3#1, %4#0, %4#1, %5#0, %5#1, %6#0, %6#1 : tensor<2xui64>, tensor<3x2xui32>, tensor<2xui64>, tensor<5xui64>, tensor<2xui64>, tensor<3x5xf32>, tensor<3xui64>, tensor<7xui32>, tensor<3xui64>, tensor<3xi64>, tensor<2xui64>, tensor<2x3xui8>, tensor<2xui64>, tensor<5xi16>
}
