"""Fused activations (the schema's ActivationFunctionType) as graph nodes.

TFLite applies an operator's fused activation to its result before storing it. The
clamping ones become one `clamp`: on float tensors between their real bounds, on
quantized tensors between those bounds quantized with the output's scale and zero point
and limited to the storage type's range, exactly as TFLite's
CalculateActivationRange(Quantized) computes them. TANH and SIGN_BIT are refused:
TFLite's kernels (TFLite Micro's included) compute them as NONE, so neither the schema's
meaning nor TFLite's result could be honoured without contradicting the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.context import OpContext, int_range
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor
from toolchain.types import TensorType

# TFLite clamps float results to [lowest, max] of float32 where an activation leaves a
# side open (RELU's upper bound): +inf becomes FLT_MAX, as in TFLite.
FLT_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class Activation:
    """One row: the real-valued clamp bounds (None on an open side), or why the
    activation is refused."""

    low: float | None = None
    high: float | None = None
    clamps: bool = False
    refused: str | None = None


_IGNORED = ("fused activation {} is not supported: TFLite's kernels skip it (they compute "
            "it as NONE), so the result would differ from either the model or TFLite")


ACTIVATIONS: dict[str, Activation] = {
    "NONE": Activation(),
    "RELU": Activation(0.0, None, clamps=True),
    "RELU_N1_TO_1": Activation(-1.0, 1.0, clamps=True),
    "RELU6": Activation(0.0, 6.0, clamps=True),
    "TANH": Activation(refused=_IGNORED.format("TANH")),
    "SIGN_BIT": Activation(refused=_IGNORED.format("SIGN_BIT")),
}


def activation_name(code: int) -> str:
    """The schema name of an ActivationFunctionType value."""
    name = schema.ACTIVATIONS.get(code)
    if name is None or name not in ACTIVATIONS:
        raise Unsupported(f"unknown fused activation {code}")
    return name


def _round_half_away(x: float) -> int:
    """std::round: to nearest, ties away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _quantize(value: float, scale: float, zero_point: int) -> int:
    # TFLite divides in float32 (`f / scale` with float operands), then rounds.
    q = float(np.float32(value) / np.float32(scale))
    return zero_point + _round_half_away(q)


def quantized_range(name: str, ty: TensorType) -> tuple[int, int]:
    """The stored-value bounds of activation `name` on a per-tensor quantized output
    type: TFLite's CalculateActivationRangeQuantized."""
    act = ACTIVATIONS[name]
    if ty.quant is None or ty.quant.axis is not None:
        # An integer kernel's result must carry one scale and zero point (a fuzzed model
        # gave an int8 AVERAGE_POOL_2D an output with no scales at all).
        raise Unsupported(f"its {ty.dtype} result is not quantized per tensor (one scale "
                          "and zero point), which TFLite's integer kernels need")
    lo, hi = int_range(ty.dtype)
    if not act.clamps:
        return lo, hi
    scale, zp = ty.quant.scales[0], ty.quant.zero_points[0]
    low = lo if act.low is None else max(lo, _quantize(act.low, scale, zp))
    high = hi if act.high is None else min(hi, _quantize(act.high, scale, zp))
    return low, high


def apply_activation(ctx: OpContext, x: Tensor, code: int,
                     out: TensorType | None = None) -> Tensor:
    """`x` with the fused activation of schema value `code` applied (apply_named)."""
    return apply_named(ctx, x, activation_name(code), out)


def apply_named(ctx: OpContext, x: Tensor, name: str, out: TensorType | None = None) -> Tensor:
    """`x` with activation `name` (a row of ACTIVATIONS) applied. A quantized result is
    clamped in the stored domain of `out` (the operator's declared output type), which
    must be quantized per tensor."""
    act = ACTIVATIONS[name]
    if act.refused:
        raise Unsupported(act.refused)
    quantized = out is not None and out.quant is not None
    if not act.clamps:
        return x
    if quantized:
        assert out is not None
        if out.quant.axis is not None:  # type: ignore[union-attr]
            raise Unsupported("a fused activation needs a per-tensor quantized output")
        low, high = quantized_range(name, out)
    elif x.type.dtype.is_float:
        low = act.low if act.low is not None else -FLT_MAX
        high = act.high if act.high is not None else FLT_MAX
    else:
        raise Unsupported(f"fused activation {name} on unquantized {x.type.dtype} tensors is "
                          "not supported")
    return ctx.node("clamp", [ctx.scalar(low, x), x, ctx.scalar(high, x)])


__all__ = ["ACTIVATIONS", "FLT_MAX", "activation_name", "apply_activation", "apply_named",
           "quantized_range"]
