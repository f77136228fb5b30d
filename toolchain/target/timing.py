"""Per-core instruction timing tables (``targets/timing/<core>.yaml``), as data.

A table gives, for every instruction class the classifiers (toolchain/emu/isa_arm.py,
isa_riscv.py) sort executed instructions into, the cycles its core's technical reference
manual states. A cost is an integer, a sum such as ``1+N+P`` (N: registers transferred
by a load/store multiple; P: the pipeline refill after a taken branch, a range given once
per table), or ``{min: A, max: B, use: C}`` for a data-dependent cost (a divide): the
estimate charges ``use`` and the microbenchmarks check the manual's [min, max].
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from toolchain.target.descriptors import DescriptorError, targets_dir

__all__ = ["CLASSES", "Cost", "CoreTiming", "Insn", "load_timing", "timing_dir"]

# The instruction classes, and what falls in each (both ISAs where it applies).
CLASSES: dict[str, str] = {
    "alu": "data processing, moves, compares, shifts, extends, packed SIMD adds, nops",
    "it": "Thumb IT (may be folded into the previous instruction)",
    "system": "barriers, CSR / special-register access, hints, supervisor calls",
    "mul": "32-bit multiply (MUL, SMULxy, SMUAD; RISC-V MUL/MULH*)",
    "mac": "32-bit multiply-accumulate (MLA, MLS, SMLAD, SMLAxy, SMMLA)",
    "mul64": "64-bit-result multiply (UMULL, SMULL)",
    "mac64": "64-bit multiply-accumulate (UMLAL, SMLAL, SMLALD, UMAAL)",
    "div": "integer divide and remainder (SDIV, UDIV; RISC-V DIV*/REM*)",
    "load": "single load (LDR*, LDREX, PLD; RISC-V L*)",
    "store": "single store (STR*, STREX; RISC-V S*)",
    "load_pair": "LDRD",
    "store_pair": "STRD",
    "ldm": "load multiple / POP without PC (N registers)",
    "stm": "store multiple / PUSH (N registers)",
    "pop_pc": "load multiple / POP that loads the PC (N registers)",
    "load_pc": "single load into the PC",
    "amo": "RISC-V atomic memory operation",
    "branch": "unconditional direct branch (B, RISC-V JAL x0)",
    "call": "direct call (BL, RISC-V JAL with a link register)",
    "branch_indirect": "branch to a register (BX, BLX, MOV/ADD PC, RISC-V JALR)",
    "branch_table": "TBB, TBH",
    "cond_taken": "conditional branch, taken (B<c>, CBZ, CBNZ; RISC-V B*)",
    "cond_not_taken": "conditional branch, not taken",
    "lob": "Armv8.1-M low-overhead loop instructions (DLS, WLS, LE)",
    "fp_alu": "FP move, absolute, negate, compare, convert",
    "fp_add": "FP add, subtract",
    "fp_mul": "FP multiply",
    "fp_mac": "FP multiply-accumulate, fused or chained",
    "fp_div": "FP divide",
    "fp_sqrt": "FP square root",
    "fp_load": "FP single load (VLDR, FLW)",
    "fp_store": "FP single store (VSTR, FSW)",
    "fp_ldm": "FP load multiple / VPOP (N registers)",
    "fp_stm": "FP store multiple / VPUSH (N registers)",
    "fp_mov": "move between core and FP registers, FP status (VMOV, VMRS, FMV)",
    "mve": "Helium (MVE) vector data processing",
    "mve_load": "Helium vector load",
    "mve_store": "Helium vector store",
}



class Insn(NamedTuple):
    """An executed instruction's class ("cond" for a conditional branch: cond_taken or
    cond_not_taken depending on the run) and, for load/store multiple, the N it moves."""

    cls: str
    regs: int = 0


_TERM = re.compile(r"\s*(?:(\d+)|(N)|(P))\s*")


@dataclass(frozen=True)
class Cost:
    """base + per_reg x N + refills x P cycles; base is [low, high] when data-dependent,
    and ``base`` is the value the estimate charges."""

    base: int
    low: int
    high: int
    per_reg: int = 0
    refills: int = 0

    def cycles(self, regs: int, refill: int, bound: str = "use") -> int:
        """The cost with N = ``regs`` and P = ``refill``; ``bound`` picks the base."""
        base = {"use": self.base, "min": self.low, "max": self.high}[bound]
        return base + self.per_reg * regs + self.refills * refill


@dataclass(frozen=True)
class CoreTiming:
    """One core's timing table."""

    name: str  # the file's stem, e.g. cortex-m4
    core: str  # as its manual names it
    manual: str  # the manual (document number, revision) and sections the cycles come from
    refill: tuple[int, int, int]  # P: (min, use, max) cycles of pipeline refill
    pipelined_load: int | None  # a single load/store right after a single load, if cheaper
    costs: dict[str, Cost]
    path: Path

    def cost(self, cls: str) -> Cost:
        """The cost of class ``cls``; DescriptorError if the table has none (the core cannot
        execute that class, so seeing it means a wrong table or classifier)."""
        try:
            return self.costs[cls]
        except KeyError:
            raise DescriptorError(f"{self.path.name}: no timing for instruction class "
                                  f"'{cls}' ({CLASSES.get(cls, '?')})") from None


