"""Every ONNX op and attribute corner (onnx_cases.py) on the numpy reference, against
onnxruntime (a dev extra) or, where it is not installed, onnx's own reference
implementation (always there: onnx is a dependency).

Tolerance: numpy.isclose(rtol=1e-5, atol=1e-5). Both oracles compute in float32 in
their own summation order (convolutions and matrix products of up to 36 terms here)
and with their own exp / tanh; our reference accumulates in float64 and rounds once.
Integer outputs compare exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx_cases import CASES
from onnx_models import import_bytes, run_ort

from toolchain.reference import run_graph

RTOL, ATOL = 1e-5, 1e-5


def assert_matches(got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, f"{what}: shape {g.shape}, expected {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype}, expected {w.dtype}"
        if w.dtype.kind == "f":
            with np.errstate(invalid="ignore"):  # inf - inf where both are inf: a nan
                err = float(np.abs(g.astype(np.float64) - w).max())
            assert np.isclose(g, w, rtol=RTOL, atol=ATOL).all(), f"{what}: max error {err:.3g}"
        else:
            assert np.array_equal(g, w), what


def _onnx_reference(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.load_model_from_string(data)
    names = [i.name for i in model.graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))


# Cases onnx's reference implementation cannot run (its Pad refuses negative pads, its
# ConvTranspose mishandles groups and output_shape); onnxruntime runs them all.
ONNX_REFERENCE_CANNOT = {"pad-negative", "convt-group2-no-bias", "convt-output-shape"}


def oracle(name: str, data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs, or onnx's reference implementation's without it."""
    want = run_ort(data, inputs)
    if want is None:
        if name in ONNX_REFERENCE_CANNOT:
            pytest.skip("onnxruntime (dev extra) is not installed and onnx's reference "
                        "implementation cannot run this case")
        want = _onnx_reference(data, inputs)
    return want


@pytest.mark.parametrize("name", CASES)
def test_reference_matches_onnxruntime(name: str) -> None:
    data, inputs = CASES[name]()
    got = run_graph(import_bytes(data), inputs)
    assert_matches(got, oracle(name, data, inputs), name)
