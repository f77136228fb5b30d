"""A 1x1 int8 convolution over 2 or 3 input channels as the layer's own assembly
(codegen/asm_kernels.py): the output channels outer, the staged pixels inner.

schedule/pointwise_asm_records.py says which layers and why. A block of pixels (at most
STAGED_BYTES) is staged on the dispatch's stack, 2 channels a word (x0, x1) a pixel, 3
channels three words a pair of pixels, (x0, x1) of each and (x2, x2') of both: by the
kernel itself from the input's words where output pixel p reads input pixel p
(`_stage2`, `_stage3`), else by the dispatch (a strided layer). The kernel then, for
each output channel, loads its constants once (one LDM: the
doubled bias, the weight words, M, 2 K_hi and its output's offset) and walks the block's
pixels, a LDM of 6 registers at a time (6 pixels, or 2 pairs), per output

    SMLAD   p, p, w01, bias        (SMLABB / SMLATB p, x2, w2, p for a third channel)
    SMMLAR  t, p, M, 2 K_hi
    SUB     t, t, p, LSR #31       the sum's sign: TFLite's rounding half away from 0
    SSAT    t, #8, t, ASR #s       the channel's shift as an immediate
    STRB    t, [out], #channels    the next pixel's output of the channel

and a CMP and BNE a loop of 18 (12) pixels: 5.28 (6.42) instructions an output, where
the im2col kernel's pixel loop takes 8 (9). A pair's second pixel's sum comes first
(SMLATB reads x2' before the first's result takes the register that held it). The
channels come sorted by shift (the records' order), a loop over each shift's channels.
A block's pixel count that is not a whole number of loops enters the loop's body at the
pixel that leaves whole loops after (`entry`: j pixels early, the staged pointer moved
back by the units before the block's first pixel's; the words read before the block are
the stack buffer's SLACK_WORDS, their outputs never stored). With 3 channels and j odd
the block's first pixel is its first pair's second (the first a copy of it).

Registers, 2 channels: r0 the staged words, r1 the output, r2 the block's end, r3 the
temporary, r4-r7 bias, w, M, 2 K_hi, r8-r12 and lr six pixels. 3 channels: r3-r7 bias,
w01, w2, M, 2 K_hi, (r8, r9, r10) and (r11, r12, lr) two pairs, each pixel's word
taking its sum, the pair's third word then the first's result and the first's word the
second's. Stack: [sp] the block's staged words less the units before, [sp + 4] the
output, [sp + 8] the next channel's records, [sp + 12] the end of the shift's records.
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
    UNIT_PIXELS,
    UNIT_WORDS,
    blocks,
    dense,
    entry,
    groups,
    staged_words,
    words,
)

__all__ = ["SLACK_WORDS", "STEM", "emit_pointwise_asm", "kernel_body"]

STEM = "mrt_pw_layer"
I8, I16, I32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
PTR = ir.PointerType()
_PIXEL_REGS = ("r8", "r9", "r10", "r11", "r12", "lr")
# Words before a block's staged pixels an entry part-way through a LDM reads (never used).
SLACK_WORDS = 6


def _output(pixel: int, shift: int, cout: int) -> list[str]:
    """2 channels: the output of the pixel in register `pixel` of a LDM's."""
    p, t = _PIXEL_REGS[pixel], "r3"
    return [f"smlad {p}, {p}, r5, r4", *_requantize(p, t, shift, cout)]


def _requantize(p: str, t: str, shift: int, cout: int) -> list[str]:
    """The doubled sum in `p` to int8 in `t`, stored (module docstring)."""
    return [f"smmlar {t}, {p}, r6, r7", f"sub {t}, {t}, {p}, lsr #31",
            f"ssat {t}, #8, {t}, asr #{shift}", f"strb {t}, [r1], #{cout}"]


def _odd_sum(a1: str, c2: str) -> list[str]:
    """3 channels: the second pixel's sum of a pair, (x0, x1) in `a1`, x2 the top of
    `c2`."""
    return [f"smlad {a1}, {a1}, r4, r3", f"smlatb {a1}, {c2}, r5, {a1}"]


