"""An int8 (or int16) `pad` of the innermost dim up to whole words, as runtime calls.

schedule/pad_channels.py pads a pointwise int8 layer's input channels C (not a multiple
of 4) to C4 = C rounded up to 4 in a dispatch of its own, so that the layer's packed
steps read aligned words; for a window behind a SAME border (a `pad` op of its own) it
widens that pad's channels instead, kept in RAM too. Generated as a loop, such a copy
tested every byte's bounds and stored it alone: about 5 instructions a byte, 37 K
instructions for a 19x6 map of 61 channels, 14 % of the 1x1 convolution it feeds (0.88
MAC per instruction against 1.08 with 64 channels, cortex-m4). On the DSP targets it is
calls of runtime_c/ukernel/dsp/mrt_pad_dsp.c instead, output row by output row (a
run of pixels): `mrt_fill_words` writes the pad value over a border, `mrt_pad_rows_s8`
copies the row's pixels, each one's whole words by unaligned LDR, stored 4 at a time,
its last bytes as the word ending at its last byte shifted down with the pad value
ORed in (about 0.7 instructions a byte). The arena plan may have put the output over
its input for the generated loop's order (schedule/overlap.py): the calls load every
byte at or before that loop would and store at or after it, so that stays safe.

Applies to a kernel whose body is exactly a bounds-checked load of one int8 operand
(or int16, its rows taken as bytes: a 16x8 layer's odd channel count padded to a pair,
schedule/pad_channels16.py, with a pad value whose two bytes are equal)
with a constant pad value, indexed by each dim less a constant (the low padding), whose
innermost dim grows by 1 to 3 to a multiple of 4 from at least 4 (no low padding), the
other dims by any edge padding; its schedule must run forward one element at a time
(what the arena plan's overlap was checked for; a result written over its operand
above it, for a reversed nest, would not be safe).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from llvmlite import ir

from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load
from toolchain.loops.schedule import LoopSchedule

__all__ = ["PAD_ROWS_SIMD", "PadRows", "emit_pad_rows", "pad_rows_shape"]

I32 = ir.IntType(32)
PTR = ir.PointerType()
ROWS_SYMBOL = "mrt_pad_rows_s8"
FILL_SYMBOL = "mrt_fill_words"
# A border alone around pixels of C bytes, C no multiple of 4 (at any byte).
FILL_BYTES_SYMBOL = "mrt_fill_bytes_s8"
COPY_BYTES_SYMBOL = "mrt_copy_bytes_s8"
# The same around pixels of whole words (mrt_fill_words for the border).
COPY_WORDS_SYMBOL = "mrt_copy_words_s8"
WORD = 4
# The element types the calls copy, by their bytes: int16 rows as bytes (twice as many).
ELEMENT_BYTES = {"i8": 1, "i16": 2}
# The SIMD kinds whose runtime has the calls (runtime_c/ukernel/<simd>/mrt_pad_dsp.c).
PAD_ROWS_SIMD = frozenset({"dsp"})


@dataclass(frozen=True)
class PadRows:
    """An int8 pad to whole-word pixels: the input's shape, each dim's low padding
    (the innermost's is 0), the output's shape and the pad value."""

    shape: tuple[int, ...]
    low: tuple[int, ...]
    out: tuple[int, ...]
    value: int

    @property
    def bordered(self) -> bool:
        """Whether any dim but the innermost is padded (the output then filled first)."""
        return self.shape[:-1] != self.out[:-1]


def _low(e: Expr, d: int) -> int | None:
    """l where index expression `e` is `Index(d) - l` (l >= 0), else None."""
    if e == Index(d):
        return 0
    if isinstance(e, Apply) and e.op == "add" and len(e.args) == 2 and \
            e.args[0] == Index(d) and isinstance(e.args[1], Const) and \
            int(e.args[1].value) <= 0:
        return -int(e.args[1].value)
    return None


def pad_rows_shape(k: Kernel, schedule: LoopSchedule | None) -> PadRows | None:
    """The PadRows of kernel `k` where it is such a pad run forward; else None."""
    body = k.body
    if k.is_reduction or not isinstance(body, Load) or body.valid is not None or \
            not isinstance(body.pad, Const) or len(k.operands) != 1:
        return None
    (x,) = k.operands
    n = len(k.domain)
    size = ELEMENT_BYTES.get(x.dtype.name)
    if size is None or k.result.dtype.name != x.dtype.name or len(x.shape) != n or \
            k.n_parallel != n or n < 2 or 0 in k.domain or 0 in x.shape:
        return None
    value = int(body.pad.value)
    if size == 2 and value & 0xFF != (value >> 8) & 0xFF:
        return None  # as bytes, the pad value must be one byte repeated
    lows = [_low(e, d) for d, e in enumerate(body.index)]
    if any(lo is None for lo in lows) or lows[-1] != 0:
        return None
    low = tuple(int(lo) for lo in lows if lo is not None)
    # The innermost dim in bytes: an int16 pad of an odd C channels to C + 1 is an int8
    # pad of 2C bytes to 2C + 2, a multiple of 4 (schedule/pad_channels16.py). The
    # channels padded to whole words (from C no multiple of 4), or a border alone around
    # pixels of any C from 4 bytes (schedule/pad_channels.py keeps such a SAME border in
    # RAM for a window: the byte calls).
    c, c4 = x.shape[-1] * size, k.domain[-1] * size
    border_alone = c4 == c and tuple(x.shape[:-1]) != tuple(k.domain[:-1])
    if c < WORD or not (border_alone or (c % WORD and c4 == -(-c // WORD) * WORD)) or \
            any(lo + s > o for lo, s, o in zip(low, x.shape, k.domain, strict=True)):
        return None
    # Forward, one element at a time: the order the calls keep to (their loads at or
    # before it, their stores at or after it), which a tile of several pixels or a
    # reversed nest would not be.
    if schedule is not None and any(nest.reverse or nest.blocks or nest.vector
                                    for nest in schedule.nests):
        return None
    return PadRows((*x.shape[:-1], c), low, (*k.domain[:-1], c4), value)


def _callee(module: ir.Module, symbol: str, pointers: int, words: int) -> ir.Function:
    """The runtime function `symbol(ptr x pointers, i32 x words)`."""
    return module.globals.get(symbol) or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [PTR] * pointers + [I32] * words), symbol)


def _i32(v: int) -> ir.Constant:
    v &= 0xFFFFFFFF
    return ir.Constant(I32, v - (1 << 32) if v >= 1 << 31 else v)


def emit_pad_rows(module: ir.Module, k: Kernel, pad: PadRows) -> ir.Function:
    """`void NAME(ptr bindings)` for pad kernel `k` (pad_rows_shape gave `pad`): one
    mrt_pad_rows_s8 call over every pixel where only the innermost dim is padded, else
    per output row (a run of pixels along the second innermost dim) its borders
    filled with the pad value (mrt_fill_words) and its pixels copied by one call."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), k.name)
    fn.linkage = "hidden"
    fn.section = f".text.{k.name}"
    fn.attributes.add("nounwind")
    fn.attributes.add("norecurse")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bindings = fn.args[0]
    src, dst = (b.load(b.gep(bindings, [ir.Constant(I32, i)], inbounds=True,
                             source_etype=PTR), typ=PTR) for i in (0, 1))
    c = pad.shape[-1]
    lanes = (pad.value & 0xFF) * 0x01010101
    pad_hi = lanes & ~((1 << (8 * (c % WORD))) - 1)
    rows = _callee(module, ROWS_SYMBOL, 2, 3)
    if pad.out[-1] == c:
        return _bytes_border(module, b, fn, pad, src, dst, lanes)
    if not pad.bordered:
        b.call(rows, [dst, src, _i32(prod(pad.shape[:-1])), _i32(c), _i32(pad_hi)])
        b.ret_void()
        return fn
    return _row_loop(b, fn, pad, src, dst, _callee(module, FILL_SYMBOL, 1, 2), lanes, WORD,
                     lambda at, row: b.call(rows, [at, row, _i32(pad.shape[-2]), _i32(c),
                                                   _i32(pad_hi)]))


def _bytes_border(module: ir.Module, b: ir.IRBuilder, fn: ir.Function, pad: PadRows,
                  src: ir.Value, dst: ir.Value, lanes: int) -> ir.Function:
    """The body of emit_pad_rows for a border alone (the channels, C bytes a pixel and
    no multiple of 4, as they are: schedule/pad_channels.py keeps such a SAME border
    in RAM for a window whose rows merge, or around whole words of channels): per
    output row, front to back, the border before it, its pixels and the border after
    it (mrt_fill_bytes_s8, mrt_copy_bytes_s8: unaligned words; for whole-word pixels
    mrt_fill_words and mrt_copy_words_s8, 4 words a store), or a whole border row. The
    generated loop took about 5 instructions a byte (14.8 K for 3x3 over 13 channels
    on 19x6)."""
    c = pad.shape[-1]
    # Whole words a pixel: every row and border starts on a word of the output (word-
    # aligned, as mrt_pad_rows_s8's), so the word calls, 4 a store.
    words = c % WORD == 0
    fill = _callee(module, FILL_SYMBOL if words else FILL_BYTES_SYMBOL, 1, 2)
    copy = _callee(module, COPY_WORDS_SYMBOL if words else COPY_BYTES_SYMBOL, 2, 1)
    unit = WORD if words else 1  # the calls' counts: words or bytes
    return _row_loop(b, fn, pad, src, dst, fill, lanes, unit,
                     lambda at, row: b.call(copy, [at, row, _i32(pad.shape[-2] * c // unit)]))


def _row_loop(b: ir.IRBuilder, fn: ir.Function, pad: PadRows, src: ir.Value, dst: ir.Value,
              fill: ir.Function, lanes: int, unit: int,
              copy_row: Callable[[ir.Value, ir.Value], object]) -> ir.Function:
    """The rest of `fn`: output rows (a run of pixels along dim n-2) front to back, each
    a border row filled, or its left border, its pixels (`copy_row(at, source row)`)
    and its right border, `fill` counting in units of `unit` bytes: every store at or
    after the generated loop's (the module docstring)."""
    c, c_out = pad.shape[-1], pad.out[-1]
    outer_out, outer_in = pad.out[:-2], pad.shape[:-2]
    in_strides = [prod(outer_in[d + 1:]) for d in range(len(outer_in))]  # in rows
    row_out = pad.out[-2] * c_out
    left = pad.low[-2] * c_out
    right = (pad.out[-2] - pad.low[-2] - pad.shape[-2]) * c_out
    i8 = ir.IntType(8)
    loop = fn.append_basic_block("row")
    inside_bb = fn.append_basic_block("inside")
    border_bb = fn.append_basic_block("border")
    step = fn.append_basic_block("next")
    done = fn.append_basic_block("done")
    entry = b.block
    b.branch(loop)
    b.position_at_end(loop)
    o = b.phi(I32, name="o")
    o.add_incoming(ir.Constant(I32, 0), entry)
    inside: ir.Value = ir.Constant(ir.IntType(1), 1)
    in_row: ir.Value = ir.Constant(I32, 0)
    rest: ir.Value = o
    for d in reversed(range(len(outer_out))):
        idx = b.urem(rest, ir.Constant(I32, outer_out[d])) if d else rest
        rest = b.udiv(rest, ir.Constant(I32, outer_out[d])) if d else rest
        at = b.sub(idx, ir.Constant(I32, pad.low[d]))
        inside = b.and_(inside, b.icmp_unsigned("<", at, ir.Constant(I32, outer_in[d])))
        in_row = b.add(in_row, b.mul(at, ir.Constant(I32, in_strides[d])))
    out_row = b.gep(dst, [b.mul(o, ir.Constant(I32, row_out))], inbounds=True,
                    source_etype=i8)
    b.cbranch(inside, inside_bb, border_bb)
    b.position_at_end(inside_bb)
    if left:
        b.call(fill, [out_row, _i32(lanes), _i32(left // unit)])
    src_row = b.gep(src, [b.mul(in_row, ir.Constant(I32, pad.shape[-2] * c))],
                    inbounds=True, source_etype=i8)
    copy_row(b.gep(out_row, [ir.Constant(I32, left)], inbounds=True, source_etype=i8),
             src_row)
    if right:
        b.call(fill, [b.gep(out_row, [ir.Constant(I32, row_out - right)], inbounds=True,
                            source_etype=i8), _i32(lanes), _i32(right // unit)])
    b.branch(step)
    b.position_at_end(border_bb)
    b.call(fill, [out_row, _i32(lanes), _i32(row_out // unit)])
    b.branch(step)
    b.position_at_end(step)
    nxt = b.add(o, ir.Constant(I32, 1))
    o.add_incoming(nxt, step)
    b.cbranch(b.icmp_unsigned("<", nxt, ir.Constant(I32, prod(outer_out))), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return fn
