"""Helium's int8 steps on cortex-m55 (codegen/requant_helium.py, codegen/dot_vector.py):
TFLite's requantization 4 outputs at a time (VQRDMULH, VRSHL), depthwise products by
VMULLB / VMULLT, and the 4-lane VMLADAVA.S32 step of a 10x4 window over one channel.

The arithmetic first, in numpy, as the Arm pseudo-code defines the instructions
(VQRDMULH: (2 a b + 2**31) >> 32 saturated; VRSHL by -s: (x + 2**(s-1)) >> s formed
wide), against quant/fixedpoint.py's TFLite steps on the values where they could part:
ties on both signs, INT32_MIN and INT32_MAX sums, every exponent 0..31. Then whole
layers under QEMU over a sweep of shapes (channels 3, 4, 13, 16, 61, 64; 1x1 and 3x3
convolutions, depthwise 3x3, stride 1 and 2; kws's 10x4 first layer), each bit for bit
against the numpy reference and TFLite Micro, with the instructions checked in the
firmware so a silent fallback to the scalar code fails the test.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.quant.fixedpoint import (
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
CHANNELS = (3, 4, 13, 16, 61, 64)


def _vqrdmulh(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wide = (2 * a.astype(object) * b.astype(object) + (1 << 31)) >> 32
    return np.clip(wide, I32_MIN, I32_MAX).astype(np.int64)


def _vector_steps(x: np.ndarray, m: np.ndarray, s: np.ndarray) -> np.ndarray:
    """codegen/requant_helium.py's requant_vectors before the zero point, per lane."""
    q = _vqrdmulh(x, m)
    neg = -s
    fix = np.where((q & neg) < 0, -1, 0)  # the sign bit of q AND -s, shifted down
    t = np.clip(q + fix, I32_MIN, I32_MAX)  # VQADD
    return np.where(s == 0, t, (t + (1 << np.maximum(s - 1, 0))) >> s)  # VRSHL by -s


def test_vector_steps_equal_tflite_rounding() -> None:
    rng = np.random.default_rng(21)
    xs = np.concatenate([
        np.array([I32_MIN, I32_MIN + 1, -1, 0, 1, I32_MAX - 1, I32_MAX]),
        rng.integers(I32_MIN, I32_MAX, 400, endpoint=True),
        rng.integers(-5000, 5000, 400)]).astype(np.int64)
    ms = np.concatenate([
        np.array([0, 1, 1 << 30, (1 << 30) + 1, I32_MAX, I32_MIN]),
        rng.integers(1 << 30, 1 << 31, 40)]).astype(np.int64)
    for s in range(32):
        x, m = np.meshgrid(xs, ms)
        x, m = x.ravel(), m.ravel()
        sv = np.full_like(x, s)
        want = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, m), s)
        got = _vector_steps(x, m, sv)
        assert np.array_equal(got, np.asarray(want, dtype=np.int64)), f"exponent {s}"


def test_ties_round_away_from_zero() -> None:
    # With M = 2**30, srdhm(x, M) = round(x / 2) (ties up): pick q = +-3 * 2**(s-1),
    # an exact half at every exponent, on both signs.
    for s in range(1, 32):
        q = np.array([3 << (s - 1), -(3 << (s - 1)), 1 << (s - 1), -(1 << (s - 1))],
                     dtype=np.int64)
        q = np.clip(q, I32_MIN, I32_MAX)
        x = np.clip(q * 2, I32_MIN, I32_MAX)
        m = np.full_like(x, 1 << 30)
        want = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, m), s)
        assert np.array_equal(_vector_steps(x, m, np.full_like(x, s)),
                              np.asarray(want, dtype=np.int64))


def _mnemonics(elf: Path) -> str:
    out = subprocess.run(["llvm-objdump", "-d", "--mattr=+mve,+dsp", "--no-show-raw-insn",
                          str(elf)], capture_output=True, text=True, check=True).stdout
    return out


def _build_and_check(layers: list[tuple], tmp_path: Path, seed: int) -> minirt.Build:
    """One firmware of the given int8 layers on cortex-m55, checked against the numpy
    reference (build.run check=True) and TFLite Micro, bit for bit."""
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, (kind, h, w, cin, cout, kh, kw, stride) in enumerate(layers):
        op, x, y = int8_layer_op(rng, kind, h, w, cin, cout, kh, kw, stride, name=f"L{i}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
    model = tmp_path / "layers.tflite"
    model.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(model, "cortex-m55", out_dir=tmp_path / "b")
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    run = build.run(inputs, check=True)  # raises minirt.Mismatch on any difference
    want, _ = run_tflm(model.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"L{i} ({layers[i]}) differs from TFLite Micro"
    return build


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_layers_exact_on_cortex_m55(stride: int, tmp_path: Path) -> None:
    # At stride 1 a 12x12 map: on 7x6 more than half the outputs are on the border,
    # where the DSP row-pair kernel beats the lanes (loops/rules.py
    # `_lanes_beat_row_pairs`) and takes the 16 and 64 channels too.
    h, w = (12, 12) if stride == 1 else (7, 6)
    layers = [("depthwise", h, w, c, c, 3, 3, stride) for c in CHANNELS]
    build = _build_and_check(layers, tmp_path, seed=stride)
    code = _mnemonics(build.elf)
    for insn in ("vmullb.s16", "vmullt.s16", "vqrdmulh.s32", "vrshl.s32", "vmovnt.i32"):
        assert insn in code, f"{insn} missing: the depthwise lanes took the scalar path"


@pytest.mark.parametrize("kernel, stride", [(1, 1), (3, 1), (3, 2)])
def test_convolutions_exact_on_cortex_m55(kernel: int, stride: int, tmp_path: Path) -> None:
    layers = [("conv", 7, 6, cin, cout, kernel, kernel, stride)
              for cin, cout in itertools.product(CHANNELS, (16, 13))]
    build = _build_and_check(layers, tmp_path, seed=10 * kernel + stride)
    # (With stride 2 on this small map the graph hands the layers their tables at the
    # whole output index, [0, y, x, c]: read per pixel, contiguous along c.)
    code = _mnemonics(build.elf)
    for insn in ("vqrdmulh.s32", "vrshl.s32", "vstrb.32"):
        assert insn in code, f"{insn} missing: no convolution requantized in vectors"


def test_dense_layers_exact_on_cortex_m55(tmp_path: Path) -> None:
    # Dense epilogues add the input zero point's term too (two per-output adds).
    layers = [("dense", 1, 1, cin, cout, 1, 1, 1)
              for cin, cout in itertools.product((13, 64, 250), (16, 12))]
    build = _build_and_check(layers, tmp_path, seed=5)
    assert "vqrdmulh.s32" in _mnemonics(build.elf)


def test_window_rows_of_four_take_the_four_lane_step(tmp_path: Path) -> None:
    # kws's first layer: a 10x4 window, stride 2, over one input channel (its padded
    # input written out, schedule/pad_helium.py), and one of 13 output channels on an
    # odd map: 2 steps of 4 rows (a VLDRB.U8 gather of the input's rows, VMLADAVA.S8),
    # then the last 2 rows one 4-lane step each (VMLADAVA.S32).
    layers = [("conv", 49, 10, 1, 64, 10, 4, 2), ("conv", 13, 9, 1, 13, 10, 4, 2)]
    build = _build_and_check(layers, tmp_path, seed=7)
    code = _mnemonics(build.elf)
    assert "vmlava.s32" in code and "vmlava.s8" in code
    assert re.search(r"vldrb\.u8\s+q\d, \[r\d+, q\d\]", code), "no gather of window rows"
