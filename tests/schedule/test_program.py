"""Fusion and arena planning."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolchain.loader import load_graph, random_inputs
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import schedule

REPO = Path(__file__).resolve().parents[2]


def test_seed_is_one_fused_dispatch() -> None:
    program = schedule(fold_constants(load_graph(REPO / "examples" / "seed.mlir")))
    assert len(program.steps) == 1 and program.arena_size == 0


def test_programs_compute_the_model(shared_model, execute) -> None:
    graph = load_graph(shared_model)
    inputs = random_inputs(graph, seed=5)
    want = run_graph(graph, inputs)
    program = schedule(fold_constants(graph))
    for got, w in zip(execute(program, inputs), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_no_buffer_is_clobbered_before_it_is_read(shared_model) -> None:
    """Every arena operand is still exactly what one earlier step wrote: no later
    allocation overlapped part of it (test_programs_compute_the_model checks values)."""
    program = schedule(fold_constants(load_graph(shared_model)))
    owner = np.full(max(program.arena_size, 1), -1)
    for i, step in enumerate(program.steps):
        for b in step.buffers[:-1]:
            if b.kind == "arena":
                writers = set(owner[b.index:b.index + b.size].tolist())
                assert len(writers) == 1 and -1 not in writers, f"step {i} reads a clobbered buffer"
        out = step.buffers[-1]
        if out.kind == "arena":
            owner[out.index:out.index + out.size] = i
    assert program.arena_size % 16 == 0


def test_relu_broadcast_zero_never_reaches_memory(models_dir) -> None:
    program = schedule(fold_constants(load_graph(models_dir / "jax" / "cnn.mlir")))
    biggest_constant = max(c.size for c in program.constants)
    assert biggest_constant <= 3 * 3 * 8 * 16  # the weights, not a 16x16x8 broadcast zero


ONE_ELEMENT = """func.func @main(%x: tensor<1xi64>) -> tensor<1xi64> {
  %two = stablehlo.constant dense<2> : tensor<1xi64>
  %q = stablehlo.divide %x, %two : tensor<1xi64>
  return %q : tensor<1xi64>
}
"""


def test_one_element_constants_are_immediates(tmp_path: Path, execute) -> None:
    # A scalar broadcast to [1] is a scalar too: as a binding, the divisor is unknown in
    # the code and an i64 division calls __divdi3 (TFLite's int8 softmax has one).
    path = tmp_path / "m.mlir"
    path.write_text(ONE_ELEMENT)
    graph = load_graph(path)
    program = schedule(fold_constants(graph))
    [step] = program.steps
    assert [b.kind for b in step.buffers] == ["input", "output"]
    for x, want in ((7, 3), (-7, -3), (2**40 + 1, 2**39), (-1, 0)):
        [got] = execute(program, [np.array([x], np.int64)])
        assert got.tolist() == [want]


SPLATS = """func.func @main(%x: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>) {
  %three = stablehlo.constant dense<3> : tensor<6xi32>
  %mixed = stablehlo.constant dense<[3, 3, 3, 3, 3, 4]> : tensor<6xi32>
  %a = stablehlo.add %x, %three : tensor<6xi32>
  %b = stablehlo.add %x, %mixed : tensor<6xi32>
  return %a, %b : tensor<6xi32>, tensor<6xi32>
}
"""


def test_splat_constants_are_immediates(tmp_path: Path, execute) -> None:
    # A constant whose elements are all one integer (a small dense layer's zero point,
    # broadcast to its outputs by folding) is an immediate, so kernel/requant.py can fold
    # it; one that differs in a single element stays a table.
    path = tmp_path / "m.mlir"
    path.write_text(SPLATS)
    program = schedule(fold_constants(load_graph(path)))
    kinds = sorted(tuple(b.kind for b in step.buffers) for step in program.steps)
    assert kinds == [("input", "constant", "output"), ("input", "output")]
    x = np.arange(-3, 3, dtype=np.int32) * 1000
    a, b = execute(program, [x])
    assert a.tolist() == (x + 3).tolist()
    assert b.tolist() == (x + np.array([3, 3, 3, 3, 3, 4])).tolist()
