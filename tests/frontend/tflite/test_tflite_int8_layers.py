"""Every layer of the int8 MLPerf Tiny models, not only their outputs: a classifier's
SOFTMAX saturates, so an end-to-end match proves little. Each operator's output as the
imported graph computes it (the numpy reference) equals TFLite Micro's tensor."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

from tflite_models import run_tflm, tensor_value  # noqa: E402

from toolchain.frontend.tflite.importer import import_model  # noqa: E402
from toolchain.frontend.tflite.reader import read_model  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402

pytestmark = pytest.mark.skipif(not have_models(), reason=MISSING_REASON)


@pytest.mark.parametrize("name", ["kws_ref_model", "ad01_int8", "pretrainedResnet_quant",
                                  "vww_96_int8"])
def test_every_layer_matches_tflite_micro(name: str) -> None:
    data = (MODELS_DIR / "mlperf_tiny" / f"{name}.tflite").read_bytes()
    model = read_model(data)
    graph = import_model(model)
    x = np.load(MODELS_DIR / "mlperf_tiny" / f"{name}.npz")["input_1_0"]
    _, interp = run_tflm(data, [x], keep_tensors=True)
    named = {t.name: t for n in graph.nodes for t in n.outputs if t.name}
    layers = [i for op in model.operators for i in op.outputs]
    probe = replace(graph, outputs=[named[model.tensors[i].name] for i in layers])
    ours = run_graph(probe, [x])
    assert len(layers) == len(model.operators)
    for index, got in zip(layers, ours):
        want = tensor_value(interp, index).reshape(got.shape)
        assert np.array_equal(got, want), f"{model.tensors[index].describe()} differs"
