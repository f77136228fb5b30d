"""Sorts RV32 instructions (I, M, A, F, C) into the timing classes of
toolchain/target/timing.py, from their bytes (opcode maps of the RISC-V Unprivileged ISA
specification, 20191213: chapter 24 for the base opcodes, chapter 16 for RVC)."""

from __future__ import annotations

from functools import lru_cache

from toolchain.target.timing import Insn

__all__ = ["classify_riscv"]

_OPCODES = {
    0x03: "load", 0x07: "fp_load", 0x23: "store", 0x27: "fp_store", 0x13: "alu",
    0x37: "alu", 0x17: "alu", 0x0F: "system", 0x73: "system", 0x2F: "amo", 0x63: "cond",
    0x67: "branch_indirect", 0x43: "fp_mac", 0x47: "fp_mac", 0x4B: "fp_mac", 0x4F: "fp_mac",
}
_FP_OPS = {0: "fp_add", 1: "fp_add", 2: "fp_mul", 3: "fp_div", 0x0B: "fp_sqrt",
           0x1C: "fp_mov", 0x1E: "fp_mov"}  # by funct5; the rest: sign-inject, min/max,
#                                            compare, convert (fp_alu)


def _rv32(insn: int) -> Insn:
    opcode = insn & 0x7F
    if opcode == 0x33:
        if insn >> 25 == 1:  # M extension
            return Insn("div" if (insn >> 12) & 7 >= 4 else "mul")
        return Insn("alu")
    if opcode == 0x6F:  # JAL: a call when it links
        return Insn("branch" if (insn >> 7) & 0x1F == 0 else "call")
    if opcode == 0x53:
        return Insn(_FP_OPS.get(insn >> 27, "fp_alu"))
    return Insn(_OPCODES.get(opcode, "alu"))


def _rvc(hw: int) -> Insn:
    quadrant, funct3 = hw & 3, hw >> 13
    if quadrant == 0:
        return Insn({0: "alu", 1: "fp_load", 2: "load", 3: "fp_load", 5: "fp_store",
                     6: "store", 7: "fp_store"}.get(funct3, "alu"))
    if quadrant == 1:
        return Insn({1: "call", 5: "branch", 6: "cond", 7: "cond"}.get(funct3, "alu"))
    if funct3 == 4:  # C.JR, C.MV, C.EBREAK, C.JALR, C.ADD
        rs1, rs2 = (hw >> 7) & 0x1F, (hw >> 2) & 0x1F
        if rs2 == 0:
            return Insn("system" if rs1 == 0 else "branch_indirect")
        return Insn("alu")
    return Insn({1: "fp_load", 2: "load", 3: "fp_load", 5: "fp_store", 6: "store",
                 7: "fp_store"}.get(funct3, "alu"))


@lru_cache(maxsize=65536)
def classify_riscv(data: bytes) -> Insn:
    """The class of one RISC-V instruction given its bytes (2: compressed, or 4)."""
    value = int.from_bytes(data, "little")
    return _rvc(value) if len(data) == 2 else _rv32(value)
