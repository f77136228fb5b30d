// An int8 cnn in TOSA 1.0, every requantization a RESCALE (written by examples/tosa/models.py).
module {
  func.func @main(%input: tensor<1x8x8x3xi8>) -> (tensor<1x10xi8>, tensor<1x10xi8>, tensor<1xi32>) {
    %w1 = "tosa.const"() <{values = dense<"0x71202F65144655BA8FCDC95F69820052A24C9FF851CED8C738C17DF2FA01150E027E4E4B331FD77DF7B758A95B1D9E8CF28AA50478F74F6A5221F104C4FFE1C07E8499B2783161B438DFFD811E542AA809C57761B002705935248B3EF998BF0A3A021D5F2FDD25199C9029E319D3BAA7E251E7E1137AE517F11BF2230C2D74A710F1DCBE8EE75399E87773B7822C84CDFF5F982908A25858FC711B677512C8A610B2406DBF0D8DAFE1627824151290E07BE9B7BE368A786011F8430CFAD3F2408F8738DF4D8868A0EB779C283AEE9506EF5F2ED88F17C82F"> : tensor<8x3x3x3xi8>}> : () -> tensor<8x3x3x3xi8>
    %b1 = "tosa.const"() <{values = dense<"0xB2050000470700005F0300007CF7FFFF2208000019FEFFFF2408000063070000"> : tensor<8xi32>}> : () -> tensor<8xi32>
    %izp1 = "tosa.const"() <{values = dense<"0xFB"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %wzp = "tosa.const"() <{values = dense<"0x00"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %acc1 = tosa.conv2d %input, %w1, %b1, %izp1, %wzp {acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x3xi8>, tensor<8x3x3x3xi8>, tensor<8xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x8x8x8xi32>
    %q1_m = "tosa.const"() <{values = dense<"0x14AAFB428ED6B54D0488D75DF34E4667266E2E6B4BFDDC682E650F5849AD095D"> : tensor<8xi32>}> : () -> tensor<8xi32>
    %q1_s = "tosa.const"() <{values = dense<"0x2727272728272827"> : tensor<8xi8>}> : () -> tensor<8xi8>
    %q1_izp = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %q1_ozp = "tosa.const"() <{values = dense<"0x80"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %q1 = tosa.rescale %acc1, %q1_m, %q1_s, %q1_izp, %q1_ozp {rounding_mode = DOUBLE_ROUND, scale32 = true, per_channel = true, input_unsigned = false, output_unsigned = false} : (tensor<1x8x8x8xi32>, tensor<8xi32>, tensor<8xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x8x8x8xi8>
    %relu1 = tosa.clamp %q1 {min_val = -128 : i8, max_val = 127 : i8} : (tensor<1x8x8x8xi8>) -> tensor<1x8x8x8xi8>
    %pzp = "tosa.const"() <{values = dense<"0x80"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %pool1 = tosa.avg_pool2d %relu1, %pzp, %pzp {acc_type = i32, kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x8xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x8xi8>
    %w2 = "tosa.const"() <{values = dense<"0x78845D21FC4B7303973ABBBAB2B369DD9CAEE5D9D0725D137CD7A4C69773B8F2B47BA90473056665443E141554ED7260E0E9376C9992C0EEAA050B733FC1494E2E2DD037A3216B78"> : tensor<3x3x8x1xi8>}> : () -> tensor<3x3x8x1xi8>
    %b2 = "tosa.const"() <{values = dense<"0xDA0300009F01000063060000ACFFFFFFE4FAFFFF7A01000050FFFFFF7D020000"> : tensor<8xi32>}> : () -> tensor<8xi32>
    %acc2 = tosa.depthwise_conv2d %pool1, %w2, %b2, %pzp, %wzp {acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xi8>, tensor<3x3x8x1xi8>, tensor<8xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x8xi32>
    %q2_m = "tosa.const"() <{values = dense<"0x53510E5AC0B4B25FB9C6E44EEE25CD411EE6C04F80A01746779EDA4242D31B47"> : tensor<8xi32>}> : () -> tensor<8xi32>
    %q2_s = "tosa.const"() <{values = dense<"0x2626262626252526"> : tensor<8xi8>}> : () -> tensor<8xi8>
    %q2_izp = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %q2_ozp = "tosa.const"() <{values = dense<"0x03"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %q2 = tosa.rescale %acc2, %q2_m, %q2_s, %q2_izp, %q2_ozp {rounding_mode = SINGLE_ROUND, scale32 = true, per_channel = true, input_unsigned = false, output_unsigned = false} : (tensor<1x4x4x8xi32>, tensor<8xi32>, tensor<8xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x4x4x8xi8>
    %sa_m = "tosa.const"() <{values = dense<"0x00000060"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %sa_s = "tosa.const"() <{values = dense<"0x0C"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %sa_izp = "tosa.const"() <{values = dense<"0x80"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %sa_ozp = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %sa = tosa.rescale %pool1, %sa_m, %sa_s, %sa_izp, %sa_ozp {rounding_mode = SINGLE_ROUND, scale32 = true, per_channel = false, input_unsigned = false, output_unsigned = false} : (tensor<1x4x4x8xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<1x4x4x8xi32>
    %sb_m = "tosa.const"() <{values = dense<"0x00000040"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %sb_s = "tosa.const"() <{values = dense<"0x0B"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %sb_izp = "tosa.const"() <{values = dense<"0x03"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %sb_ozp = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %sb = tosa.rescale %q2, %sb_m, %sb_s, %sb_izp, %sb_ozp {rounding_mode = SINGLE_ROUND, scale32 = true, per_channel = false, input_unsigned = false, output_unsigned = false} : (tensor<1x4x4x8xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<1x4x4x8xi32>
    %sum = tosa.add %sa, %sb : (tensor<1x4x4x8xi32>, tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xi32>
    %res_m = "tosa.const"() <{values = dense<"0x66666666"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %res_s = "tosa.const"() <{values = dense<"0x32"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %res_izp = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %res_ozp = "tosa.const"() <{values = dense<"0xEC"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %res = tosa.rescale %sum, %res_m, %res_s, %res_izp, %res_ozp {rounding_mode = DOUBLE_ROUND, scale32 = true, per_channel = false, input_unsigned = false, output_unsigned = false} : (tensor<1x4x4x8xi32>, tensor<1xi32>, tensor<1xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x4x4x8xi8>
    %pool2 = tosa.max_pool2d %res {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x8xi8>) -> tensor<1x2x2x8xi8>
    %s3 = tosa.const_shape {values = dense<[1, 1, 32]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %flat = tosa.reshape %pool2, %s3 : (tensor<1x2x2x8xi8>, !tosa.shape<3>) -> tensor<1x1x32xi8>
    %w3 = "tosa.const"() <{values = dense<"0xE0CFA07641F7BC21EA2298AF3C902DE981433350653B579D6B69314D3E606306516ACC8CAC88EF86C3C135C073B07811BF8ACE179CAB9E2D9786F5D012705B0A244FF028B81CBDB14313E18BBD4DF875665A858D14D757D2A89DCD20A14CCED02A5DF04CCEA15444406200B31613E323C41C4B99F4298E2269532F4DDDD49639D15EF764A4AAD987FE2629B7AA10227165E1AAC161F57E28189A17E258A3B1292E5406E1CFDF2A0ACCB736C0B6D55AF51895D840461460CDAA94B34367A200A258A224953D683BC557CF4155FC1F5BB086EFAF625EE0CF36F499293A92470953592CD6DF3991BB05714250B1C8C44009B63F23650FA163AF8F4CF325A238E87F23704B5797471AE5D024B3B05F421742D338B5F2A6E1D7ECFA89D858EF0B9BE3780C863945E28954C16BDDE34BA488426D7EA1A6D7366953E06BC2A0EF982E7C"> : tensor<1x32x10xi8>}> : () -> tensor<1x32x10xi8>
    %azp = "tosa.const"() <{values = dense<"0xEC"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %acc3 = tosa.matmul %flat, %w3, %azp, %wzp : (tensor<1x1x32xi8>, tensor<1x32x10xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x1x10xi32>
    %b3 = "tosa.const"() <{values = dense<"0xA8F0FFFF07F1FFFF71F3FFFF60F3FFFF5C010000ED0200009A110000E6FDFFFFAC100000C7090000"> : tensor<1x1x10xi32>}> : () -> tensor<1x1x10xi32>
    %acc3b = tosa.add %acc3, %b3 : (tensor<1x1x10xi32>, tensor<1x1x10xi32>) -> tensor<1x1x10xi32>
    %q3_m = "tosa.const"() <{values = dense<"0x4C378941"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %q3_s = "tosa.const"() <{values = dense<"0x27"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %q3_izp = "tosa.const"() <{values = dense<"0x00000000"> : tensor<1xi32>}> : () -> tensor<1xi32>
    %q3_ozp = "tosa.const"() <{values = dense<"0x0A"> : tensor<1xi8>}> : () -> tensor<1xi8>
    %q3 = tosa.rescale %acc3b, %q3_m, %q3_s, %q3_izp, %q3_ozp {rounding_mode = DOUBLE_ROUND, scale32 = true, per_channel = false, input_unsigned = false, output_unsigned = false} : (tensor<1x1x10xi32>, tensor<1xi32>, tensor<1xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x1x10xi8>
    %s2 = tosa.const_shape {values = dense<[1, 10]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %logits = tosa.reshape %q3, %s2 : (tensor<1x1x10xi8>, !tosa.shape<2>) -> tensor<1x10xi8>
    %sigmoid = "tosa.const"() <{values = dense<"0x80808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080808080818181828283848587898C90959CA4AFBBCADBED0013253645515C646B707477797B7C7D7E7E7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F7F"> : tensor<256xi8>}> : () -> tensor<256xi8>
    %probs = tosa.table %logits, %sigmoid : (tensor<1x10xi8>, tensor<256xi8>) -> tensor<1x10xi8>
    %best = tosa.argmax %logits {axis = 1 : i32} : (tensor<1x10xi8>) -> tensor<1xi32>
    return %logits, %probs, %best : tensor<1x10xi8>, tensor<1x10xi8>, tensor<1xi32>
  }
}
