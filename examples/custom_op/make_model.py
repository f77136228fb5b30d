"""Writes softsign.tflite, the worked example of docs/custom-ops.md: a float model
whose first operator is a custom one minirt does not know.

    y = SoftsignGain(x; gain) + bias      x: (1, 16) float32, gain = 2.0

`SoftsignGain` is `gain * x / (1 + |x|)`; its custom_options are the gain as 4 bytes
(a little-endian float32), which kernel.c and reference.py both read. Run from the
repository's root (it uses the tests' small flatbuffer writer, tests/tflite_models.py):

    python examples/custom_op/make_model.py
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository's root: tests.tflite_models

from tests.tflite_models import Op, Tensor, build_model  # noqa: E402

GAIN = 2.0


def model() -> bytes:
    """The example model's flatbuffer bytes."""
    x = Tensor((1, 16), "float32", name="x")
    s = Tensor((1, 16), "float32", name="softsign")
    bias = Tensor((1, 16), "float32", name="bias",
                  data=np.linspace(-0.5, 0.5, 16, dtype=np.float32).reshape(1, 16))
    y = Tensor((1, 16), "float32", name="y")
    return build_model([Op("CUSTOM:SoftsignGain", [x], [s], struct.pack("<f", GAIN)),
                        Op("ADD", [s, bias], [y], {})], [x], [y])


if __name__ == "__main__":
    (HERE / "softsign.tflite").write_bytes(model())
    print(f"wrote {HERE / 'softsign.tflite'}")
