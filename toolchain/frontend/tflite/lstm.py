"""UNIDIRECTIONAL_SEQUENCE_LSTM: TFLite Micro's LSTM kernel (lstm_eval.h), unrolled.

TFLite Micro runs the standard (Keras) LSTM only: four gates, no peephole, projection
or layer normalisation (it refuses those inputs), in float32, int8 activations with an
int16 cell state (int32 biases) and 16x8 (int16 activations, int64 biases). The cell is
built from graph primitives, one step per time step:

    gate = act(x_t W_g^T + b_g + h W_rg^T)     act: sigmoid; tanh for the cell gate
    c = f * c + i * g (clipped to cell_clip);  h = o * tanh(c)

The input projections do not depend on the state, so all time steps' are one
contraction before the recurrence; the four gates' weights are stacked (sigmoid gates
first) so that each step is one contraction of the hidden state and one sigmoid. The
integer steps are TFLite Micro's (toolchain/quant/build_lstm.py): int16 pre-activations
in Q3.12, gates in Q0.15, saturating int16 sums. The hidden and cell states are variable
tensors, read and written through variable_state.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.lstm_gates import (
    BIASES,
    INPUT_WEIGHTS,
    RECURRENT_WEIGHTS,
    float_gate_contraction,
    int8_gate_contraction,
    int16_gate_contraction,
)
from toolchain.frontend.tflite.variable_state import state_in, state_out
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build_lstm as lstm
from toolchain.types import TensorType

# The state inputs (lstm_shared.h); the gates' weights and biases are lstm_gates'.
HIDDEN_STATE, CELL_STATE = 18, 19
# Inputs TFLite Micro's kernel refuses (LstmTensors::ValidateTensorStatus).
REFUSED = {(9, 10, 11): "peephole weights", (16,): "projection weights",
           (17,): "a projection bias", (20, 21, 22, 23): "layer normalisation coefficients"}


@dataclass(frozen=True)
class Layout:
    """The sizes of one LSTM and where time runs in its input and output."""

    batch: int
    steps: int
    features: int
    units: int
    time_major: bool

    @property
    def time_axis(self) -> int:
        return 0 if self.time_major else 1


def _layout(ctx: OpContext, x: Tensor) -> Layout:
    """CreateLstmSizeInfo and ValidateTensorSize: the sizes, checked."""
    if x.type.rank != 3:
        raise Unsupported(f"the input has shape {list(x.type.shape)}; a rank-3 tensor is "
                          "expected")
    time_major = bool(ctx.option("time_major"))
    a, b, features = x.type.shape
    batch, steps = (b, a) if time_major else (a, b)
    hidden = ctx.info(HIDDEN_STATE)
    if len(hidden.shape) != 2:
        raise Unsupported(f"the hidden state has shape {list(hidden.shape)}; [batch, units] "
                          "is expected")
    units = hidden.shape[1]
    for index in (HIDDEN_STATE, CELL_STATE):
        if int(np.prod(ctx.info(index).shape)) != batch * units:
            raise Unsupported(f"input {index} (a state) has {ctx.info(index).shape} elements "
                              f"for batch {batch} and {units} units")
    for indices, cols in ((INPUT_WEIGHTS, features), (RECURRENT_WEIGHTS, units)):
        for i in indices:
            if tuple(ctx.info(i).shape) != (units, cols):
                raise Unsupported(f"input {i} (weights) has shape {list(ctx.info(i).shape)}; "
                                  f"[{units}, {cols}] is expected")
    for i in BIASES:
        if tuple(ctx.info(i).shape) != (units,):
            raise Unsupported(f"input {i} (a bias) has shape {list(ctx.info(i).shape)}; "
                              f"[{units}] is expected")
    out = ctx.output_type()
    if tuple(out.shape) != (a, b, units):
        raise Unsupported(f"the output has shape {list(out.shape)}; {[a, b, units]} is "
                          "expected")
    return Layout(batch, steps, features, units, time_major)


def _check_inputs(ctx: OpContext) -> None:
    """The inputs TFLite Micro's kernel requires are present; those it refuses absent."""
    for indices, what in REFUSED.items():
        if any(ctx.has_input(i) for i in indices):
            raise Unsupported(f"{what} (inputs {', '.join(map(str, indices))}) are not "
                              "supported: TFLite Micro's LSTM kernel is the standard one")
    for i in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS, *BIASES, HIDDEN_STATE, CELL_STATE):
        if not ctx.has_input(i):
            raise Unsupported(f"input {i} is missing; TFLite Micro's LSTM needs all four "
                              "gates' weights and biases (no CIFG)")
    activation = schema.ACTIVATIONS.get(ctx.option("fused_activation_function"))
    if activation != "TANH":
        raise Unsupported(f"the cell gate's activation is {activation}; TFLite Micro's LSTM "
                          "computes TANH")


