"""The Python reference of the example's custom operator SoftsignGain
(docs/custom-ops.md): what kernel.c must compute, for minirt-run --check."""

from __future__ import annotations

import numpy as np


def softsign_gain(inputs: list[np.ndarray], options: bytes,
                  quant: list[tuple[float, int] | None]) -> np.ndarray:
    """gain * x / (1 + |x|) in float32, the gain being the options' little-endian float32.
    `quant` ((scale, zero point) per input, then per output) is None throughout: the
    operator's tensors are float."""
    (x,) = inputs
    (gain,) = np.frombuffer(options, "<f4")
    return (gain * x / (np.float32(1) + np.abs(x))).astype(np.float32)
