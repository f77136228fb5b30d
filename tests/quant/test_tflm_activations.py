"""toolchain.quant.tflm_activations equals TFLite Micro, bit for bit.

The element-wise ops are fed every int8 value at once (a 256-element tensor), so each
case checks the op's whole input domain; SOFTMAX gets random rows of several lengths
and the rows that stress its cut-off and saturation.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import replace

import numpy as np
import pytest
from tflm_oracle import assert_exact, q, rand_int8, run_single

from toolchain.quant import tflm_activations as act
from toolchain.quant.fixedpoint import downscale_int32_to_int16_multiplier as downscale
from toolchain.quant.fixedpoint import quantize_multiplier, round_half_away

ALL = np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16)
ZPS = [-128, 0, 37, 127]


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


# LOGISTIC and TANH: from scales so small every output is the midpoint, through the
# usual 1/16..1/8 range, to scales so large the saturation radius is 0 or 1.
SIGMOID_SCALES = [1e-6, 1e-3, 0.01, 0.0625, 0.1, 0.37, 1.0, 4.0, 16.0, 100.0, 1e4]


@pytest.mark.parametrize(("scale", "zp"), list(itertools.product(SIGMOID_SCALES, ZPS)))
def test_logistic(scale: float, zp: int) -> None:
    expected = run_single("LOGISTIC", [q(ALL.shape, scale, zp)], q(ALL.shape, 1 / 256, -128),
                          [ALL])
    assert_exact(expected, act.logistic(ALL, act.logistic_params(scale, zp)), "LOGISTIC")


@pytest.mark.parametrize(("scale", "zp"), list(itertools.product(SIGMOID_SCALES, ZPS)))
def test_tanh(scale: float, zp: int) -> None:
    expected = run_single("TANH", [q(ALL.shape, scale, zp)], q(ALL.shape, 1 / 128, 0), [ALL])
    assert_exact(expected, act.tanh(ALL, act.tanh_params(scale, zp)), "TANH")


def test_tanh_and_logistic_ignore_the_output_quantization() -> None:
    """TFLite Micro's int8 TANH writes scale-1/128, zero-point-0 values whatever the
    output tensor says, and LOGISTIC scale-1/256 ones (it checks only the zero point)."""
    odd = q(ALL.shape, 0.3, 7)
    assert_exact(run_single("TANH", [q(ALL.shape, 0.05, 3)], odd, [ALL]),
                 act.tanh(ALL, act.tanh_params(0.05, 3)), "TANH, odd output params")
    odd = q(ALL.shape, 0.3, -128)
    assert_exact(run_single("LOGISTIC", [q(ALL.shape, 0.05, 3)], odd, [ALL]),
                 act.logistic(ALL, act.logistic_params(0.05, 3)), "LOGISTIC, odd output scale")


def test_logistic_with_zero_radius_maps_the_zero_point_to_minus_128() -> None:
    """With a huge input scale the saturation radius is 0 and TFLite tests `d <= -radius`
    first, so logistic(0) comes out -128 (0.0), not 0 (0.5)."""
    params = act.logistic_params(1e4, 0)
    assert params.input_range_radius == 0
    x = np.array([-1, 0, 1], dtype=np.int8)
    assert act.logistic(x, params).tolist() == [-128, -128, 127]


# HARD_SWISH: (input scale, output scale); the output scale may not be below about
# input_scale / 128 (TFLite Micro refuses a positive output exponent).
HARD_SWISH_SCALES = [(0.05, 0.05), (0.05, 0.03), (0.1, 0.2), (1 / 3, 0.25), (0.01, 0.005),
                     (1e-3, 1e-3), (0.02, 0.02 / 127), (2.0, 1.5), (0.05, 500.0), (0.5, 3e3)]


@pytest.mark.parametrize(("scales", "zps"), list(itertools.product(
    HARD_SWISH_SCALES, [(0, 0), (-128, -128), (127, 127), (17, -90), (-50, 100)])))
def test_hard_swish(scales: tuple[float, float], zps: tuple[int, int]) -> None:
    (si, so), (zi, zo) = scales, zps
    expected = run_single("HARD_SWISH", [q(ALL.shape, si, zi)], q(ALL.shape, so, zo), [ALL])
    got = act.hard_swish(ALL, act.hard_swish_params(si, zi, so, zo))
    assert_exact(expected, got, "HARD_SWISH")


def test_hard_swish_refuses_a_positive_output_exponent() -> None:
    with pytest.raises(ValueError, match="output_multiplier_exponent"):
        act.hard_swish_params(0.05, 0, 0.05 / 300, 0)


RELU_SCALES = [(0.05, 0.05), (0.05, 0.02), (0.02, 0.05), (0.1, 0.1 * 6 / 255), (1e-6, 1e-6),
               (3.0, 0.01), (0.0123, 0.0456)]


@pytest.mark.parametrize(("scales", "zps"), list(itertools.product(
    RELU_SCALES, [(0, 0), (-128, -128), (127, -128), (-128, 127), (5, -3)])))
def test_relu(scales: tuple[float, float], zps: tuple[int, int]) -> None:
    (si, so), (zi, zo) = scales, zps
    expected = run_single("RELU", [q(ALL.shape, si, zi)], q(ALL.shape, so, zo), [ALL])
    assert_exact(expected, act.relu(ALL, act.relu_params(si, zi, so, zo)), "RELU")


@pytest.mark.parametrize(("scale", "zp"), list(itertools.product(
    [0.05, 6 / 255, 0.02, 1e-3, 0.5, 3.0, 0.0471], ZPS)))
def test_relu6(scale: float, zp: int) -> None:
    expected = run_single("RELU6", [q(ALL.shape, scale, zp)], q(ALL.shape, scale, zp), [ALL])
    assert_exact(expected, act.relu6(ALL, act.relu6_params(scale, zp)), "RELU6")


def test_relu6_ignores_the_output_quantization() -> None:
    """TFLite Micro's int8 RELU6 clamps in the input's quantization and copies: the
    output tensor's scale and zero point play no part."""
    expected = run_single("RELU6", [q(ALL.shape, 0.05, 3)], q(ALL.shape, 0.5, -100), [ALL])
    assert_exact(expected, act.relu6(ALL, act.relu6_params(0.05, 3)), "RELU6, odd output")


