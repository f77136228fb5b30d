"""Fusion on models whose size is a parameter: every fused kernel stays within what the
backend takes (depth, bindings), shared subexpressions stay shared, and the program
still computes the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from generated_models import elementwise_chain, reshape_chain, wide_concatenate, wide_sum

from toolchain.kernel.form import MAX_DEPTH, MAX_OPERANDS, depth, postorder
from toolchain.loader import load_graph, random_inputs
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import Program, schedule


def _scheduled(text: str, tmp_path: Path) -> tuple[Program, list[np.ndarray], list[np.ndarray]]:
    path = tmp_path / "model.mlir"
    path.write_text(text)
    graph = load_graph(path)
    inputs = random_inputs(graph, seed=3)
    want = run_graph(graph, inputs)
    return schedule(fold_constants(graph)), inputs, want


def _within_limits(program: Program) -> None:
    for step in program.steps:
        k = step.kernel
        assert depth(k.body, k.init) <= MAX_DEPTH, k.name
        assert len(k.operands) <= MAX_OPERANDS, k.name


@pytest.mark.parametrize("n", [300, 1000, 3000])
def test_long_elementwise_chain(n: int, tmp_path: Path, execute) -> None:
    """A 300-op chain used to end in a RecursionError in fusion; now it becomes a few
    dispatches of bounded depth (about n / MAX_DEPTH of them)."""
    program, inputs, want = _scheduled(elementwise_chain(n), tmp_path)
    _within_limits(program)
    assert n // MAX_DEPTH <= len(program.steps) <= 2 * n // MAX_DEPTH + 1
    np.testing.assert_allclose(execute(program, inputs)[0], want[0], rtol=1e-5)


def test_reshape_chain_stays_shared(tmp_path: Path, execute) -> None:
    """Each inlined reshape reads its producer's linear offset once per dimension: the
    body is a DAG. Rebuilt as a tree it had 49188 nodes for 16 reshapes (and took
    exponential time); kept shared it has under a hundred."""
    program, inputs, want = _scheduled(reshape_chain(16), tmp_path)
    assert len(program.steps) == 1
    assert len(postorder(program.steps[0].kernel.body)) < 200
    np.testing.assert_array_equal(execute(program, inputs)[0], want[0])


def test_very_long_reshape_chain(tmp_path: Path, execute) -> None:
    program, inputs, want = _scheduled(reshape_chain(1000), tmp_path)
    _within_limits(program)
    np.testing.assert_array_equal(execute(program, inputs)[0], want[0])


def test_wide_sum_fits_a_command(tmp_path: Path, execute) -> None:
    """Fusing a sum of 20 arguments into one kernel made 21 bindings, one more than a
    module command holds (PackError); fusion now stops at MAX_OPERANDS."""
    program, inputs, want = _scheduled(wide_sum(20), tmp_path)
    _within_limits(program)
    assert len(program.steps) == 2
    np.testing.assert_allclose(execute(program, inputs)[0], want[0], rtol=1e-6)


@pytest.mark.parametrize("n", [15, 16, 40, 1000])
def test_wide_concatenate_is_split(n: int, tmp_path: Path, execute) -> None:
    program, inputs, want = _scheduled(wide_concatenate(n), tmp_path)
    _within_limits(program)
    np.testing.assert_array_equal(execute(program, inputs)[0], want[0])
