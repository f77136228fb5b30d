"""The reference of clip_scale.c (tests/e2e/test_custom_op.py): the same float32
arithmetic, from the quantization minirt passes (input's then output's (scale, zp))."""

from __future__ import annotations

import numpy as np


def clip_scale(inputs: list[np.ndarray], options: bytes,
               quant: list[tuple[float, int] | None]) -> np.ndarray:
    """clamp(x_real, -limit, limit) requantized to the output's scale."""
    (x,) = inputs
    (s_in, z_in), (s_out, z_out) = quant
    s_in, s_out = np.float32(s_in), np.float32(s_out)
    limit = np.float32(options[0]) * s_in
    v = (x.astype(np.int32) - z_in).astype(np.float32) * s_in
    v = np.clip(v, -limit, limit)
    q = v / s_out
    r = np.where(q < 0, q - np.float32(0.5), q + np.float32(0.5)).astype(np.int32) + z_out
    return np.clip(r, -128, 127).astype(np.int8)