@pytest.mark.parametrize(("alpha", "scales", "zps"), list(itertools.product(
    [0.2, 0.01, 1.7, -0.3], [(0.05, 0.05), (0.05, 0.02), (0.1, 0.3)],
    [(0, 0), (-128, 127), (40, -40)])))
def test_leaky_relu(alpha: float, scales: tuple[float, float], zps: tuple[int, int]) -> None:
    (si, so), (zi, zo) = scales, zps
    expected = run_single("LEAKY_RELU", [q(ALL.shape, si, zi)], q(ALL.shape, so, zo), [ALL],
                          alpha=alpha)
    got = act.leaky_relu(ALL, act.leaky_relu_params(si, zi, so, zo, alpha))
    assert_exact(expected, got, "LEAKY_RELU")


# SOFTMAX.

SOFTMAX_SCALES = [(1e-6, 1.0), (0.01, 1.0), (0.0625, 1.0), (0.1, 1.0), (0.25, 0.5),
                  (0.3, 2.5), (1.0, 1.0), (8.0, 1.0), (1e3, 1.0), (0.05, 1e-3)]


def _softmax_rows(rng: np.random.Generator, depth: int) -> np.ndarray:
    rows = [rand_int8(rng, (6, depth)),
            np.full((1, depth), 17, dtype=np.int8),                      # all equal
            np.where(np.arange(depth) == depth // 2, 127, -128).astype(np.int8)[None],
            rng.integers(120, 128, size=(2, depth)).astype(np.int8),     # near-ties
            rng.integers(-128, -120, size=(1, depth)).astype(np.int8)]
    return np.concatenate(rows)


@pytest.mark.parametrize("depth", [1, 2, 10, 33, 256])
@pytest.mark.parametrize(("scale", "beta"), SOFTMAX_SCALES)
def test_softmax(scale: float, beta: float, depth: int) -> None:
    x = _softmax_rows(rng_for(f"softmax{scale}{beta}{depth}"), depth)
    for zp in (0, -128):  # the input zero point plays no part, but it is checked anyway
        expected = run_single("SOFTMAX", [q(x.shape, scale, zp)], q(x.shape, 1 / 256, -128),
                              [x], beta=beta)
        assert_exact(expected, act.softmax(x, act.softmax_params(scale, beta)), "SOFTMAX")


def test_softmax_on_higher_rank_inputs() -> None:
    x = rand_int8(rng_for("softmax4d"), (2, 3, 4, 10))
    expected = run_single("SOFTMAX", [q(x.shape, 0.1, 0)], q(x.shape, 1 / 256, -128), [x],
                          beta=1.0)
    assert_exact(expected, act.softmax(x, act.softmax_params(0.1, 1.0)), "SOFTMAX 4-D")


def test_softmax_params_edges() -> None:
    # A multiplier capped at 2**31 - 1: shift 31, and a cut-off of 0 (only the max counts).
    capped = act.softmax_params(1e3, 1.0)
    assert (capped.input_multiplier, capped.input_left_shift, capped.diff_min) == (
        2 ** 31 - 1, 31, 0)
    # beta * scale * 2**26 must exceed 1, or TFLite Micro aborts.
    with pytest.raises(ValueError, match="must exceed 1"):
        act.softmax_params(1e-8, 1.0)


# ---------------------------------------------------------------------------------------
# Which multipliers TFLite Micro derives in double and which bounds in float32: for each,
# scales where the other precision gives other int8 outputs, so the interpreter decides.


def _float32_multiplier(real: np.float32) -> tuple[int, int]:
    return quantize_multiplier(float(real))


def test_relu_multiplier_in_double() -> None:
    si, so = 0.25, 0.1  # 0.25 / 0.1f is 2.4999999627 in double, 2.5 in float32
    params = act.relu_params(si, 0, so, 0)
    m, s = _float32_multiplier(np.float32(si) / np.float32(so))
    other = replace(params, multiplier=m, shift=s)
    expected = run_single("RELU", [q(ALL.shape, si, 0)], q(ALL.shape, so, 0), [ALL])
    assert_exact(expected, act.relu(ALL, params), "RELU")
    assert not np.array_equal(expected, act.relu(ALL, other))


def test_leaky_relu_multipliers_in_double() -> None:
    si, so, alpha = 0.03, 0.01, 1.7
    params = act.leaky_relu_params(si, 0, so, 0, alpha)
    f = np.float32
    ma, sa = _float32_multiplier(f(si) * f(alpha) / f(so))
    mi, s_i = _float32_multiplier(f(si) / f(so))
    other = replace(params, multiplier_alpha=ma, shift_alpha=sa, multiplier_identity=mi,
                    shift_identity=s_i)
    expected = run_single("LEAKY_RELU", [q(ALL.shape, si, 0)], q(ALL.shape, so, 0), [ALL],
                          alpha=alpha)
    assert_exact(expected, act.leaky_relu(ALL, params), "LEAKY_RELU")
    assert not np.array_equal(expected, act.leaky_relu(ALL, other))


def test_hard_swish_multipliers_in_double() -> None:
    si, so = 0.4842938482761383, 0.4253944754600525   # found by searching float32 scales
    params = act.hard_swish_params(si, 0, so, 0)
    hires = np.float32(1 / 128) * np.float32(si)
    om, oe = _float32_multiplier(hires / np.float32(so))
    rm, re = _float32_multiplier(hires / (np.float32(3) / np.float32(32768)))
    other = replace(params, output_multiplier_fixedpoint_int16=downscale(om),
                    output_multiplier_exponent=oe,
                    reluish_multiplier_fixedpoint_int16=downscale(rm),
                    reluish_multiplier_exponent=re)
    expected = run_single("HARD_SWISH", [q(ALL.shape, si, 0)], q(ALL.shape, so, 0), [ALL])
    assert_exact(expected, act.hard_swish(ALL, params), "HARD_SWISH")
    assert not np.array_equal(expected, act.hard_swish(ALL, other))


# 6 / s rounds to a different integer in float32 than in double for these float32 scales.
SIX_SCALES = [0.10256410390138626, 0.11214953660964966, 0.23529411852359772]


@pytest.mark.parametrize("scale", SIX_SCALES)
def test_relu6_bound_in_float32(scale: float) -> None:
    float32_six = int(round_half_away(np.float32(6) / np.float32(scale)))
    assert float32_six != int(round_half_away(6.0 / float(np.float32(scale))))
    assert act.relu6_params(scale, 0).six == float32_six
    expected = run_single("RELU6", [q(ALL.shape, scale, 0)], q(ALL.shape, scale, 0), [ALL])
    assert_exact(expected, act.relu6(ALL, act.relu6_params(scale, 0)), "RELU6")
    assert expected.max() == float32_six
