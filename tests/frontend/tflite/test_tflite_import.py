"""The .tflite importer: errors one line per operator, quantized tensor types, int8 data
movement (exactly TFLite Micro's results). The hybrid CONV_2D has its own file,
test_tflite_hybrid.py."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model, run_tflm, single_op_model

from toolchain.frontend.tflite import TFLiteError, import_model, read_model
from toolchain.frontend.tflite.activations import quantized_range
from toolchain.frontend.tflite.context import tensor_type
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.reader import Quantization, TensorInfo
from toolchain.reference import run_graph
from toolchain.types import QuantParams, TensorType, dtype


def f32(shape: tuple[int, ...], data: np.ndarray | None = None) -> Tensor:
    return Tensor(shape, "float32", data=data)


def i8(shape: tuple[int, ...], scale: float = 0.05, zp: int = -3,
       data: np.ndarray | None = None) -> Tensor:
    return Tensor(shape, "int8", scale=scale, zero_point=zp, data=data)


def i32(values: list) -> Tensor:
    a = np.asarray(values, dtype=np.int32)
    return Tensor(a.shape, "int32", data=a)


def errors(model: bytes) -> list[str]:
    with pytest.raises(TFLiteError) as info:
        import_model(read_model(model), "m.tflite")
    lines = info.value.render().splitlines()
    assert all(line.startswith("m.tflite: ") for line in lines)
    return [line[len("m.tflite: "):] for line in lines]


# ------------------------------------------------------------------ errors


def test_unsupported_ops_are_reported_together() -> None:
    x, a, b, c = f32((2, 3)), f32((2, 3)), f32((2,)), f32((2,))
    model = build_model([Op("REAL", [x], [a]),
                         Op("SUM", [a, i32([1])], [b], {"keep_dims": False}),
                         Op("IMAG", [b], [c])], [x], [c])
    assert errors(model) == ["2 operators are not supported: REAL x1 (operator 0), IMAG x1 "
                             "(operator 2)"]


def test_int8_arithmetic_imports_and_matches_tflite_micro() -> None:
    from tflite_micro.python.tflite_micro import runtime

    from toolchain.frontend.tflite.importer import import_model
    from toolchain.frontend.tflite.reader import read_model
    from toolchain.reference import run_graph

    x, y = i8((1, 4, 4, 2)), i8((1, 4, 4, 3), 0.1, 2)
    w = Tensor((3, 1, 1, 2), "int8", scale=[0.01] * 3, zero_point=[0] * 3,
               data=np.arange(6).reshape(3, 1, 1, 2) - 2)
    r = i8((1, 48), 0.1, 2)
    s = i8((1, 48), 1 / 256, -128)
    model = build_model([Op("CONV_2D", [x, w, None], [y], {"padding": "SAME", "stride_w": 1,
                                                           "stride_h": 1}),
                         Op("RESHAPE", [y, i32([1, 48])], [r]),
                         Op("SOFTMAX", [r], [s], {"beta": 1.0})], [x], [s])
    inp = np.random.default_rng(0).integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    interp = runtime.Interpreter.from_bytes(model)
    interp.set_input(inp, 0)
    interp.invoke()
    got = run_graph(import_model(read_model(model)), [inp])[0]
    np.testing.assert_array_equal(got, interp.get_output(0))


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_sum_matches_tflite_micro(dtype: str, keep_dims: bool) -> None:
    """SUM: float32 a reduction, int8 TFLite Micro's QuantizedMeanOrSum with compute_sum."""
    q = dict(scale=0.05, zero_point=3) if dtype == "int8" else {}
    qo = dict(scale=0.4, zero_point=-7) if dtype == "int8" else {}
    x = Tensor((2, 5, 6), dtype, **q)
    y = Tensor((2, 1, 6) if keep_dims else (2, 6), dtype, **qo)
    model = single_op_model("SUM", [x, i32([1])], [y], keep_dims=keep_dims)
    rng = np.random.default_rng(7)
    v = (rng.integers(-128, 128, x.shape).astype(np.int8) if dtype == "int8"
         else rng.normal(0, 2, x.shape).astype(np.float32))
    want = run_tflm(model, [v])[0][0]
    got = run_graph(import_model(read_model(model)), [v])[0]
    if dtype == "int8":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_other_element_types_are_named() -> None:
    x, y = (Tensor((4,), "uint8", scale=0.5, zero_point=128) for _ in range(2))
    assert errors(single_op_model("ADD", [x, y], [Tensor((4,), "uint8", scale=0.5,
                                                           zero_point=128)])) == [
        "operator 0 (ADD): uint8 ADD is not supported"]


@pytest.mark.parametrize("activation", ["TANH", "SIGN_BIT"])
def test_activations_tflite_skips_are_refused(activation: str) -> None:
    x, y = f32((2, 2)), f32((2, 2))
    [line] = errors(single_op_model("ADD", [x, f32((2, 2))], [y],
                                    fused_activation_function=activation))
    assert line.startswith(f"operator 0 (ADD): fused activation {activation} is not supported")


