"""TOSA ops minirt reads but cannot compile yet, each with the reason: a located error
in the importer's list rather than an unknown op.

- YIELD only ends a COND_IF or WHILE_LOOP region (where the region importer takes it);
  anywhere else it is an error.
- FFT2D and RFFT2D need complex arithmetic.
- VARIABLE, VARIABLE_READ and VARIABLE_WRITE are state kept between inferences; a
  minirt model is a pure function of its inputs.
- CUSTOM names an operator only its own backend knows.
"""

from __future__ import annotations

from collections.abc import Callable

from toolchain.frontend.tosa.context import TosaError, TosaOp
from toolchain.graph.ir import Tensor

__all__ = ["CONVERTERS", "REASONS"]

REASONS = {
    "yield": "it only ends a cond_if or while_loop region",
    "fft2d": "minirt has no complex arithmetic yet",
    "rfft2d": "minirt has no complex arithmetic yet",
    "variable": "minirt models are pure functions of their inputs (no state between runs)",
    "variable_read": "minirt models are pure functions of their inputs (no state between "
                     "runs)",
    "variable_write": "minirt models are pure functions of their inputs (no state between "
                      "runs)",
    "custom": "a custom operator is defined only by its own backend",
}


def _refuse(reason: str) -> Callable[[TosaOp], Tensor]:
    def convert(t: TosaOp) -> Tensor:
        raise TosaError(f"not supported yet: {reason}")

    return convert


CONVERTERS: dict[str, Callable[[TosaOp], Tensor]] = {
    f"tosa.{name}": _refuse(reason) for name, reason in REASONS.items()
}
