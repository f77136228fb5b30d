// Reductions with a body (reduce_region, reduce_window_region) for
// tests/e2e/test_region_ops.py: jnp.argmin over int8 rows as JAX exports it, a
// 3-operand reduce reading a captured scalar, a max pool that also returns where each
// maximum is (padding, strides, base dilation), and a map reading a captured scalar
// behind an optimization_barrier.
func.func @main(%x: tensor<3x40xi8>, %y: tensor<5x3xf32>, %bias: tensor<f32>,
                %p: tensor<6x7xf32>)
    -> (tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3x5xf32>,
        tensor<3x5xi32>, tensor<5x3xf32>) {
  %iota = stablehlo.iota dim = 1 : tensor<3x40xi32>
  %big = stablehlo.constant dense<127> : tensor<i8>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %big), (%iota init: %zero) across dimensions = [1]
      : (tensor<3x40xi8>, tensor<3x40xi32>, tensor<i8>, tensor<i32>)
        -> (tensor<3xi8>, tensor<3xi32>)
   reducer(%a: tensor<i8>, %b: tensor<i8>) (%ia: tensor<i32>, %ib: tensor<i32>) {
    %lt = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i8>, tensor<i8>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a, %b, SIGNED : (tensor<i8>, tensor<i8>) -> tensor<i1>
    %first = stablehlo.compare LT, %ia, %ib, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %first : tensor<i1>
    %keep = stablehlo.or %lt, %tie : tensor<i1>
    %v = stablehlo.select %lt, %a, %b : tensor<i1>, tensor<i8>
    %i = stablehlo.select %keep, %ia, %ib : tensor<i1>, tensor<i32>
    stablehlo.return %v, %i : tensor<i8>, tensor<i32>
  }
  %yt = stablehlo.transpose %y, dims = [1, 0] : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %fz = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %one = stablehlo.constant dense<1> : tensor<3x5xi32>
  %s:3 = stablehlo.reduce(%yt init: %fz), (%yt init: %ninf), (%one init: %zero)
      across dimensions = [1]
      : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xi32>, tensor<f32>, tensor<f32>,
         tensor<i32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi32>)
   reducer(%s0: tensor<f32>, %e0: tensor<f32>) (%m0: tensor<f32>, %e1: tensor<f32>)
          (%c0: tensor<i32>, %e2: tensor<i32>) {
    %t = stablehlo.add %e0, %bias : tensor<f32>
    %sum = stablehlo.add %s0, %t : tensor<f32>
    %mx = stablehlo.maximum %m0, %e1 : tensor<f32>
    %pos = stablehlo.compare GT, %e1, %fz, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %inc = stablehlo.add %c0, %e2 : tensor<i32>
    %cnt = stablehlo.select %pos, %inc, %c0 : tensor<i1>, tensor<i32>
    stablehlo.return %sum, %mx, %cnt : tensor<f32>, tensor<f32>, tensor<i32>
  }
  %flat = stablehlo.iota dim = 0 : tensor<42xi32>
  %where = stablehlo.reshape %flat : (tensor<42xi32>) -> tensor<6x7xi32>
  %none = stablehlo.constant dense<-1> : tensor<i32>
  %w:2 = "stablehlo.reduce_window"(%p, %where, %ninf, %none) ({
  ^bb0(%a: tensor<f32>, %ia: tensor<i32>, %b: tensor<f32>, %ib: tensor<i32>):
    %ge = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %ge, %a, %b : tensor<i1>, tensor<f32>
    %i = stablehlo.select %ge, %ia, %ib : tensor<i1>, tensor<i32>
    "stablehlo.return"(%v, %i) : (tensor<f32>, tensor<i32>) -> ()
  }) {window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 2, 3>,
      base_dilations = array<i64: 1, 2>, padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>}
    : (tensor<6x7xf32>, tensor<6x7xi32>, tensor<f32>, tensor<i32>)
      -> (tensor<3x5xf32>, tensor<3x5xi32>)
  %yb, %bb = stablehlo.optimization_barrier %y, %bias : tensor<5x3xf32>, tensor<f32>
  %m = "stablehlo.map"(%yb, %y) ({
  ^bb0(%e: tensor<f32>, %f: tensor<f32>):
    %ef = stablehlo.multiply %e, %f : tensor<f32>
    %mb = stablehlo.add %ef, %bb : tensor<f32>
    stablehlo.return %mb : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  return %r#1, %s#0, %s#1, %s#2, %w#0, %w#1, %m
    : tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3x5xf32>,
      tensor<3x5xi32>, tensor<5x3xf32>
}