def test_declared_output_type_is_checked() -> None:
    x, w = f32((1, 4, 4, 1)), f32((1, 3, 3, 1), np.ones((1, 3, 3, 1)))
    [line] = errors(single_op_model("CONV_2D", [x, w, None], [f32((1, 4, 4, 1))],
                                    padding="VALID", stride_w=1, stride_h=1))
    assert line == ("operator 0 (CONV_2D): it computes tensor<1x2x2x1xf32>, but the model "
                    "declares tensor<1x4x4x1xf32> for tensor 2 ('t2')")


def test_reading_a_tensor_nothing_wrote() -> None:
    x, ghost, y = f32((2,)), f32((2,)), f32((2,))
    model = build_model([Op("ADD", [x, ghost], [y])], [x], [y])
    [line] = errors(model)
    assert line == "operator 0 (ADD): it reads tensor 1 ('t1'), which no earlier operator writes"


def test_downstream_of_a_failure_is_not_reported_twice() -> None:
    x, a, b = f32((1, 4, 4, 1)), f32((1, 4, 4, 1)), f32((1, 16))
    model = build_model([Op("CONV_2D", [x, f32((1, 3, 3, 1), np.ones((1, 3, 3, 1))), None],
                            [a], {"padding": "SAME", "stride_w": 0, "stride_h": 1}),
                         Op("RESHAPE", [a, i32([1, 16])], [b])], [x], [b])
    assert errors(model) == ["operator 0 (CONV_2D): stride_w is 0; it must be at least 1"]


def test_wrong_input_count() -> None:
    x = f32((2,))
    model = build_model([Op("RELU", [x, x], [y := f32((2,))])], [x], [y])
    assert errors(model) == ["operator 0 (RELU): it has 2 inputs; RELU takes 1"]


def test_int8_concatenation_needs_one_scale() -> None:
    a, b = i8((1, 2), 0.05, 0), i8((1, 2), 0.1, 0)
    [line] = errors(single_op_model("CONCATENATION", [a, b], [i8((1, 4), 0.05, 0)], axis=1))
    assert line.startswith("operator 0 (CONCATENATION): int8 CONCATENATION needs every input "
                           "to have the output's scale and zero point")
    assert "input 1 has" in line and "TFLite Micro requires it" in line


# ------------------------------------------------------------------ tensor types


def _info(quant: Quantization | None, shape=(3, 2), type_="INT8") -> TensorInfo:
    return TensorInfo(4, "w", shape, type_, None, quant)


def test_quantized_tensor_types() -> None:
    per_tensor = tensor_type(_info(Quantization((0.5,), (-3,), 0)))
    assert per_tensor == TensorType((3, 2), dtype("i8"), QuantParams(
        dtype("i8"), dtype("f32"), (0.5,), (-3,), None))
    per_channel = tensor_type(_info(Quantization((0.25, 0.5), (0, 0), 1)))
    assert per_channel.quant.axis == 1 and per_channel.quant.scales == (0.25, 0.5)
    # Float tensors may carry calibration ranges; they are not quantized.
    assert tensor_type(_info(Quantization((0.5,), (0,), 0), type_="FLOAT32")).quant is None


@pytest.mark.parametrize("quant,words", [
    (Quantization((0.0,), (0,), 0), "scale 0.0"),
    (Quantization((float("nan"),), (0,), 0), "scale nan"),
    (Quantization((0.5,), (200,), 0), "zero point 200, outside i8's range -128..127"),
    (Quantization((0.5, 0.5, 0.5), (0, 0, 0), 1), "3 quantization scales"),
    (Quantization((0.5, 0.5), (0, 0), 2), "quantized dimension 2"),
])
def test_bad_quantization_is_refused(quant: Quantization, words: str) -> None:
    with pytest.raises(Unsupported, match=words):
        tensor_type(_info(quant))


def test_unsupported_element_type() -> None:
    with pytest.raises(Unsupported, match="element type STRING"):
        tensor_type(_info(None, type_="STRING"))


def test_graph_keeps_input_names() -> None:
    x = Tensor((2,), "float32", name="serving_default_input:0")
    graph = import_model(read_model(single_op_model("RELU", [x], [f32((2,))])))
    assert graph.input_names == ["serving_default_input:0"]
    assert graph.inputs[0].name == "serving_default_input:0"


# ------------------------------------------------------------------ int8 data movement


def _int8_check(opcode: str, inputs: list, outputs: list, arrays: list[np.ndarray],
                **options) -> np.ndarray:
    """Runs the model in TFLite Micro and in the reference; they must agree exactly, with
    the output types the model declares (quantization included)."""
    model = single_op_model(opcode, inputs, outputs, **options)
    want, _ = run_tflm(model, arrays)
    graph = import_model(read_model(model))
    got = run_graph(graph, arrays)
    for g, w, t in zip(got, want, graph.outputs):
        assert g.dtype == np.int8 and t.type.quant is not None
        np.testing.assert_array_equal(g, w)
    return got[0]


