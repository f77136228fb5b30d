"""The random graph generator (toolchain/testing/random_graphs.py, op_gens.py,
region_gens.py): seeded and repeatable, every op of its table and every element type
drawn, graphs valid, and the exactness rule kept (what jumps reads only exact floats)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from toolchain.graph.ops import OPS
from toolchain.graph.printer import print_graph
from toolchain.reference import run_graph
from toolchain.testing.op_gens import DISCONTINUOUS, OP_GENS
from toolchain.testing.random_graphs import DTYPE_WEIGHTS, exactness, expand_rng, generate

# A sample big enough that every row comes up (each has weight >= 0.25 of ~96).
SAMPLE = range(2000, 2400)


@pytest.fixture(scope="module")
def sample():
    return [generate(s) for s in SAMPLE]


def test_same_seed_same_graph_and_inputs() -> None:
    for seed in (3, 77, 1234):
        a, b = generate(seed), generate(seed)
        assert print_graph(a.graph) == print_graph(b.graph)
        for x, y in zip(a.inputs(), b.inputs()):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    assert print_graph(generate(3).graph) != print_graph(generate(4).graph)


def test_every_row_and_element_type_is_drawn(sample) -> None:
    ops: Counter = Counter()
    dtypes: set[str] = set()
    for rg in sample:
        ops.update(rg.ops)
        for node in rg.graph.walk():
            dtypes.update(t.type.dtype.name for t in node.outputs)
    assert set(OP_GENS) <= set(ops), set(OP_GENS) - set(ops)
    assert set(DTYPE_WEIGHTS) <= dtypes
    assert set(OP_GENS) <= set(OPS)  # every row is a graph op


def test_graphs_are_valid_and_run_on_the_reference(sample) -> None:
    # generate() verifies; the reference must run every graph on its inputs.
    for rg in sample[:120]:
        outs = run_graph(expand_rng(rg.graph), rg.inputs())
        assert len(outs) == len(rg.graph.outputs) >= 1


def test_jumps_only_read_exact_floats(sample) -> None:
    """floor, compare, convert to an integer, ... never read a float the firmware may
    compute a last bit differently (the tolerance could not cover the jump)."""
    checked = 0
    for rg in sample:
        info = exactness(rg.graph)
        for node in rg.graph.nodes:
            jumps = node.op in DISCONTINUOUS or node.op == "compare" or (
                node.op == "convert" and not node.output.type.dtype.is_float) or bool(
                node.regions)
            if not jumps:
                continue
            for t in node.inputs:
                if t.type.dtype.is_float:
                    checked += 1
                    assert info[id(t)].exact, (rg.seed, node.op)
    assert checked > 100


def test_inexact_ops_are_marked_inexact() -> None:
    rg = next(r for r in (generate(s, ops=("exponential",)) for s in range(50))
              if any(n.op == "exponential" and n.output.type.dtype.is_float
                     for n in r.graph.nodes))
    info = exactness(rg.graph)
    node = next(n for n in rg.graph.nodes if n.op == "exponential")
    assert not info[id(node.output)].exact
    assert all(info[id(t)].exact for t in rg.graph.inputs)


def test_input_specs_follow_their_kind() -> None:
    # Index inputs stay in their range; shift counts include out-of-range ones.
    rg = next(r for r in (generate(s, ops=("gather",)) for s in range(100))
              if any(s.kind == "index" for s in r.specs))
    for spec, x in zip(rg.specs, rg.inputs()):
        if spec.kind == "index":
            v = x.astype(np.int64) if x.dtype != np.uint64 else x.astype(object)
            if x.dtype.kind == "u":  # -1 wraps to the largest value: far out of range
                v = np.where(v > np.iinfo(x.dtype).max // 2, -1, v)
            assert v.min() >= spec.lo and v.max() <= spec.hi
    values = np.concatenate([x.reshape(-1).astype(np.int64) for r in (
        generate(s, ops=("shift_left",)) for s in range(60)) for x, s in zip(
        r.inputs(), r.specs) if s.kind == "shift"])
    assert values.min() < 0 or values.max() >= 8


def test_total_order_never_reads_a_nan_of_unknown_sign(sample) -> None:
    """0 / 0 is -NaN on x86 and +NaN on Arm, and TOTALORDER puts -NaN below -inf: a
    computed NaN never reaches a total-order compare or a comparator (found by the
    random graph fuzzer: an argmax over x / x picked -inf on x86-64 only)."""
    checked = 0
    for rg in sample:
        info = exactness(rg.graph)
        for node in rg.graph.nodes:
            inner = [n for r in node.regions for n in r.walk()]
            if not any(n.attrs.get("total_order") for n in [node] + inner):
                continue
            for t in node.inputs:
                if t.type.dtype.is_float:
                    checked += 1
                    assert info[id(t)].signed, (rg.seed, node.op)
    assert checked > 40
    rg = next(r for r in (generate(s, ops=("divide",)) for s in range(60))
              if any(n.op == "divide" and n.output.type.dtype.is_float
                     for n in r.graph.nodes))
    node = next(n for n in rg.graph.nodes if n.op == "divide" and n.output.type.dtype.is_float)
    assert not exactness(rg.graph)[id(node.output)].signed


LINALG = ("cholesky", "triangular_solve", "batch_norm_training", "batch_norm_grad")


def _operands(op: str, seeds: range) -> list[tuple]:
    """(node attrs, operand values, n) of every `op` node of graphs drawn with `op`
    alone, from the reference run up to that node."""
    import copy

    found = []
    for s in seeds:
        rg = generate(s, ops=(op,))
        for k, node in enumerate(rg.graph.nodes):
            if node.op != op:
                continue
            g = copy.deepcopy(rg.graph)
            g.outputs = list(g.nodes[k].inputs)
            found.append((node.attrs, run_graph(g, rg.inputs()), node.inputs[0].type.shape[-1]))
    assert len(found) >= 10, op
    return found


def test_linear_algebra_rows_draw_every_attribute() -> None:
    attrs = {op: Counter() for op in LINALG}
    for s in range(200):
        rg = generate(s, ops=LINALG)
        for node in rg.graph.nodes:
            if node.op in attrs:
                attrs[node.op].update(f"{k}={v}" for k, v in node.attrs.items())
                attrs[node.op][node.inputs[0].type.dtype.name] += 1
                attrs[node.op][f"rank={node.inputs[0].type.rank}"] += 1
    for op in ("cholesky", "triangular_solve"):
        assert {"f32", "f64", "f16", "bf16", "rank=2", "rank=3", "rank=4"} <= set(attrs[op])
    assert {"lower=True", "lower=False"} <= set(attrs["cholesky"])
    assert {f"{k}={v}" for k in ("left_side", "lower", "unit_diagonal") for v in (True, False)
            } | {f"transpose_a={t}" for t in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")} <= set(
        attrs["triangular_solve"])


def test_cholesky_operands_are_well_conditioned_or_clearly_not_definite() -> None:
    """M M^T + n I: every matrix's eigenvalues in [n, 7n] (up to the element type's
    rounding of A), or all <= -n (a negated one, NaN on both sides)."""
    negated = 0
    for attrs, (a,), n in _operands("cholesky", range(60)):
        a = a.astype(np.float64)
        for idx in np.ndindex(*a.shape[:-2]):
            tri = np.tril(a[idx]) if attrs["lower"] else np.triu(a[idx]).T
            lam = np.linalg.eigvalsh(tri + np.tril(tri, -1).T)
            if lam[-1] < 0:
                negated += 1
                lam = -lam[::-1]
            assert lam[0] >= 0.95 * n and lam[-1] / lam[0] <= 7.5, (lam, n)
    assert negated


def test_triangular_solve_reads_a_diagonally_dominant_triangle() -> None:
    for attrs, (a, b), _ in _operands("triangular_solve", range(60)):
        a = a.astype(np.float64)
        for idx in np.ndindex(*a.shape[:-2]):
            t = np.tril(a[idx]) if attrs["lower"] else np.triu(a[idx])
            off = np.abs(t).sum(axis=1) - np.abs(np.diag(t))
            assert np.all(np.abs(np.diag(t)) > off), t
        assert not np.isinf(b).any() and np.nanmax(np.abs(b), initial=0) <= 8


def test_batch_norm_operands_are_bounded_and_variance_positive() -> None:
    for op in ("batch_norm_training", "batch_norm_grad"):
        for _, values, _ in _operands(op, range(40)):
            for v in values:
                assert np.nanmax(np.abs(v.astype(np.float64)), initial=0) <= 4.25, op
            if op == "batch_norm_grad":
                assert np.all(values[3].astype(np.float64) >= 0.25)
