"""DFT (opsets 17 and 20) and STFT (its frames, windowed, each a DFT): the discrete
Fourier transform along one axis of a signal whose last dimension holds the real part
(size 1) or the real and imaginary parts (size 2), forward or inverse, full or
one-sided, padded or truncated to dft_length.

Each is a pair of constant matrices, the cosines and sines of 2*pi*k*t/L, contracted
with the real and imaginary parts along the axis (dot_generals, as resize_filters.py
does for Resize): the firmware needs no complex type and no FFT kernel, and the small
transforms of these models cost about what an FFT would.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.resize import take_along
from toolchain.frontend.onnx.resize_filters import apply_matrix
from toolchain.frontend.onnx.shape_ops import slice_axis
from toolchain.graph.ir import Tensor


def _angles(out: int, given: int, length: int) -> np.ndarray:
    """[out, given] angles 2*pi*k*t/L of output index k and input index t, t past the
    transform's length L giving no angle (those inputs are cut; NaN marks them)."""
    k = np.arange(out, dtype=np.float64)[:, None]
    t = np.arange(given, dtype=np.float64)[None, :]
    theta = 2 * np.pi * ((k * t) % length) / length  # reduced first: exact for large k*t
    return np.where(t < length, theta, np.nan)


def _matrices(n: int, length: int, inverse: bool, onesided: bool
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """(rr, ri, ir, ii, out): the real output is rr @ re + ri @ im, the imaginary one
    ir @ re + ii @ im, along the axis of n given elements; `out` is the output length."""
    if inverse and onesided:
        # A real signal from the first L // 2 + 1 coefficients of a Hermitian spectrum:
        # each other coefficient is the conjugate of one given, so a given one counts
        # twice, except the first and (L even) the middle one, which have no partner.
        half = length // 2 + 1
        theta = _angles(length, min(n, half), length)  # every t < L here
        twice = np.full(theta.shape[1], 2.0)
        twice[0] = 1.0
        if length % 2 == 0 and half - 1 < twice.size:
            twice[half - 1] = 1.0
        pad = np.zeros((length, n - theta.shape[1]))
        rr = np.hstack([twice * np.cos(theta) / length, pad])
        ri = np.hstack([-twice * np.sin(theta) / length, pad])
        return rr, ri, np.zeros_like(rr), np.zeros_like(ri), length
    out = length // 2 + 1 if onesided else length
    theta = _angles(out, n, length)
    cos, sin = np.nan_to_num(np.cos(theta)), np.nan_to_num(np.sin(theta))
    if inverse:  # e^{+i theta} / L
        return cos / length, -sin / length, sin / length, cos / length, out
    return cos, sin, -sin, cos, out  # e^{-i theta}


def dft(ctx: OpContext) -> Tensor:
    """DFT with the constant dft_length (input 1) and axis (input 2 from opset 20, an
    attribute before), attributes inverse and onesided."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    rank = len(shape)
    if rank < 2 or shape[-1] not in (1, 2) or not x.type.dtype.is_float:
        raise Unsupported(f"input of {x.type} (a float signal [..., N, 1 or 2] expected)")
    if ctx.opset >= 20:
        given = ctx.optional_const(2, "axis")
        axis = -2 if given is None else int(np.asarray(given).reshape(-1)[0])
    else:
        axis = ctx.attr("axis", 1)
    axis = axis_of(axis, rank)
    if axis == rank - 1:
        raise Unsupported("axis is the last dimension, which holds the real and imaginary "
                          "parts")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    n = shape[axis]
    length_value = ctx.optional_const(1, "dft_length")
    if length_value is not None and length_value.size:
        length = int(np.asarray(length_value).reshape(-1)[0])
    else:
        length = 2 * (n - 1) if inverse and onesided else n
    if length < 1:
        raise Unsupported(f"dft_length {length} must be >= 1")
    return transform(ctx, x, axis, length, inverse, onesided)


def transform(ctx: OpContext, x: Tensor, axis: int, length: int, inverse: bool,
              onesided: bool) -> Tensor:
    """The DFT of signal x [..., 1 or 2] along `axis` (not the last), of `length` points
    (x padded or cut to it): [..., out, ..., 2], or [..., length, ..., 1] for the
    inverse of a one-sided spectrum."""
    shape = tuple(x.type.shape)
    rank = len(shape)
    n = shape[axis]
    if onesided and not inverse and shape[-1] == 2:
        raise Unsupported("a one-sided DFT of a complex signal")
    rr, ri, ir, ii, _ = _matrices(n, length, inverse, onesided)
    flat = shape[:-1]
    re = ctx.reshape(slice_axis(ctx, x, rank - 1, 0, 1), flat)
    im = ctx.reshape(slice_axis(ctx, x, rank - 1, 1, 2), flat) if shape[-1] == 2 else None

    def part(with_re: np.ndarray, with_im: np.ndarray) -> Tensor:
        y = apply_matrix(ctx, re, axis, with_re)
        if im is not None:
            y = ctx.node("add", [y, apply_matrix(ctx, im, axis, with_im)])
        return ctx.reshape(y, tuple(y.type.shape) + (1,))

    real = part(rr, ri)
    if inverse and onesided:
        return real
    return ctx.node("concatenate", [real, part(ir, ii)], dimension=rank - 1)




def stft(ctx: OpContext) -> Tensor:
    """STFT: frames of frame_length, frame_step apart (constants), times the window,
    each transformed (one-sided by default): [batch, frames, bins, 2]."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    if len(shape) != 3 or shape[-1] not in (1, 2) or not x.type.dtype.is_float:
        raise Unsupported(f"signal of {x.type} ([batch, length, 1 or 2] floats expected)")
    step = int(np.asarray(ctx.const(1, "frame_step")).reshape(-1)[0])
    window = ctx.input(2) if ctx.has_input(2) else None
    given = ctx.optional_const(3, "frame_length")
    if given is not None:
        length = int(np.asarray(given).reshape(-1)[0])
    else:
        length = window.type.shape[0] if window is not None else shape[1]
    if window is not None and tuple(window.type.shape) != (length,):
        raise Unsupported(f"window {list(window.type.shape)} is not [{length}]")
    if step < 1 or not 1 <= length <= shape[1]:
        raise Unsupported(f"frame_step {step} and frame_length {length} must be >= 1, the "
                          f"frame at most the signal's {shape[1]}")
    frames = (shape[1] - length) // step + 1
    at = (np.arange(frames)[:, None] * step + np.arange(length)[None, :]).reshape(-1)
    cut = take_along(ctx, x, 1, at)
    cut = ctx.reshape(cut, (shape[0], frames, length, shape[2]))
    if window is not None:
        if window.type.dtype != x.type.dtype:
            window = ctx.node("convert", [window], dtype=x.type.dtype.name)
        cut = ctx.node("multiply", [cut, ctx.broadcast(window, tuple(cut.type.shape), (2,))])
    return transform(ctx, cut, 2, length, False, bool(ctx.attr("onesided", 1)))


__all__ = ["dft", "stft", "transform"]
