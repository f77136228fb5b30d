// sort, scatter and gather for tests/e2e/test_region_ops.py: stable sorts with a
// captured scalar and by TOTALORDER, scatter and gather with batching dimensions (as JAX
// 0.10.2 exports lax.scatter_add / lax.gather with them), scalar i64 indices far out of
// range, and a non-commutative update applied in order.
func.func @main(%x: tensor<2x7x3xf32>, %c: tensor<f32>, %k: tensor<3x9xf32>,
                %a: tensor<2x3x4x2xi64>, %i: tensor<2x2x3x2xi64>, %u: tensor<2x2x3x2x2xi64>,
                %a2: tensor<5x3xf32>, %i2: tensor<4xi64>, %u2: tensor<4x3xf32>)
    -> (tensor<2x7x3xf32>, tensor<2x7x3xi32>, tensor<3x9xf32>, tensor<2x3x4x2xi64>,
        tensor<2x2x3x2x2xi64>, tensor<5x3xf32>) {
  %iota = stablehlo.iota dim = 1 : tensor<2x7x3xi32>
  %r:2 = "stablehlo.sort"(%x, %iota) <{dimension = 1 : i64, is_stable = false}> ({
  ^bb0(%p: tensor<f32>, %q: tensor<f32>, %ip: tensor<i32>, %iq: tensor<i32>):
    %dp = stablehlo.subtract %p, %c : tensor<f32>
    %dq = stablehlo.subtract %q, %c : tensor<f32>
    %ap = stablehlo.abs %dp : tensor<f32>
    %aq = stablehlo.abs %dq : tensor<f32>
    %lt = stablehlo.compare LT, %ap, %aq, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }) : (tensor<2x7x3xf32>, tensor<2x7x3xi32>) -> (tensor<2x7x3xf32>, tensor<2x7x3xi32>)
  %s = "stablehlo.sort"(%k) <{dimension = -1 : i64, is_stable = true}> ({
  ^bb0(%p: tensor<f32>, %q: tensor<f32>):
    %gt = stablehlo.compare GT, %p, %q, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    "stablehlo.return"(%gt) : (tensor<i1>) -> ()
  }) : (tensor<3x9xf32>) -> tensor<3x9xf32>
  %0 = "stablehlo.scatter"(%a, %i, %u) <{indices_are_sorted = false,
      scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [3, 4],
      inserted_window_dims = [1], input_batching_dims = [0],
      scatter_indices_batching_dims = [1], scatter_dims_to_operand_dims = [2, 1],
      index_vector_dim = 3>, unique_indices = false}> ({
  ^bb0(%v: tensor<i64>, %w: tensor<i64>):
    %t = stablehlo.add %v, %w : tensor<i64>
    stablehlo.return %t : tensor<i64>
  }) : (tensor<2x3x4x2xi64>, tensor<2x2x3x2xi64>, tensor<2x2x3x2x2xi64>) -> tensor<2x3x4x2xi64>
  %1 = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [3, 4],
      collapsed_slice_dims = [1], operand_batching_dims = [0],
      start_indices_batching_dims = [1], start_index_map = [2, 1], index_vector_dim = 3>,
      indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 2, 2>}>
    : (tensor<2x3x4x2xi64>, tensor<2x2x3x2xi64>) -> tensor<2x2x3x2x2xi64>
  %2 = "stablehlo.scatter"(%a2, %i2, %u2) <{scatter_dimension_numbers =
      #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%v: tensor<f32>, %w: tensor<f32>):
    %h = stablehlo.constant dense<0.5> : tensor<f32>
    %m = stablehlo.multiply %v, %h : tensor<f32>
    %t = stablehlo.add %m, %w : tensor<f32>
    stablehlo.return %t : tensor<f32>
  }) : (tensor<5x3xf32>, tensor<4xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %r#0, %r#1, %s, %0, %1, %2 : tensor<2x7x3xf32>, tensor<2x7x3xi32>, tensor<3x9xf32>,
    tensor<2x3x4x2xi64>, tensor<2x2x3x2x2xi64>, tensor<5x3xf32>
}