def _pair(unit: int, shift: int, cout: int, labels: tuple[str, str]) -> list[str]:
    """3 channels: the outputs of the pair of pixels in registers 3 unit .. 3 unit + 2
    of a LDM's, (x0, x1) of each and (x2, x2'): both sums, the second's first (x2' is
    read before the first's result takes its register), then the first's output and
    the second's. `labels`: those to put before the first's sums and the second's
    output ('' none)."""
    a0, a1, c2 = _PIXEL_REGS[3 * unit:3 * unit + 3]
    code = [labels[0]] if labels[0] else []
    code += [*_odd_sum(a1, c2), f"smlad {a0}, {a0}, r4, r3", f"smlabb {a0}, {c2}, r5, {a0}",
             *_requantize(a0, c2, shift, cout)]
    code += [labels[1]] if labels[1] else []
    return code + _requantize(a1, a0, shift, cout)


def _group(cin: int, shift: int, channels: int, pixels: int, cout: int, label: int
           ) -> list[str]:
    """The loop over one shift's `channels`, each over the block's `pixels` (labels
    from `label`: its channel loop, its pixel loop, the entry's targets)."""
    per_ldm, loop, unit = PIXELS_PER_LDM[cin], LOOP_PIXELS[cin], UNIT_PIXELS[cin]
    stride = 4 * (words(cin) + 4)  # a channel's record
    rec = "r3" if cin == 2 else "r9"
    regs = "{r4-r8}" if cin == 2 else "{r3-r8}"  # the constants, r8 the offset
    ldm = "{" + ", ".join(_PIXEL_REGS) + "}"
    ldm_bytes = 4 * len(_PIXEL_REGS)
    unit_bytes = 4 * UNIT_WORDS[cin]
    j = entry(cin, pixels)  # the body's pixels before the block's first
    chan, body = f"{label}", f"{label + 1}"
    code = []
    if channels > 1:
        span = channels * stride  # ADDW's immediate reaches 4095
        code += [f"ldr {rec}, [sp, #8]"]
        code += [f"add {rec}, {rec}, #{span}"] if span <= 4095 else \
            [f"movw r2, #{span}", f"add {rec}, {rec}, r2"]
        code += [f"str {rec}, [sp, #12]", f"{chan}:"]
    code += [f"ldr {rec}, [sp, #8]", f"ldm {rec}!, {regs}", f"str {rec}, [sp, #8]",
             "ldm sp, {r0, r1}", "add r1, r1, r8",
             f"add r2, r0, #{unit_bytes * ((j + pixels) // unit)}"]
    # The entry: at the body's pixel j, the LDM holding it done first (and, entering
    # at a pair's second pixel, its sum).
    group, first = divmod(j, per_ldm)
    target = f"{label + 2 + j}f"
    if group:
        code.append(f"add r0, r0, #{ldm_bytes * group}")
    if first:
        code.append(f"ldm r0!, {ldm}")
        if cin == 3 and first % 2:
            code += _odd_sum(*_PIXEL_REGS[3 * (first // 2) + 1:3 * (first // 2) + 3])
        code.append(f"b {target}")
    elif group:
        code.append(f"b {target}")

    def mark(i: int) -> str:
        return f"{label + 2 + i}:" if i == j and i else ""

    code.append(f"{body}:")
    for i in range(0, loop, per_ldm):
        code += [m for m in (mark(i),) if m] + [f"ldm r0!, {ldm}"]
        if cin == 2:
            for k in range(per_ldm):
                code += [m for m in (mark(i + k),) if m and k] + _output(k, shift, cout)
        else:
            for u in range(per_ldm // 2):
                code += _pair(u, shift, cout, (mark(i + 2 * u) if u else "",
                                               mark(i + 2 * u + 1)))
    code += ["cmp r0, r2", f"bne {body}b"]
    if channels > 1:
        code += [f"ldr {rec}, [sp, #8]", "ldr r2, [sp, #12]", f"cmp {rec}, r2",
                 f"bne {chan}b"]
    return code


def _stage2(pixels: int) -> list[str]:
    """2 channels: the block's `pixels` from the input (r3) into the staged words (r12),
    4 a pass from two words (SXTB16 gives (x0, x0') and (x1, x1'), PKHBT and PKHTB the
    pixels' pairs), the rest from halfwords; nothing read past the block."""
    code = []
    if pixels >= 4:
        code += [f"add r2, r3, #{2 * (pixels - pixels % 4)}", "90:",
                 "ldr r4, [r3], #4", "ldr r5, [r3], #4",
                 "sxtb16 r6, r4", "sxtb16 r7, r4, ror #8",
                 "sxtb16 r8, r5", "sxtb16 r9, r5, ror #8",
                 "pkhbt r4, r6, r7, lsl #16", "pkhtb r5, r7, r6, asr #16",
                 "pkhbt r6, r8, r9, lsl #16", "pkhtb r7, r9, r8, asr #16",
                 "stm r12!, {r4-r7}", "cmp r3, r2", "bne 90b"]
    for _ in range(pixels % 4):
        code += ["ldrh r4, [r3], #2", "orr r4, r4, r4, lsl #8", "sxtb16 r4, r4",
                 "str r4, [r12], #4"]
    return code


def _stage3(pixels: int, lead: int) -> list[str]:
    """3 channels: the block's `pixels` from the input (r3) into the staged pairs (r12):
    a first pair of the first pixel twice where the block starts at a pair's second
    (`lead`), then 4 pixels a pass from three words (x0 x1 x2 x0' | x1' x2' x0'' x1'' |
    ...: 8 SXTB16 and 6 PKH for 2 pairs), a last pair from bytes."""
    code = []
    if lead:
        code += ["ldrsb r4, [r3], #1", "ldrsb r5, [r3], #1", "ldrsb r6, [r3], #1",
                 "pkhbt r4, r4, r5, lsl #16", "mov r5, r4", "pkhbt r6, r6, r6, lsl #16",
                 "stm r12!, {r4-r6}"]
    rest = pixels - lead
    if rest >= 4:
        code += [f"add r2, r3, #{3 * (rest - rest % 4)}", "91:",
                 "ldr r4, [r3], #4", "ldr r5, [r3], #4",
                 "sxtb16 r10, r4", "sxtb16 r11, r4, ror #8", "sxtb16 lr, r4, ror #24",
                 "pkhbt r4, r10, r11, lsl #16",          # (x0, x1) of the first
                 "sxtb16 r11, r5", "sxtb16 r7, r5, ror #24", "sxtb16 r8, r5, ror #8",
                 "pkhbt r5, lr, r11, lsl #16",           # of the second
                 "pkhtb r6, r7, r10, asr #16",           # (x2, x2') of the first pair
                 "pkhtb r7, r8, r11, asr #16",           # (x0, x1) of the third
                 "ldr r10, [r3], #4",
                 "sxtb16 r11, r10, ror #8", "sxtb16 lr, r10, ror #16",
                 "pkhbt r8, r11, lr, lsl #16",           # of the fourth
                 "pkhtb r9, r11, lr, asr #16",           # (x2, x2') of the second pair
                 "stm r12!, {r4-r9}", "cmp r3, r2", "bne 91b"]
    if rest % 4:  # a pair: (rest - lead) is even
        code += [f"ldrsb r{4 + i}, [r3, #{i}]" for i in range(6)]
        code += ["pkhbt r4, r4, r5, lsl #16", "pkhbt r5, r7, r8, lsl #16",
                 "pkhbt r6, r6, r9, lsl #16", "stm r12!, {r4-r6}"]
    return code


def kernel_body(cin: int, shifts: tuple[int, ...], pixels: int, cout: int,
                stages: bool = False) -> str:
    """The assembly of a call over `pixels` staged pixels of `cin` (2, 3) channels to
    `cout` outputs each, the records' channels of `shifts` (1-31, sorted: their order).
    Arguments: r0 the block's staged words, r1 the block's first output, r2 the records
    past their pad word; where the kernel `stages` the block itself, r3 its input's
    first pixel."""
    if cin not in PIXELS_PER_LDM or not all(1 <= s <= 31 for s in shifts) or \
            not 1 <= cout <= 255 or pixels < 1:
        raise ValueError("a pointwise kernel needs 2-3 channels, shifts of 1-31 and "
                         "1-255 outputs")
    j = entry(cin, pixels)
    # the staged words of the units before the block's (the pair of its first pixel
    # starts the block's words)
    back = 4 * UNIT_WORDS[cin] * (j // UNIT_PIXELS[cin])
    code = [f"sub r0, r0, #{back}"] if back else []
    code += ["push {r0-r3}"]
    if stages:  # r0-r2 on the stack: r12 the staged words, r2 the loop's end
        code.append(f"add r12, r0, #{back}" if back else "mov r12, r0")
        code += _stage2(pixels) if cin == 2 else _stage3(pixels, j % 2)
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
    sizes = blocks(k, cin)
    here = b.block
    b.position_at_start(em.fn.entry_basic_block)
    most = max(staged_words(cin, n) for n in sizes)
    buf = b.alloca(ir.ArrayType(I32, SLACK_WORDS + most), name="pw_staged")
    buf.align = 8
    b.position_at_end(here)
    staged = b.gep(b.bitcast(buf, I32.as_pointer()), [c(SLACK_WORDS)])
    x_buf = em.buffers[plan.x.operand]
    out_buf = em.buffers[len(k.operands)]
    records = b.gep(em.buffers[k.records], [c(4)], source_etype=I8)
    _, _, w_in, _ = k.operands[plan.x.operand].shape
    w_out = k.domain[X]
    (sy, sx), (oy0, ox0) = plan.stride, plan.origin
    kernels: dict[int, ir.Function] = {}
    stages = dense(k, plan)  # the kernel stages the block from the input's bytes
    for n in sorted(set(sizes)):
        kernels[n] = asm_kernels.declare(b.module, STEM,
                                         kernel_body(cin, shifts, n, cout, stages),
                                         [PTR] * (4 if stages else 3))

    def tap(at: ir.Value, ci: int) -> ir.Value:
        v = b.load(b.gep(x_buf, [b.add(at, c(ci))], source_etype=I8), typ=I8)
        return b.sext(v, I32)

    def at(p: ir.Value) -> ir.Value:
        """The byte offset of the input pixel of output pixel `p` (of the map)."""
        oy, ox = b.udiv(p, c(w_out)), b.urem(p, c(w_out))
        return b.mul(b.add(b.mul(b.add(b.mul(oy, c(sy)), c(oy0)), c(w_in)),
                           b.add(b.mul(ox, c(sx)), c(ox0))), c(cin))

    def pair(a: ir.Value) -> ir.Value:
        """(x0, x1) of the pixel at `a` as 16-bit halves."""
        return b.or_(b.and_(tap(a, 0), c(0xFFFF)), b.shl(tap(a, 1), c(16)))

    def stage_two(p0: ir.Value, first: ir.Value, second: ir.Value, dest: ir.Value) -> None:
        """Block pixels `first` and `second` into staged unit `dest` (3 channels: the
        words (x0, x1) of each and (x2, x2')) or words dest and dest + 1 (2)."""
        a0, a1 = at(b.add(first, p0)), at(b.add(second, p0))
        if cin == 2:
            for k, a in enumerate((a0, a1)):
                b.store(pair(a), b.gep(staged, [b.add(dest, c(k))]))
            return
        base = b.mul(dest, c(3))
        b.store(pair(a0), b.gep(staged, [base]))
        b.store(pair(a1), b.gep(staged, [b.add(base, c(1))]))
        third = b.or_(b.and_(tap(a0, 2), c(0xFFFF)), b.shl(tap(a1, 2), c(16)))
        b.store(third, b.gep(staged, [b.add(base, c(2))]))

    def stage_block(p0: ir.Value, n: int) -> None:
        """Two pixels a pass (the loop's test shared). 3 channels: entering the body
        at a pair's second pixel, the block's first pixel is a pair's second (the
        pair's first its copy, never stored); 2: an odd last pixel after."""
        lead = entry(cin, n) % 2 if cin == 3 else 0
        if lead:
            stage_two(p0, c(0), c(0), c(0))
        if n - lead >= 2:
            def two(i: ir.Value) -> None:
                first = b.add(b.mul(i, c(2)), c(lead))
                dest = i if cin == 3 else b.mul(i, c(2))
                stage_two(p0, first, b.add(first, c(1)),
                          b.add(dest, c(lead)) if lead else dest)
            em._loop_range("pw.stage", 0, (n - lead) // 2, 1, two)
        if (n - lead) % 2:  # 2 channels only (3: the pairs are whole)
            b.store(pair(at(b.add(p0, c(n - 1)))), b.gep(staged, [c(n - 1)]))

    def call(p0: ir.Value, n: int) -> None:
        """The block of `n` pixels from pixel `p0`: staged, then the kernel's call."""
        out = b.gep(out_buf, [b.mul(p0, c(cout))], source_etype=I8)
        if stages:
            b.call(kernels[n], [b.bitcast(staged, PTR), out, records,
                                b.gep(x_buf, [b.mul(p0, c(cin))], source_etype=I8)])
        else:
            stage_block(p0, n)
            b.call(kernels[n], [b.bitcast(staged, PTR), out, records])

    start = 0
    for n in sorted(set(sizes), reverse=True):  # blocks of one size after another, a loop
        count = sizes.count(n)
        if count == 1:
            call(c(start), n)
        else:
            em._loop_range("pw.blocks", 0, count, 1,
                           lambda i, n=n, start=start: call(b.add(b.mul(i, c(n)), c(start)), n))
        start += count * n
    assert start == k.domain[Y] * w_out
