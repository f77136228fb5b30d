"""Running the tuner's measurements on local cores: a process pool (-j N).

Each measurement is a build and a QEMU run, a few seconds of one core's work, with
nothing shared between them; concurrent.futures' ProcessPoolExecutor runs `jobs` of
them at a time. With one job the measurements run in this process, one after another.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from toolchain.tune.measure import Job, Measurement, measure

__all__ = ["LocalPool", "default_jobs"]


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class LocalPool:
    """Measures on `jobs` local processes."""

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or default_jobs()

    def describe(self) -> str:
        return f"{self.jobs} local process{'es' if self.jobs > 1 else ''}"

    def map(self, jobs: Sequence[Job],
            fn: Callable[[Job], Measurement] = measure) -> list[Measurement]:
        """`fn` of every job, in the jobs' order."""
        if self.jobs == 1 or len(jobs) <= 1:
            return [fn(j) for j in jobs]
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(jobs))) as ex:
            return list(ex.map(fn, jobs))