def timing_dir() -> Path:
    """The directory of the timing tables."""
    return targets_dir() / "timing"


def _parse_cost(value: Any, where: str, fail: Any) -> Cost:
    if isinstance(value, bool):
        fail(where, "expected cycles: an integer, 'A+N+P' or {min, max, use}")
    if isinstance(value, int):
        if value < 0:
            fail(where, f"expected non-negative cycles, got {value}")
        return Cost(value, value, value)
    if isinstance(value, dict):
        if set(value) != {"min", "max", "use"} or not all(
                isinstance(value[k], int) and not isinstance(value[k], bool) for k in value):
            fail(where, "expected {min: A, max: B, use: C} with integer cycles")
        if not 0 <= value["min"] <= value["use"] <= value["max"]:
            fail(where, f"expected 0 <= min <= use <= max, got {value}")
        return Cost(value["use"], value["min"], value["max"])
    if isinstance(value, str):
        base = per_reg = refills = 0
        for term in value.split("+"):
            m = _TERM.fullmatch(term)
            if m is None:
                fail(where, f"expected a sum of integers, N and P, got {value!r}")
            if m.group(1):
                base += int(m.group(1))
            elif m.group(2):
                per_reg += 1
            else:
                refills += 1
        return Cost(base, base, base, per_reg, refills)
    fail(where, f"expected cycles: an integer, 'A+N+P' or {{min, max, use}}, got {value!r}")
    raise AssertionError  # fail raises


def load_timing(name: str) -> CoreTiming:
    """Loads and validates ``targets/timing/NAME.yaml``."""
    path = timing_dir() / f"{name}.yaml"
    shown = f"targets/timing/{path.name}"

    def fail(where: str, message: str) -> None:
        raise DescriptorError(f"{shown}: field '{where}': {message}")

    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in timing_dir().glob("*.yaml")))
        raise DescriptorError(f"no timing table '{name}' (known: {known})")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DescriptorError(f"{shown}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise DescriptorError(f"{shown}: expected a mapping at the top level")
    known = {"core", "manual", "refill", "pipelined_load", "cycles"}
    for key in data:
        if key not in known:
            fail(key, f"unknown field (expected one of: {', '.join(sorted(known))})")
    for key in ("core", "manual"):
        if not isinstance(data.get(key), str) or not data[key]:
            fail(key, "missing required field (a non-empty string)")
    refill = _parse_cost(data.get("refill", 0), "refill", fail)
    if refill.per_reg or refill.refills:
        fail("refill", "expected plain cycles, not N or P")
    pipelined = data.get("pipelined_load")
    if pipelined is not None and (not isinstance(pipelined, int) or isinstance(pipelined, bool)
                                  or pipelined < 0):
        fail("pipelined_load", f"expected non-negative cycles, got {pipelined!r}")
    cycles = data.get("cycles")
    if not isinstance(cycles, dict) or not cycles:
        fail("cycles", "missing required field (a mapping of instruction class to cycles)")
    costs: dict[str, Cost] = {}
    for cls, value in cycles.items():
        if cls not in CLASSES:
            fail(f"cycles.{cls}", f"unknown instruction class (expected one of: "
                 f"{', '.join(CLASSES)})")
        costs[cls] = _parse_cost(value, f"cycles.{cls}", fail)
    for cls in ("alu", "load", "store", "branch", "cond_taken", "cond_not_taken"):
        if cls not in costs:
            fail(f"cycles.{cls}", "missing required field (every core has it)")
    return CoreTiming(name=name, core=data["core"], manual=data["manual"],
                      refill=(refill.low, refill.base, refill.high),
                      pipelined_load=pipelined, costs=costs, path=path)
