"""TOSA as MLIR wrote it before 1.0 (IREE's and TensorFlow's older tests still do):
zero points, shifts, multipliers and shapes as attributes instead of operands, the
`double_round` flag, clamp's `min_fp` / `max_fp`, `value` on constants, FULLY_CONNECTED,
INT_DIV. Each is read into the same graph as its 1.0 spelling."""

from __future__ import annotations

import numpy as np
import tosa_spec as spec
from tosa_programs import load

from toolchain.reference import run_graph

LEGACY = """
func.func @main(%a: tensor<5xi32>, %b: tensor<5xi32>, %x: tensor<2x3xf32>,
                %q: tensor<6xi8>) -> (tensor<5xi32>, tensor<5xi32>, tensor<3x2xf32>,
                tensor<6x1xf32>, tensor<1x2xf32>, tensor<2x3xf32>, tensor<6xi8>,
                tensor<2x4xf32>, tensor<6xi8>, tensor<4x5xf32>) {
  %0 = "tosa.mul"(%a, %b) {shift = 1 : i8} : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %1 = "tosa.int_div"(%a, %b) : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %p = "tosa.const"() {value = dense<[1, 0]> : tensor<2xi32>} : () -> tensor<2xi32>
  %2 = "tosa.transpose"(%x, %p) : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  %3 = "tosa.reshape"(%x) {new_shape = array<i64: 6, 1>} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  %4 = "tosa.slice"(%x) {start = array<i64: 1, 0>, size = array<i64: 1, 2>}
       : (tensor<2x3xf32>) -> tensor<1x2xf32>
  %5 = "tosa.clamp"(%x) {min_fp = -0.5 : f32, max_fp = 0.5 : f32, min_int = 0 : i64,
       max_int = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = "tosa.rescale"(%q) {input_zp = 3 : i32, output_zp = -2 : i32,
       multiplier = array<i32: 1518500250>, shift = array<i8: 33>, scale32 = true,
       double_round = true, per_channel = false} : (tensor<6xi8>) -> tensor<6xi8>
  %w = "tosa.const"() {value = dense<[[1.0, 2.0, 3.0], [0.5, -1.0, 0.0], [0.0, 0.0, 1.0],
       [2.0, 2.0, 2.0]]> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
  %bias = "tosa.const"() {value = dense<[0.5, 1.0, -1.0, 0.0]> : tensor<4xf32>}
          : () -> tensor<4xf32>
  %7 = "tosa.fully_connected"(%x, %w, %bias) : (tensor<2x3xf32>, tensor<4x3xf32>,
       tensor<4xf32>) -> tensor<2x4xf32>
  %8 = "tosa.negate"(%q) : (tensor<6xi8>) -> tensor<6xi8>
  %pad = "tosa.const"() {value = dense<[[1, 1], [1, 1]]> : tensor<2x2xi32>}
         : () -> tensor<2x2xi32>
  %9 = "tosa.pad"(%x, %pad) : (tensor<2x3xf32>, tensor<2x2xi32>) -> tensor<4x5xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<5xi32>, tensor<5xi32>,
    tensor<3x2xf32>, tensor<6x1xf32>, tensor<1x2xf32>, tensor<2x3xf32>, tensor<6xi8>,
    tensor<2x4xf32>, tensor<6xi8>, tensor<4x5xf32>
}
"""


def test_pre_1_0_spellings() -> None:
    a = np.array([7, -7, 100000, -3, 2**30], np.int32)
    b = np.array([2, 2, 30000, 5, -3], np.int32)
    x = np.array([[0.25, -1.0, 2.0], [0.75, -0.25, 3.0]], np.float32)
    q = np.array([-128, 127, 3, 0, -1, 50], np.int8)
    got = run_graph(load(LEGACY), [a, b, x, q])
    w = np.array([[1, 2, 3], [0.5, -1, 0], [0, 0, 1], [2, 2, 2]])
    want = [spec.mul(a, b, 1), spec.intdiv(a, b), x.T, x.reshape(6, 1), x[1:2, 0:2],
            np.clip(x, -0.5, 0.5),
            spec.rescale(q.astype(np.int64), [1518500250], [33], 3, -2, scale32=True,
                         double_round=True, per_channel=False, input_unsigned=False,
                         output_unsigned=False, in_bits=8, out_bits=8),
            x @ w.T + [0.5, 1.0, -1.0, 0.0], spec.negate(q, 0, 0, 8),
            np.pad(x, 1)]
    for i, (g, e) in enumerate(zip(got, want, strict=True)):
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(g.astype(np.int64), np.asarray(e, np.int64),
                                          err_msg=f"output {i}")


# TFLite's older lowering of a uint8 model: `!quant.uniform<u8:...>` storage, zero points
# as attributes, a RESCALE into int8 and back out to uint8.
LEGACY_U8 = """
func.func @main(%u: tensor<4x!quant.uniform<u8:f32, 0.1:127>>,
                %s: tensor<4x!quant.uniform<i8:f32, 0.1:-1>>)
    -> (tensor<4x!quant.uniform<i8:f32, 0.1:-1>>, tensor<4x!quant.uniform<u8:f32, 0.1:127>>) {
  %0 = tosa.rescale %u {double_round = false, input_zp = 127 : i32,
       multiplier = array<i32: 1073741824>, output_zp = -1 : i32, per_channel = false,
       scale32 = true, shift = array<i8: 30>}
       : (tensor<4x!quant.uniform<u8:f32, 0.1:127>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:-1>>
  %1 = tosa.rescale %s {double_round = false, input_zp = -1 : i32,
       multiplier = array<i32: 1073741824>, output_zp = 127 : i32, per_channel = false,
       scale32 = true, shift = array<i8: 30>}
       : (tensor<4x!quant.uniform<i8:f32, 0.1:-1>>) -> tensor<4x!quant.uniform<u8:f32, 0.1:127>>
  return %0, %1 : tensor<4x!quant.uniform<i8:f32, 0.1:-1>>,
    tensor<4x!quant.uniform<u8:f32, 0.1:127>>
}
"""


def test_pre_1_0_uint8_storage() -> None:
    u = np.array([0, 127, 128, 255], np.uint8)
    s = np.array([-128, -1, 0, 127], np.int8)
    to_i8, to_u8 = run_graph(load(LEGACY_U8), [u, s])
    common = {"multiplier": [1 << 30], "shift": [30], "scale32": True,
              "double_round": False, "per_channel": False, "in_bits": 8, "out_bits": 8}
    assert to_u8.dtype == np.uint8  # the storage type: unsigned, not i8's bits
    np.testing.assert_array_equal(to_i8, spec.rescale(
        u.astype(np.int8), input_zp=127, output_zp=-1, input_unsigned=True,
        output_unsigned=False, **common))
    np.testing.assert_array_equal(to_u8.astype(np.int8), spec.rescale(
        s, input_zp=-1, output_zp=127, input_unsigned=False, output_unsigned=True,
        **common))
