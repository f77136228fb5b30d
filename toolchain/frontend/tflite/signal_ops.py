"""TFLite Micro's Signal library custom operators as graph constructions: those of
micro_speech's audio front end (SignalWindow, SignalFftAutoScale, SignalEnergy,
SignalFilterBank, SignalFilterBankSquareRoot, SignalFilterBankSpectralSubtraction,
SignalPCAN, SignalFilterBankLog) here, SignalRfft / SignalIrfft over signal_fft.py, and
the table of every Signal op minirt imports (the streaming ones: signal_stream.py).

Each converter rebuilds the C arithmetic of signal/src (int16 / uint32 / uint64 fixed
point) from integer graph ops, step by step, so results are bit-exact with TFLite Micro
and every board runs them without a Signal kernel. Options come from the operator's
flexbuffer `custom_options`. Values that C holds in uint32 are computed in i64 and
masked to 32 bits where C would wrap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolchain.frontend.tflite import signal_common
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.signal_common import (
    constant_input,
    int_option,
    signal_options,
    typed_input,
)
from toolchain.frontend.tflite.signal_fft import (
    irfft_fixed,
    irfft_float,
    rfft_fixed,
    rfft_float,
)
from toolchain.frontend.tflite.signal_math import IntBuilder, log32, sqrt64
from toolchain.frontend.tflite.signal_stream import delay, framer, overlap_add, stacker
from toolchain.graph.ir import Tensor

U32_MASK = 0xFFFFFFFF


# ---------------------------------------------------------------- the operators


def window(ctx: OpContext) -> Tensor:
    """SignalWindow: (x * w) >> shift saturated to int16, w along the last dim."""
    shift = int_option(signal_options(ctx, "shift"), "shift", 0, 31)
    b = IntBuilder(ctx)
    x = b.cast(typed_input(ctx, 0, "i16"), "i32")
    w = b.cast(typed_input(ctx, 1, "i16"), "i32")
    if w.type.rank != 1 or x.type.rank < 1 or x.type.shape[-1] != w.type.shape[0]:
        raise Unsupported(f"window of shape {list(w.type.shape)} does not match the input's "
                          f"last dim {list(x.type.shape)}")
    raw = b.shr(b.mul(x, ctx.broadcast(w, x.type.shape)), shift)
    return b.saturate(raw, "i16")


def _running_max_abs16(b: IntBuilder, x: Tensor) -> Tensor:
    """The library's MaxAbs16 of an int16-valued i32 vector, wrap included: its running
    int16 maximum m takes v when v > m, else -v when -v > m; -v of -32768 stores as
    -32768, after which the next value v (signed) is taken whatever it is. So with j the
    last index of -32768 the result is max(x[j + 1], |x[k]| for k > j + 1) (-32768 when
    j is the last index), and max |x| (from 0) when no -32768 occurs."""
    ctx = b.ctx
    n = x.type.shape[0]
    low = -(1 << 15)
    index = ctx.node("iota", [], dimension=0, shape=(n,), dtype="i32")

    def top(t: Tensor, init: int) -> Tensor:
        return ctx.node("reduce", [t, ctx.const(init, "i32")], kind="maximum", dims=(0,))

    magnitude = ctx.node("abs", [x])
    last = top(b.where(b.cmp(x, "EQ", low), index, -1), -1)
    after = ctx.broadcast(b.add(last, 1), (n,), ())
    next_value = top(b.where(b.cmp(index, "EQ", after), x, low), low)
    tail = top(b.where(b.cmp(index, "GT", after), magnitude, low), low)
    return b.where(b.cmp(last, "LT", 0), top(magnitude, 0), b.max(next_value, tail))


def fft_auto_scale(ctx: OpContext) -> tuple[Tensor, Tensor]:
    """SignalFftAutoScale: x shifted left so its largest magnitude fills 15 bits, and the
    shift (int32 scalar); the largest magnitude as the library's wrapping int16 scan
    finds it."""
    b = IntBuilder(ctx)
    x = b.cast(typed_input(ctx, 0, "i16"), "i32")
    if x.type.rank != 1:
        raise Unsupported(f"input of shape {list(x.type.shape)}; a vector is expected")
    top = _running_max_abs16(b, x)
    # MostSignificantBit32 of the int16 maximum widened to uint32: 32 for a negative one
    # and for 0 (the __builtin_clz path), so no scaling then.
    scale = b.max(b.sub(ctx.const(16 - 1, "i32"), b.cast(b.msb(b.cast(top, "ui32")), "i32")), 0)
    scaled = b.wrap16(b.shl(x, ctx.broadcast(scale, x.type.shape, ())))
    return b.cast(scaled, "i16"), scale


def _fft_rows(ctx: OpContext, fixed: Any, floating: Any, out_width: Any) -> Tensor:
    """An FFT op over the last dim of every row: kiss_fft's fixed point for int16 and
    int32, the graph's fft for float32."""
    fft_length = int_option(signal_options(ctx, "fft_length"), "fft_length", 8, 1 << 16)
    x = typed_input(ctx, 0, "i16", "i32", "f32")
    shape = x.type.shape
    if not shape:
        raise Unsupported("its input is a scalar; frames along the last dim are expected")
    rows = ctx.reshape(x, (int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]))
    y = (floating(ctx, rows, fft_length) if x.type.dtype.name == "f32" else
         fixed(IntBuilder(ctx), rows, fft_length))
    return ctx.reshape(y, (*shape[:-1], out_width(fft_length)))


