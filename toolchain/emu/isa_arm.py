"""Sorts Thumb / Thumb-2 instructions (Armv6-M, Armv7E-M, Armv8-M, Armv8.1-M with MVE)
into the timing classes of toolchain/target/timing.py, from their bytes.

Only the fields that decide the class are decoded (the encoding tables of the Armv7-M
Architecture Reference Manual, DDI 0403E §A5, and Armv8-M, DDI 0553 §C2). Conditional
branches are "cond": whether one was taken is known from the run (toolchain/emu/cycles.py).
"""

from __future__ import annotations

from functools import lru_cache

from toolchain.target.timing import Insn

__all__ = ["classify_thumb"]

_PC = 15


def _popcount(x: int) -> int:
    return bin(x).count("1")


def _thumb16(hw: int) -> Insn:
    top = hw >> 10
    if hw >> 14 == 0:  # shift, add, subtract, move, compare (immediate)
        return Insn("alu")
    if top == 0b010000:  # data processing (register); MULS
        return Insn("mul" if (hw >> 6) & 0xF == 0b1101 else "alu")
    if top == 0b010001:  # special data processing, BX / BLX
        op = (hw >> 8) & 3
        if op == 3:
            return Insn("branch_indirect")
        rd = ((hw >> 4) & 8) | (hw & 7)
        return Insn("branch_indirect" if op != 1 and rd == _PC else "alu")
    if hw >> 11 == 0b01001:  # LDR (literal)
        return Insn("load")
    if hw >> 12 == 0b0101:  # load/store (register offset): opB 0-2 store, 3-7 load
        return Insn("load" if (hw >> 9) & 7 >= 3 else "store")
    if hw >> 13 == 0b011 or hw >> 12 in (0b1000, 0b1001):  # immediate / SP-relative
        return Insn("load" if hw & 0x0800 else "store")
    if hw >> 12 == 0b1010:  # ADR, ADD (SP plus immediate)
        return Insn("alu")
    if hw >> 12 == 0b1011:  # miscellaneous
        if hw & 0xF500 == 0xB100:  # CBZ, CBNZ
            return Insn("cond")
        if hw & 0xFE00 == 0xB400:  # PUSH
            return Insn("stm", _popcount(hw & 0x1FF))
        if hw & 0xFE00 == 0xBC00:  # POP
            regs = _popcount(hw & 0x1FF)
            return Insn("pop_pc" if hw & 0x100 else "ldm", regs)
        if hw & 0xFF00 == 0xBF00:  # IT, or a hint (NOP, WFI, ...) when the mask is 0
            return Insn("it" if hw & 0xF else "system")
        if hw & 0xFF00 == 0xBE00 or hw & 0xFFE0 == 0xB660:  # BKPT, CPS
            return Insn("system")
        return Insn("alu")  # SP adjust, extend, reverse
    if hw >> 12 == 0b1100:  # LDM / STM
        return Insn("ldm" if hw & 0x0800 else "stm", _popcount(hw & 0xFF))
    if hw >> 12 == 0b1101:  # B<c>; cond 1110 is UDF, 1111 SVC
        return Insn("system" if (hw >> 8) & 0xF >= 0xE else "cond")
    if hw >> 11 == 0b11100:  # B
        return Insn("branch")
    return Insn("alu")


