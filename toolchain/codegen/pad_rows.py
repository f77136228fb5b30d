"""An int8 `pad` of the innermost dim up to whole words, as runtime calls.

schedule/pad_channels.py pads a pointwise int8 layer's input channels C (not a multiple
of 4) to C4 = C rounded up to 4 in a dispatch of its own, so that the layer's packed
steps read aligned words; for a window behind a SAME border (a `pad` op of its own) it
widens that pad's channels instead, kept in RAM too. Generated as a loop, such a copy
tested every byte's bounds and stored it alone: about 5 instructions a byte, 37 K
instructions for a 19x6 map of 61 channels, 14 % of the 1x1 convolution it feeds (0.88
MAC per instruction against 1.08 with 64 channels, cortex-m4). On the DSP targets it is
calls of runtime_c/ukernel/dsp/mrt_pad_dsp.c instead: `mrt_fill_words` writes the pad
value over a bordered output, then `mrt_pad_rows_s8` copies each run of pixels inside
it (a map row), a pixel's whole words by unaligned LDR, stored 4 at a time, its last
bytes as the word ending at its last byte shifted down with the pad value ORed in
(about 0.7 instructions a byte).

Applies to a kernel whose body is exactly a bounds-checked load of one int8 operand
with a constant pad value, indexed by each dim less a constant (the low padding), whose
innermost dim grows by 1 to 3 to a multiple of 4 from at least 4 (no low padding), the
other dims by any edge padding; its schedule must run forward (a result written over
its operand above it would not be safe).
"""

from __future__ import annotations

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
WORD = 4
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
    if x.dtype.name != "i8" or k.result.dtype.name != "i8" or len(x.shape) != n or \
            k.n_parallel != n or n < 2 or 0 in k.domain or 0 in x.shape:
        return None
    lows = [_low(e, d) for d, e in enumerate(body.index)]
    if any(lo is None for lo in lows) or lows[-1] != 0:
        return None
    low = tuple(int(lo) for lo in lows if lo is not None)
    c, c4 = x.shape[-1], k.domain[-1]
    if c < WORD or c % WORD == 0 or c4 != -(-c // WORD) * WORD or \
            any(lo + s > o for lo, s, o in zip(low, x.shape, k.domain, strict=True)):
        return None
    if schedule is not None and any(nest.reverse for nest in schedule.nests):
        return None
    return PadRows(tuple(x.shape), low, tuple(k.domain), int(body.pad.value))


def _callee(module: ir.Module, symbol: str, pointers: int, words: int) -> ir.Function:
    """The runtime function `symbol(ptr x pointers, i32 x words)`."""
    return module.globals.get(symbol) or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [PTR] * pointers + [I32] * words), symbol)


def _i32(v: int) -> ir.Constant:
    v &= 0xFFFFFFFF
    return ir.Constant(I32, v - (1 << 32) if v >= 1 << 31 else v)


def emit_pad_rows(module: ir.Module, k: Kernel, pad: PadRows) -> ir.Function:
    """`void NAME(ptr bindings)` for pad kernel `k` (pad_rows_shape gave `pad`): the
    bordered output filled with the pad value (mrt_fill_words), then one
    mrt_pad_rows_s8 call per run of pixels along the second innermost dim (all the
    pixels at once where only the innermost dim is padded)."""
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
    if not pad.bordered:
        b.call(rows, [dst, src, _i32(prod(pad.shape[:-1])), _i32(c), _i32(pad_hi)])
        b.ret_void()
        return fn
    b.call(_callee(module, FILL_SYMBOL, 1, 2), [dst, _i32(lanes), _i32(prod(pad.out) // WORD)])
    # One call per run: the input's pixels along dim n-2 are contiguous in both.
    outer = pad.shape[:-2]
    out_strides = [prod(pad.out[d + 1:]) for d in range(len(pad.out))]
    run_in = pad.shape[-2] * c
    first = pad.low[-2] * out_strides[-2]
    i8 = ir.IntType(8)
    loop = fn.append_basic_block("run")
    done = fn.append_basic_block("done")
    entry = b.block
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I32, name="i")
    i.add_incoming(ir.Constant(I32, 0), entry)
    # The output offset of run i: its outer index, each dim shifted by its low padding.
    offset: ir.Value = ir.Constant(I32, first)
    rest: ir.Value = i
    for d in reversed(range(len(outer))):
        idx = b.urem(rest, ir.Constant(I32, outer[d])) if d else rest
        rest = b.udiv(rest, ir.Constant(I32, outer[d])) if d else rest
        at = b.add(idx, ir.Constant(I32, pad.low[d]))
        offset = b.add(offset, b.mul(at, ir.Constant(I32, out_strides[d])))
    out_ptr = b.gep(dst, [offset], inbounds=True, source_etype=i8)
    in_ptr = b.gep(src, [b.mul(i, ir.Constant(I32, run_in))], inbounds=True, source_etype=i8)
    b.call(rows, [out_ptr, in_ptr, _i32(pad.shape[-2]), _i32(c), _i32(pad_hi)])
    nxt = b.add(i, ir.Constant(I32, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_unsigned("<", nxt, ir.Constant(I32, max(1, prod(outer)))), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return fn
