"""Hostile numbers in .tflite models (issue 24): each ends in one located line, exit 2.

The reproducers are small models from tests/tflite_models.py, edited the way the fuzzer
(toolchain/testing/fuzz_tflite.py, run by bench/fuzz_parse.py) found them.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from tflite_models import Tensor, single_op_model

from toolchain.frontend.tflite import TFLiteError, import_model, read_model
from toolchain.testing.fuzz_tflite import EDITS, _Model


def _fc(w_scale: float = 0.02, w_zp: int = 0) -> bytes:
    rng = np.random.default_rng(0)
    w = Tensor((5, 8), "int8", scale=w_scale, zero_point=w_zp,
               data=rng.integers(-127, 128, (5, 8)), name="w")
    return single_op_model("FULLY_CONNECTED", [Tensor((1, 8), "int8", scale=0.05,
                                                      zero_point=-3), w, None],
                           [Tensor((1, 5), "int8", scale=0.2, zero_point=1)])


def _load(data: bytes) -> None:
    import_model(read_model(data), "m.tflite")


def test_the_unedited_model_imports() -> None:
    _load(_fc())


@pytest.mark.parametrize("zp", [32768, -129, 1 << 40])
def test_a_weight_zero_point_out_of_range_is_one_line(zp: int) -> None:
    # Was OverflowError: Python integer 32768 out of bounds for int16 (quant/build.py).
    with pytest.raises(TFLiteError) as e:
        _load(_fc(w_zp=zp))
    assert e.value.render() == (f"m.tflite: operator 0 (FULLY_CONNECTED): tensor 1 ('w') has "
                                f"zero point {zp}, outside i8's range -128..127")


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), 0.0, -0.5])
def test_a_weight_scale_that_is_not_positive_and_finite_is_one_line(scale: float) -> None:
    with pytest.raises(TFLiteError, match=r"tensor 1 \('w'\) has quantization scale"):
        _load(_fc(w_scale=scale))


def test_a_sparse_tensor_says_so() -> None:
    m = _Model(_fc())
    # A sparse weight: its buffer holds only the non-zero blocks, fewer bytes than its
    # shape needs; it used to be refused as "holds 20 bytes of data, but ... needs 40".
    data = m.replace_tensor(1, {"Sparsity": {"TraversalOrder": np.array([0, 1], np.int32)}})
    k = _Model(data).sg.Tensors(1).Buffer()
    data = _Model(data).replace_buffer(k, {"Data": np.zeros(20, np.uint8)})
    with pytest.raises(TFLiteError) as e:
        _load(data)
    assert e.value.render() == ("m.tflite: tensor 1 ('w') is sparse: the model uses sparse "
                                "tensors, which minirt does not support; give it the model "
                                "converted without sparsity")


@pytest.mark.parametrize("name", sorted(EDITS))
def test_every_edit_changes_the_model_and_ends_in_a_graph_or_one_error(name: str) -> None:
    seed = _fc()
    changed = 0
    for k in range(20):
        data, what = EDITS[name](seed, random.Random(k))
        assert what and "\n" not in what
        changed += data != seed
        try:
            _load(data)
        except TFLiteError as e:
            assert all(line.startswith("m.tflite: ") for line in e.render().splitlines())
        except Exception as e:  # the reader's FormatError is wrapped by load_tflite only
            assert type(e).__name__ == "FormatError", repr(e)
    assert changed >= 15


def test_the_fuzz_driver_samples_tflite_and_judges_it() -> None:
    bench = Path(__file__).resolve().parents[3] / "bench" / "fuzz_parse.py"
    spec = importlib.util.spec_from_file_location("fuzz_parse_tflite", bench)
    fuzz = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fuzz
    spec.loader.exec_module(fuzz)
    seeds = [s for s in fuzz.load_seeds([], use_shared=False)[0] if s.format == ".tflite"]
    assert seeds
    results = [fuzz.run_input(seeds, 0, i, timeout=10.0) for i in range(300)]
    assert [(r.index, r.mutations, r.detail) for r in results
            if r.outcome not in fuzz.PASSING] == []
    assert {r.outcome for r in results} == {"graph", "located"}
    # A zero point that overflowed int16 in the kernels is a failure, not a pass.
    assert fuzz.classify_file(_fc(w_zp=32768), ".tflite")[0] == "located"


def test_a_conv_of_an_input_without_channels_is_one_line() -> None:
    # Was ZeroDivisionError in layers.conv_2d (the fuzzer set the input's shape[3] to 0).
    rng = np.random.default_rng(0)
    model = single_op_model(
        "CONV_2D", [Tensor((1, 5, 5, 0), "float32"),
                    Tensor((3, 3, 3, 2), "float32", data=rng.normal(size=(3, 3, 3, 2))),
                    Tensor((3,), "float32", data=np.ones(3))],
        [Tensor((1, 3, 3, 3), "float32")], padding="VALID", stride_w=1, stride_h=1)
    with pytest.raises(TFLiteError, match="operator 0 .CONV_2D.: the filter's 2 input "
                                          "channels do not divide the input's 0"):
        _load(model)


def test_a_node_too_large_to_verify_names_the_file_and_operator() -> None:
    # The fuzzer set a depthwise conv's dilation to 2**31 - 1 under SAME padding: the
    # 'pad' node it needs failed graph verification, whose message named no file.
    rng = np.random.default_rng(0)
    model = single_op_model(
        "DEPTHWISE_CONV_2D", [Tensor((1, 8, 7, 3), "float32"),
                              Tensor((1, 3, 3, 3), "float32", data=rng.normal(size=(1, 3, 3, 3))),
                              Tensor((3,), "float32", data=np.ones(3))],
        [Tensor((1, 8, 7, 3), "float32")], padding="SAME", stride_w=1, stride_h=1,
        dilation_h_factor=2**31 - 1, dilation_w_factor=2**31 - 1, depth_multiplier=1)
    with pytest.raises(TFLiteError) as caught:
        _load(model)
    assert caught.value.render().startswith("m.tflite: operator 0 (DEPTHWISE_CONV_2D): ")
    assert "\n" not in caught.value.render()


def test_an_integer_result_without_scales_is_one_line() -> None:
    # The fuzzer gave an AVERAGE_POOL_2D a bool input and an int8 output with no scales:
    # an assertion in the activation bounds (CalculateActivationRangeQuantized needs
    # them).
    model = single_op_model(
        "AVERAGE_POOL_2D", [Tensor((1, 6, 6, 3), "bool")],
        [Tensor((1, 3, 3, 3), "int8")], padding="VALID", stride_w=2, stride_h=2,
        filter_width=2, filter_height=2)
    with pytest.raises(TFLiteError, match=r"operator 0 .AVERAGE_POOL_2D.: its i8 result is "
                                          "not quantized per tensor"):
        _load(model)


def test_a_bias_quantized_along_a_dim_it_lacks_is_read_by_channel() -> None:
    # TFLite Micro's person_detect.tflite: an older converter copied the depthwise
    # filter's quantized_dimension 3 onto its 1-D bias. A vector's channels are its only
    # dim; TFLite Micro reads the bias scales by channel. A filter quantized along a dim
    # past its rank is still refused.
    rng = np.random.default_rng(0)

    def model(bias_dim: int, filter_dim: int) -> bytes:
        return single_op_model(
            "DEPTHWISE_CONV_2D",
            [Tensor((1, 5, 5, 3), "int8", scale=0.05, zero_point=-3),
             Tensor((1, 3, 3, 3), "int8", scale=[0.02, 0.03, 0.04], zero_point=[0, 0, 0],
                    quantized_dimension=filter_dim, data=rng.integers(-127, 128, (1, 3, 3, 3))),
             Tensor((3,), "int32", scale=[0.001, 0.0015, 0.002], zero_point=[0, 0, 0],
                    quantized_dimension=bias_dim, data=rng.integers(-100, 100, 3))],
            [Tensor((1, 3, 3, 3), "int8", scale=0.1, zero_point=0)],
            padding="VALID", stride_w=1, stride_h=1, depth_multiplier=1)

    _load(model(bias_dim=3, filter_dim=3))
    with pytest.raises(TFLiteError, match="quantized dimension 7"):
        _load(model(bias_dim=0, filter_dim=7))