def rfft(ctx: OpContext) -> Tensor:
    """SignalRfft of frames along the last dim: fft_length + 2 interleaved values."""
    return _fft_rows(ctx, rfft_fixed, rfft_float, lambda n: n + 2)


def irfft(ctx: OpContext) -> Tensor:
    """SignalIrfft of interleaved spectra along the last dim: fft_length samples."""
    return _fft_rows(ctx, irfft_fixed, irfft_float, lambda n: n)


def energy(ctx: OpContext) -> Tensor:
    """SignalEnergy: re**2 + im**2 of int16 complex bins [start_index, end_index) as
    uint32; the bins outside, which the library leaves unwritten, are 0."""
    options = signal_options(ctx, "start_index", "end_index")
    b = IntBuilder(ctx)
    x = b.cast(typed_input(ctx, 0, "i16"), "i64")
    if x.type.rank != 1 or x.type.shape[0] % 2:
        raise Unsupported(f"input of shape {list(x.type.shape)}; interleaved complex "
                          "int16 (an even-length vector) is expected")
    bins = x.type.shape[0] // 2
    start = int_option(options, "start_index", 0, bins)
    end = int_option(options, "end_index", start, bins)
    pairs = ctx.reshape(x, (bins, 2))
    square = b.mul(pairs, pairs)
    total = ctx.node("reduce", [square, ctx.const(0, "i64")], kind="add", dims=(1,))
    keep = np.zeros(bins, np.int64)
    keep[start:end] = 1
    total = b.mul(total, ctx.const(keep, "i64"))
    return b.cast(b.mask(total, U32_MASK), "ui32")


def filter_bank(ctx: OpContext) -> Tensor:
    """SignalFilterBank: each channel's weighted sum of the uint32 spectrum plus the
    previous channel's unweighted sum, uint64; channel 0 (scratch) is dropped. The
    constant configuration becomes each channel's taps (bin, coefficient): its nonzero
    coefficients, padded with zero taps to the widest channel, so a gather, a multiply
    and a sum per channel do the work (not a dense channels x bins product)."""
    options = signal_options(ctx, "num_channels")
    b = IntBuilder(ctx)
    x = b.cast(typed_input(ctx, 0, "ui32"), "i64")
    bins = x.type.shape[0]
    weights, unweights = constant_input(ctx, 1, "weights"), constant_input(ctx, 2, "unweights")
    freq_starts = constant_input(ctx, 3, "channel frequency starts")
    weight_starts = constant_input(ctx, 4, "channel weight starts")
    widths = constant_input(ctx, 5, "channel widths")
    channels = int_option(options, "num_channels", 1, len(widths) - 1)
    matrix = np.zeros((channels + 1, bins), np.int64)
    for i in range(channels + 1):
        f0, w0, n = int(freq_starts[i]), int(weight_starts[i]), int(widths[i])
        if n < 0 or f0 < 0 or w0 < 0 or f0 + n > bins or w0 + n > len(weights):
            raise Unsupported(f"channel {i} reads bins {f0}..{f0 + n} and weights "
                              f"{w0}..{w0 + n}, outside the input or the weights")
        matrix[i, f0:f0 + n] += weights[w0:w0 + n]
        if i + 1 <= channels:
            matrix[i + 1, f0:f0 + n] += unweights[w0:w0 + n]
    rows = matrix[1:]
    taps = max(1, int((rows != 0).sum(axis=1).max()))
    index = np.zeros((channels, taps), np.int32)
    coeff = np.zeros((channels, taps), np.int64)
    for i, row in enumerate(rows):
        (nonzero,) = np.nonzero(row)
        index[i, :len(nonzero)] = nonzero
        coeff[i, :len(nonzero)] = row[nonzero]
    # uint64 sums wrap like i64 ones; the library's int16 weights widen with their sign.
    product = b.mul(b.take(x, ctx.const(index, "i32")), ctx.const(coeff, "i64"))
    total = ctx.node("reduce", [product, ctx.const(0, "i64")], kind="add", dims=(1,))
    return b.cast(total, "ui64")


