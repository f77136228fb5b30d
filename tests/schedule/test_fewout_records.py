"""The few-output kernel's records made at build time (schedule/fewout_records.py): the
geometry, then per pair of output channels the doubled biases, the channel pair's
doubled weight pairs interleaved step by step and the requantization (M, 2 K_hi,
s + 1); an odd last channel alone (its bias twice). The records are checked by a numpy model of
runtime_c/ukernel/dsp/mrt_fewout_dsp.c (input rows staged as 16-bit pairs in
kernel/paired.py's order, SMLAD sums, the SMMLAR requantization) against TFLite Micro's
interpreter on the host, bit for bit; and the layers the pass must leave alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.schedule.fewout_records import GEOMETRY_WORDS
from toolchain.target import load_board


def _program(tmp_path: Path, layer, board: str = "cortex-m4", seed: int = 3):
    h, w, cin, cout, kh, kw, stride, padding = layer
    rng = np.random.default_rng(seed)
    op, x, y = int8_layer_op(rng, "conv", h, w, cin, cout, kh, kw, stride,
                             padding=padding, name="L")
    path = tmp_path / "fewout.tflite"
    model = build_model([op], [x], [y])
    path.write_bytes(model)
    return schedule_for_board(prepare_graph(load_graph(path)), load_board(board)), model, x


def _records(program) -> np.ndarray | None:
    steps = [s for s in program.steps if isinstance(s.kernel, Kernel)
             and s.schedule is not None and any(n.fewout for n in s.schedule.nests)]
    if not steps:
        return None
    (step,) = steps
    return np.asarray(program.constants[step.buffers[step.kernel.records].index],
                      dtype=np.int64)


def _lanes(words: np.ndarray) -> np.ndarray:
    """Words of two int16 halves -> their lanes, low half first."""
    u = words & 0xFFFFFFFF
    lo, hi = ((u & 0xFFFF) ^ 0x8000) - 0x8000, ((u >> 16) ^ 0x8000) - 0x8000
    return np.stack([lo, hi], axis=-1).reshape(*words.shape[:-1], -1)


def _emulate(records: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The kernel's outputs from its records for input `x` (h, w, cin)."""
    (h_in, w_in, c2, kh, kw, sy, sx, oy0, ox0, h_out, w_out, cout, pad_pair, left, cols,
     cin) = (int(v) for v in records[:GEOMETRY_WORDS])
    pad = ((pad_pair & 0xFFFF) ^ 0x8000) - 0x8000
    c4 = 2 * c2
    staged = np.full((h_in, cols, c4), pad, dtype=np.int64)
    staged[:, left:left + w_in, :] = 0  # a 3-channel pixel's fourth lane
    staged[:, left:left + w_in, :cin] = x
    # kernel/paired.py's order: each 4 channels as (0, 2), (1, 3)
    rows = staged.reshape(h_in, cols, c4 // 4, 4)[..., [0, 2, 1, 3]].reshape(h_in, -1)
    pad_row = np.full(cols * c4, pad, dtype=np.int64)
    run = kw * c2
    at = GEOMETRY_WORDS
    weights, tails, biases = [], [], []
    for _ in range(cout // 2):  # channel pairs: per step the first's word, then the second's
        biases += list(records[at:at + 2])
        at += 2
        words = records[at:at + 2 * kh * run].reshape(kh, run, 2)
        weights += [_lanes(words[..., 0]), _lanes(words[..., 1])]
        at += 2 * kh * run
        tails += [records[at:at + 3], records[at + 3:at + 6]]
        at += 6
    if cout % 2:  # the bias twice, the pixels' sums' start
        assert records[at] == records[at + 1]
        biases.append(records[at])
        weights.append(_lanes(records[at + 2:at + 2 + kh * run].reshape(kh, run)))
        at += 2 + kh * run
        tails.append(records[at:at + 3])
        at += 3
    assert at == len(records)
    out = np.zeros((h_out, w_out, cout), dtype=np.int64)
    for oy in range(h_out):
        for ox in range(w_out):
            col = (ox * sx + ox0 + left) * c4
            window = np.stack([
                (rows[r] if 0 <= (r := oy * sy + oy0 + ky) < h_in else pad_row)[col:col + 2 * run]
                for ky in range(kh)])
            for c in range(cout):
                acc = int(biases[c] + (window * weights[c]).sum())  # doubled
                m, k2, s1 = (int(v) for v in tails[c])
                sign = -1 if acc < 0 else 0
                high = (acc * m + ((k2 + sign) << 32) + (1 << 31)) >> 32
                out[oy, ox, c] = min(127, max(-128, high >> s1))
    return out


@pytest.mark.parametrize("layer", [
    (19, 6, 32, 1, 3, 3, 1, "SAME"),  # per tensor: bias and zero point outside the sum
    (19, 6, 32, 2, 5, 5, 1, "SAME"),  # per channel, broadcast over the pixels
    (19, 6, 32, 7, 1, 7, 1, "SAME"),
    (9, 7, 16, 5, 3, 3, 1, "VALID"),
    (8, 8, 3, 2, 5, 5, 1, "SAME"),  # 3 channels staged as 4
    (10, 10, 12, 3, 3, 3, 1, "SAME"),
])
def test_records_compute_what_tflite_micro_does(layer, tmp_path: Path) -> None:
    program, model, x = _program(tmp_path, layer)
    records = _records(program)
    assert records is not None, "the layer should take the few-output kernel"
    rng = np.random.default_rng(5)
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8)]
    want, _ = run_tflm(model, inputs)
    got = _emulate(records, inputs[0][0].astype(np.int64))
    assert np.array_equal(got, np.asarray(want[0][0], dtype=np.int64))


@pytest.mark.parametrize("layer", [
    (10, 10, 32, 3, 3, 3, 2, "SAME"),  # stride 2: measured slower
    (19, 6, 32, 8, 3, 3, 1, "SAME"),  # 8 outputs: the staged 2x4 tiles
    (19, 6, 32, 3, 1, 1, 1, "SAME"),  # 1x1
    (8, 8, 3, 5, 3, 3, 1, "SAME"),  # 3 channels to more outputs than window columns
    (21, 8, 32, 2, 3, 3, 1, "VALID"),  # 3 columns inside the input to 1-2 outputs
    (3, 3, 32, 1, 3, 3, 1, "SAME"),  # 9 pixels to one output
])
def test_layers_left_to_the_other_kernels(layer, tmp_path: Path) -> None:
    program, _, _ = _program(tmp_path, layer)
    assert _records(program) is None


def test_no_dsp_no_records(tmp_path: Path) -> None:
    program, _, _ = _program(tmp_path, (19, 6, 32, 3, 3, 3, 1, "SAME"), board="riscv32")
    assert _records(program) is None
