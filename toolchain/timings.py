"""Per-stage build timings: where `minirt-build`'s seconds go (`--timings`, size.json's
``timings``, bench/compile_time.py).

A stage is timed by ``with stage("codegen"):`` anywhere below the pipeline; the times
go to the recorder a caller installed with ``with recording() as timings:`` and are
dropped when there is none, so the library code costs one dictionary look-up per stage
when nobody asks. Stages are exclusive: a stage opened inside another pauses the outer
one, so the stages of one build add up to its total and no second is counted twice.

Each stage keeps wall seconds and CPU seconds. CPU is this process's (every thread)
plus its waited-for child processes' (clang, ld.lld, QEMU): on a machine shared with
other work the wall time says how long one waited, the CPU time what the stage costs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["StageTime", "Timings", "cpu_seconds", "process_start_seconds", "recording",
           "stage"]


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and the children it has waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def process_start_seconds() -> float | None:
    """Wall seconds since this process started (Python's own start-up and imports
    included), from /proc; None where there is no /proc."""
    try:
        with open("/proc/self/stat", "rb") as f:
            # Field 22 (starttime, clock ticks after boot) follows the ")" of the name.
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))


@dataclass
class StageTime:
    """Seconds spent in one stage, over all the times it was entered."""

    wall: float = 0.0
    cpu: float = 0.0
    calls: int = 0


@dataclass
class Timings:
    """The stages of one build in the order first entered."""

    stages: dict[str, StageTime] = field(default_factory=dict)
    # The open stages, innermost last, each with its (wall, cpu) at entry or resumption.
    _open: list[tuple[str, float, float]] = field(default_factory=list, repr=False)

    def _charge(self, name: str, wall0: float, cpu0: float, wall: float, cpu: float) -> None:
        row = self.stages.setdefault(name, StageTime())
        row.wall += wall - wall0
        row.cpu += cpu - cpu0

    def enter(self, name: str) -> None:
        """Opens stage `name`, pausing the one open now."""
        wall, cpu = time.perf_counter(), cpu_seconds()
        if self._open:
            outer, w0, c0 = self._open[-1]
            self._charge(outer, w0, c0, wall, cpu)
        self.stages.setdefault(name, StageTime()).calls += 1
        self._open.append((name, wall, cpu))

    def leave(self) -> None:
        """Closes the innermost stage and resumes the one it paused."""
        wall, cpu = time.perf_counter(), cpu_seconds()
        name, w0, c0 = self._open.pop()
        self._charge(name, w0, c0, wall, cpu)
        if self._open:
            outer, _, _ = self._open[-1]
            self._open[-1] = (outer, wall, cpu)

    def add(self, name: str, wall: float, cpu: float) -> None:
        """Records time measured elsewhere (the interpreter's start-up) as a stage."""
        row = self.stages.setdefault(name, StageTime())
        row.wall += wall
        row.cpu += cpu
        row.calls += 1

    @property
    def total_wall(self) -> float:
        return sum(s.wall for s in self.stages.values())

    @property
    def total_cpu(self) -> float:
        return sum(s.cpu for s in self.stages.values())

    def to_json(self) -> dict:
        """``{stage: {"wall": s, "cpu": s}}`` rounded to milliseconds, in stage order."""
        return {name: {"wall": round(s.wall, 3), "cpu": round(s.cpu, 3)}
                for name, s in self.stages.items()}

    def format(self) -> str:
        """The table `minirt-build --timings` prints: one line per stage, then the total."""
        width = max([len(n) for n in self.stages] + [len("total")])
        lines = [f"{'stage':<{width}}  {'wall s':>7}  {'cpu s':>7}"]
        for name, s in self.stages.items():
            lines.append(f"{name:<{width}}  {s.wall:7.3f}  {s.cpu:7.3f}")
        lines.append(f"{'total':<{width}}  {self.total_wall:7.3f}  {self.total_cpu:7.3f}")
        return "\n".join(lines)


# The recorder of the build running in this process (builds do not run concurrently in
# one process: the pipeline is single-threaded; its clang jobs run inside one stage).
_current: Timings | None = None


@contextmanager
def recording(timings: Timings | None = None) -> Iterator[Timings]:
    """Installs a recorder for the stages run inside the block (a new one unless given);
    the previous recorder, if any, is restored after."""
    global _current
    previous, _current = _current, timings if timings is not None else Timings()
    try:
        yield _current
    finally:
        _current = previous


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Times the block as stage `name` in the installed recorder (nothing without one)."""
    timings = _current
    if timings is None:
        yield
        return
    timings.enter(name)
    try:
        yield
    finally:
        timings.leave()
