"""variable_state.py: where recurrent operators read and write their state. The state is
minirt's state that survives an inference, keyed by the variable tensor; it starts at
TFLite Micro's initial value (an int8 tensor's zero point, zero otherwise, the file's
buffer ignored), and the write checks that the new state fits the variable tensor."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.reader import read_model
from toolchain.frontend.tflite.variable_state import (
    initial_value,
    state_in,
    state_out,
)
from toolchain.graph.ir import Graph


def _context(state: Tensor) -> OpContext:
    x = Tensor((1, 2), "int8", scale=0.1, zero_point=0)
    out = Tensor((1, 2), "int8", scale=0.1, zero_point=0)
    w = Tensor((2, 2), "int8", scale=0.1, zero_point=0, data=np.eye(2, dtype=np.int8))
    wt = Tensor((2, 2), state.dtype, scale=0.1, zero_point=0,
                data=np.ones((2, 2), state.dtype))
    model = read_model(build_model([Op("SVDF", [x, w, wt, None, state], [out],
                                       dict(rank=1))], [x], [out]))
    return OpContext(model, model.operators[0], Graph("main"), lambda i: None)  # type: ignore


@pytest.mark.parametrize("state, fill", [
    (Tensor((1, 4), "int8", scale=0.5, zero_point=-50, is_variable=True), -50),
    (Tensor((1, 4), "int16", scale=0.5, zero_point=0, is_variable=True), 0),
    (Tensor((1, 4), "float32", is_variable=True, data=np.full((1, 4), 3, np.float32)), 0),
])
def test_the_state_starts_where_tflite_micro_starts_it(state: Tensor, fill: int) -> None:
    ctx = _context(state)
    value = initial_value(ctx, 4)
    assert value.shape == (1, 4) and np.all(value == fill)
    t = state_in(ctx, 4)
    assert t.type.shape == (1, 4) and t.type.dtype.np_dtype == value.dtype
    assert t in ctx.graph.inputs  # the value the last inference left, not a constant
    entry = ctx.states.entries[ctx.variable_key(4)]  # keyed as the importer keys it
    assert np.array_equal(entry.initial, value) and np.array_equal(entry.reset, value)
    new = ctx.node("negate", [t])
    state_out(ctx, 4, new)  # the state's own type fits
    assert entry.value is new  # what the next inference reads


def test_a_state_that_is_not_variable_or_a_new_state_that_does_not_fit_is_refused() -> None:
    with pytest.raises(Unsupported, match="must be a variable tensor"):
        initial_value(_context(Tensor((1, 4), "int16", scale=0.5, zero_point=0)), 4)
    ctx = _context(Tensor((1, 4), "int16", scale=0.5, zero_point=0, is_variable=True))
    wrong = ctx.reshape(state_in(ctx, 4), (4, 1))
    with pytest.raises(Unsupported, match="does not fit input 4"):
        state_out(ctx, 4, wrong)
