"""An int8 `pad` of the innermost dim up to whole words, as one runtime call.

schedule/pad_channels.py pads a pointwise int8 layer's input channels C (not a multiple
of 4) to C4 = C rounded up to 4 in a dispatch of its own, so that the layer's packed
steps read aligned words. Generated as a loop, that copy tested every byte's bounds
and stored it alone: about 5 instructions a byte, 37 K instructions for a 19x6 map of
61 channels, 14 % of the 1x1 convolution it feeds (0.88 MAC per instruction against
1.08 with 64 channels, cortex-m4). On the DSP targets it is one call of
runtime_c/ukernel/dsp/mrt_pad_dsp.c's `mrt_pad_rows_s8` instead: a pixel's whole words
by unaligned LDR, stored 4 at a time, its last bytes as the word ending at its last
byte shifted down with the pad value ORed in (about 0.7 instructions a byte).

Applies to a kernel whose body is exactly an identity-indexed, bounds-checked load of
one int8 operand with a constant pad value, whose shape equals the result's but for the
innermost dim, which grows by 1 to 3 to a multiple of 4 from at least 4; its schedule
must run forward (a result written over its operand above it would not be safe).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.kernel.form import Const, Index, Kernel, Load
from toolchain.loops.schedule import LoopSchedule

__all__ = ["PAD_ROWS_SIMD", "emit_pad_rows", "pad_rows_shape"]

I32 = ir.IntType(32)
PTR = ir.PointerType()
SYMBOL = "mrt_pad_rows_s8"
WORD = 4
# The SIMD kinds whose runtime has the call (runtime_c/ukernel/<simd>/mrt_pad_dsp.c).
PAD_ROWS_SIMD = frozenset({"dsp"})


def pad_rows_shape(k: Kernel, schedule: LoopSchedule | None) -> tuple[int, int, int] | None:
    """(rows, c, pad value) where kernel `k` is an int8 pad of its innermost dim from c
    to c rounded up to a whole word (c >= 4) with constant value, run forward; else
    None."""
    body = k.body
    if k.is_reduction or not isinstance(body, Load) or body.valid is not None or \
            not isinstance(body.pad, Const) or len(k.operands) != 1:
        return None
    (x,) = k.operands
    if x.dtype.name != "i8" or k.result.dtype.name != "i8" or \
            len(x.shape) != len(k.domain) or k.n_parallel != len(k.domain):
        return None
    if body.index != tuple(Index(d) for d in range(len(k.domain))):
        return None
    c, c4 = x.shape[-1], k.domain[-1]
    if c < WORD or c % WORD == 0 or c4 != -(-c // WORD) * WORD or \
            tuple(x.shape[:-1]) != tuple(k.domain[:-1]):
        return None
    if schedule is not None and any(n.reverse for n in schedule.nests):
        return None
    rows = 1
    for n in k.domain[:-1]:
        rows *= n
    return (rows, c, int(body.pad.value)) if rows else None


def emit_pad_rows(module: ir.Module, k: Kernel, shape: tuple[int, int, int]) -> ir.Function:
    """`void NAME(ptr bindings)` for pad kernel `k` (pad_rows_shape gave `shape`): one
    call of mrt_pad_rows_s8."""
    rows, c, value = shape
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), k.name)
    fn.linkage = "hidden"
    fn.section = f".text.{k.name}"
    fn.attributes.add("nounwind")
    fn.attributes.add("norecurse")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bindings = fn.args[0]
    src, dst = (b.load(b.gep(bindings, [ir.Constant(I32, i)], inbounds=True,
                             source_etype=PTR), typ=PTR) for i in (0, 1))
    callee = module.globals.get(SYMBOL) or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I32, I32, I32]), SYMBOL)
    r = c % WORD
    lanes = (value & 0xFF) * 0x01010101
    pad_hi = lanes & ~((1 << (8 * r)) - 1) & 0xFFFFFFFF
    b.call(callee, [dst, src, ir.Constant(I32, rows), ir.Constant(I32, c),
                    ir.Constant(I32, pad_hi - (1 << 32) if pad_hi >= 1 << 31 else pad_hi)])
    b.ret_void()
    return fn
