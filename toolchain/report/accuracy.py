"""How far a quantized build's outputs are from the float model's.

All figures compare the reference executor on the quantized graph (which the firmware
matches, see `minirt-run --check`) with the reference on the original f32 graph, on
the same inputs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Accuracy:
    max_abs_error: float
    # Largest error relative to the largest reference magnitude of that output: plain
    # elementwise relative error is meaningless for outputs near zero.
    max_rel_error: float
    cosine_similarity: float  # of all outputs flattened together
    top1_agreement: float  # fraction of rows (last axis) whose argmax agrees

    def to_json(self) -> dict:
        return {k: round(float(v), 8) for k, v in asdict(self).items()}

    def format(self) -> str:
        return (f"max abs error {self.max_abs_error:.3g}, max rel error "
                f"{self.max_rel_error:.3g}, cosine {self.cosine_similarity:.6f}, "
                f"top-1 agreement {self.top1_agreement:.1%}")


def compare_outputs(got: list[np.ndarray], want: list[np.ndarray]) -> Accuracy:
    """Accuracy of `got` against the float reference `want` (same shapes)."""
    g = np.concatenate([np.asarray(x, np.float64).ravel() for x in got])
    w = np.concatenate([np.asarray(x, np.float64).ravel() for x in want])
    max_abs = float(np.abs(g - w).max(initial=0.0))
    rel = [np.abs(np.asarray(a, np.float64) - b).max(initial=0.0) / max(np.abs(b).max(initial=0.0),
                                                                       1e-30)
           for a, b in zip(got, want)]
    norms = np.linalg.norm(g) * np.linalg.norm(w)
    cosine = float(np.dot(g, w) / norms) if norms > 0 else float(np.array_equal(g, w))
    rows = agree = 0
    for a, b in zip(got, want):
        if np.asarray(b).size == 0:
            continue
        a2 = np.asarray(a).reshape(-1, np.asarray(a).shape[-1] if np.ndim(a) else 1)
        b2 = np.asarray(b).reshape(a2.shape)
        agree += int((a2.argmax(axis=-1) == b2.argmax(axis=-1)).sum())
        rows += a2.shape[0]
    return Accuracy(max_abs, float(max(rel, default=0.0)), cosine,
                    agree / rows if rows else 1.0)
