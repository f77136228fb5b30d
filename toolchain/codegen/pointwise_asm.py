"""A 1x1 int8 convolution over 2 or 3 input channels as the layer's own assembly
(codegen/asm_kernels.py): the output channels outer, the staged pixels inner.

schedule/pointwise_asm_records.py says which layers and why. The dispatch stages a block
of pixels (at most STAGED_BYTES) as words, (x0, x1) and for 3 channels (x2, -), on its
stack, then calls the kernel, which for each output channel loads its constants once
(one LDM: the doubled bias, the weight words, M, 2 K_hi and its output's offset) and
walks the block's pixels: 6 (3) pixels an LDM, per output

    SMLAD   p, p, w01, bias        (SMLABB p, x2, w2, p for a third channel)
    SMMLAR  t, p, M, 2 K_hi
    SUB     t, t, p, LSR #31       the sum's sign: TFLite's rounding half away from 0
    SSAT    t, #8, t, ASR #s       the channel's shift as an immediate
    STRB    t, [out], #channels    the next pixel's output of the channel

and a CMP and BNE a loop of 12 (6) pixels: 5.33 (6.67) instructions an output, where
the im2col kernel's pixel loop takes 8 (9). The channels come sorted by shift (the
records' order), a loop over each shift's channels. A block's pixel count that is not a
whole number of loops enters the loop's body at the pixel that leaves whole loops after
(`j` pixels early, the staged pointer moved back as far: the words read before the block
are the stack buffer's SLACK, their outputs never stored).

Registers, 2 channels: r0 the staged words, r1 the output, r2 the block's end, r3 the
temporary, r4-r7 bias, w, M, 2 K_hi, r8-r12 and lr six pixels. 3 channels: r3-r7 bias,
w01, w2, M, 2 K_hi, (r8, r9), (r10, r11), (r12, lr) three pixels; each pixel's first word
takes the sum and its second the result. Stack: [sp] the block's staged words less j
pixels, [sp + 4] the output, [sp + 8] the next channel's records, [sp + 12] the end of
the shift's records.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen import asm_kernels
from toolchain.codegen.errors import EmitError
from toolchain.kernel.form import Kernel
from toolchain.schedule.first_layer_plan import FirstLayerPlan, X, Y
from toolchain.schedule.pointwise_asm_records import (
    LOOP_PIXELS,
    PIXELS_PER_LDM,
    blocks,
    groups,
    words,
)

__all__ = ["SLACK_WORDS", "STEM", "emit_pointwise_asm", "kernel_body"]

STEM = "mrt_pw_layer"
I8, I16, I32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
PTR = ir.PointerType()
_PIXEL_REGS = ("r8", "r9", "r10", "r11", "r12", "lr")
# Words before a block's staged pixels an entry part-way through a LDM reads (never used).
SLACK_WORDS = 6


def _output(cin: int, pixel: int, shift: int, cout: int) -> list[str]:
    """The output of the pixel in slot `pixel` of a LDM's registers."""
    if cin == 2:
        p, t = _PIXEL_REGS[pixel], "r3"
        head = [f"smlad {p}, {p}, r5, r4"]
    else:
        p, t = _PIXEL_REGS[2 * pixel], _PIXEL_REGS[2 * pixel + 1]
        head = [f"smlad {p}, {p}, r4, r3", f"smlabb {p}, {t}, r5, {p}"]
    return head + [f"smmlar {t}, {p}, r6, r7", f"sub {t}, {t}, {p}, lsr #31",
                   f"ssat {t}, #8, {t}, asr #{shift}", f"strb {t}, [r1], #{cout}"]


def _group(cin: int, shift: int, channels: int, pixels: int, cout: int, label: int
           ) -> list[str]:
    """The loop over one shift's `channels`, each over the block's `pixels` (labels
    from `label`: its channel loop, its pixel loop, the entry's targets)."""
    per_ldm, loop = PIXELS_PER_LDM[cin], LOOP_PIXELS[cin]
    stride = 4 * (words(cin) + 4)  # a channel's record
    rec = "r3" if cin == 2 else "r9"
    regs = "{r4-r8}" if cin == 2 else "{r3-r8}"  # the constants, r8 the offset
    ldm = "{" + ", ".join(_PIXEL_REGS[:per_ldm * words(cin)]) + "}"
    bytes_per = 4 * words(cin)
    j = (loop - pixels % loop) % loop  # the body's pixels before the block's first
    chan, body = f"{label}", f"{label + 1}"
    code = []
    if channels > 1:
        span = channels * stride  # ADDW's immediate reaches 4095
        code += [f"ldr {rec}, [sp, #8]"]
        code += [f"add {rec}, {rec}, #{span}"] if span <= 4095 else \
            [f"movw r2, #{span}", f"add {rec}, {rec}, r2"]
        code += [f"str {rec}, [sp, #12]", f"{chan}:"]
    code += [f"ldr {rec}, [sp, #8]", f"ldm {rec}!, {regs}", f"str {rec}, [sp, #8]",
             "ldm sp, {r0, r1}", "add r1, r1, r8", f"add r2, r0, #{bytes_per * (j + pixels)}"]
    # The entry: at the body's pixel j, the LDM holding it done first.
    group, first = divmod(j, per_ldm)
    if group:
        code.append(f"add r0, r0, #{bytes_per * per_ldm * group}")
    if first:
        code += [f"ldm r0!, {ldm}", f"b {label + 2 + j}f"]
    elif group:
        code.append(f"b {label + 2 + j}f")
    code.append(f"{body}:")
    for i in range(loop):
        if i % per_ldm == 0:
            if i and i == j:
                code.append(f"{label + 2 + i}:")
            code.append(f"ldm r0!, {ldm}")
        elif i == j:
            code.append(f"{label + 2 + i}:")
        code += _output(cin, i % per_ldm, shift, cout)
    code += ["cmp r0, r2", f"bne {body}b"]
    if channels > 1:
        code += [f"ldr {rec}, [sp, #8]", "ldr r2, [sp, #12]", f"cmp {rec}, r2",
                 f"bne {chan}b"]
    return code


