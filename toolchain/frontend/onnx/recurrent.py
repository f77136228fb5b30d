"""ONNX's recurrent layers LSTM, GRU and RNN, in inference form, as graph constructions.

The sequence is unrolled: one step of the cell per time step and direction, the input
projection X W^T + biases computed for every step at once by one dot_general before
the steps. The graph has static shapes, so the sequence length is always known; an
unrolled step is a handful of small dispatches (one H R^T product and the gates'
element-wise work), and the models this is for (a voice-activity LSTM, a keyword
spotter's GRU) run one to a few dozen steps per inference, where the unrolled form
costs little flash and no loop overhead. Sequences longer than MAX_UNROLLED_STEPS
are refused with that reason rather than emitting a firmware whose flash grows with
the sequence.

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
from toolchain.graph.ir import Tensor

# Unrolled steps per direction above which a recurrent layer is refused: each step is a
# few dispatches of its own (about a kilobyte of code on cortex-m4).
MAX_UNROLLED_STEPS = 256


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


def _step_masks(ctx: OpContext, seq: int, shape: tuple[int, int]) -> list[Tensor] | None:
    """Per time step, which batch entries it updates ([batch, hidden] booleans); None
    when every entry runs the whole sequence (no sequence_lens, or constant and full)."""
    if not ctx.has_input(4):
        return None
    lens = ctx.value(4)
    if isinstance(lens, np.ndarray):
        if lens.shape != (shape[0],):
            raise Unsupported(f"sequence_lens has shape {list(lens.shape)}; [{shape[0]}] is "
                              "expected")
        if np.all(lens == seq):
            return None
        if np.any(lens < 0) or np.any(lens > seq):
            raise Unsupported(f"sequence_lens {lens.tolist()} must be within [0, {seq}]")
    t = ctx.input(4)
    if tuple(t.type.shape) != (shape[0],):
        raise Unsupported(f"sequence_lens has shape {list(t.type.shape)}; [{shape[0]}] is "
                          "expected")
    masks = []
    for step in range(seq):
        now = ctx.broadcast(ctx.constant(step, t.type.dtype), (shape[0],), ())
        running = ctx.node("compare", [now, t], direction="LT")
        masks.append(ctx.broadcast(running, shape, (0,)))
    return masks


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
    if seq > MAX_UNROLLED_STEPS:
        raise Unsupported(f"a sequence of {seq} steps: minirt unrolls recurrent layers "
                          f"and takes at most {MAX_UNROLLED_STEPS}")
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
    masks = _step_masks(ctx, seq, (batch, hidden))

    flat_x = ctx.reshape(x, (seq * batch, size))
    ys, hs, cs = [], [], []
    for d in range(dirs):
        w_d = ctx.reshape(slice_axis(ctx, w, 0, d, d + 1), (gh, size))
        r_d = ctx.reshape(slice_axis(ctx, r, 0, d, d + 1), (gh, hidden))
        xw = _dot_t(ctx, flat_x, w_d)
        rb_late = None
        if bias is not None:
            b_d = ctx.reshape(slice_axis(ctx, bias, 0, d, d + 1), (2 * gh,))
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
            p_d = ctx.reshape(slice_axis(ctx, peep, 0, d, d + 1), (3 * hidden,))
            p = [ctx.broadcast(slice_axis(ctx, p_d, 0, k * hidden, (k + 1) * hidden),
                               (batch, hidden), (1,)) for k in range(3)]
        h = ctx.reshape(slice_axis(ctx, h0, 0, d, d + 1), (batch, hidden))
        c = (ctx.reshape(slice_axis(ctx, c0, 0, d, d + 1), (batch, hidden))
             if c0 is not None else None)
        reverse = direction == "reverse" or d == 1
        outs: list[Tensor | None] = [None] * seq
        for step in (range(seq - 1, -1, -1) if reverse else range(seq)):
            xw_t = slice_axis(ctx, xw, 0, step * batch, (step + 1) * batch)
            new_h, new_c = cell.step(ctx, StepInputs(xw_t, h, c, r_d, rb_late, p),
                                     acts[d * per_dir:(d + 1) * per_dir], clip,
                                     input_forget)
            if masks is not None:
                run = masks[step]
                outs[step] = ctx.node("select", [run, new_h, ctx.filled(0.0, new_h)])
                new_h = ctx.node("select", [run, new_h, h])
                if new_c is not None:
                    new_c = ctx.node("select", [run, new_c, c])
            else:
                outs[step] = new_h
            h, c = new_h, new_c
        ys.append(ctx.node("concatenate", [ctx.reshape(o, (1, 1, batch, hidden))
                                           for o in outs if o is not None], dimension=0))
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