def filter_bank_square_root(ctx: OpContext) -> Tensor:
    """SignalFilterBankSquareRoot: Sqrt64 of each uint64 channel >> scale_bits, uint32."""
    b = IntBuilder(ctx)
    x = typed_input(ctx, 0, "ui64")
    bits = typed_input(ctx, 1, "i32")
    if bits.type.shape not in ((), (1,)):
        raise Unsupported(f"scale bits of shape {list(bits.type.shape)}; a scalar is expected")
    shift = b.cast(ctx.broadcast(ctx.reshape(bits, ()), x.type.shape, ()), "ui64")
    root = b.shr(sqrt64(b, x), shift)
    return b.cast(root, "ui32")


def spectral_subtraction(ctx: OpContext) -> tuple[Tensor, Tensor]:
    """SignalFilterBankSpectralSubtraction: subtracts a running noise estimate (state,
    zeros after a reset) from each channel, floored at a fraction of the signal; gives
    the result and the updated estimate."""
    keys = ("num_channels", "smoothing", "one_minus_smoothing", "alternate_smoothing",
            "alternate_one_minus_smoothing", "smoothing_bits", "min_signal_remaining",
            "clamping", "spectral_subtraction_bits")
    o = signal_options(ctx, *keys)
    b = IntBuilder(ctx)
    x = b.cast(typed_input(ctx, 0, "ui32"), "i64")
    n = x.type.shape[0]
    if int_option(o, "num_channels", 1, 1 << 16) != n:
        raise Unsupported(f"num_channels {o['num_channels']} is not the input's {n}")
    bits = int_option(o, "smoothing_bits", 0, 31)
    sub_bits = int_option(o, "spectral_subtraction_bits", 0, 63)
    coeff = {k: int_option(o, k, 0, U32_MASK) for k in keys[1:5]}
    # Even channels use smoothing, odd ones the alternate coefficients.
    even = np.arange(n) % 2 == 0
    smoothing = ctx.const(np.where(even, coeff["smoothing"], coeff["alternate_smoothing"]),
                          "i64")
    keep = ctx.const(np.where(even, coeff["one_minus_smoothing"],
                              coeff["alternate_one_minus_smoothing"]), "i64")
    noise = signal_common.state_in(ctx, "noise_estimate", np.zeros(n, np.uint32), "ui32")
    noise = b.cast(noise, "i64")
    scaled = b.mask(b.shl(x, bits), U32_MASK)
    # uint64 products: the sum stays under 2**64 but not 2**63 for extreme coefficients;
    # the shift of the wrapped i64 sum is then wrong, so the sum is shifted as ui64.
    total = b.cast(b.add(b.mul(scaled, smoothing), b.mul(noise, keep)), "ui64")
    noise = b.mask(b.cast(b.shr(total, sub_bits), "i64"), U32_MASK)
    estimate = b.min(noise, scaled)
    if o["clamping"]:
        noise = estimate
    remaining = int_option(o, "min_signal_remaining", 0, U32_MASK)
    floor = b.mask(b.cast(b.shr(b.cast(b.mul(x, remaining), "ui64"), sub_bits), "i64"),
                   U32_MASK)
    subtracted = b.shr(b.sub(scaled, estimate), bits)
    out = b.max(subtracted, floor)
    new_noise = b.cast(noise, "ui32")
    signal_common.state_out(ctx, "noise_estimate", new_noise)
    return b.cast(out, "ui32"), new_noise


PCAN_SNR_BITS = 12
PCAN_OUTPUT_BITS = 6


