"""The importer's refusals: every problem of a model in one line, grouped by operator with
counts; a model compiled by Vela for an Ethos-U NPU refused for what it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model, load_tflite
from toolchain.frontend.tflite.reader import read_model
from toolchain.frontend.tflite.refusals import MAX_INDICES, Problem, summary

tm = pytest.importorskip("tflite_models")
SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "models" / "tflm"


def _error(model: bytes) -> str:
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "m.tflite")
    text = e.value.render()
    assert "\n" not in text
    return text


def _chain(opcodes: list[str]) -> bytes:
    ts = [tm.Tensor((2, 3), "float32") for _ in range(len(opcodes) + 1)]
    ops = [tm.Op(code, [ts[i]], [ts[i + 1]]) for i, code in enumerate(opcodes)]
    return tm.build_model(ops, [ts[0]], [ts[-1]])


def test_unsupported_operators_are_grouped_with_counts_in_one_line() -> None:
    assert _error(_chain(["REAL", "IMAG", "REAL", "RELU", "REAL"])) == (
        "m.tflite: 4 operators are not supported: REAL x3 (operators 0, 2, 4), IMAG x1 "
        "(operator 1)")


def test_one_unsupported_operator_keeps_its_own_line() -> None:
    assert _error(_chain(["RELU", "REAL"])) == "m.tflite: operator 1 (REAL) is not supported"


def test_reasons_stay_with_their_group() -> None:
    x = tm.Tensor((4,), "uint8", scale=0.5, zero_point=128)
    y = tm.Tensor((4,), "uint8", scale=0.5, zero_point=128)
    z = tm.Tensor((4,), "uint8", scale=0.5, zero_point=128)
    model = tm.build_model([tm.Op("ADD", [x, x], [y], {}), tm.Op("REAL", [y], [z])], [x], [z])
    assert _error(model) == ("m.tflite: 2 operators are not supported: ADD x1 (operator 0: "
                             "uint8 ADD is not supported), REAL x1 (operator 1)")


def test_long_groups_are_counted_not_listed() -> None:
    line = summary([Problem(f"operator {i} (SVDF)", "", "SVDF", i) for i in range(9)] +
                   [Problem("model output 0 (tensor 3) is never written")])
    shown = ", ".join(str(i) for i in range(MAX_INDICES))
    assert line == (f"9 operators are not supported: SVDF x9 (operators {shown}, "
                    f"+{9 - MAX_INDICES} more); model output 0 (tensor 3) is never written")


def test_a_vela_model_is_refused_as_an_npu_command_stream() -> None:
    x, y = tm.Tensor((1, 8), "int8", scale=0.1, zero_point=0), tm.Tensor((1, 8), "int8",
                                                                         scale=0.1,
                                                                         zero_point=0)
    model = tm.build_model([tm.Op("CUSTOM:ethos-u", [x], [y])], [x], [y])
    assert _error(model) == (
        "m.tflite: the model was compiled by Vela into an Ethos-U NPU command stream "
        "(operator 0, CUSTOM:ethos-u), which minirt cannot run: give it the model from "
        "before Vela")


def test_a_sparse_model_is_refused_as_sparse() -> None:
    """A sparse weight densified by DENSIFY (what the converter writes): refused as sparse
    by name, not as an unsupported DENSIFY nor as a buffer too small for its shape."""
    w = tm.Tensor((4, 8), "float32", data=np.zeros(5, np.float32), sparse=True, name="w")
    dense = tm.Tensor((4, 8), "float32")
    x, y = tm.Tensor((1, 8), "float32"), tm.Tensor((1, 4), "float32")
    model = tm.build_model([tm.Op("DENSIFY", [w], [dense]),
                            tm.Op("FULLY_CONNECTED", [x, dense, None], [y])], [x], [y])
    assert _error(model) == ("m.tflite: tensor 1 ('w') is sparse: the model uses sparse "
                             "tensors, which minirt does not support; give it the model "
                             "converted without sparsity")


@pytest.mark.skipif(not (SHARED / "models").is_dir(),
                    reason=f"{SHARED} is absent (the shared TFLite Micro models)")
def test_tflite_micros_own_vela_model_is_refused_in_one_line() -> None:
    path = SHARED / "models" / "person_detect_vela.tflite"
    with pytest.raises(TFLiteError) as e:
        load_tflite(path)
    assert e.value.render() == (
        f"{path}: the model was compiled by Vela into an Ethos-U NPU command stream "
        "(operator 0, CUSTOM:ethos-u), which minirt cannot run: give it the model from "
        "before Vela")
