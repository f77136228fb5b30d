"""The tuner tests' layer: one small int8 layer of the shape sweep (bench/shapes.py), a
1x1 convolution of 13 input channels to 32 on a 19x6 map, on riscv32, where the rules'
pick (6x3 outputs a tile) is not the fastest of their candidates: with these weights
279,349 instructions, against 271,178 and 267,520 for the next two by the cost model
(bench/results/tune.md has the layer with the bench's weights, and others)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tflite_models import build_model, int8_layer_op

BOARD = "riscv32"


def layer_model(path: Path, seed: int = 0, cin: int = 13) -> Path:
    """The layer (input scale / zero point as bench/shapes.py's) written to `path`."""
    rng = np.random.default_rng(seed)
    op, x, y = int8_layer_op(rng, "conv", 19, 6, cin, 32, 1, 1, name="L0",
                             in_scale=0.05, in_zp=-3)
    path.write_bytes(build_model([op], [x], [y]))
    return path
