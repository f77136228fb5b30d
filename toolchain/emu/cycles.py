"""Estimated cycles and milliseconds of an inference, from the instructions QEMU executed.

The plugin (plugin/insn_count.c, ``blocks=``) writes every translated block that ran
between the benchmark markers: its instructions' bytes, how often it ran and how often
execution fell through past its end (so a conditional branch ending it was not taken).
Each instruction is sorted into a timing class (isa_arm.py, isa_riscv.py) and charged the
cycles of its core's table (targets/timing/*.yaml, toolchain/target/timing.py):

    cycles = sum over blocks of runs x (sum of its instructions' costs)
             + taken conditional branches x (cond_taken - cond_not_taken)
             + flash wait states x 32-bit fetches, on a board without a cache

with the manual's pipelining rule for back-to-back loads applied inside a block. The
instruction count stays the exact one; the cycles are an estimate whose error bound
docs/cycles.md states (no dual issue, bus contention, cache misses or result stalls).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from toolchain.emu.isa_arm import classify_thumb
from toolchain.emu.isa_riscv import classify_riscv
from toolchain.target import Board, DescriptorError
from toolchain.target.timing import CoreTiming, Insn, load_timing

__all__ = [
    "Block",
    "BlocksProbe",
    "CycleError",
    "CycleEstimate",
    "block_cycles",
    "board_isa",
    "cycles_by_row",
    "describe_estimate",
    "format_hz",
    "no_estimate_reason",
    "estimate_cycles",
    "format_ms",
    "parse_blocks",
    "timing_for",
]

_BLOCKS_FILE = "minirt_blocks.txt"
_FETCH_BYTES = 4  # a 32-bit instruction fetch: what a flash wait state delays
_LOADS = ("load",)
_PIPELINED_AFTER_LOAD = ("load", "store")


class CycleError(Exception):
    """The plugin's block records cannot be read or do not match its instruction count."""


@dataclass(frozen=True)
class Block:
    """One translated block that ran between the markers."""

    vaddr: int
    runs: int  # executions
    fell: int  # executions after which the next block began right after its end
    insns: tuple[bytes, ...]  # each instruction's bytes in memory order
    owner: int = -1  # with a profile, callee code: the row it ran for

    @property
    def n_bytes(self) -> int:
        """Code bytes the block covers."""
        return sum(len(i) for i in self.insns)


def parse_blocks(text: str) -> list[Block]:
    """The plugin's ``ADDR RUNS FELL OWNER HEX.HEX...`` lines as Blocks."""
    blocks = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        try:
            addr, runs, fell, owner, code = parts
            insns = tuple(bytes.fromhex(h) for h in code.split("."))
            blocks.append(Block(int(addr, 16), int(runs), int(fell), insns, int(owner)))
        except ValueError:
            raise CycleError(f"plugin block record {number} is malformed: {line[:80]!r}") \
                from None
    return blocks


class BlocksProbe:
    """Asks the plugin for its block records in the same run (an emu.run.Probe)."""

    def __init__(self, isa: str) -> None:
        self.isa = isa  # "thumb" or "riscv": how the plugin tells instruction lengths
        self.blocks: list[Block] | None = None

    def plugin_args(self, work: Path) -> dict[str, str]:
        """The plugin arguments that turn the block records on."""
        return {"blocks": str(work / _BLOCKS_FILE), "isa": self.isa}

    def collect(self, work: Path, count_line: str) -> None:
        """Reads the records back (none when the end marker never ran)."""
        path = work / _BLOCKS_FILE
        self.blocks = parse_blocks(path.read_text()) if path.is_file() else None


@cache
def _timing(name: str) -> CoreTiming:
    return load_timing(name)


def timing_for(board: Board) -> CoreTiming | None:
    """The board's core timing table, or None for a core without one (hosted targets)."""
    target = board.target_info
    if target is None or not target.timing:
        return None
    return _timing(target.timing)


_CLASSIFIERS: dict[str, Callable[[bytes], Insn]] = {"thumb": classify_thumb,
                                                     "riscv": classify_riscv}