def _wide_dynamic_function(b: IntBuilder, x: Tensor, lut: np.ndarray) -> Tensor:
    """The library's WideDynamicFunction(x, lut) of an i64 (uint32-valued) x: lut[x] for
    x <= 2, else a quadratic in x's top 10 bits below its leading one from 3 entries of
    the segment of x's bit length; int16, returned as i64."""
    interval = b.msb(x)  # >= 2 where used
    base = b.max(b.sub(b.mul(interval, 4), 6), 0)
    up = b.max(b.sub(b.filled(11, x), interval), 0)
    down = b.max(b.sub(interval, 11), 0)
    frac = b.mask(b.where(b.cmp(interval, "LT", 11), b.shl(x, up), b.shr(x, down)),
                   0x3FF)
    c0, c1, c2 = (b.lookup(lut, b.min(b.add(base, j), len(lut) - 1), "i64") for j in range(3))
    result = b.shr(b.mul(c2, frac), 5)
    result = b.add(result, b.mul(c1, 32))
    # int32 in C: the product and the rounding add wrap there.
    result = b.wrap(b.mul(result, frac), "i32")
    result = b.shr(b.wrap(b.add(result, 1 << 14), "i32"), 15)
    result = b.wrap16(b.add(result, c0))
    small = b.lookup(lut, b.min(x, 2), "i64")
    return b.where(b.cmp(x, "LE", 2), small, result)


def pcan(ctx: OpContext) -> Tensor:
    """SignalPCAN: per-channel automatic gain control from the noise estimate (a gain
    from the wide-dynamic table), then the shrink to PCAN's output bits; uint32."""
    snr_shift = int_option(signal_options(ctx, "snr_shift"), "snr_shift", 0, 63)
    b = IntBuilder(ctx)
    x = b.cast(typed_input(ctx, 0, "ui32"), "i64")
    noise = b.cast(typed_input(ctx, 1, "ui32"), "i64")
    lut = constant_input(ctx, 2, "gain table")
    if len(lut) < 4 * 32 - 6 + 3:
        raise Unsupported(f"gain table of {len(lut)} entries; {4 * 32 - 3} are needed")
    # The int16 gain widens to uint32 with its sign, then to uint64 for the product.
    gain = b.mask(_wide_dynamic_function(b, noise, lut), U32_MASK)
    snr = b.mask(b.cast(b.shr(b.cast(b.mul(x, gain), "ui64"), snr_shift), "i64"),
                  U32_MASK)
    squared = b.shr(b.mul(snr, snr), 2 + 2 * PCAN_SNR_BITS - PCAN_OUTPUT_BITS)
    linear = b.sub(b.shr(snr, PCAN_SNR_BITS - PCAN_OUTPUT_BITS), 1 << PCAN_OUTPUT_BITS)
    out = b.where(b.cmp(snr, "LT", 2 << PCAN_SNR_BITS), squared, linear)
    return b.cast(b.mask(out, U32_MASK), "ui32")


def filter_bank_log(ctx: OpContext) -> Tensor:
    """SignalFilterBankLog: round(ln(x << input_correction_bits) * output_scale),
    saturated to int16; 0 where the shifted value is 0 or 1."""
    o = signal_options(ctx, "output_scale", "input_correction_bits")
    scale = int_option(o, "output_scale", 0, U32_MASK)
    bits = int_option(o, "input_correction_bits", 0, 31)
    b = IntBuilder(ctx)
    x = b.cast(typed_input(ctx, 0, "ui32"), "i64")
    scaled = b.mask(b.shl(x, bits), U32_MASK)
    positive = b.cmp(scaled, "GT", 1)
    logs = log32(b, b.max(scaled, 2), scale)
    return b.cast(b.where(positive, b.min(logs, 32767), 0), "i16")


SIGNAL_OPS = {
    "CUSTOM:SignalWindow": (window, 2, 2, 1),
    "CUSTOM:SignalFftAutoScale": (fft_auto_scale, 1, 1, 2),
    "CUSTOM:SignalRfft": (rfft, 1, 1, 1),
    "CUSTOM:SignalEnergy": (energy, 1, 1, 1),
    "CUSTOM:SignalFilterBank": (filter_bank, 6, 6, 1),
    "CUSTOM:SignalFilterBankSquareRoot": (filter_bank_square_root, 2, 2, 1),
    "CUSTOM:SignalFilterBankSpectralSubtraction": (spectral_subtraction, 1, 1, 2),
    "CUSTOM:SignalPCAN": (pcan, 3, 3, 1),
    "CUSTOM:SignalFilterBankLog": (filter_bank_log, 1, 1, 1),
    "CUSTOM:SignalIrfft": (irfft, 1, 1, 1),
    "CUSTOM:SignalDelay": (delay, 1, 1, 1),
    "CUSTOM:SignalFramer": (framer, 1, 1, 2),
    "CUSTOM:SignalStacker": (stacker, 1, 1, 2),
    "CUSTOM:SignalOverlapAdd": (overlap_add, 1, 1, 1),
}
"""opcode -> (converter, least inputs, most inputs, outputs)."""

__all__ = ["SIGNAL_OPS"]
