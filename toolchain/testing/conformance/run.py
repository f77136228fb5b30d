"""Runs the suites' cases on the numpy reference: each case a Result (outcome.py), and
for each pass the Prepared cases a board sample may build (boards.py).

A case has CASE_SECONDS: the slowest passing cases take about a second on the
reference; one that runs away is a crash to look into, not a wait.
"""

from __future__ import annotations

import signal
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from toolchain.reference import run_graph
from toolchain.testing.conformance import onnx_suite, stablehlo_suite
from toolchain.testing.conformance.outcome import Prepared, Result, verdict_of_exception

__all__ = ["CASE_SECONDS", "run_onnx", "run_stablehlo", "sample"]

CASE_SECONDS = 20


class CaseTimeout(Exception):
    """A case ran past CASE_SECONDS."""


def _alarm(*_: object) -> None:
    raise CaseTimeout(f"over {CASE_SECONDS} s")


def _judge_all(prepare: Callable[[], list[Prepared]]) -> tuple[str, str, list[Prepared]]:
    """(status, reason, prepared) of a case whose data sets `prepare` gives."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's warnings on the tests' NaN and inf
            prepared = prepare()
            for p in prepared:
                problem = p.judge(run_graph(p.graph, p.inputs))
                if problem is not None:
                    return "wrong", problem, []
        return "pass", "", prepared
    except Exception as e:  # noqa: BLE001 - sorted into a refusal or a crash
        status, reason = verdict_of_exception(e)
        return status, reason, []
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_onnx(cases: Iterable[onnx_suite.Case], work: Path | None = None,
             ) -> list[tuple[Result, list[Prepared]]]:
    """Every ONNX case judged on the reference, out-of-scope ones marked excluded."""
    out = []
    for c in cases:
        why = onnx_suite.exclusion(c)
        if why is not None:
            out.append((Result("onnx", c.name, c.op, "excluded", why), []))
            continue
        status, reason, prepared = _judge_all(lambda c=c: [
            onnx_suite.prepare(c, k, work) for k in range(len(c.case.data_sets))])
        out.append((Result("onnx", c.name, c.op, status, reason), prepared))
    return out


def run_stablehlo(tests: Iterable[stablehlo_suite.Test], lift: bool,
                  ) -> list[tuple[Result, list[Prepared]]]:
    """Every StableHLO interpreter test judged on the reference (constants lifted to
    inputs with `lift`)."""
    out = []
    for t in tests:
        status, reason, prepared = _judge_all(
            lambda t=t: [stablehlo_suite.prepare(t, lift)])
        if t.text is None:  # out of scope (stablehlo_suite's docstring says why)
            status = "excluded"
        out.append((Result("stablehlo", t.name, t.op, status, reason), prepared))
    return out


def sample(results: list[tuple[Result, list[Prepared]]], every: int,
           ) -> list[tuple[Result, list[Prepared]]]:
    """Every `every`-th pass by sorted name, from the first: deterministic, and spread
    over the ops as the names are."""
    passes = sorted((r for r in results if r[0].status == "pass"), key=lambda r: r[0].name)
    return passes[::every]