def board_isa(board: Board) -> str:
    """"thumb" or "riscv": which classifier reads the board's code (by its LLVM triple)."""
    triple = board.target_info.llvm_triple
    for isa in _CLASSIFIERS:
        if triple.startswith(isa):
            return isa
    raise DescriptorError(f"board {board.identifier}: no instruction classifier for "
                          f"{triple} (a timing table needs one)")


def _classifier(board: Board) -> Callable[[bytes], Insn]:
    return _CLASSIFIERS[board_isa(board)]


@dataclass(frozen=True)
class CycleEstimate:
    """Estimated cycles of the instructions between the markers, at the board's clock."""

    cycles: int  # with the table's "use" values
    low: int  # every data-dependent cost and refill at the manual's minimum
    high: int  # ... at its maximum
    instructions: int
    clock_hz: int
    core: str
    classes: dict[str, int] = field(default_factory=dict)  # executions per timing class
    # Per executed block: (address, instructions, cycles, owner row or -1), for charging
    # a profile's rows.
    blocks: tuple[tuple[int, int, int, int], ...] = field(default=(), repr=False,
                                                          compare=False)

    @property
    def ms(self) -> float:
        """Milliseconds at the board's clock."""
        return self.cycles * 1000.0 / self.clock_hz

    @property
    def cpi(self) -> float:
        """Estimated cycles per instruction."""
        return self.cycles / self.instructions if self.instructions else 0.0

    def to_json(self) -> dict[str, Any]:
        """The estimate as plain data (for --json, bench results)."""
        return {"cycles": self.cycles, "cycles_low": self.low, "cycles_high": self.high,
                "ms": round(self.ms, 6), "clock_hz": self.clock_hz, "core": self.core,
                "classes": dict(sorted(self.classes.items()))}


def format_ms(ms: float) -> str:
    """Milliseconds with three significant digits at least (0.0123 ms, 12.3 ms, 123 ms)."""
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"


def format_hz(hz: int) -> str:
    """A clock in MHz or GHz, as datasheets write it."""
    return f"{hz / 1e9:g} GHz" if hz >= 1_000_000_000 else f"{hz / 1e6:g} MHz"


def no_estimate_reason(board: Board) -> str:
    """Why a board's runs have no cycle estimate (it has none: hosted, or no table)."""
    if board.simulation is not None and board.simulation.mode == "user":
        return f"{board.identifier} runs as a Linux process: no core timing to estimate with"
    return (f"target {board.target} has no core timing table (targets/timing/, "
            "docs/cycles.md)")


def describe_estimate(board: Board, estimate: CycleEstimate | None) -> str:
    """One line for run outputs: the estimated cycles and milliseconds, or "n/a" and why."""
    if estimate is None:
        return f"estimated cycles: n/a ({no_estimate_reason(board)})"
    return (f"estimated cycles: {estimate.cycles:,} on {estimate.core} "
            f"(range {estimate.low:,}..{estimate.high:,}), {format_ms(estimate.ms)} at "
            f"{format_hz(estimate.clock_hz)} ({board.identifier}; an estimate: docs/cycles.md)")


