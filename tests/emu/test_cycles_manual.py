"""The cycle estimate against the cores' manuals, on hand-written loops
(data/cycle_loops.c) run under QEMU with the plugin.

Each loop runs N1 and then N2 times; the difference of the estimates over N2 - N1
iterations is what one iteration costs with its back-branch taken, free of the harness
around it. The expected cycles below are computed by hand from the manuals (section
cited per core), as (fewest, what the estimate charges, most): the middle figure must
match exactly, and the estimate's low / high bounds must match the manual's range. For the
Cortex-M7 and M55, whose manuals publish no cycle table, the figures are those of the
stated model (targets/timing/cortex-m7.yaml, cortex-m55.yaml), so the test checks the
classification and the taken-branch count on those cores rather than the model itself.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from toolchain.emu.run import run_image
from toolchain.link import link_firmware
from toolchain.target import Board, load_board

DATA = Path(__file__).resolve().parent / "data"
DOUBLES = Path(__file__).resolve().parents[1] / "link" / "doubles"
N1, N2 = 10, 110
LOADS, MULS, BRANCHES, DIVIDES, LDM, FP = range(6)

# (instructions per iteration, (min, charged, max) cycles per iteration) by board, kernel.
# Thumb-2 loops: loads = 4 x LDR, SUBS, BNE; muls = 4 x MLA, SUBS, BNE; branches = CMP,
# BEQ (never taken), SUBS, BNE; divides = 2 x UDIV, SUBS, BNE; ldm = LDM {r4-r7}, SUBS,
# BNE; fp = VADD.F32, VMUL.F32, VMLA.F32, SUBS, BNE. A taken BNE is 1+P, P in 1..3.
EXPECTED: dict[str, dict[int, tuple[int, tuple[int, int, int]]]] = {
    # Cortex-M4 TRM (DDI 0439B) §3.3.1 Table 3-1 and §3.3.2: LDR 2, a load after a load
    # pipelined to 1 ("LDR R0,[R1,R5]; LDR R1,[R2]; LDR R2,[R3,#4] - normally four
    # cycles"); MLA 1; UDIV 2-12; LDM 1+N; B<c> not taken 1, taken 1+P. FPU §7.2.3
    # Table 7-1: VADD 1, VMUL 1, VMLA 3. The estimate charges P = 2, divides at 12.
    "cortex-m4": {
        LOADS: (6, (2 + 1 + 1 + 1 + 1 + 2, 2 + 3 + 1 + 3, 5 + 1 + 4)),
        MULS: (6, (4 + 1 + 2, 4 + 1 + 3, 4 + 1 + 4)),
        BRANCHES: (4, (1 + 1 + 1 + 2, 1 + 1 + 1 + 3, 1 + 1 + 1 + 4)),
        DIVIDES: (4, (2 + 2 + 1 + 2, 12 + 12 + 1 + 3, 12 + 12 + 1 + 4)),
        LDM: (3, (5 + 1 + 2, 5 + 1 + 3, 5 + 1 + 4)),
        FP: (5, (1 + 1 + 3 + 1 + 2, 1 + 1 + 3 + 1 + 3, 1 + 1 + 3 + 1 + 4)),
    },
    # Cortex-M3 TRM (DDI 0337I) §3.3.1 Table 3-1: as the M4 but MLA 2 ("MLA, MLS 2").
    "cortex-m3": {
        LOADS: (6, (8, 9, 10)),
        MULS: (6, (4 * 2 + 1 + 2, 4 * 2 + 1 + 3, 4 * 2 + 1 + 4)),
        BRANCHES: (4, (5, 6, 7)),
        DIVIDES: (4, (7, 28, 29)),
        LDM: (3, (8, 9, 10)),
    },
    # Cortex-M0+ TRM (DDI 0484C) §3.3 Table 3-1: LDR 2, MULS 1 (fast multiplier; 32 with
    # the small one), LDM 1+N, B<c> taken 2 / not taken 1, other data processing 1.
    # Loops: loads = 4 x LDR, SUBS, BNE; muls = 4 x MULS, SUBS, BNE; ldm = LDM r1!,
    # SUBS r1, SUBS, BNE.
    "cortex-m0plus": {
        LOADS: (6, (4 * 2 + 1 + 2,) * 3),
        MULS: (6, (4 + 1 + 2, 4 + 1 + 2, 4 * 32 + 1 + 2)),
        BRANCHES: (4, (1 + 1 + 1 + 2,) * 3),
        LDM: (4, (5 + 1 + 1 + 2,) * 3),
    },
    # SiFive E31 Core Complex Manual §3.3-3.4: one instruction per cycle, the divider up
    # to 33 cycles, a taken (predicted) branch 1 more, a mispredict 3. Loops: loads =
    # 4 x LW, ADDI, BNEZ; muls = 4 x MUL, ADDI, BNEZ; branches = BEQZ (never taken),
    # ADDI, BNEZ; divides = 2 x DIVU, ADDI, BNEZ.
    "riscv32-nofpu": {
        LOADS: (6, (7, 7, 9)),
        MULS: (6, (7, 7, 9)),
        BRANCHES: (3, (4, 4, 6)),
        DIVIDES: (4, (2 * 2 + 1 + 2, 2 * 33 + 1 + 2, 2 * 33 + 1 + 4)),
    },
    # The Cortex-M7 model: one cycle per instruction, predicted branches (P = 0, up to 8
    # on a mispredict), divides as the M4's.
    "cortex-m7": {
        LOADS: (6, (6, 6, 14)),
        MULS: (6, (6, 6, 14)),
        BRANCHES: (4, (4, 4, 12)),
        DIVIDES: (4, (6, 26, 34)),
        LDM: (3, (7, 7, 15)),
        FP: (5, (5, 5, 13)),
    },
    # The Cortex-M55 model: the M4's scalar timings with single-cycle TCM loads and FP MAC.
    "cortex-m55": {
        LOADS: (6, (7, 8, 9)),
        MULS: (6, (7, 8, 9)),
        BRANCHES: (4, (5, 6, 7)),
        DIVIDES: (4, (7, 28, 29)),
        LDM: (3, (8, 9, 10)),
        FP: (5, (6, 7, 8)),
    },
}
# The Cortex-M33 uses the M4's table (its TRM has none): the same figures.
EXPECTED["cortex-m33"] = EXPECTED["cortex-m4"]

CASES = [(board, kernel) for board, kernels in EXPECTED.items() for kernel in kernels]


@pytest.fixture(scope="module")
def loops_image(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    cache: dict[str, tuple[Board, Path]] = {}

    def build(name: str) -> tuple[Board, Path]:
        if name not in cache:
            board = load_board(name)
            missing = [t for t in ("clang", "ld.lld", board.simulation.qemu)
                       if shutil.which(t) is None]
            if missing:
                pytest.skip(f"missing tools: {', '.join(missing)}")
            result = link_firmware(
                board, [], tmp_path_factory.mktemp(f"loops-{name}"),
                runtime_parts=("platform", "harness"),
                extra_sources=[DOUBLES / "core_double.c", DATA / "cycle_loops.c"],
                extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"])
            cache[name] = (board, result.elf)
        return cache[name]

    return build


def _run(board: Board, elf: Path, kernel: int, iterations: int):  # type: ignore[no-untyped-def]
    data = struct.pack("<II8s", kernel, iterations, bytes(8))
    result = run_image(board, elf, data)
    assert result.exit_code == 0, result.console + result.stderr
    assert result.outputs == data
    assert result.cycles is not None, f"{board.identifier}: no estimate"
    return result


@pytest.mark.parametrize(("name", "kernel"), CASES)
def test_loop_matches_the_manual(name: str, kernel: int, loops_image) -> None:  # type: ignore[no-untyped-def]
    board, elf = loops_image(name)
    first, second = _run(board, elf, kernel, N1), _run(board, elf, kernel, N2)
    insns, (low, use, high) = EXPECTED[name][kernel]
    n = N2 - N1
    assert second.instructions - first.instructions == n * insns
    a, b = first.cycles, second.cycles
    assert (b.cycles - a.cycles, b.low - a.low, b.high - a.high) == (n * use, n * low, n * high)


def test_taken_and_not_taken_are_counted(loops_image) -> None:  # type: ignore[no-untyped-def]
    """The branch loop: its back-branch is taken every iteration but the last, its BEQ
    never; the counts by class say so exactly."""
    board, elf = loops_image("cortex-m4")
    first, second = _run(board, elf, BRANCHES, N1), _run(board, elf, BRANCHES, N2)
    taken = second.cycles.classes["cond_taken"] - first.cycles.classes["cond_taken"]
    not_taken = (second.cycles.classes["cond_not_taken"]
                 - first.cycles.classes["cond_not_taken"])
    assert (taken, not_taken) == (N2 - N1, N2 - N1)
