"""bench/converter_models.py's per-layer MAC count, checked on the committed converter
fixtures by hand-counted shapes (the bench's MAC/instruction figures rest on it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from toolchain.frontend.tflite.reader import read_model

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "frontend" / "tflite" / "data" / "converter"


def _bench():  # noqa: ANN202  (a script, loaded by path)
    spec = importlib.util.spec_from_file_location("converter_models_bench",
                                                  ROOT / "bench" / "converter_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _layers(name: str) -> list[tuple[str, int]]:
    bench = _bench()
    model = read_model((DATA / f"{name}.tflite").read_bytes())
    return [bench.layer_shape(model, i) for i, op in enumerate(model.operators)
            if op.opcode in bench.LAYER_OPS]


def test_layer_macs_of_the_odd_cnn() -> None:
    # SAME outputs 12x12: taps x input channels x outputs; depthwise: taps x outputs
    assert _layers("odd_cnn_int8") == [
        ("conv 3x3 s2 24x24 3->13", 12 * 12 * 13 * 9 * 3),
        ("conv 3x3 d2 12x12 13->61", 12 * 12 * 61 * 9 * 13),
        ("depthwise 3x3 12x12 61->61", 12 * 12 * 61 * 9),
        ("conv 1x1 12x12 61->27", 12 * 12 * 27 * 61),
        ("dense 27->10", 270),
    ]


def test_conv1d_factors_are_read_on_the_width() -> None:
    # VALID Conv1D: 49 -> 24 frames (stride 2), padded to 28, 28 - 8 = 20 (dilation 2)
    assert _layers("conv1d_kws_int8") == [
        ("conv 1x3 s1x2 1x49 10->12", 24 * 12 * 3 * 10),
        ("conv 1x5 d1x2 1x28 12->7", 20 * 7 * 5 * 12),
        ("dense 70->16", 70 * 16),
        ("dense 16->5", 80),
    ]