def _step_slices(ctx: OpContext, projected: Tensor, layout: Layout) -> list[Tensor]:
    """The input projection of each time step, [batch, 4 * units]."""
    shape = tuple(projected.type.shape)
    steps = []
    for t in range(layout.steps):
        start = [0, 0, 0]
        limit = list(shape)
        start[layout.time_axis], limit[layout.time_axis] = t, t + 1
        step = ctx.node("slice", [projected], start=tuple(start), limit=tuple(limit),
                        strides=(1, 1, 1))
        steps.append(ctx.reshape(step, (layout.batch, 4 * layout.units)))
    return steps


def _gates(ctx: OpContext, pre: Tensor, units: int) -> tuple[Tensor, Tensor]:
    """The stacked pre-activations split into the sigmoid gates' block (input, forget,
    output: lstm_gates' stacking order) and the cell gate's."""
    rows = pre.type.shape[0]
    return (ctx.node("slice", [pre], start=(0, 0), limit=(rows, 3 * units), strides=(1, 1)),
            ctx.node("slice", [pre], start=(0, 3 * units), limit=(rows, 4 * units),
                     strides=(1, 1)))


def _split(ctx: OpContext, sigmoids: Tensor, units: int) -> tuple[Tensor, Tensor, Tensor]:
    """The activated sigmoid block's input, forget and output gates."""
    rows = sigmoids.type.shape[0]
    i, f, o = (ctx.node("slice", [sigmoids], start=(0, k * units),
                        limit=(rows, (k + 1) * units), strides=(1, 1)) for k in range(3))
    return i, f, o


def _stack(ctx: OpContext, outputs: list[Tensor], layout: Layout) -> Tensor:
    """The hidden states of all steps along the output's time axis."""
    one = ((1, layout.batch, layout.units) if layout.time_major else
           (layout.batch, 1, layout.units))
    rows = [ctx.reshape(h, one) for h in outputs]
    return rows[0] if len(rows) == 1 else ctx.node("concatenate", rows,
                                                   dimension=layout.time_axis)


def _states(ctx: OpContext, layout: Layout) -> tuple[Tensor, Tensor]:
    shape = (layout.batch, layout.units)
    return (ctx.reshape(state_in(ctx, HIDDEN_STATE), shape),
            ctx.reshape(state_in(ctx, CELL_STATE), shape))


def _store(ctx: OpContext, h: Tensor, c: Tensor) -> None:
    state_out(ctx, HIDDEN_STATE, ctx.reshape(h, tuple(ctx.info(HIDDEN_STATE).shape)))
    state_out(ctx, CELL_STATE, ctx.reshape(c, tuple(ctx.info(CELL_STATE).shape)))


def lstm_float(ctx: OpContext) -> Tensor:
    """UNIDIRECTIONAL_SEQUENCE_LSTM, float32 (EvalLstm<float, ...>)."""
    _check_inputs(ctx)
    x = ctx.input(0)
    layout = _layout(ctx, x)
    h, c = _states(ctx, layout)
    project, recur = float_gate_contraction(ctx, x, h, layout.units)
    clip = float(np.float32(ctx.option("cell_clip")))
    outputs = []
    for projected in _step_slices(ctx, project, layout):
        pre = ctx.node("add", [projected, recur(h)])
        sigmoids, g = _gates(ctx, pre, layout.units)
        # Float gates fuse into their readers one by one (148 dispatches for mnist_lstm
        # with one sigmoid over the block, 120 this way).
        i, f, o = (ctx.node("logistic", [v]) for v in _split(ctx, sigmoids, layout.units))
        g = ctx.node("tanh", [g])
        c = ctx.node("add", [ctx.node("multiply", [f, c]), ctx.node("multiply", [i, g])])
        if clip > 0:
            c = ctx.node("clamp", [ctx.scalar(-clip, c), c, ctx.scalar(clip, c)])
        h = ctx.node("multiply", [ctx.node("tanh", [c]), o])
        outputs.append(h)
    _store(ctx, h, c)
    return _stack(ctx, outputs, layout)


