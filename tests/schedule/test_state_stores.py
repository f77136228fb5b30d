"""schedule/program.py _state_stores: how new state values reach the state region,
where the inference reads the old ones in place: computed straight into their slot when
that is safe, else copied in after every read of the old value (two values that swap
go through a copy aside); each kind run on firmware (x86-64) step by step against the
reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.graph.ir import Graph, StateVar, Tensor
from toolchain.pipeline import compile_graph, lower_for_backends, prepare_graph
from toolchain.reference.state import run_stream
from toolchain.schedule.program import schedule
from toolchain.stream import run_firmware_stream
from toolchain.target import load_board
from toolchain.types import TensorType, dtype

F32 = dtype("f32")
V4 = TensorType((4,), F32)


def _graph(name: str, n_states: int) -> tuple[Graph, Tensor, list[Tensor]]:
    g = Graph(name)
    x = g.add_input(V4)
    olds = [g.add_input(V4, f"state:{k}") for k in range(n_states)]
    g.states = [StateVar(f"s{k}", np.full(4, k + 1, np.float32), np.zeros(4, np.float32))
                for k in range(n_states)]
    return g, x, olds


def accumulate() -> Graph:
    """s' = s + x (read at its own index: stored in place); y = 2 x."""
    g, x, (s,) = _graph("accumulate", 1)
    new = g.add("add", [s, x], [V4]).output
    g.outputs = [g.add("add", [x, x], [V4]).output, new]
    return g


def shift() -> Graph:
    """s' = [s[1:], x[0]] (the slices are copies of their own: stored in place); y = s' x."""
    g, x, (s,) = _graph("shift", 1)
    tail = g.add("slice", [s], [TensorType((3,), F32)],
                 {"start": (1,), "limit": (4,), "strides": (1,)}).output
    head = g.add("slice", [x], [TensorType((1,), F32)],
                 {"start": (0,), "limit": (1,), "strides": (1,)}).output
    new = g.add("concatenate", [tail, head], [V4], {"dimension": 0}).output
    g.outputs = [g.add("multiply", [new, x], [V4]).output, new]
    return g


def mirror() -> Graph:
    """s' = reverse(s) + x (one dispatch reading s mirrored: copied in at the end)."""
    g, x, (s,) = _graph("mirror", 1)
    new = g.add("add", [g.add("reverse", [s], [V4], {"dims": (0,)}).output, x],
                [V4]).output
    g.outputs = [g.add("add", [x, x], [V4]).output, new]
    return g


def read_after() -> Graph:
    """s' = s + x, then y = s * s' reads the old value after it (copied in at the end)."""
    g, x, (s,) = _graph("read_after", 1)
    new = g.add("add", [s, x], [V4]).output
    g.outputs = [g.add("multiply", [s, new], [V4]).output, new]
    return g


def swap() -> Graph:
    """a' = b, b' = a + x; y = a * b."""
    g, x, (a, b) = _graph("swap", 2)
    y = g.add("multiply", [a, b], [V4]).output
    g.outputs = [y, b, g.add("add", [a, x], [V4]).output]
    return g


def _steps(g: Graph) -> list[str]:
    return [s.kernel.name for s in schedule(lower_for_backends(prepare_graph(g))).steps]


@pytest.mark.parametrize("make", [accumulate, shift])
def test_values_stored_in_place(make):
    assert not any("copy" in name for name in _steps(make()))


@pytest.mark.parametrize("make", [mirror, read_after])
def test_values_copied_in_after_the_last_read(make):
    assert "copy" in _steps(make())[-1]


def test_swapped_values_go_through_a_copy_aside():
    assert [name.split("_", 1)[1] for name in _steps(swap())][-3:] == ["copy"] * 3


@pytest.mark.parametrize("make", [accumulate, shift, mirror, read_after, swap])
def test_firmware_keeps_the_state_like_the_reference(make, tmp_path: Path):
    g = make()
    board = load_board("x86-64")
    result = compile_graph(g, board, tmp_path / "fw", log=lambda _: None)
    rng = np.random.default_rng(0)
    steps = [[rng.normal(size=4).astype(np.float32)] for _ in range(6)]
    run = run_firmware_stream(board, result.out_dir, steps, result.graph, resets=[4],
                              log=lambda _: None)
    want = run_stream(result.graph, steps, frozenset({4}))
    for k, (got, ref) in enumerate(zip(run.outputs, want, strict=True)):
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=f"step {k}")
