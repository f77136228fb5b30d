"""One case's verdict, and the rules that sort an exception into a refusal or a crash.

A refusal is minirt saying, in one line, that it does not take something (the
toolchain's CompileError and the loader's UsageError, which every frontend raises for an
op, type or attribute it does not hold). Any other exception is a crash: a bug to fix,
recorded by its first line and where it was raised.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.graph.ir import Graph
from toolchain.loader import UsageError

__all__ = ["Result", "Prepared", "STATUSES", "verdict_of_exception", "first_line"]

# Outcomes, in the order the report lists them.
STATUSES = ("pass", "refused", "wrong", "crash", "excluded")


@dataclass
class Prepared:
    """A case ready to run anywhere: the graph to build, the inputs to feed, and the
    checks: (output index, the expected value or the index of the output it must equal,
    the judge comparing them, compare.py)."""

    graph: Graph
    inputs: list[np.ndarray]
    checks: list[tuple[int, np.ndarray | int, Callable]]
    n_outputs: int  # how many outputs the test expects the graph to have

    def judge(self, outputs: list[np.ndarray]) -> str | None:
        """None when every check holds on `outputs`, else the first that does not."""
        if len(outputs) != self.n_outputs:
            return f"{len(outputs)} outputs, expected {self.n_outputs}"
        for i, want, judge in self.checks:
            want = outputs[want] if isinstance(want, int) else want
            problem = judge(np.asarray(outputs[i]), np.asarray(want))
            if problem is not None:
                return f"output {i}: {problem}"
        return None


@dataclass
class Result:
    """suite, case name, op (the row of the report), status and its one-line reason."""

    suite: str
    name: str
    op: str
    status: str
    reason: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def first_line(text: str) -> str:
    """The first non-empty line of an error, without the temporary directory's path."""
    line = next((s for s in str(text).splitlines() if s.strip()), "")
    return re.sub(r"/tmp/\S*/", "", line).strip()


def verdict_of_exception(e: BaseException) -> tuple[str, str]:
    """('refused', the error's line) or ('crash', its first line and where)."""
    if isinstance(e, (CompileError, UsageError)):
        # An importer lists every problem it finds, one error a line: the first, and
        # how many more.
        more = len([s for s in str(e).splitlines() if s.strip()]) - 1
        return "refused", first_line(str(e)) + (f" (and {more} more)" if more > 0 else "")
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return "crash", f"{type(e).__name__}: {first_line(str(e))}{where}"
