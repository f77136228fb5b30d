"""Inference after inference on one state: the reference side of `Graph.states`.

A stateful graph is a pure function of (inputs, state) to (outputs, new state)
(graph/ir.py); `StateRunner` keeps the state between calls, as the firmware keeps it in
its state region, starting from the boot values and returning to the reset values on
`reset()` (what TFLite Micro's MicroInterpreter::Reset does: docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolchain.graph.ir import Graph
from toolchain.reference.executor import run_graph


class StateRunner:
    """Runs `graph` step after step, carrying its state from one step to the next."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.values = [np.array(s.initial) for s in graph.states]

    def reset(self) -> None:
        """Every state value back to its reset value (no init subgraph runs again)."""
        self.values = [np.array(s.reset) for s in self.graph.states]

    def step(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One inference on the caller's inputs; returns the caller's outputs and keeps
        the new state."""
        n = len(self.graph.states)
        results = run_graph(self.graph, [*inputs, *self.values])
        if n:
            self.values = [np.array(v) for v in results[len(results) - n:]]
            return results[:len(results) - n]
        return results


def run_stream(graph: Graph, steps: Sequence[Sequence[np.ndarray]],
               resets: frozenset[int] = frozenset(),
               feedback: Sequence[tuple[int, int]] = ()) -> list[list[np.ndarray]]:
    """Runs one inference per entry of `steps` (each the caller's inputs) on one state,
    resetting it before each step in `resets`. Each (output k, input j) pair of
    `feedback` feeds output k of a step into input j of the next (the first step takes
    input j from `steps`). Returns every step's outputs."""
    runner = StateRunner(graph)
    outputs: list[list[np.ndarray]] = []
    for k, given in enumerate(steps):
        if k in resets:
            runner.reset()
        inputs = list(given)
        if k:
            for out, into in feedback:
                inputs[into] = outputs[-1][out]
        outputs.append(runner.step(inputs))
    return outputs


__all__ = ["StateRunner", "run_stream"]
