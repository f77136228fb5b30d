"""The instruction classifiers against encodings assembled by llvm-mc 14 (the byte strings
below are its output for the instruction in the comment)."""

from __future__ import annotations

import pytest

from toolchain.emu.isa_arm import classify_thumb
from toolchain.emu.isa_riscv import classify_riscv
from toolchain.target.timing import CLASSES, Insn

THUMB = [
    ("8818", "alu", 0),  # adds r0, r1, r2
    ("4843", "mul", 0),  # muls r0, r1, r0
    ("7047", "branch_indirect", 0),  # bx lr
    ("9f46", "branch_indirect", 0),  # mov pc, r3
    ("0148", "load", 0),  # ldr r0, [pc, #4]
    ("d15c", "load", 0),  # ldrb r1, [r2, r3]
    ("d152", "store", 0),  # strh r1, [r2, r3]
    ("0291", "store", 0),  # str r1, [sp, #8]
    ("08b1", "cond", 0),  # cbz r0, ...
    ("30b5", "stm", 3),  # push {r4, r5, lr}
    ("10bd", "pop_pc", 2),  # pop {r4, pc}
    ("30bc", "ldm", 2),  # pop {r4, r5}
    ("08bf", "it", 0),  # it eq
    ("00bf", "system", 0),  # nop
    ("06c8", "ldm", 2),  # ldm r0!, {r1, r2}
    ("0ec0", "stm", 3),  # stm r0!, {r1, r2, r3}
    ("02d0", "cond", 0),  # beq ...
    ("02e0", "branch", 0),  # b ...
    ("00df", "system", 0),  # svc #0
    ("90e81e00", "ldm", 4),  # ldm.w r0, {r1, r2, r3, r4}
    ("bde8f08f", "pop_pc", 9),  # pop.w {r4-r11, pc}
    ("d0e801f0", "branch_table", 0),  # tbb [r0, r1]
    ("d2e90001", "load_pair", 0),  # ldrd r0, r1, [r2]
    ("c2e90201", "store_pair", 0),  # strd r0, r1, [r2, #8]
    ("51e8000f", "load", 0),  # ldrex r0, [r1]
    ("01eb8200", "alu", 0),  # add.w r0, r1, r2, lsl #2
    ("00f000f8", "call", 0),  # bl ...
    ("00f000b8", "branch", 0),  # b.w ...
    ("40f00080", "cond", 0),  # bne.w ...
    ("bff35f8f", "system", 0),  # dmb sy
    ("d1f80400", "load", 0),  # ldr.w r0, [r1, #4]
    ("5df804fb", "load_pc", 0),  # ldr pc, [sp], #4
    ("81f80400", "store", 0),  # strb.w r0, [r1, #4]
    ("91fa02f0", "alu", 0),  # sadd16 r0, r1, r2
    ("01fb02f0", "mul", 0),  # mul r0, r1, r2
    ("01fb0230", "mac", 0),  # mla r0, r1, r2, r3
    ("21fb0230", "mac", 0),  # smlad r0, r1, r2, r3
    ("21fb02f0", "mul", 0),  # smuad r0, r1, r2
    ("82fb0301", "mul64", 0),  # smull r0, r1, r2, r3
    ("e2fb0301", "mac64", 0),  # umlal r0, r1, r2, r3
    ("91fbf2f0", "div", 0),  # sdiv r0, r1, r2
    ("b1fbf2f0", "div", 0),  # udiv r0, r1, r2
    ("90ed000a", "fp_load", 0),  # vldr s0, [r0]
    ("80ed010a", "fp_store", 0),  # vstr s0, [r0, #4]
    ("2ded048a", "fp_stm", 4),  # vpush {s16-s19}
    ("bdec048b", "fp_ldm", 4),  # vpop {d8, d9}: four words
    ("10ee100a", "fp_mov", 0),  # vmov r0, s0
    ("51ec100b", "fp_mov", 0),  # vmov r0, r1, d0
    ("f1ee10fa", "fp_mov", 0),  # vmrs APSR_nzcv, fpscr
    ("00ee810a", "fp_mac", 0),  # vmla.f32 s0, s1, s2
    ("20ee810a", "fp_mul", 0),  # vmul.f32
    ("30ee810a", "fp_add", 0),  # vadd.f32
    ("80ee810a", "fp_div", 0),  # vdiv.f32
    ("a0ee810a", "fp_mac", 0),  # vfma.f32
    ("b1eee00a", "fp_sqrt", 0),  # vsqrt.f32 s0, s1
    ("bdeee00a", "fp_alu", 0),  # vcvt.s32.f32 s0, s1
    ("b0eee00a", "fp_alu", 0),  # vabs.f32 s0, s1
    ("b4ee600a", "fp_alu", 0),  # vcmp.f32 s0, s1
    # Armv8-M's FP extension (FPv5), on the M33 as well as the M55: not MVE.
    ("30fe201a", "fp_alu", 0),  # vselgt.f32 s2, s0, s1
    ("80fe201a", "fp_alu", 0),  # vmaxnm.f32 s2, s0, s1
    ("80fe601a", "fp_alu", 0),  # vminnm.f32 s2, s0, s1
    ("b8fe600a", "fp_alu", 0),  # vrinta.f32 s0, s1
    ("bcfee00a", "fp_alu", 0),  # vcvta.s32.f32 s0, s1
]

