"""TFLite_Detection_PostProcess models for the tests and the bench: seeded boxes and
scores (spread, or crowded on a few centres; scores continuous, or from a handful of
values for ties), float32 or int8 / uint8 inputs, and the exact comparison with TFLite
Micro's outputs.

TFLite Micro's kernel takes float32 only, so a quantized case gives TFLite Micro the
model with DEQUANTIZE on each input before the float operator: the arithmetic TFLite's
kernel applies to quantized inputs. Slots the kernel leaves unwritten (fast NMS past
num_detections) are not compared with it; ours must be zero there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tflite_models import Op, Tensor, build_model

OPCODE = "CUSTOM:TFLite_Detection_PostProcess"


@dataclass(frozen=True)
class Case:
    """One model and its inputs."""

    boxes: int = 40
    classes: int = 3
    background: bool = True
    regular: bool = False
    max_detections: int = 10
    max_classes_per_detection: int = 1
    detections_per_class: int = 5
    score_threshold: float = 0.3
    iou_threshold: float = 0.5
    crowded: bool = False  # boxes packed on a few centres: heavy overlap
    ties: bool = False  # scores from a handful of values
    dtype: str = "float32"  # of the box encodings and scores: float32, int8, uint8
    seed: int = 0
    slots: int | None = None  # the outputs' M; default: what the kernel writes

    @property
    def scores_width(self) -> int:
        return self.classes + int(self.background)

    def options(self) -> dict[str, Any]:
        return {"max_detections": self.max_detections,
                "max_classes_per_detection": self.max_classes_per_detection,
                "detections_per_class": self.detections_per_class,
                "use_regular_nms": self.regular,
                "nms_score_threshold": self.score_threshold,
                "nms_iou_threshold": self.iou_threshold,
                "num_classes": self.classes,
                "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}

    def m(self) -> int:
        if self.slots is not None:
            return self.slots
        return self.max_detections


def anchors_of(case: Case, rng: np.random.Generator) -> np.ndarray:
    n = case.boxes
    if case.crowded:
        centres = rng.uniform(0.3, 0.7, size=(3, 2))[rng.integers(0, 3, size=n)]
        centres += rng.normal(0, 0.01, size=(n, 2))
        sizes = rng.uniform(0.2, 0.3, size=(n, 2))
    else:
        centres = rng.uniform(0.0, 1.0, size=(n, 2))
        sizes = rng.uniform(0.05, 0.4, size=(n, 2))
    return np.concatenate([centres, sizes], axis=1).astype(np.float32)


def float_inputs(case: Case, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = case.boxes
    encodings = rng.normal(0, 1.0, size=(1, n, 4)).astype(np.float32)
    if case.ties:
        scores = rng.choice(np.float32([0.2, 0.5, 0.75, 0.9]), size=(1, n, case.scores_width))
    else:
        scores = rng.uniform(0, 1, size=(1, n, case.scores_width))
    return encodings, scores.astype(np.float32)


_QUANT = {"int8": (-128, 127), "uint8": (0, 255)}


def models(case: Case) -> tuple[bytes, bytes, list[np.ndarray]]:
    """(our model, TFLite Micro's model, inputs): the same model for float32; for a
    quantized case ours takes the quantized inputs straight, TFLite Micro's through
    DEQUANTIZE operators."""
    rng = np.random.default_rng(case.seed)
    anchors = anchors_of(case, rng)
    encodings, scores = float_inputs(case, rng)
    n, m = case.boxes, case.m()
    outputs = [Tensor((1, m, 4), "float32"), Tensor((1, m), "float32"),
               Tensor((1, m), "float32"), Tensor((1,), "float32")]
    anchor_t = Tensor((n, 4), "float32", data=anchors)
    if case.dtype == "float32":
        enc_t, sc_t = Tensor((1, n, 4), "float32"), Tensor((1, n, case.scores_width), "float32")
        model = build_model([Op(OPCODE, [enc_t, sc_t, anchor_t], outputs, case.options())],
                            [enc_t, sc_t], outputs)
        return model, model, [encodings, scores]
    lo, hi = _QUANT[case.dtype]
    enc_zp, sc_zp = (lo + hi + 1) // 2 + 3, lo + 5
    enc_scale, sc_scale = 0.02, 1 / 250
    q_enc = np.clip(np.round(encodings / enc_scale) + enc_zp, lo, hi).astype(case.dtype)
    q_sc = np.clip(np.round(scores / sc_scale) + sc_zp, lo, hi).astype(case.dtype)
    enc_t = Tensor((1, n, 4), case.dtype, scale=enc_scale, zero_point=enc_zp)
    sc_t = Tensor((1, n, case.scores_width), case.dtype, scale=sc_scale, zero_point=sc_zp)
    ours = build_model([Op(OPCODE, [enc_t, sc_t, anchor_t], outputs, case.options())],
                       [enc_t, sc_t], outputs)
    enc_f, sc_f = Tensor((1, n, 4), "float32"), Tensor((1, n, case.scores_width), "float32")
    theirs = build_model([Op("DEQUANTIZE", [enc_t], [enc_f]), Op("DEQUANTIZE", [sc_t], [sc_f]),
                          Op(OPCODE, [enc_f, sc_f, anchor_t], outputs, case.options())],
                         [enc_t, sc_t], outputs)
    return ours, theirs, [q_enc, q_sc]


def difference(case: Case, want: list[np.ndarray], got: list[np.ndarray]) -> str | None:
    """Where our outputs differ from TFLite Micro's, or None: every slot the kernel
    writes exactly equal (fast NMS: the first num_detections; regular NMS: the first
    max_detections), and zeros in ours past them."""
    if [g.shape for g in got] != [w.shape for w in want]:
        return f"shapes {[g.shape for g in got]}, TFLite Micro {[w.shape for w in want]}"
    if got[3][0] != want[3][0]:
        return f"num_detections {got[3][0]}, TFLite Micro {want[3][0]}"
    written = case.max_detections if case.regular else int(want[3][0])
    for k in range(3):
        w, g = want[k][0, :written], got[k][0, :written]
        if g.dtype != w.dtype or not np.array_equal(g, w):
            return (f"output {k} differs at {np.argwhere(g != w)[:3].tolist()}: "
                    f"{g.reshape(-1)[:8]} vs TFLite Micro {w.reshape(-1)[:8]}")
        if np.any(got[k][0, written:]):
            return f"output {k} is not zero past the {written} written slots"
    return None


def compare(case: Case, want: list[np.ndarray], got: list[np.ndarray]) -> None:
    """Asserts that `difference` finds none."""
    problem = difference(case, want, got)
    assert problem is None, problem


__all__ = ["OPCODE", "Case", "anchors_of", "compare", "difference", "float_inputs", "models"]
