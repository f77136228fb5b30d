// Seed for bench/fuzz_parse.py: the linear-algebra ops (cholesky in both forms,
// triangular_solve, the training batch norms), whose attributes (an enum inside a
// property dict, f32 epsilon, i64 feature index) the other seeds do not hold.
func.func @main(%a: tensor<2x3x3xf32>, %b: tensor<2x3x4xf32>, %x: tensor<4x2x3xf32>,
                %s: tensor<3xf32>, %o: tensor<3xf32>, %g: tensor<4x2x3xf32>)
    -> (tensor<2x3x3xf32>, tensor<2x3x3xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>,
        tensor<4x2x3xf32>) {
  %l = stablehlo.cholesky %a, lower = true : tensor<2x3x3xf32>
  %u = "stablehlo.cholesky"(%a) {lower = false} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %y = "stablehlo.triangular_solve"(%l, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false}> : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %n, %m, %v = "stablehlo.batch_norm_training"(%x, %s, %o) <{epsilon = 1.0E-3 : f32, feature_index = 2 : i64}> : (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %dx, %ds, %do = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %g) <{epsilon = 1.0E-3 : f32, feature_index = 2 : i64}> : (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x2x3xf32>) -> (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %l, %u, %y, %n, %dx : tensor<2x3x3xf32>, tensor<2x3x3xf32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<4x2x3xf32>
}