def _coprocessor(hw1: int, hw2: int) -> Insn:
    """FP (coprocessors 10 and 11) and MVE encodings."""
    cp = (hw2 >> 8) & 0xF
    fp = cp in (10, 11)
    if hw1 & 0xEE00 == 0xEC00:  # load/store coprocessor: VLDR/VSTR/VLDM/VSTM/VPUSH/VPOP
        load = bool(hw1 & 0x10)
        if not fp:
            return Insn("mve_load" if load else "mve_store")
        p, w = (hw1 >> 8) & 1, (hw1 >> 5) & 1
        if p == 1 and w == 0:  # VLDR / VSTR
            return Insn("fp_load" if load else "fp_store")
        if hw1 & 0xFFE0 == 0xEC40:  # VMOV between two core registers and D / two S
            return Insn("fp_mov")
        # N counts 32-bit words moved (a D register is two over the 32-bit bus).
        return Insn("fp_ldm" if load else "fp_stm", hw2 & 0xFF)
    if hw1 >> 8 == 0xEE and fp:
        if hw2 & 0x10:  # VMOV core <-> S, VMRS, VMSR
            return Insn("fp_mov")
        opc1 = ((hw1 >> 5) & 4) | ((hw1 >> 4) & 3)  # bits 23, 21:20
        if opc1 in (0, 1):
            return Insn("fp_mac")  # VMLA, VMLS, VNMLA, VNMLS
        if opc1 == 2:
            return Insn("fp_mul")  # VMUL, VNMUL
        if opc1 == 3:
            return Insn("fp_add")  # VADD, VSUB
        if opc1 == 4:
            return Insn("fp_div")
        if opc1 in (5, 6):
            return Insn("fp_mac")  # VFNMA, VFNMS, VFMA, VFMS
        opc2 = hw1 & 0xF
        if opc2 == 1 and (hw2 >> 6) & 3 == 3:
            return Insn("fp_sqrt")
        return Insn("fp_alu")  # VMOV, VABS, VNEG, VCMP, VCVT
    if hw1 >> 8 == 0xFE and fp and not hw2 & 0x10:
        # The FP extension's unconditional ops (Armv8-M FPv5): VSEL, VMAXNM, VMINNM,
        # VRINT{A,N,P,M}, VCVT{A,N,P,M}; one FP-ALU issue on the M33, M7 and M55 alike.
        return Insn("fp_alu")
    return Insn("mve")


def _thumb32(hw1: int, hw2: int) -> Insn:
    op1 = (hw1 >> 11) & 3
    if op1 == 0b01:
        if hw1 & 0x0600 == 0 and not hw1 & 0x40:  # load/store multiple
            regs = _popcount(hw2)
            if hw1 & 0x10:
                return Insn("pop_pc" if hw2 & 0x8000 else "ldm", regs)
            return Insn("stm", regs)
        if hw1 & 0x0600 == 0:  # dual, exclusive, table branch
            if hw1 & 0xFFF0 == 0xE8D0 and (hw2 >> 5) & 7 in (0, 1):
                return Insn("branch_table")
            if hw1 & 0x0120:  # P or W: LDRD / STRD
                return Insn("load_pair" if hw1 & 0x10 else "store_pair")
            return Insn("load" if hw1 & 0x10 else "store")  # LDREX / STREX
        if hw1 & 0x0600 == 0x0200:  # data processing (shifted register)
            return Insn("alu")
        return _coprocessor(hw1, hw2)
    if op1 == 0b10:
        if not hw2 & 0x8000:  # data processing (immediate)
            return Insn("alu")
        if hw2 & 0x5000 == 0x5000:  # BL
            return Insn("call")
        if hw2 & 0x5000 == 0x1000:  # B.W
            return Insn("branch")
        if hw2 & 0x5000 == 0x4000:  # Armv8.1-M low-overhead loops (DLS, WLS, LE)
            return Insn("lob")
        if (hw1 >> 7) & 7 != 7:  # B<c>.W
            return Insn("cond")
        return Insn("system")  # MSR, MRS, hints, barriers
    # op1 == 0b11
    if hw1 >> 9 == 0b1111100:  # load/store single (PLD and friends count as loads)
        if hw1 & 0x10:
            return Insn("load_pc" if hw2 >> 12 == _PC and hw1 & 0x60 == 0x40 else "load")
        return Insn("store")
    if hw1 >> 8 == 0b11111010:  # data processing (register): shifts, extends, SIMD add
        return Insn("alu")
    if hw1 >> 7 == 0b111110110:  # multiply, multiply-accumulate, absolute difference
        ra = hw2 >> 12
        return Insn("mul" if ra == 0xF else "mac")
    if hw1 >> 7 == 0b111110111:  # long multiply / accumulate, divide
        op = (hw1 >> 4) & 7
        if op in (1, 3):
            return Insn("div")
        return Insn("mul64" if op in (0, 2) else "mac64")
    return _coprocessor(hw1, hw2)


@lru_cache(maxsize=65536)
def classify_thumb(data: bytes) -> Insn:
    """The class of one Thumb instruction given its bytes in memory (little-endian
    halfwords, 2 or 4 bytes)."""
    hw1 = int.from_bytes(data[:2], "little")
    if len(data) == 2:
        return _thumb16(hw1)
    return _thumb32(hw1, int.from_bytes(data[2:4], "little"))
