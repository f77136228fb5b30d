"""TFLite_Detection_PostProcess (toolchain/frontend/tflite/detection.py) against TFLite
Micro's own kernel: seeded random boxes and scores, crowded boxes (many overlaps) and
tied scores, fast and regular NMS, float32 and int8 / uint8 inputs; on the reference and
as firmware under QEMU on cortex-m4, x86-64, riscv32 and cortex-m0plus (no FPU: libgcc's
soft float).

TFLite Micro's kernel takes float32 only, so a quantized case is compared with TFLite
Micro running DEQUANTIZE on each input and then the float operator: the arithmetic
TFLite's kernel applies to quantized inputs. Outputs are compared exactly (the kernel
rounds its double decoding once to float32, and so do we); slots the kernel leaves
unwritten (fast NMS past num_detections) are not compared.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from detection_models import OPCODE, Case, anchors_of, compare, float_inputs, models
from tflite_models import Op, Tensor, build_model, run_tflm

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference import run_graph

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


def _check(case: Case) -> list[np.ndarray]:
    ours, theirs, inputs = models(case)
    want, _ = run_tflm(theirs, inputs)
    got = run_graph(import_model(read_model(ours)), inputs)
    compare(case, want, [np.asarray(g) for g in got])
    return want


CASES = {
    "fast": Case(),
    "fast_no_background": Case(background=False, seed=1),
    "fast_crowded": Case(crowded=True, boxes=60, seed=2),
    "fast_ties": Case(ties=True, crowded=True, seed=3),
    "fast_one_class_only": Case(max_classes_per_detection=3, classes=1, seed=4),
    "fast_ignores_per_class": Case(detections_per_class=0, seed=18),
    "regular_ignores_classes_per_detection": Case(regular=True, max_classes_per_detection=0,
                                                  seed=19),
    "fast_more_slots": Case(slots=14, ties=True, seed=5),
    "fast_few_kept": Case(score_threshold=0.9, seed=6),
    "fast_low_iou": Case(iou_threshold=0.05, crowded=True, seed=7),
    "regular": Case(regular=True, seed=8),
    "regular_crowded": Case(regular=True, crowded=True, boxes=60, seed=9),
    "regular_ties": Case(regular=True, ties=True, crowded=True, seed=10),
    "regular_no_background": Case(regular=True, background=False, classes=5, seed=11),
    "regular_few_per_class": Case(regular=True, detections_per_class=2, classes=6, seed=12),
    "regular_more_slots_than_kept": Case(regular=True, max_detections=30,
                                         score_threshold=0.8, seed=13),
    "int8_fast": Case(dtype="int8", crowded=True, seed=14),
    "uint8_fast": Case(dtype="uint8", ties=True, seed=15),
    "int8_regular": Case(dtype="int8", regular=True, crowded=True, seed=16),
    "uint8_regular": Case(dtype="uint8", regular=True, seed=17),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_matches_tflite_micro(name: str) -> None:
    case = CASES[name]
    want = _check(case)
    assert want[3][0] > 0  # the case detects something


def test_crowded_boxes_are_suppressed() -> None:
    """A crowded case selects fewer boxes than it keeps: the suppression did work."""
    case = replace(CASES["fast_crowded"], max_detections=60)
    want = _check(case)
    kept = int(np.sum(float_inputs(case, np.random.default_rng(case.seed))[1][0, :, 1:].max(1)
                      >= case.score_threshold))
    assert 0 < want[3][0] < kept


def _model_of(case: Case, **changes: Any) -> bytes:
    case = replace(case, **changes)
    n = case.boxes
    enc_t, sc_t = Tensor((1, n, 4), "float32"), Tensor((1, n, case.scores_width), "float32")
    anchors = Tensor((n, 4), "float32", data=anchors_of(case, np.random.default_rng(0)))
    m = case.m()
    outputs = [Tensor((1, m, 4), "float32"), Tensor((1, m), "float32"),
               Tensor((1, m), "float32"), Tensor((1,), "float32")]
    return build_model([Op(OPCODE, [enc_t, sc_t, anchors], outputs, case.options())],
                       [enc_t, sc_t], outputs)


@pytest.mark.parametrize("changes,message", [
    ({"max_classes_per_detection": 2}, "2 classes per detection"),
    ({"iou_threshold": 0.0}, "nms_iou_threshold is 0.0"),
    ({"iou_threshold": 1.5}, "nms_iou_threshold is 1.5"),
    ({"max_detections": 10, "slots": 4}, "M >= 10"),
    ({"max_detections": -1, "slots": 10}, "max_detections is -1"),
    ({"regular": True, "detections_per_class": 0}, "detections_per_class is 0"),
    ({"max_classes_per_detection": 0}, "max_classes_per_detection is 0"),
])
def test_refusals_are_one_line(changes: dict[str, Any], message: str) -> None:
    model = _model_of(Case(), **changes)
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_wrong_class_count_is_refused() -> None:
    options = Case().options() | {"num_classes": 1}
    n = Case().boxes
    enc_t, sc_t = Tensor((1, n, 4), "float32"), Tensor((1, n, 4), "float32")
    anchors = Tensor((n, 4), "float32", data=np.ones((n, 4), np.float32))
    outputs = [Tensor((1, 10, 4), "float32"), Tensor((1, 10), "float32"),
               Tensor((1, 10), "float32"), Tensor((1,), "float32")]
    model = build_model([Op(OPCODE, [enc_t, sc_t, anchors], outputs, options)],
                        [enc_t, sc_t], outputs)
    with pytest.raises(TFLiteError, match=r"class scores of shape \[1, 40, 4\]"):
        import_model(read_model(model))


@pytest.mark.parametrize("regular", [False, True])
def test_invalid_box_gives_no_detections(regular: bool) -> None:
    """An anchor of height 0 decodes to ymin == ymax: TFLite Micro fails the inference,
    the graph reports no detections."""
    case = Case(regular=regular)
    ours, _, inputs = models(case)
    rng = np.random.default_rng(case.seed)
    anchors = anchors_of(case, rng)
    anchors[7, 2] = 0.0
    n = case.boxes
    enc_t, sc_t = Tensor((1, n, 4), "float32"), Tensor((1, n, case.scores_width), "float32")
    outputs = [Tensor((1, 10, 4), "float32"), Tensor((1, 10), "float32"),
               Tensor((1, 10), "float32"), Tensor((1,), "float32")]
    model = build_model([Op(OPCODE, [enc_t, sc_t, Tensor((n, 4), "float32", data=anchors)],
                            outputs, case.options())], [enc_t, sc_t], outputs)
    with pytest.raises(RuntimeError, match="invocation failed"):
        run_tflm(model, inputs)
    got = run_graph(import_model(read_model(model)), inputs)
    assert all(not np.any(np.asarray(g)) for g in got)
    assert _check(case)[3][0] > 0  # the same inputs with valid anchors detect boxes


FIRMWARE_CASES = ["fast_crowded", "fast_ties", "regular_ties", "regular_few_per_class",
                  "int8_regular", "uint8_fast"]


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64", "riscv32", "cortex-m0plus"])
def test_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    """Every firmware case in one build, run once under QEMU, compared exactly."""
    from toolchain.testing.difftest import run_side_by_side

    built = [models(CASES[name]) for name in FIRMWARE_CASES]
    graphs = [import_model(read_model(ours)) for ours, _, _ in built]
    inputs = [x for _, _, xs in built for x in xs]
    outputs = run_side_by_side(graphs, inputs, board, tmp_path / "fw")
    for k, (name, (_, theirs, xs)) in enumerate(zip(FIRMWARE_CASES, built, strict=True)):
        want, _ = run_tflm(theirs, xs)
        compare(CASES[name], want, [np.asarray(g) for g in outputs[4 * k:4 * k + 4]])