def _symmetric_scale(t: TensorType, what: str, dtypes: tuple[str, ...]) -> float:
    q = t.quant
    if q is None or t.dtype.name not in dtypes or q.axis is not None:
        raise Unsupported(f"the {what} is {t}; a per-tensor quantized "
                          f"{' or '.join(dtypes)} tensor is expected")
    return q.scales[0]


def _quantized(ctx: OpContext, activation: str,
               contraction: Callable[..., tuple[Tensor, Callable[[Tensor], Tensor]]]
               ) -> Tensor:
    """The integer LSTM: `activation` (i8 or i16) activations and hidden state, int16 cell
    state, the gates' contractions from `contraction`."""
    _check_inputs(ctx)
    x = ctx.input(0)
    layout = _layout(ctx, x)
    h0, c0 = _states(ctx, layout)
    if h0.type.dtype.name != activation or x.type.dtype.name != activation:
        raise Unsupported(f"the input and hidden state must both be {activation}")
    cell_scale = _symmetric_scale(c0.type, "cell state", ("i16",))
    if c0.type.quant.zero_points[0] != 0:  # type: ignore[union-attr]
        raise Unsupported("the int16 cell state must have zero point 0")
    hidden_scale = _symmetric_scale(h0.type, "hidden state", (activation,))
    hidden_zp = h0.type.quant.zero_points[0]  # type: ignore[union-attr]
    project, recur = contraction(ctx, x, h0, layout.units)
    b = GraphBuilder(ctx.graph)
    q15 = lstm.GATE_OUTPUT_SCALE
    forget_mul = lstm.mul_params(q15, cell_scale, cell_scale)
    input_mul = lstm.mul_params(q15, q15, cell_scale)
    output_mul = lstm.mul_params(q15, q15, hidden_scale, activation, hidden_zp)
    cell_clip = float(np.float32(ctx.option("cell_clip")))
    limit = lstm.quantized_cell_clip(cell_clip, cell_scale)
    tanh_shift = lstm.tanh_left_shift(lstm.cell_scale_power(cell_scale))
    table = lstm.table_constant(b)
    h, c = h0, c0
    outputs = []
    for projected in _step_slices(ctx, project, layout):
        pre = lstm.saturating_add(b, projected, recur(h))
        sigmoids, g = _gates(ctx, pre, layout.units)
        i, f, o = _split(ctx, lstm.logistic16(b, sigmoids, table), layout.units)
        g = lstm.tanh16(b, g, table)  # the cell gate: Tanh at cell_state_scale_power -12
        c = lstm.saturating_add(b, lstm.mul(b, f, c, forget_mul), lstm.mul(b, i, g, input_mul))
        if cell_clip > 0:
            c = lstm.clip(b, c, limit)
        h = lstm.mul(b, lstm.tanh16(b, c, table, tanh_shift), o, output_mul, activation,
                     h0.type.quant)
        outputs.append(h)
    _store(ctx, h, c)
    return _stack(ctx, outputs, layout)


def lstm_int8(ctx: OpContext) -> Tensor:
    """UNIDIRECTIONAL_SEQUENCE_LSTM, int8 activations and weights, int16 cell state,
    int32 biases (EvalLstm<int8_t, int8_t, int16_t, int32_t>)."""
    return _quantized(ctx, "i8", int8_gate_contraction)


def lstm_int16(ctx: OpContext) -> Tensor:
    """UNIDIRECTIONAL_SEQUENCE_LSTM 16x8: int16 activations, int8 weights, int16 cell
    state, int64 biases (EvalLstm<int16_t, int8_t, int16_t, int64_t>)."""
    return _quantized(ctx, "i16", int16_gate_contraction)


__all__ = ["BIASES", "CELL_STATE", "HIDDEN_STATE", "INPUT_WEIGHTS", "Layout",
           "RECURRENT_WEIGHTS", "lstm_float", "lstm_int16", "lstm_int8"]
