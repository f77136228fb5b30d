// The StableHLO interpreter's tests of tuple / get_tuple_element, composite,
// get_dimension_size, optimization_barrier and reduce_precision
// (stablehlo/tests/interpret/*.mlir), their expected values returned instead of checked
// (tests/frontend/test_stablehlo_misc.py compares them).
func.func @add_n.impl(%arg0: tensor<i64>) -> tensor<i64> {
  %0 = stablehlo.constant dense<2> : tensor<i64>
  %1 = stablehlo.add %arg0, %0 : tensor<i64>
  func.return %1 : tensor<i64>
}
func.func @main() -> (tensor<2xf64>, tensor<i64>, tensor<i64>, tensor<i32>, tensor<f32>,
                      tensor<f32>, tensor<6xf64>, tensor<f64>) {
  %val0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>
  %tmp0 = stablehlo.constant dense<3> : tensor<i64>
  %val1 = stablehlo.tuple %tmp0 : tuple<tensor<i64>>
  %operand = stablehlo.tuple %val0, %val1 : tuple<tensor<2xf64>, tuple<tensor<i64>>>
  %result0 = stablehlo.get_tuple_element %operand[0] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> tensor<2xf64>
  %tmp1 = stablehlo.get_tuple_element %operand[1] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> tuple<tensor<i64>>
  %result1 = stablehlo.get_tuple_element %tmp1[0] : (tuple<tensor<i64>>) -> tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %c = stablehlo.composite "stablehlo.add_n" %one {
    composite_attributes = { n = 2 : i64 },
    decomposition = @add_n.impl
  } : (tensor<i64>) -> tensor<i64>
  %m = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %dim = stablehlo.get_dimension_size %m, dim = 1 : (tensor<2x3xi64>) -> tensor<i32>
  %operand0 = stablehlo.constant dense<0.0> : tensor<f32>
  %operand1 = stablehlo.constant dense<1.0> : tensor<f32>
  %b0, %b1 = stablehlo.optimization_barrier %operand0, %operand1 : tensor<f32>, tensor<f32>
  %rp = stablehlo.constant dense<[0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x0000000000000001, 0.0, 65505.0, 65520.0]> : tensor<6xf64>
  %rpo = stablehlo.reduce_precision %rp, format = e5m10 : tensor<6xf64>
  %nan = stablehlo.constant dense<0x7FFFFFFFFFFFFFFF> : tensor<f64>
  %nano = stablehlo.reduce_precision %nan, format = e5m0 : tensor<f64>
  return %result0, %result1, %c, %dim, %b0, %b1, %rpo, %nano : tensor<2xf64>, tensor<i64>,
    tensor<i64>, tensor<i32>, tensor<f32>, tensor<f32>, tensor<6xf64>, tensor<f64>
}
