"""A differential testing campaign: many random graphs on several boards, in parallel,
with every failure shrunk and saved (bench/random_graphs.py is its command line).

Work is cut into (board, batch of seeds) units run by a process pool; each unit builds
one firmware for its batch (difftest.run_batch). The summary counts, per board, the
graphs run, the ops and element types they held, and every outcome; failures are
shrunk on their board (shrink.py) and written as reproducers.
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolchain.graph.ops import OPS
from toolchain.testing.difftest import BOARDS, Case, Outcome, prepare, run_batch, run_single
from toolchain.testing.random_graphs import RandomGraph

__all__ = ["Campaign", "run_campaign", "minimize", "dtypes_of"]


def dtypes_of(rg: RandomGraph) -> set[str]:
    """Element types of every tensor of the graph, regions included."""
    names = {t.type.dtype.name for t in rg.graph.inputs}
    for node in rg.graph.walk():
        names.update(t.type.dtype.name for t in node.outputs)
    return names


@dataclass
class Campaign:
    """What a campaign found."""

    boards: list[str]
    seeds: list[int]
    outcomes: list[Outcome] = field(default_factory=list)
    dtypes: Counter = field(default_factory=Counter)  # graphs holding each element type
    mlir_graphs: int = 0  # graphs that went through MLIR (print, parse, import)
    seconds: float = 0.0

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def summary(self) -> dict:
        """Per board: graphs, outcomes, ops covered; overall: ops not generated."""
        boards = {}
        for b in self.boards:
            mine = [o for o in self.outcomes if o.board == b]
            ops: Counter = Counter()
            for o in mine:
                ops.update(set(o.ops))
            statuses = Counter(o.status for o in mine)
            boards[b] = {"graphs": len(mine), "ok": statuses.get("ok", 0),
                         "mismatches": statuses.get("mismatch", 0),
                         "build_failures": statuses.get("build", 0),
                         "crashes": statuses.get("crash", 0),
                         "host_failures": sum(statuses.get(k, 0) for k in
                                              ("import", "roundtrip", "reference")),
                         "ops_covered": len(ops), "graphs_per_op": dict(sorted(ops.items()))}
        covered = set().union(*(set(b["graphs_per_op"]) for b in boards.values())) \
            if boards else set()
        return {"graphs_per_board": len(self.seeds), "boards": boards,
                "graph_ops": len(OPS), "ops_not_generated": sorted(set(OPS) - covered),
                "graphs_through_mlir": self.mlir_graphs,
                "graphs_per_element_type": dict(sorted(self.dtypes.items())),
                "seconds": round(self.seconds, 1)}


def _unit(args: tuple[str, list[int], int, str]) -> tuple[list[Outcome], Counter, int]:
    board, seeds, max_ops, work = args
    cases = [prepare(s, max_ops) for s in seeds]
    dtypes: Counter = Counter()
    for c in cases:
        dtypes.update(dtypes_of(c.rg))
    mlir = sum(c.mlir is not None and c.problem is None for c in cases)
    return run_batch(cases, board, Path(work)), dtypes, mlir


def run_campaign(seeds: list[int], boards: tuple[str, ...] = BOARDS, jobs: int = 2,
                 batch: int = 25, max_ops: int = 8,
                 progress: Callable[[str], None] = lambda m: print(m, file=sys.stderr,
                                                                    flush=True)
                 ) -> Campaign:
    """Runs graphs `seeds` on every board of `boards`, `batch` graphs per firmware,
    `jobs` units at a time."""
    start = time.perf_counter()
    result = Campaign(list(boards), list(seeds))
    with tempfile.TemporaryDirectory(prefix="minirt-random-graphs-") as work:
        units = [(b, seeds[i:i + batch], max_ops, work) for b in boards
                 for i in range(0, len(seeds), batch)]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(jobs) as pool:
            for k, (outs, dtypes, mlir) in enumerate(pool.imap_unordered(_unit, units), 1):
                result.outcomes += outs
                if k <= len(units) // len(boards):  # count each graph once, not per board
                    result.dtypes.update(dtypes)
                    result.mlir_graphs += mlir
                bad = [o for o in outs if not o.ok]
                progress(f"random_graphs: {k}/{len(units)} batches, "
                         f"{len(result.outcomes)} runs, {len(result.failures())} failures"
                         + "".join(f"\n  {o.board} seed {o.seed}: {o.status}: "
                                   f"{o.detail.splitlines()[0][:160] if o.detail else ''}"
                                   for o in bad))
    result.outcomes.sort(key=lambda o: (boards.index(o.board) if o.board in boards else 0,
                                        o.seed))
    result.seconds = time.perf_counter() - start
    return result


def _same_failure(a: Outcome, b: Outcome) -> bool:
    """b fails like a: the same status (and for build failures the same exception)."""
    if a.status != b.status:
        return False
    if a.status == "build":
        return a.detail.split(":")[0] == b.detail.split(":")[0]
    return True


def minimize(outcome: Outcome, max_ops: int, work: Path, budget: int = 60,
             log: Callable[[str], None] = lambda _: None) -> tuple[Case, Case]:
    """The failing case of `outcome` and its shrunk version (shrink.py), which fails
    the same way on the same board."""
    from toolchain.testing.shrink import shrink

    case = prepare(outcome.seed, max_ops)

    def rebuild(graph, inputs) -> Case:
        rg = RandomGraph(outcome.seed, graph, [], Counter(n.op for n in graph.walk()))
        return prepare(outcome.seed, max_ops, rg=rg, inputs=inputs)

    def fails(graph, inputs) -> bool:
        c = rebuild(graph, inputs)
        if outcome.board == "host":
            return c.problem is not None and _same_failure(outcome, c.problem)
        if c.problem is not None:
            return False
        return _same_failure(outcome, run_single(c, outcome.board, work))

    graph, inputs = shrink(case.rg.graph, case.inputs, fails, budget, log)
    return case, rebuild(graph, inputs)
