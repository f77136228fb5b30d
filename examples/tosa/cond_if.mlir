// Two TOSA COND_IFs: a data-dependent choice of dense layer, and a flag choosing between two int8 requantizations (written by examples/tosa/models.py).
module {
  func.func @main(%x: tensor<1x1x8xf32>, %flag: tensor<i1>, %q: tensor<1x8xi8>) -> (tensor<1x1x4xf32>, tensor<1x8xi8>) {
    %W1 = "tosa.const"() <{values = dense<"0x0000A0BE0000603E000040BD0000803C0000103F0000D03E0000D83E0000803D00001C3F00001C3F0000F0BE0000C0BE000080BE0000803D0000D03E000080BC00001C3F000040BE00000C3F0000E03D0000903E0000A8BE0000E03D0000C03E0000F83E0000F03E0000183F0000F0BE0000B83E000040BD0000703E000090BE"> : tensor<1x8x4xf32>}> : () -> tensor<1x8x4xf32>
    %W2 = "tosa.const"() <{values = dense<"0x00001CBF000008BF0000183F0000003F000080BE0000C0BD0000A8BE0000E8BE0000E83E0000603E000008BF0000C0BE0000A03D0000043F0000203F0000B8BE0000103E000018BF0000D0BE0000C0BE0000A0BD000040BE0000903E000040BD000050BE0000043F0000203E0000803E0000A03E000050BE0000003F00001CBF"> : tensor<1x8x4xf32>}> : () -> tensor<1x8x4xf32>
    %fzero = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xf32>}> : () -> tensor<1xf32>
    %sum = tosa.reduce_sum %x {axis = 2 : i32} : (tensor<1x1x8xf32>) -> tensor<1x1x1xf32>
    %s1 = tosa.const_shape {values = dense<[1]> : tensor<1xindex>} : () -> !tosa.shape<1>
    %sum1 = tosa.reshape %sum, %s1 : (tensor<1x1x1xf32>, !tosa.shape<1>) -> tensor<1xf32>
    %positive = tosa.greater %sum1, %fzero : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>
    %dense = tosa.cond_if %positive (%v = %x) : tensor<1xi1> (tensor<1x1x8xf32>) -> tensor<1x1x4xf32> {
    ^bb0(%v: tensor<1x1x8xf32>):
      %m = tosa.matmul %v, %W1, %fzero, %fzero : (tensor<1x1x8xf32>, tensor<1x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x4xf32>
      %act = tosa.clamp %m {min_val = 0.0 : f32, max_val = 3.40282347e+38 : f32} : (tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
      tosa.yield %act : tensor<1x1x4xf32>
    } else {
    ^bb0(%v: tensor<1x1x8xf32>):
      %m = tosa.matmul %v, %W2, %fzero, %fzero : (tensor<1x1x8xf32>, tensor<1x8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x4xf32>
      %act = tosa.sigmoid %m : (tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
      tosa.yield %act : tensor<1x1x4xf32>
    }
    %rm = "tosa.const"() <{values = dense<"0x00000060"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %rs = "tosa.const"() <{values = dense<"0x1F"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %zp = "tosa.const"() <{values = dense<"0x00"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %double = "tosa.const"() <{values = dense<"0x8080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080828486888A8C8E90929496989A9C9EA0A2A4A6A8AAACAEB0B2B4B6B8BABCBEC0C2C4C6C8CACCCED0D2D4D6D8DADCDEE0E2E4E6E8EAECEEF0F2F4F6F8FAFCFE00020406080A0C0E10121416181A1C1E20222426282A2C2E30323436383A3C3E40424446484A4C4E50525456585A5C5E60626466686A6C6E70727476787A7C7E7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F"> : tensor<256xi8>}> : () -> tensor<256xi8>
    %requant = tosa.cond_if %flag : tensor<i1> -> tensor<1x8xi8> {
      %scaled = tosa.rescale %q, %rm, %rs, %zp, %zp {rounding_mode = SINGLE_ROUND, scale32 = true, per_channel = false, input_unsigned = false, output_unsigned = false} : (tensor<1x8xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x8xi8>
      tosa.yield %scaled : tensor<1x8xi8>
    } else {
      %doubled = tosa.table %q, %double : (tensor<1x8xi8>, tensor<256xi8>) -> tensor<1x8xi8>
      tosa.yield %doubled : tensor<1x8xi8>
    }
    return %dense, %requant : tensor<1x1x4xf32>, tensor<1x8xi8>
  }
}