RISCV = [
    ("3385c500", "alu"),  # add a0, a1, a2
    ("0505", "alu"),  # c.addi a0, 1
    ("0565", "alu"),  # c.lui a0, 1
    ("c841", "load"),  # c.lw a0, 4(a1)
    ("03c54500", "load"),  # lbu a0, 4(a1)
    ("c8c1", "store"),  # c.sw a0, 4(a1)
    ("3385c502", "mul"),  # mul
    ("33b5c502", "mul"),  # mulhu
    ("33c5c502", "div"),  # div
    ("33f5c502", "div"),  # remu
    ("0295", "branch_indirect"),  # c.jalr a0
    ("8280", "branch_indirect"),  # ret
    ("0285", "branch_indirect"),  # c.jr a0
    ("e7000500", "branch_indirect"),  # jalr ra, 0(a0)
    ("ef000000", "call"),  # jal ra, 0
    ("6f000000", "branch"),  # jal x0, 0
    ("63000000", "cond"),  # beq x0, x0, 0
    ("01a0", "branch"),  # c.j
    ("0120", "call"),  # c.jal (RV32)
    ("01c1", "cond"),  # c.beqz a0
    ("732500b0", "system"),  # csrr a0, mcycle
    ("2f25b600", "amo"),  # amoadd.w
    ("4861", "fp_load"),  # c.flw
    ("48e1", "fp_store"),  # c.fsw
    ("53f5c500", "fp_add"),  # fadd.s
    ("53f5c510", "fp_mul"),  # fmul.s
    ("53f5c518", "fp_div"),  # fdiv.s
    ("53f50558", "fp_sqrt"),  # fsqrt.s
    ("43f5c568", "fp_mac"),  # fmadd.s
    ("530505e0", "fp_mov"),  # fmv.x.w
    ("537505c0", "fp_alu"),  # fcvt.w.s
    ("5325b5a0", "fp_alu"),  # feq.s
    ("2e85", "alu"),  # c.mv a0, a1
    ("1245", "load"),  # c.lwsp
    ("2ac2", "store"),  # c.swsp
    ("0290", "system"),  # c.ebreak
]


@pytest.mark.parametrize(("code", "cls", "regs"), THUMB)
def test_thumb(code: str, cls: str, regs: int) -> None:
    assert classify_thumb(bytes.fromhex(code)) == Insn(cls, regs)


@pytest.mark.parametrize(("code", "cls"), RISCV)
def test_riscv(code: str, cls: str) -> None:
    assert classify_riscv(bytes.fromhex(code)) == Insn(cls)


def test_every_class_is_known() -> None:
    seen = {c for _, c, _ in THUMB} | {c for _, c in RISCV}
    assert seen - {"cond"} <= set(CLASSES)
