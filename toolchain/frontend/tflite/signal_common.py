"""What every Signal-library converter shares: its flexbuffer options, its typed
inputs, and the two doors of the state TFLite Micro keeps between invocations.

State: SpectralSubtraction's noise estimate, Delay's, Framer's, Stacker's and
OverlapAdd's buffers live in TFLite Micro's persistent memory across invocations. Here
they are minirt state (state.py: a graph input and output each, the firmware's state
region): converters read one with `state_in` and hand its updated value to `state_out`.
Every Signal kernel's Init and Reset leave the same value (zeros, Framer's prefill
zeros, Stacker's "no frame yet"), so a state's initial and reset values are one array.
Callers go through this module's attributes (`signal_common.state_in(...)`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor
from toolchain.types import TensorType, dtype


def signal_options(ctx: OpContext, *keys: str,
                   defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The operator's flexbuffer options `keys`, which must be present, and those of
    `defaults`, which may be absent (their default value then); all scalars (ints,
    bools, floats). Only those keys are read, by the map's own lookup: a whole decode of
    hostile bytes could expand shared references without bound."""
    data = ctx.op.custom_options
    options: dict[str, Any] = {}
    missing = []
    try:
        root = flexbuffers.GetRoot(data) if data else None
        if root is None or not root.IsMap:
            raise Unsupported("its custom options are not a flexbuffer map")
        table = root.AsMap
        optional = defaults or {}
        for key in (*keys, *optional):
            try:
                ref = table[key]
            except KeyError:
                if key in optional:
                    options[key] = optional[key]
                else:
                    missing.append(key)
                continue
            if ref.IsBool:
                options[key] = ref.AsBool
            elif ref.IsInt:
                options[key] = ref.AsInt
            elif ref.IsFloat:
                options[key] = ref.AsFloat
            else:
                options[key] = "a non-numeric value"
    except Unsupported:
        raise
    except Exception as e:  # flexbuffers raises bare errors on damaged bytes
        raise Unsupported(f"its custom options are not a valid flexbuffer map ({e})") from None
    if missing:
        raise Unsupported(f"its custom options lack {', '.join(missing)}")
    return options


def int_option(options: dict[str, Any], key: str, lo: int, hi: int) -> int:
    """Option `key`, an integer in [lo, hi]."""
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise Unsupported(f"option {key} is {value!r}; an integer in [{lo}, {hi}] is expected")
    return value


def typed_input(ctx: OpContext, i: int, *types: str) -> Tensor:
    """Input i, whose element type must be one of `types` (graph names: 'i16', ...)."""
    x = ctx.input(i)
    if x.type.dtype.name not in types:
        raise Unsupported(f"input {i} has element type {x.type.dtype}; "
                          f"{' or '.join(types)} is expected")
    return x


def constant_input(ctx: OpContext, i: int, what: str) -> np.ndarray:
    """The values of input i, which must be a constant, flattened to int64."""
    info = ctx.info(i)
    if info.data is None:
        raise Unsupported(f"input {i} ({what}) must be a constant")
    return info.data.astype(np.int64).reshape(-1)


def state_key(ctx: OpContext, key: str) -> str:
    """A state's name across the model: the operator's own key ('noise_estimate',
    'frames', ...) scoped by the operator, as two Framers may each hold 'frames'."""
    return f"{ctx.op.describe()}/{key}"


def state_in(ctx: OpContext, key: str, initial: np.ndarray, dt: str) -> Tensor:
    """The operator's state `key` as the inference starts (or as last written in it):
    `initial`, of element type `dt`, is what TFLite Micro's Init and Reset both leave,
    so it is the state's value at boot and after every reset."""
    ety = dtype(dt)
    value = np.asarray(initial, ety.np_dtype)
    ty = TensorType(tuple(value.shape), ety)
    return ctx.read_state(state_key(ctx, key), ty, value, value)


def state_out(ctx: OpContext, key: str, new_state: Tensor) -> None:
    """The operator's updated state `key`: what the next inference reads."""
    ctx.write_state(state_key(ctx, key), new_state)


__all__ = ["constant_input", "int_option", "signal_options", "state_in", "state_key",
           "state_out", "typed_input"]
