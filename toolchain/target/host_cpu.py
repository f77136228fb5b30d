"""Which CPU levels this host's CPU executes: the /proc/cpuinfo flags a target's CPU
level needs beyond its architecture's baseline (the x86-64 psABI's levels), for the
boards whose programs run natively (minirt-bench, and the `simulation.native` boards
that QEMU cannot run)."""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["CPU_FLAGS", "host_cpu_flags", "missing_cpu_flags", "native_refusal"]

_V3 = ("avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "movbe", "sse4_2", "popcnt")
# By LLVM cpu name; LZCNT is `abm` in /proc/cpuinfo.
CPU_FLAGS: dict[str, tuple[str, ...]] = {
    "x86-64-v3": _V3,
    "x86-64-v4": (*_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}


def host_cpu_flags() -> set[str]:
    """The flags of this host's first CPU in /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def missing_cpu_flags(cpu: str) -> list[str]:
    """The flags CPU level `cpu` needs that this host's CPU lacks (none for a level
    without a row: the architecture's baseline)."""
    have = host_cpu_flags()
    return [f for f in CPU_FLAGS.get(cpu, ()) if f not in have]


def native_refusal(board) -> str:  # noqa: ANN001 (a Board; target imports this module)
    """Why this host cannot run `board`'s native programs (a `simulation.native` x86-64
    board), in one line; "" when it can."""
    target = board.target_info
    missing = missing_cpu_flags(target.cpu)
    if platform.machine().lower() not in ("x86_64", "amd64"):
        lacks = "is not x86-64"
    elif missing:
        lacks = f"lacks {', '.join(missing)}"
    else:
        return ""
    return (f"board {board.identifier}: its {target.cpu} code runs natively (QEMU cannot "
            f"execute it) and this host's CPU {lacks}")
