"""ONNX's sub-byte integers (INT4, UINT4, INT2, UINT2): read as minirt's i4 / ui4 / i2 /
ui2, held a byte an element on the host and in RAM, and stored packed again in the
module when they are constants (schedule/sub_byte.py).

ONNX packs them two (or four) to a byte in the protobuf; onnx's numpy_helper unpacks
them. Here: a sub-byte input cast to float and to int8 against onnx's reference
evaluator; int4 and uint2 weights dequantized (DequantizeLinear, per axis and per
tensor) into a MatMul and a Mul, on the reference and under QEMU on cortex-m4 with the
weights packed in the module; a Cast of a float to INT4, refused in one line.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx_models import import_bytes, run_firmware

from toolchain.cli.run import compare
from toolchain.frontend.onnx.errors import OnnxError
from toolchain.reference import run_graph

OPSET = 21  # DequantizeLinear and Cast take the 4-bit types from opset 21

_HOST = {"int4": np.int8, "int2": np.int8, "uint4": np.uint8, "uint2": np.uint8}


def _model(nodes, inputs, outputs, inits=()) -> bytes:
    graph = helper.make_graph(nodes, "sub_byte", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _host(a: np.ndarray) -> np.ndarray:
    """An ml_dtypes sub-byte array as minirt holds it: a byte an element."""
    return a.astype(_HOST.get(a.dtype.name, a.dtype))


@pytest.mark.parametrize("elem, ml, lo, hi", [
    (TensorProto.INT4, ml_dtypes.int4, -8, 7), (TensorProto.UINT4, ml_dtypes.uint4, 0, 15),
    (TensorProto.INT2, ml_dtypes.int2, -2, 1), (TensorProto.UINT2, ml_dtypes.uint2, 0, 3)])
def test_sub_byte_input_cast_to_float_and_int32(elem: int, ml, lo: int, hi: int) -> None:
    data = _model(
        [helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT32)],
        [helper.make_tensor_value_info("x", elem, [3, 5])],
        [helper.make_tensor_value_info("f", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("i", TensorProto.INT32, [3, 5])])
    x = np.arange(15).reshape(3, 5) % (hi - lo + 1) + lo
    want = ReferenceEvaluator(onnx.load_model_from_string(data)).run(None, {"x": x.astype(ml)})
    graph = import_bytes(data)
    assert graph.inputs[0].type.dtype.name == {-8: "i4", -2: "i2"}.get(lo, f"ui{hi.bit_length()}")
    got = run_graph(graph, [_host(x.astype(ml))])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def _dequantized_weights() -> tuple[bytes, list[np.ndarray]]:
    """y = x @ dequantize(W: uint4, zero point 8, a scale per output column) and
    z = x2 * dequantize(V: uint2, per tensor): two sub-byte initializers of odd sizes
    (16x7, 5x9). W - 8 is stored as int4 (the zero point subtracted at build time)."""
    rng = np.random.default_rng(3)
    w = rng.integers(0, 16, (16, 7)).astype(ml_dtypes.uint4)
    w_scale = rng.uniform(0.01, 0.1, 7).astype(np.float32)
    w_zero = np.full(7, 8, ml_dtypes.uint4)
    v = rng.integers(0, 4, (5, 9)).astype(ml_dtypes.uint2)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_scale, "w_scale"),
             numpy_helper.from_array(w_zero, "w_zero"), numpy_helper.from_array(v, "v"),
             numpy_helper.from_array(np.float32(0.5), "v_scale"),
             numpy_helper.from_array(np.array(0, ml_dtypes.uint2), "v_zero")]
    data = _model(
        [helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wf"], axis=1),
         helper.make_node("MatMul", ["x", "wf"], ["y"]),
         helper.make_node("DequantizeLinear", ["v", "v_scale", "v_zero"], ["vf"]),
         helper.make_node("Mul", ["x2", "vf"], ["z"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 16]),
         helper.make_tensor_value_info("x2", TensorProto.FLOAT, [5, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [5, 9])], inits)
    xs = [rng.standard_normal((3, 16)).astype(np.float32),
          rng.standard_normal((5, 9)).astype(np.float32)]
    return data, xs


def test_sub_byte_weights_on_the_reference() -> None:
    data, xs = _dequantized_weights()
    want = ReferenceEvaluator(onnx.load_model_from_string(data)).run(
        None, {"x": xs[0], "x2": xs[1]})
    graph = import_bytes(data)
    held = sorted(n.outputs[0].type.dtype.name for n in graph.nodes if n.op == "constant"
                  and n.outputs[0].type.dtype.bits < 8)
    assert held == ["i4", "ui2"]
    for g, w in zip(run_graph(graph, xs), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_sub_byte_weights_packed_in_the_firmware(tmp_path) -> None:
    from toolchain.module.reader import read_module

    data, xs = _dequantized_weights()
    want = run_graph(import_bytes(data), xs)
    got = run_firmware(import_bytes(data), "cortex-m4", tmp_path / "fw", xs)
    assert not compare(got, want)
    module = read_module((tmp_path / "fw" / "model.mrt").read_bytes())
    packed = sorted((c.storage_dtype.name, c.size) for c in module.constants
                    if c.storage_dtype.name in ("i4", "u2"))
    assert packed == [("i4", 56), ("u2", 12)]  # 112 nibbles, 45 crumbs (the last byte 1/4)


def test_float_cast_to_int4_is_refused() -> None:
    data = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT4)],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                  [helper.make_tensor_value_info("y", TensorProto.INT4, [4])])
    with pytest.raises(OnnxError, match="a Cast from f32 to i4 is not supported"):
        import_bytes(data)


def test_a_zero_point_outside_the_type_widens_the_stored_values() -> None:
    """uint2 values minus a zero point of 1 lie in -1..2, which neither 2-bit type holds:
    they are stored a byte each (i8), and the result is the same."""
    v = np.array([[0, 1, 2, 3]], ml_dtypes.uint2)
    inits = [numpy_helper.from_array(v, "v"),
             numpy_helper.from_array(np.float32(0.25), "s"),
             numpy_helper.from_array(np.array(1, ml_dtypes.uint2), "z")]
    data = _model([helper.make_node("DequantizeLinear", ["v", "s", "z"], ["vf"]),
                   helper.make_node("Add", ["x", "vf"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    graph = import_bytes(data)
    stored = [n.outputs[0].type.dtype.name for n in graph.nodes if n.op == "constant"
              and n.outputs[0].type.dtype.is_integer]
    assert stored == ["i8"]
    got = run_graph(graph, [np.zeros((1, 4), np.float32)])[0]
    np.testing.assert_array_equal(got, [[-0.25, 0.0, 0.25, 0.5]])


def test_integer_cast_to_int4_wraps() -> None:
    data = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT4)],
                  [helper.make_tensor_value_info("x", TensorProto.INT32, [5])],
                  [helper.make_tensor_value_info("y", TensorProto.INT4, [5])])
    x = np.array([100, -100, 9, 7, -8], np.int32)
    want = ReferenceEvaluator(onnx.load_model_from_string(data)).run(None, {"x": x})[0]
    got = run_graph(import_bytes(data), [x])[0]
    assert got.dtype == np.int8 and got.tolist() == _host(want).tolist() == [4, -4, -7, 7, -8]
