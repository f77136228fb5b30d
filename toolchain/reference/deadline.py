"""A time limit for the reference executor (`minirt-run --timeout` on the host).

A model's `while` may never end (its trip count is data), so the reference must be
stoppable like the firmware under QEMU. The limit is cooperative: the executor calls
`check_deadline` before every node it runs, and every loop of the reference (a `while`,
a function's blocks, a region run per element) runs its body through the executor, so
an endless loop reaches a check at every turn. numpy calls between two checks are
bounded by the model's tensor sizes, which minirt-run has already checked against the
host's memory.

We chose this over SIGALRM / setitimer raising in the main thread: a signal works only
in the main thread and on Unix, replaces whatever else uses the process's one timer
(pytest-timeout, a caller's own alarm), and raises at an arbitrary bytecode, inside a
`finally` or an `except Exception` that may swallow it; a check between nodes raises at
a known point, from any thread, and costs one context-variable read per node when no
limit is set (constant folding runs the executor without one).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ReferenceTimeout", "check_deadline", "time_limit"]

# (the time.monotonic() at which the reference run in this context must stop, the limit
# in seconds as given, for the message); None: no limit.
_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("minirt_reference_deadline",
                                                               default=None)


class ReferenceTimeout(Exception):
    """The reference did not finish within its time limit (usually a loop that never
    ends)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the reference did not finish within {seconds:g} s (a loop that "
                         "never ends?)")
        self.seconds = seconds


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Reference runs inside the block raise ReferenceTimeout once `seconds` have passed
    (None: no limit). Limits nest: the earlier deadline wins."""
    if seconds is None:
        yield
        return
    mine = (time.monotonic() + seconds, seconds)
    outer = _DEADLINE.get()
    token = _DEADLINE.set(mine if outer is None else min(outer, mine))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Raises ReferenceTimeout when the current time limit has passed."""
    limit = _DEADLINE.get()
    if limit is not None and time.monotonic() > limit[0]:
        raise ReferenceTimeout(limit[1])
