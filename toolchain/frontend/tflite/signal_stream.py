"""The Signal library's streaming operators, which keep samples between invocations:
SignalDelay, SignalFramer, SignalStacker and SignalOverlapAdd, as slices and
concatenations over a fixed-size state (signal_common.state_in / state_out).

TFLite Micro keeps their samples in circular buffers whose fill level varies; each
converter here holds instead the samples a later invocation can still read, which is a
fixed number once the level is understood:
- Delay(D): the last D samples (D zeros after a reset).
- Framer(S, T): the buffer holds L = S - T samples before each write with prefill, or
  L = ceil(S / T) * T - T once it first yields a frame without; every frame is then
  the window [k T, k T + S) of the L held samples followed by the input. The held
  samples start as zeros, and a count of samples seen says whether every frame was
  complete (output_valid); frames that are not leave TFLite Micro's output unwritten.
- Stacker(C, left, right, step): a frame is valid when C * (left + right + 1) samples
  are buffered, and it is then always the latest ones, the very first input counted
  1 + left times; the state is the latest C * (left + right) samples and the level.
- OverlapAdd(step): the frame-sized accumulator, saturating for int16.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import signal_common
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.signal_common import int_option, signal_options, typed_input
from toolchain.frontend.tflite.signal_math import IntBuilder
from toolchain.graph.ir import Tensor


def _rows(ctx: OpContext, x: Tensor) -> tuple[Tensor, int, int]:
    """x as (outer, inner): the C kernels treat all leading dims as independent rows."""
    shape = x.type.shape
    if not shape:
        raise Unsupported("its input is a scalar; a vector or more is expected")
    outer = int(np.prod(shape[:-1], dtype=np.int64))
    return ctx.reshape(x, (outer, shape[-1])), outer, shape[-1]


def _cols(ctx: OpContext, t: Tensor, start: int, stop: int) -> Tensor:
    rows = t.type.shape[0]
    return ctx.node("slice", [t], start=(0, start), limit=(rows, stop), strides=(1, 1))


def _join(ctx: OpContext, parts: list[Tensor]) -> Tensor:
    parts = [p for p in parts if p.type.shape[-1] > 0]
    return parts[0] if len(parts) == 1 else ctx.node("concatenate", parts, dimension=1)


def _valid(ctx: OpContext, flag: Tensor, k: int) -> Tensor:
    """A bool flag shaped as output k declares it."""
    return ctx.reshape(flag, ctx.output_type(k).shape)


def delay(ctx: OpContext) -> Tensor:
    """SignalDelay: each row of the last dim delayed by delay_length samples."""
    length = int_option(signal_options(ctx, "delay_length"), "delay_length", 0, 1 << 20)
    x = typed_input(ctx, 0, "i16")
    rows, outer, n = _rows(ctx, x)
    if length == 0:
        return x
    held = signal_common.state_in(ctx, "delay", np.zeros((outer, length), np.int16), "i16")
    stream = _join(ctx, [held, rows])
    signal_common.state_out(ctx, "delay", _cols(ctx, stream, n, n + length))
    return ctx.reshape(_cols(ctx, stream, 0, n), x.type.shape)


def framer(ctx: OpContext) -> tuple[Tensor, Tensor]:
    """SignalFramer: frames of frame_size every frame_step samples of each row, and
    whether every frame was complete."""
    o = signal_options(ctx, "frame_size", "frame_step", "prefill")
    step = int_option(o, "frame_step", 1, 1 << 20)
    size = int_option(o, "frame_size", step, 1 << 20)
    x = typed_input(ctx, 0, "i16")
    rows, outer, n = _rows(ctx, x)
    if n % step:
        raise Unsupported(f"the input's last dim {n} is not a multiple of frame_step {step}")
    frames = n // step
    capacity = -(-size // step) * step
    level = size - step if o["prefill"] else capacity - step
    held = signal_common.state_in(ctx, "frames", np.zeros((outer, level), np.int16), "i16")
    seen = signal_common.state_in(ctx, "seen", np.int32(level if o["prefill"] else 0), "i32")
    stream = _join(ctx, [held, rows])
    windows = [ctx.reshape(_cols(ctx, stream, k * step, k * step + size), (outer, 1, size))
               for k in range(frames)]
    out = windows[0] if frames == 1 else ctx.node("concatenate", windows, dimension=1)
    b = IntBuilder(ctx)
    # The first frame is complete once `level` samples were held before its write; the
    # level only grows, so then every later frame is complete too.
    valid = b.cmp(seen, "GE", level) if frames else ctx.const(True, "i1")
    signal_common.state_out(ctx, "frames", _cols(ctx, stream, n, n + level))
    signal_common.state_out(ctx, "seen", b.min(b.add(seen, n), level))
    return (ctx.reshape(out, (*x.type.shape[:-1], frames, size)), _valid(ctx, valid, 1))


def stacker(ctx: OpContext) -> tuple[Tensor, Tensor]:
    """SignalStacker: the latest (left + right + 1) frames of num_channels stacked, the
    first frame repeated as its own left context; valid every stacker_step frames once
    enough are buffered."""
    o = signal_options(ctx, "num_channels", "stacker_left_context", "stacker_right_context",
                       "stacker_step")
    channels = int_option(o, "num_channels", 1, 1 << 16)
    left = int_option(o, "stacker_left_context", 0, 1 << 10)
    right = int_option(o, "stacker_right_context", 0, 1 << 10)
    size = channels * (left + right + 1)
    step = int_option(o, "stacker_step", 1, left + right + 1) * channels
    x = typed_input(ctx, 0, "i16")
    if x.type.shape != (channels,):
        raise Unsupported(f"input of shape {list(x.type.shape)}; [{channels}] is expected")
    b = IntBuilder(ctx)
    frame = ctx.reshape(x, (1, channels))
    keep = size - channels
    held = signal_common.state_in(ctx, "frames", np.zeros((1, keep), np.int16), "i16")
    # level -1: no frame yet (the next one is extended by its left context).
    level = signal_common.state_in(ctx, "level", np.int32(-1), "i32")
    first = b.cmp(level, "LT", 0)
    zeros = ctx.const(np.zeros((1, keep), np.int16), "i16")
    opened = _join(ctx, [zeros, *[frame] * (1 + left)])
    going = _join(ctx, [held, frame])
    stream = ctx.node("select", [first, _cols(ctx, opened, opened.type.shape[1] - size,
                                                 opened.type.shape[1]), going])
    filled = b.where(first, ctx.const(channels * (1 + left), "i32"), b.add(level, channels))
    valid = b.cmp(filled, "GE", size)
    signal_common.state_out(ctx, "frames", _cols(ctx, stream, channels, size))
    signal_common.state_out(ctx, "level", b.where(valid, b.sub(filled, step), filled))
    return ctx.reshape(stream, (size,)), _valid(ctx, valid, 1)


def overlap_add(ctx: OpContext) -> Tensor:
    """SignalOverlapAdd: each frame added into a frame-sized accumulator (saturating for
    int16), whose first frame_step samples are output and shifted out."""
    step = int_option(signal_options(ctx, "frame_step"), "frame_step", 1, 1 << 20)
    x = typed_input(ctx, 0, "i16", "f32")
    shape = x.type.shape
    if len(shape) < 2 or shape[-1] < step:
        raise Unsupported(f"input of shape {list(shape)}; [..., frames, frame_size >= "
                          f"frame_step {step}] is expected")
    frames, size = shape[-2], shape[-1]
    outer = int(np.prod(shape[:-2], dtype=np.int64))
    dt = x.type.dtype.name
    b = IntBuilder(ctx)
    xs = ctx.reshape(x, (outer, frames * size))
    zeros = np.zeros((outer, size), x.type.dtype.np_dtype)
    acc = signal_common.state_in(ctx, "buffer", zeros, dt)
    outs = []
    for k in range(frames):
        frame = _cols(ctx, xs, k * size, (k + 1) * size)
        if dt == "i16":
            acc = b.saturate(b.add(b.cast(acc, "i32"), b.cast(frame, "i32")), "i16")
        else:
            acc = ctx.node("add", [acc, frame])
        outs.append(_cols(ctx, acc, 0, step))
        acc = _join(ctx, [_cols(ctx, acc, step, size),
                          ctx.const(zeros[:, :step], dt)])
    signal_common.state_out(ctx, "buffer", acc)
    return ctx.reshape(_join(ctx, outs), (*shape[:-2], frames * step))


__all__ = ["delay", "framer", "overlap_add", "stacker"]
