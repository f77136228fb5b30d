// The StableHLO ops of toolchain/frontend/stablehlo_tuples.py and stablehlo_misc.py in
// one model (tests/frontend/test_stablehlo_misc.py builds it once per board). Inputs:
// %x f32[16], %h f16[8], %bh bf16[8], %d f64[6], %a f32[2x3], %b f32[3x4],
// %p f32[2x3x4], %q f32[2x4x5], %sq f32[3x3], %it i32[2x2x2], %iv i32[2x2x2],
// %sel i32[3], %n i32[].
func.func private @fma_decomposition(%u: tensor<2x3xf32>, %v: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %m = stablehlo.multiply %u, %v : tensor<2x3xf32>
  %s = stablehlo.add %m, %v : tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// A tuple in and a tuple out: swaps and scales the pair.
func.func private @swap(%t: tuple<tensor<f32>, tensor<2x3xf32>>) -> tuple<tensor<2x3xf32>, tensor<f32>> {
  %s = stablehlo.get_tuple_element %t[0] : (tuple<tensor<f32>, tensor<2x3xf32>>) -> tensor<f32>
  %m = stablehlo.get_tuple_element %t[1] : (tuple<tensor<f32>, tensor<2x3xf32>>) -> tensor<2x3xf32>
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %y = stablehlo.multiply %m, %b : tensor<2x3xf32>
  %r = stablehlo.tuple %y, %s : tuple<tensor<2x3xf32>, tensor<f32>>
  return %r : tuple<tensor<2x3xf32>, tensor<f32>>
}

func.func @main(%x: tensor<16xf32>, %h: tensor<8xf16>, %bh: tensor<8xbf16>, %d: tensor<6xf64>,
                %a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %p: tensor<2x3x4xf32>,
                %q: tensor<2x4x5xf32>, %sq: tensor<3x3xf32>, %it: tensor<2x2x2xi32>,
                %iv: tensor<2x2x2xi32>, %sel: tensor<3xi32>, %n: tensor<i32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf16>,
        tensor<8xbf16>, tensor<6xf64>, tensor<2x4xf32>, tensor<2x3x5xf32>, tensor<f32>,
        tensor<3xf32>, tensor<3x2xf32>, tensor<2x3x5xf32>, tensor<2x3x3x4xf32>, tensor<2x4xf32>,
        tensor<2xf32>, tensor<2x2x2xi32>, tensor<2x3x4xf32>, tensor<3x3xf32>, tensor<i32>,
        tensor<ui32>, tensor<ui32>, tensor<2x3xf32>, tensor<16xf32>, tensor<2x3xf32>,
        tensor<2x3xf32>, tensor<f32>, tensor<i32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>,
        tensor<2x3xf32>) {
  // reduce_precision: the IEEE half and bfloat16 formats, an 8-bit float, and no-ops.
  %rp_half = stablehlo.reduce_precision %x, format = e5m10 : tensor<16xf32>
  %rp_bf16 = "stablehlo.reduce_precision"(%x) <{exponent_bits = 8 : i32, mantissa_bits = 7 : i32}> : (tensor<16xf32>) -> tensor<16xf32>
  %rp_e4m3 = stablehlo.reduce_precision %x, format = e4m3 : tensor<16xf32>
  %rp_e2m0 = stablehlo.reduce_precision %x, format = e2m0 : tensor<16xf32>
  %rp_h = stablehlo.reduce_precision %h, format = e3m4 : tensor<8xf16>
  %rp_b = stablehlo.reduce_precision %bh, format = e5m2 : tensor<8xbf16>
  %rp_d = stablehlo.reduce_precision %d, format = e5m10 : tensor<6xf64>
  %qa = stablehlo.uniform_quantize %a : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32, 0.05:-3>>
  %qr = stablehlo.reduce_precision %qa, format = e5m1 : tensor<2x3x!quant.uniform<i8:f32, 0.05:-3>>
  %rp_q = stablehlo.uniform_dequantize %qr : (tensor<2x3x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<2x3xf32>

  // einsum / unary_einsum.
  %mm = stablehlo.einsum %a, %b, config = "ab,bc->ac" : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %bmm = "stablehlo.einsum"(%p, %q) {einsum_config = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %dot = stablehlo.einsum %a, %a, config = "ij,ij->" : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  %diag = stablehlo.unary_einsum %sq, config = "ii->i" : (tensor<3x3xf32>) -> tensor<3xf32>
  %tr = "stablehlo.unary_einsum"(%a) {einsum_config = "ij->ji"} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %ell = stablehlo.einsum %p, %q, config = "...ij,...jk->...ik" : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %outer = stablehlo.einsum %a, %b, config = "ab,cd->abcd" : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x3x3x4xf32>
  %sum1 = stablehlo.einsum %p, %b, config = "xyz,yw->xw" : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %rows = stablehlo.unary_einsum %a, config = "ab->a" : (tensor<2x3xf32>) -> tensor<2xf32>

  // torch_index_select: batched (IREE's regression case) and plain along dim 2.
  %tis = "stablehlo.torch_index_select"(%it, %iv) {batch_dims = -1 : i64, dim = -1 : i64} : (tensor<2x2x2xi32>, tensor<2x2x2xi32>) -> tensor<2x2x2xi32>
  %tis2 = "stablehlo.torch_index_select"(%p, %sel) <{dim = 1 : i64, batch_dims = 0 : i64}> : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<2x3x4xf32>
  %tis3 = "stablehlo.torch_index_select"(%sq, %sel) <{dim = 0 : i64, batch_dims = 0 : i64}> : (tensor<3x3xf32>, tensor<3xi32>) -> tensor<3x3xf32>

  // Shapes and ids.
  %dim = stablehlo.get_dimension_size %q, dim = 2 : (tensor<2x4x5xf32>) -> tensor<i32>
  %pid = stablehlo.partition_id : tensor<ui32>
  %rid = "stablehlo.replica_id"() : () -> tensor<ui32>

  // optimization_barrier over several operands; a composite (pretty and generic).
  %o1, %o2 = stablehlo.optimization_barrier %a, %x : tensor<2x3xf32>, tensor<16xf32>
  %fma = stablehlo.composite "minirt.fma" %o1, %a {composite_attributes = {note = "x*y+y"}, decomposition = @fma_decomposition, version = 1 : i32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %fma2 = "stablehlo.composite"(%fma, %a) <{name = "minirt.fma", decomposition = @fma_decomposition}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>

  // Tuples through a call, a while loop and an if.
  %zero = stablehlo.constant dense<0.5> : tensor<f32>
  %pair = stablehlo.tuple %zero, %a : tuple<tensor<f32>, tensor<2x3xf32>>
  %swapped = func.call @swap(%pair) : (tuple<tensor<f32>, tensor<2x3xf32>>) -> tuple<tensor<2x3xf32>, tensor<f32>>
  %sw_m = stablehlo.get_tuple_element %swapped[0] : (tuple<tensor<2x3xf32>, tensor<f32>>) -> tensor<2x3xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %init = stablehlo.tuple %c0, %pair : tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>
  %loop = stablehlo.while(%s = %init) : tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>
  cond {
    %i = stablehlo.get_tuple_element %s[0] : (tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>) -> tensor<i32>
    %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %i = stablehlo.get_tuple_element %s[0] : (tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>) -> tensor<i32>
    %v = stablehlo.get_tuple_element %s[1] : (tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>) -> tuple<tensor<f32>, tensor<2x3xf32>>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %w = func.call @swap(%v) : (tuple<tensor<f32>, tensor<2x3xf32>>) -> tuple<tensor<2x3xf32>, tensor<f32>>
    %wm = stablehlo.get_tuple_element %w[0] : (tuple<tensor<2x3xf32>, tensor<f32>>) -> tensor<2x3xf32>
    %ws = stablehlo.get_tuple_element %w[1] : (tuple<tensor<2x3xf32>, tensor<f32>>) -> tensor<f32>
    %ws2 = stablehlo.add %ws, %ws : tensor<f32>
    %nv = stablehlo.tuple %ws2, %wm : tuple<tensor<f32>, tensor<2x3xf32>>
    %ns = stablehlo.tuple %j, %nv : tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>
    stablehlo.return %ns : tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>
  }
  %lv = stablehlo.get_tuple_element %loop[1] : (tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>) -> tuple<tensor<f32>, tensor<2x3xf32>>
  %lm = stablehlo.get_tuple_element %lv[1] : (tuple<tensor<f32>, tensor<2x3xf32>>) -> tensor<2x3xf32>
  %ls = stablehlo.get_tuple_element %lv[0] : (tuple<tensor<f32>, tensor<2x3xf32>>) -> tensor<f32>
  %li = "stablehlo.get_tuple_element"(%loop) <{index = 0 : i32}> : (tuple<tensor<i32>, tuple<tensor<f32>, tensor<2x3xf32>>>) -> tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  %odd = stablehlo.compare GT, %n, %two : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %branch = "stablehlo.if"(%odd) ({
    %t1 = "stablehlo.tuple"(%a, %sw_m) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tuple<tensor<2x3xf32>, tensor<2x3xf32>>
    stablehlo.return %t1 : tuple<tensor<2x3xf32>, tensor<2x3xf32>>
  }, {
    %t2 = stablehlo.tuple %sw_m, %a : tuple<tensor<2x3xf32>, tensor<2x3xf32>>
    stablehlo.return %t2 : tuple<tensor<2x3xf32>, tensor<2x3xf32>>
  }) : (tensor<i1>) -> tuple<tensor<2x3xf32>, tensor<2x3xf32>>
  %br0 = stablehlo.get_tuple_element %branch[0] : (tuple<tensor<2x3xf32>, tensor<2x3xf32>>) -> tensor<2x3xf32>
  %br1 = stablehlo.get_tuple_element %branch[1] : (tuple<tensor<2x3xf32>, tensor<2x3xf32>>) -> tensor<2x3xf32>
  return %rp_half, %rp_bf16, %rp_e4m3, %rp_e2m0, %rp_h, %rp_b, %rp_d, %mm, %bmm, %dot, %diag,
         %tr, %ell, %outer, %sum1, %rows, %tis, %tis2, %tis3, %dim, %pid, %rid, %fma2, %o2,
         %sw_m, %lm, %ls, %li, %br0, %br1, %zero, %rp_q
    : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf16>,
      tensor<8xbf16>, tensor<6xf64>, tensor<2x4xf32>, tensor<2x3x5xf32>, tensor<f32>,
      tensor<3xf32>, tensor<3x2xf32>, tensor<2x3x5xf32>, tensor<2x3x3x4xf32>, tensor<2x4xf32>,
      tensor<2xf32>, tensor<2x2x2xi32>, tensor<2x3x4xf32>, tensor<3x3xf32>, tensor<i32>,
      tensor<ui32>, tensor<ui32>, tensor<2x3xf32>, tensor<16xf32>, tensor<2x3xf32>,
      tensor<2x3xf32>, tensor<f32>, tensor<i32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>,
      tensor<2x3xf32>
}