def kernel_body(cin: int, shifts: tuple[int, ...], pixels: int, cout: int) -> str:
    """The assembly of a call over `pixels` staged pixels of `cin` (2, 3) channels to
    `cout` outputs each, the records' channels of `shifts` (1-31, sorted: their order).
    Arguments: r0 the block's staged words, r1 the block's first output, r2 the records
    past their pad word."""
    if cin not in PIXELS_PER_LDM or not all(1 <= s <= 31 for s in shifts) or \
            not 1 <= cout <= 255 or pixels < 1:
        raise ValueError("a pointwise kernel needs 2-3 channels, shifts of 1-31 and "
                         "1-255 outputs")
    loop = LOOP_PIXELS[cin]
    j = (loop - pixels % loop) % loop
    back = 4 * words(cin) * j
    code = [f"sub r0, r0, #{back}"] if back else []
    code += ["push {r0-r3}"]
    for g, (shift, n) in enumerate(groups(shifts)):
        code += _group(cin, shift, n, pixels, cout, 100 * (g + 1))
    body = ["\tpush {r4-r11, lr}", *(f"\t{c}" if not c.endswith(":") else c for c in code),
            "\tadd sp, sp, #16", "\tpop {r4-r11, pc}"]
    return "\n".join(body)


def emit_pointwise_asm(em, plan: FirstLayerPlan) -> None:
    """The dispatch of kernel `em.k` (a NestEmitter's; `plan` its im2col plan, its
    records asm_records' with the shifts in `Kernel.record_shifts`): per block of
    pixels (schedule/pointwise_asm_records.py blocks) the staging, then a call."""
    k: Kernel = em.k
    b: ir.IRBuilder = em.b
    shifts = k.record_shifts
    cout = k.domain[3]
    if len(shifts) != cout:
        raise EmitError(f"kernel {k.name!r}: {len(shifts)} shifts for {cout} channels")
    c = lambda v: ir.Constant(I32, v)  # noqa: E731
    cin = plan.cin
    per = words(cin)
    sizes = blocks(k, cin)
    here = b.block
    b.position_at_start(em.fn.entry_basic_block)
    buf = b.alloca(ir.ArrayType(I32, SLACK_WORDS + per * max(sizes)), name="pw_staged")
    buf.align = 8
    b.position_at_end(here)
    staged = b.gep(b.bitcast(buf, I32.as_pointer()), [c(SLACK_WORDS)])
    x_buf = em.buffers[plan.x.operand]
    out_buf = em.buffers[len(k.operands)]
    records = b.gep(em.buffers[k.records], [c(4)], source_etype=I8)
    _, _, w_in, _ = k.operands[plan.x.operand].shape
    w_out = k.domain[X]
    (sy, sx), (oy0, ox0) = plan.stride, plan.origin
    dense = (sy, sx, oy0, ox0) == (1, 1, 0, 0) and w_in == w_out
    kernels: dict[int, ir.Function] = {}
    for n in sorted(set(sizes)):
        kernels[n] = asm_kernels.declare(b.module, STEM, kernel_body(cin, shifts, n, cout),
                                         [PTR, PTR, PTR])

    def tap(at: ir.Value, ci: int) -> ir.Value:
        v = b.load(b.gep(x_buf, [b.add(at, c(ci))], source_etype=I8), typ=I8)
        return b.sext(v, I32)

    def stage(p0: int, i: ir.Value) -> None:
        p = b.add(i, c(p0))
        if dense:
            at = b.mul(p, c(cin))
        else:
            oy, ox = b.udiv(p, c(w_out)), b.urem(p, c(w_out))
            at = b.mul(b.add(b.mul(b.add(b.mul(oy, c(sy)), c(oy0)), c(w_in)),
                             b.add(b.mul(ox, c(sx)), c(ox0))), c(cin))
        pair = b.or_(b.and_(tap(at, 0), c(0xFFFF)), b.shl(tap(at, 1), c(16)))
        b.store(pair, b.gep(staged, [b.mul(i, c(per))]))
        if cin == 3:  # SMLABB reads the low half only
            b.store(tap(at, 2), b.gep(staged, [b.add(b.mul(i, c(per)), c(1))]))

    p0 = 0
    for n in sizes:
        em._loop_range("pw.stage", 0, n, 1, lambda i, p0=p0: stage(p0, i))
        out = b.gep(out_buf, [c(p0 * cout)], source_etype=I8)
        b.call(kernels[n], [b.bitcast(staged, PTR), out, records])
        p0 += n
    assert p0 == k.domain[Y] * w_out