def block_cycles(block: Block, timing: CoreTiming, classify: Callable[[bytes], Insn],
                 wait_states: int, bound: str = "use",
                 classes: Counter[str] | None = None) -> int:
    """The cycles all runs of ``block`` cost (``bound``: "use", "min" or "max" for the
    data-dependent costs and the refill)."""
    refill = {"min": timing.refill[0], "use": timing.refill[1], "max": timing.refill[2]}[bound]
    per_run = 0
    cond = 0
    previous = ""
    for data in block.insns:
        insn = classify(data)
        cls = insn.cls
        if cls == "cond":
            cond += 1
            per_run += timing.cost("cond_not_taken").cycles(0, refill, bound)
        elif timing.pipelined_load is not None and previous in _LOADS \
                and cls in _PIPELINED_AFTER_LOAD:
            per_run += timing.pipelined_load
        else:
            per_run += timing.cost(cls).cycles(insn.regs, refill, bound)
        previous = cls
        if classes is not None and cls != "cond":
            classes[cls] += block.runs
    total = per_run * block.runs
    if cond:
        # Only a block's last instruction can be a branch (QEMU ends a block at one); the
        # taken runs are the ones that did not fall through.
        taken = block.runs - block.fell
        extra = (timing.cost("cond_taken").cycles(0, refill, bound)
                 - timing.cost("cond_not_taken").cycles(0, refill, bound))
        total += taken * extra
        if classes is not None:
            classes["cond_taken"] += taken
            classes["cond_not_taken"] += block.runs - taken
    if wait_states:
        total += wait_states * -(-block.n_bytes // _FETCH_BYTES) * block.runs
    return total


def flash_wait_states(board: Board) -> int:
    """Wait states the estimate adds per code fetch: the board's, unless a cache or an
    accelerator hides them (then hits are assumed)."""
    return 0 if board.flash_cache else board.flash_wait_states


def estimate_cycles(board: Board, blocks: Iterable[Block],
                    instructions: int) -> CycleEstimate | None:
    """The estimate for ``blocks`` run on ``board``; None when its core has no timing
    table. CycleError when the blocks do not add up to ``instructions`` (the plugin's
    exact count): then the records are not the run's."""
    timing = timing_for(board)
    if timing is None:
        return None
    blocks = list(blocks)
    seen = sum(b.runs * len(b.insns) for b in blocks)
    if seen != instructions:
        raise CycleError(f"board {board.identifier}: the plugin's block records hold {seen} "
                         f"instructions, its count says {instructions}")
    classify = _classifier(board)
    waits = flash_wait_states(board)
    classes: Counter[str] = Counter()
    per_block = tuple((b.vaddr, b.runs * len(b.insns),
                       block_cycles(b, timing, classify, waits, "use", classes), b.owner)
                      for b in blocks)
    cycles = sum(c for _, _, c, _ in per_block)
    low = sum(block_cycles(b, timing, classify, waits, "min") for b in blocks)
    high = sum(block_cycles(b, timing, classify, waits, "max") for b in blocks)
    return CycleEstimate(cycles=cycles, low=low, high=high, instructions=instructions,
                         clock_hz=board.clock_hz, core=timing.core, classes=dict(classes),
                         blocks=per_block)


def cycles_by_row(estimate: CycleEstimate, ranges: Sequence[tuple[int, int, str, int]],
                  callee_instructions: Sequence[int]) -> list[int]:
    """Splits the estimate over a profile's rows. ``ranges``: sorted (start, end, kind,
    row) code ranges as the profile gives the plugin (kind 'c': a callee, charged to its
    caller); ``callee_instructions``: per row, its instructions run in callees (exact,
    from the profile). A block counts for the range of its first instruction, callee code
    for the row the plugin saw it run for; callee blocks without one (a run without a
    profile) are shared out in proportion to the rows' callee instructions. The rows add
    up to ``estimate.cycles`` exactly."""
    rows = [0] * len(callee_instructions)
    starts = [r[0] for r in ranges]
    callee_insns = callee_cycles = 0
    for vaddr, insns, cycles, owner in estimate.blocks:
        if 0 <= owner < len(rows):  # the plugin knew whom this callee code ran for
            rows[owner] += cycles
            continue
        i = bisect_right(starts, vaddr) - 1
        if i >= 0 and vaddr < ranges[i][1]:
            _, _, kind, row = ranges[i]
            if kind == "c":
                callee_insns += insns
                callee_cycles += cycles
                continue
            rows[row] += cycles
        else:
            rows[-1] += cycles  # the plugin's "other" row
    if callee_insns:
        weight = sum(callee_instructions)
        shares = [callee_cycles * n // weight if weight else 0 for n in callee_instructions]
        if weight:
            biggest = max(range(len(rows)), key=lambda r: callee_instructions[r])
            shares[biggest] += callee_cycles - sum(shares)
        else:
            shares[-1] += callee_cycles
        rows = [a + b for a, b in zip(rows, shares, strict=True)]
    return rows