def rand_i8(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)


def test_int8_reshape_squeeze_transpose() -> None:
    x = rand_i8((1, 3, 1, 4))
    _int8_check("RESHAPE", [i8((1, 3, 1, 4)), i32([3, 4])], [i8((3, 4))], [x],
                new_shape=[3, 4])
    _int8_check("SQUEEZE", [i8((1, 3, 1, 4))], [i8((3, 4))], [x], squeeze_dims=[0, 2])
    _int8_check("TRANSPOSE", [i8((1, 3, 1, 4)), i32([0, 3, 1, 2])], [i8((1, 4, 3, 1))], [x])


def test_int8_reshape_keeps_the_declared_quantization() -> None:
    """TFLite copies stored values; the output's own scale says what they mean."""
    model = single_op_model("RESHAPE", [i8((2, 3), 0.05, -3), i32([6])], [i8((6,), 0.5, 7)],
                            new_shape=[6])
    graph = import_model(read_model(model))
    assert graph.outputs[0].type.quant.scales == (0.5,)
    assert graph.outputs[0].type.quant.zero_points == (7,)
    x = rand_i8((2, 3), 1)
    np.testing.assert_array_equal(run_graph(graph, [x])[0], x.reshape(6))


def test_int8_strided_slice() -> None:
    _int8_check("STRIDED_SLICE", [i8((4, 6)), i32([3, 1]), i32([0, 6]), i32([-1, 2])],
                [i8((3, 3))], [rand_i8((4, 6), 2)])


@pytest.mark.parametrize("zp", [-128, -3, 0, 127])
def test_int8_pad_fills_with_the_zero_point(zp: int) -> None:
    got = _int8_check("PAD", [i8((1, 2, 2, 1), 0.1, zp), i32([[0, 0], [1, 1], [0, 2], [0, 0]])],
                      [i8((1, 4, 4, 1), 0.1, zp)], [rand_i8((1, 2, 2, 1), 3)])
    assert got[0, 0, 0, 0] == zp


def test_int8_concatenation() -> None:
    _int8_check("CONCATENATION", [i8((2, 1, 3)), i8((2, 2, 3))], [i8((2, 3, 3))],
                [rand_i8((2, 1, 3), 4), rand_i8((2, 2, 3), 5)], axis=1)


@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("scale,zp", [(0.05, -3), (0.02, -128), (0.5, 100)])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_int8_max_pool(activation: str, scale: float, zp: int, padding: str) -> None:
    out = (1, 3, 3, 2) if padding == "SAME" else (1, 3, 2, 2)
    _int8_check("MAX_POOL_2D", [i8((1, 6, 5, 2), scale, zp)], [i8(out, scale, zp)],
                [rand_i8((1, 6, 5, 2), 6)], padding=padding, stride_w=2, stride_h=2,
                filter_width=3, filter_height=2, fused_activation_function=activation)


def test_int8_max_pool_padding_never_wins() -> None:
    """All inputs at -128: a SAME window over the border still gives -128."""
    got = _int8_check("MAX_POOL_2D", [i8((1, 3, 3, 1), 0.1, 0)], [i8((1, 3, 3, 1), 0.1, 0)],
                      [np.full((1, 3, 3, 1), -128, np.int8)], padding="SAME", stride_w=1,
                      stride_h=1, filter_width=3, filter_height=3)
    assert (got == -128).all()


@pytest.mark.parametrize("activation,scale,zp,want", [
    ("RELU", 0.05, -3, (-3, 127)), ("RELU6", 0.05, -3, (-3, 117)),
    ("RELU_N1_TO_1", 0.05, -3, (-23, 17)), ("RELU6", 0.01, -128, (-128, 127)),
    ("NONE", 0.05, 0, (-128, 127)), ("RELU", 0.1, 127, (127, 127)),
])
def test_quantized_activation_range(activation: str, scale: float, zp: int,
                                    want: tuple[int, int]) -> None:
    ty = TensorType((1,), dtype("i8"), QuantParams(dtype("i8"), dtype("f32"),
                                                   (float(np.float32(scale)),), (zp,)))
    assert quantized_range(activation, ty) == want


def test_window_padding_beyond_any_tensor_is_refused() -> None:
    """A dilation so large that SAME padding would make the padded input exceed minirt's
    1 GiB tensors (found by fuzzing: the reference ran out of memory)."""
    x, w = f32((1, 16, 34, 16)), f32((16, 3, 3, 16), np.ones((16, 3, 3, 16)))
    [line] = errors(single_op_model("CONV_2D", [x, w, None], [f32((1, 16, 34, 16))],
                                    padding="SAME", stride_w=1, stride_h=1,
                                    dilation_w_factor=1 << 24))
    assert "makes the padded input" in line and "limited to 1073741824 bytes" in line
