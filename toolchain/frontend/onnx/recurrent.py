"""ONNX's recurrent layers LSTM, GRU and RNN, in inference form, as graph constructions.

The input projection X W^T + biases is computed for every step at once by one
dot_general; then each direction's steps run either unrolled (one H R^T product and
the gates' element-wise work per step, straight-line) or as one `while` whose body is
one step (carried: i, H, C and Y; step i reads row i of the projection and writes row
i of Y). The choice is by flash, which is what a microcontroller runs out of: an
unrolled step is dispatches of its own. Measured on cortex-m4 (LSTM, input 16, hidden
32, batch 1; weights 24.6 KB of it):

| steps | unrolled flash | while flash | unrolled instructions | while instructions |
|---|---|---|---|---|
| 4 | 32,836 | 31,036 | 129,604 | 147,802 |
| 16 | 50,552 | 30,532 | 610,730 | 673,022 |
| 64 | 120,052 | 30,532 | 2,542,808 | 3,898,922 |

An unrolled step costs about 1.45 KB and the loop's machinery about 3.5 KB, so the
`while` is smaller from 3 steps on: sequences up to MAX_UNROLLED_STEPS (a streaming
model's one step per call) are unrolled, longer ones loop. (The loop's extra
instructions grow with the sequence: Y is carried whole through each iteration.)

What the ONNX spec defines, all of it: the directions forward, reverse and
bidirectional; the activations by name with activation_alpha / activation_beta
(rnn_activations.py); clip (gate pre-activations clamped to [-clip, clip]);
input_forget (LSTM: the forget gate is 1 - the input gate); linear_before_reset
(GRU); the optional inputs B, sequence_lens, initial_h, initial_c and P (peepholes);
layout 0 ([seq, batch, ...]) and 1 ([batch, seq, ...]); the outputs Y, Y_h and Y_c.
sequence_lens may be computed at run time: a step past a batch entry's length leaves
its state as it was and writes zeros to Y (onnxruntime's rule; in reverse a batch
entry's steps start at its own last element).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.rnn_activations import Bound, bind_activations
from toolchain.frontend.onnx.shape_ops import slice_axis
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_node
from toolchain.types import TensorType, dtype

# Sequences up to this many steps are unrolled, longer ones become a `while` (see the
# module docstring for the measurements behind it).
MAX_UNROLLED_STEPS = 2


@dataclass
class StepInputs:
    """What one time step of one direction reads."""

    xw: Tensor  # [batch, gates * hidden]: X W^T + the biases added before the step
    h: Tensor  # [batch, hidden]
    c: Tensor | None  # [batch, hidden], LSTM only
    r: Tensor  # [gates * hidden, hidden]
    rb_late: Tensor | None  # GRU linear_before_reset: Rbh, added to H Rh^T before r
    p: list[Tensor]  # LSTM peepholes [batch, hidden] each: i, o, f (empty: none)


def _add(ctx: OpContext, a: Tensor, b: Tensor) -> Tensor:
    return ctx.node("add", [a, b])


def _mul(ctx: OpContext, a: Tensor, b: Tensor) -> Tensor:
    return ctx.node("multiply", [a, b])


def _dot_t(ctx: OpContext, a: Tensor, w: Tensor) -> Tensor:
    """a [n, k] times w [m, k] transposed: [n, m]."""
    return ctx.node("dot_general", [a, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,),
                    rhs_contract=(1,), dtype=a.type.dtype.name)


def _gate(ctx: OpContext, t: Tensor, k: int, hidden: int) -> Tensor:
    """Gate k of a [batch, gates * hidden] tensor."""
    return slice_axis(ctx, t, 1, k * hidden, (k + 1) * hidden)


def _clipped(ctx: OpContext, x: Tensor, clip: float | None) -> Tensor:
    if clip is None:
        return x
    return ctx.node("clamp", [ctx.filled(-clip, x), x, ctx.filled(clip, x)])


def _activate(ctx: OpContext, f: Bound, x: Tensor, clip: float | None) -> Tensor:
    return f(ctx, _clipped(ctx, x, clip))


def _lstm_step(ctx: OpContext, s: StepInputs, acts: list[Bound], clip: float | None,
               input_forget: bool) -> tuple[Tensor, Tensor | None]:
    """ONNX's LSTM equations; gates in W's row order i, o, f, c."""
    assert s.c is not None
    hidden = s.h.type.shape[1]
    pre = _add(ctx, s.xw, _dot_t(ctx, s.h, s.r))
    f, g, h = acts
    gi, go, gf, gc = (_gate(ctx, pre, k, hidden) for k in range(4))
    if s.p:
        gi = _add(ctx, gi, _mul(ctx, s.p[0], s.c))
    i = _activate(ctx, f, gi, clip)
    if input_forget:
        forget = ctx.node("subtract", [ctx.filled(1.0, i), i])
    else:
        if s.p:
            gf = _add(ctx, gf, _mul(ctx, s.p[2], s.c))
        forget = _activate(ctx, f, gf, clip)
    cell = _add(ctx, _mul(ctx, forget, s.c), _mul(ctx, i, _activate(ctx, g, gc, clip)))
    if s.p:
        go = _add(ctx, go, _mul(ctx, s.p[1], cell))
    o = _activate(ctx, f, go, clip)
    return _mul(ctx, o, h(ctx, cell)), cell


def _gru_step(ctx: OpContext, s: StepInputs, acts: list[Bound], clip: float | None,
              _input_forget: bool) -> tuple[Tensor, Tensor | None]:
    """ONNX's GRU equations; gates in W's row order z, r, h. Without linear_before_reset
    the reset gate scales H before Rh, with it H Rh^T + Rbh."""
    hidden = s.h.type.shape[1]
    f, g = acts
    r_zr = slice_axis(ctx, s.r, 0, 0, 2 * hidden)
    r_h = slice_axis(ctx, s.r, 0, 2 * hidden, 3 * hidden)
    pre_zr = _add(ctx, slice_axis(ctx, s.xw, 1, 0, 2 * hidden), _dot_t(ctx, s.h, r_zr))
    z = _activate(ctx, f, _gate(ctx, pre_zr, 0, hidden), clip)
    r = _activate(ctx, f, _gate(ctx, pre_zr, 1, hidden), clip)
    xh = _gate(ctx, s.xw, 2, hidden)
    if s.rb_late is not None:
        hr = _add(ctx, _dot_t(ctx, s.h, r_h), s.rb_late)
        pre_h = _add(ctx, xh, _mul(ctx, r, hr))
    else:
        pre_h = _add(ctx, xh, _dot_t(ctx, _mul(ctx, r, s.h), r_h))
    candidate = _activate(ctx, g, pre_h, clip)
    # (1 - z) * h~ + z * H
    keep = _mul(ctx, z, s.h)
    new = _mul(ctx, ctx.node("subtract", [ctx.filled(1.0, z), z]), candidate)
    return _add(ctx, new, keep), None


def _rnn_step(ctx: OpContext, s: StepInputs, acts: list[Bound], clip: float | None,
              _input_forget: bool) -> tuple[Tensor, Tensor | None]:
    """H = f(X W^T + H R^T + Wb + Rb)."""
    (f,) = acts
    return _activate(ctx, f, _add(ctx, s.xw, _dot_t(ctx, s.h, s.r)), clip), None


@dataclass(frozen=True)
class Cell:
    """One recurrent op: its gate count, default activations (per direction) and step."""

    gates: int
    activations: tuple[str, ...]
    step: Callable[..., tuple[Tensor, Tensor | None]]
    has_cell_state: bool = False


CELLS: dict[str, Cell] = {
    "LSTM": Cell(4, ("Sigmoid", "Tanh", "Tanh"), _lstm_step, has_cell_state=True),
    "GRU": Cell(3, ("Sigmoid", "Tanh"), _gru_step),
    "RNN": Cell(1, ("Tanh",), _rnn_step),
}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


def _state(ctx: OpContext, i: int, layout: int, shape: tuple[int, int, int],
           like: Tensor, what: str) -> Tensor:
    """Optional state input i as [dirs, batch, hidden] (zeros when absent)."""
    if not ctx.has_input(i):
        zero = ctx.constant(0.0, like.type.dtype)
        return ctx.broadcast(zero, shape, ())
    t = ctx.input(i)
    if layout:
        t = _transpose(ctx, t, (1, 0, 2))
    if tuple(t.type.shape) != shape:
        raise Unsupported(f"{what} has shape {list(ctx.shape(i))}; "
                          f"{list(shape if not layout else (shape[1], shape[0], shape[2]))} "
                          "is expected")
    return t


def _transpose(ctx: OpContext, t: Tensor, perm: tuple[int, ...]) -> Tensor:
    return ctx.node("transpose", [t], permutation=perm)


def _weights(ctx: OpContext, i: int, shape: tuple[int, ...], what: str) -> Tensor:
    if ctx.shape(i) != shape:
        raise Unsupported(f"{what} has shape {list(ctx.shape(i))}; {list(shape)} is "
                          "expected")
    return ctx.input(i)


def _lengths(ctx: OpContext, seq: int, batch: int) -> Tensor | None:
    """sequence_lens as a tensor; None when every batch entry runs the whole sequence
    (no sequence_lens, or constant and full)."""
    if not ctx.has_input(4):
        return None
    lens = ctx.value(4)
    if isinstance(lens, np.ndarray):
        if lens.shape != (batch,):
            raise Unsupported(f"sequence_lens has shape {list(lens.shape)}; [{batch}] is "
                              "expected")
        if np.all(lens == seq):
            return None
        if np.any(lens < 0) or np.any(lens > seq):
            raise Unsupported(f"sequence_lens {lens.tolist()} must be within [0, {seq}]")
    t = ctx.input(4)
    if tuple(t.type.shape) != (batch,):
        raise Unsupported(f"sequence_lens has shape {list(t.type.shape)}; [{batch}] is "
                          "expected")
    return t


@dataclass
class Direction:
    """What the steps of one direction read, and how they run."""

    cell: Cell
    xw: Tensor  # [seq, batch, gates * hidden]
    r: Tensor
    rb_late: Tensor | None
    p: list[Tensor]
    h0: Tensor  # [batch, hidden]
    c0: Tensor | None
    acts: list[Bound]
    clip: float | None
    input_forget: bool
    reverse: bool
    lens: Tensor | None  # [batch] sequence_lens, or None: every entry runs every step


def _step(ctx: OpContext, d: Direction, pos: Tensor | None, xw_t: Tensor, h: Tensor,
          c: Tensor | None, r: Tensor, rb_late: Tensor | None, p: list[Tensor],
          lens: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
    """One step at time index `pos` (a scalar of sequence_lens' type when it is given):
    (Y's row, new H, new C). A batch entry past its length keeps its state and gets a
    zero row."""
    new_h, new_c = d.cell.step(ctx, StepInputs(xw_t, h, c, r, rb_late, p), d.acts, d.clip,
                               d.input_forget)
    if lens is None:
        return new_h, new_h, new_c
    assert pos is not None
    shape = tuple(h.type.shape)
    now = ctx.broadcast(pos, (shape[0],), ())
    run = ctx.broadcast(ctx.node("compare", [now, lens], direction="LT"), shape, (0,))
    row = ctx.node("select", [run, new_h, ctx.filled(0.0, new_h)])
    new_h = ctx.node("select", [run, new_h, h])
    if new_c is not None:
        assert c is not None
        new_c = ctx.node("select", [run, new_c, c])
    return row, new_h, new_c


def _unrolled(ctx: OpContext, d: Direction) -> tuple[Tensor, Tensor, Tensor | None]:
    """The direction's steps one after another: (Y [seq, batch, hidden], H, C)."""
    seq, batch, gh = d.xw.type.shape
    h, c = d.h0, d.c0
    rows: list[Tensor] = [d.h0] * seq
    for step in (range(seq - 1, -1, -1) if d.reverse else range(seq)):
        xw_t = ctx.reshape(slice_axis(ctx, d.xw, 0, step, step + 1), (batch, gh))
        pos = ctx.constant(step, d.lens.type.dtype) if d.lens is not None else None
        rows[step], h, c = _step(ctx, d, pos, xw_t, h, c, d.r, d.rb_late, d.p, d.lens)
    hidden = h.type.shape[1]
    y = ctx.node("concatenate", [ctx.reshape(o, (1, batch, hidden)) for o in rows],
                 dimension=0)
    return y, h, c


def _looped(ctx: OpContext, d: Direction) -> tuple[Tensor, Tensor, Tensor | None]:
    """The direction's steps as a `while` over i: carried (i, H, C, Y), the step's
    operands captured; step i reads row i (reverse: seq - 1 - i) of X W^T and writes
    that row of Y."""
    seq, batch, gh = d.xw.type.shape
    hidden = d.h0.type.shape[1]
    i64 = dtype("i64")
    y_type = TensorType((seq, batch, hidden), d.h0.type.dtype)
    body = Graph("body")
    i = body.add_input(TensorType((), i64), "i")
    h = body.add_input(d.h0.type, "h")
    c = body.add_input(d.c0.type, "c") if d.c0 is not None else None
    y = body.add_input(y_type, "y")
    carried = 4 if c is not None else 3
    captured = [d.xw, d.r, *([d.rb_late] if d.rb_late is not None else []), *d.p,
                *([d.lens] if d.lens is not None else [])]
    inner = [body.add_input(t.type) for t in captured]
    xw, r = inner[0], inner[1]
    k = 2 + (d.rb_late is not None)
    rb_late = inner[2] if d.rb_late is not None else None
    p, lens = inner[k:k + len(d.p)], (inner[-1] if d.lens is not None else None)
    b = ctx.building(body)
    zero = b.constant(0, i64)
    pos = b.node("subtract", [b.constant(seq - 1, i64), i]) if d.reverse else i
    xw_t = b.reshape(b.node("dynamic_slice", [xw, pos, zero, zero],
                            slice_sizes=(1, batch, gh)), (batch, gh))
    now = b.node("convert", [pos], dtype=lens.type.dtype.name) if lens is not None else None
    row, new_h, new_c = _step(b, d, now, xw_t, h, c, r, rb_late, p, lens)
    new_y = b.node("dynamic_update_slice", [y, b.reshape(row, (1, batch, hidden)), pos,
                                            zero, zero])
    body.outputs = [b.node("add", [i, b.constant(1, i64)]), new_h,
                    *([new_c] if new_c is not None else []), new_y]
    cond = Graph("cond")
    for t in body.inputs:
        cond.add_input(t.type)
    cb = ctx.building(cond)
    cond.outputs = [cb.node("compare", [cond.inputs[0], cb.constant(seq, i64)],
                            direction="LT")]
    start = [ctx.constant(0, i64), d.h0, *([d.c0] if d.c0 is not None else []),
             ctx.broadcast(ctx.constant(0.0, y_type.dtype), (seq, batch, hidden), ())]
    node = ctx.graph.add("while", start + captured, [t.type for t in start],
                         regions=[cond, body])
    err = verify_node(node)
    if err is not None:
        raise Unsupported(err.message)
    outs = node.outputs
    return outs[carried - 1], outs[1], (outs[2] if carried == 4 else None)


def recurrent(ctx: OpContext) -> list[Tensor | None]:
    """LSTM, GRU or RNN (the node's op type picks the cell): outputs Y, Y_h (and Y_c)."""
    cell = CELLS[ctx.info.op_type]
    x = ctx.input(0)
    if x.type.rank != 3 or not x.type.dtype.is_float:
        raise Unsupported(f"X must be a 3-D float tensor; it is {x.type}")
    layout = ctx.attr("layout", 0)
    if layout not in (0, 1):
        raise Unsupported(f"layout {layout} is not 0 or 1")
    if layout:
        x = _transpose(ctx, x, (1, 0, 2))
    seq, batch, size = x.type.shape
    direction = ctx.attr("direction", "forward")
    if direction not in DIRECTIONS:
        raise Unsupported(f"direction '{direction}' is not forward, reverse or bidirectional")
    dirs = DIRECTIONS[direction]
    r_shape = ctx.shape(2)
    if len(r_shape) != 3:
        raise Unsupported(f"R has shape {list(r_shape)}; [directions, gates * hidden, "
                          "hidden] is expected")
    hidden = ctx.attr("hidden_size", r_shape[2])
    gh = cell.gates * hidden
    w = _weights(ctx, 1, (dirs, gh, size), "W")
    r = _weights(ctx, 2, (dirs, gh, hidden), "R")
    bias = _weights(ctx, 3, (dirs, 2 * gh), "B") if ctx.has_input(3) else None
    state_shape = (dirs, batch, hidden)
    h0 = _state(ctx, 5, layout, state_shape, x, "initial_h")
    c0 = _state(ctx, 6, layout, state_shape, x, "initial_c") if cell.has_cell_state else None
    peep = (_weights(ctx, 7, (dirs, 3 * hidden), "P")
            if cell.has_cell_state and ctx.has_input(7) else None)
    names = ctx.attr("activations", list(cell.activations) * dirs)
    per_dir = len(cell.activations)
    if len(names) != per_dir * dirs:
        raise Unsupported(f"{len(names)} activations; {per_dir * dirs} are expected "
                          f"({per_dir} per direction)")
    acts = bind_activations(names, ctx.attr("activation_alpha", []),
                            ctx.attr("activation_beta", []))
    clip = ctx.attr("clip")
    if clip is not None and not clip > 0:
        raise Unsupported(f"clip {clip} must be positive")
    lbr = ctx.attr("linear_before_reset", 0) if ctx.info.op_type == "GRU" else 0
    input_forget = bool(ctx.attr("input_forget", 0))
    lens = _lengths(ctx, seq, batch)
    steps = _unrolled if seq <= MAX_UNROLLED_STEPS else _looped

    flat_x = ctx.reshape(x, (seq * batch, size))
    ys, hs, cs = [], [], []
    for k in range(dirs):
        w_d = ctx.reshape(slice_axis(ctx, w, 0, k, k + 1), (gh, size))
        r_d = ctx.reshape(slice_axis(ctx, r, 0, k, k + 1), (gh, hidden))
        xw = _dot_t(ctx, flat_x, w_d)
        rb_late = None
        if bias is not None:
            b_d = ctx.reshape(slice_axis(ctx, bias, 0, k, k + 1), (2 * gh,))
            wb, rb = slice_axis(ctx, b_d, 0, 0, gh), slice_axis(ctx, b_d, 0, gh, 2 * gh)
            if lbr:
                # Rbh goes inside r * (H Rh^T + Rbh): only Rbz, Rbr join the projection.
                rb_late = ctx.broadcast(slice_axis(ctx, rb, 0, 2 * hidden, gh),
                                        (batch, hidden), (1,))
                zeros = ctx.broadcast(ctx.constant(0.0, x.type.dtype), (hidden,), ())
                rb = ctx.node("concatenate", [slice_axis(ctx, rb, 0, 0, 2 * hidden), zeros],
                              dimension=0)
            xw = _add(ctx, xw, ctx.broadcast(_add(ctx, wb, rb), (seq * batch, gh), (1,)))
        elif lbr:
            rb_late = ctx.broadcast(ctx.constant(0.0, x.type.dtype), (batch, hidden), ())
        p = []
        if peep is not None:
            p_d = ctx.reshape(slice_axis(ctx, peep, 0, k, k + 1), (3 * hidden,))
            p = [ctx.broadcast(slice_axis(ctx, p_d, 0, j * hidden, (j + 1) * hidden),
                               (batch, hidden), (1,)) for j in range(3)]
        h = ctx.reshape(slice_axis(ctx, h0, 0, k, k + 1), (batch, hidden))
        c = (ctx.reshape(slice_axis(ctx, c0, 0, k, k + 1), (batch, hidden))
             if c0 is not None else None)
        d = Direction(cell, ctx.reshape(xw, (seq, batch, gh)), r_d, rb_late, p, h, c,
                      acts[k * per_dir:(k + 1) * per_dir], clip, input_forget,
                      direction == "reverse" or k == 1, lens)
        y, h, c = steps(ctx, d)
        ys.append(ctx.reshape(y, (seq, 1, batch, hidden)))
        hs.append(ctx.reshape(h, (1, batch, hidden)))
        if c is not None:
            cs.append(ctx.reshape(c, (1, batch, hidden)))

    def joined(parts: list[Tensor], axis: int) -> Tensor:
        return parts[0] if len(parts) == 1 else ctx.node("concatenate", parts,
                                                         dimension=axis)

    y, y_h = joined(ys, 1), joined(hs, 0)
    y_c = joined(cs, 0) if cs else None
    if layout:
        y = _transpose(ctx, y, (2, 0, 1, 3))
        y_h = _transpose(ctx, y_h, (1, 0, 2))
        y_c = _transpose(ctx, y_c, (1, 0, 2)) if y_c is not None else None
    return [y, y_h] + ([y_c] if cell.has_cell_state else [])


__all__ = ["CELLS", "MAX_UNROLLED_STEPS", "Cell", "recurrent"]
