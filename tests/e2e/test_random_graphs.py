"""A bounded, seeded sample of the random differential test (`make fuzz` runs 1,000
graphs per board: bench/random_graphs.py, docs/random_graphs.md).

Per board, one firmware holds SAMPLE random graphs side by side and the graphs of the
fuzzer's past findings (tests/e2e/data/random_graphs/, each a regression test of its
fix); every output must match the reference: integers exactly, floats within the
tolerance of their op chain (toolchain/testing/tolerance.py). A second test checks the
tester itself: a wrong output and a failing build are each charged to their own graph.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from toolchain import pipeline
from toolchain.kernel.lower import lower_node
from toolchain.loader import load_graph
from toolchain.loops import phases_of
from toolchain.testing.difftest import BOARDS, Case, prepare, run_batch
from toolchain.testing.random_graphs import RandomGraph

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "random_graphs"
# Seeds of the sample: a block no campaign of bench/random_graphs.py uses (those start at
# multiples of 1,000,000), so the suite adds graphs the campaigns do not run. 14 graphs
# per board: one build and one QEMU run each, about 8 s of CPU per board.
SAMPLE = range(900_000, 900_014)

_rng = np.random.default_rng(9)
# Inputs of the findings: the values that showed each bug.
FINDINGS: dict[str, list[np.ndarray]] = {
    "bf16_conv_cancel": [
        np.array([0.5078125, 0.3046875, 0.24121094, 0.1953125, -0.41015625, -0.1328125,
                  -0.04516602, -0.89453125, -0.04858398, -0.45703125],
                 np.float32).reshape(2, 1, 5),
        np.array([0.0, 3.5, -4.25, 0.75, 0.75, 0.25], np.float32).reshape(2, 3, 1)],
    "f64_conv": [_rng.standard_normal((3, 2, 3)), _rng.standard_normal((2, 2, 3))],
    "gather_ui32": [
        _rng.integers(-128, 128, (5, 6, 3)).astype(np.int8),
        np.array([[1], [5], [4294967295], [5], [1], [3]], np.uint32)],
    "f64_logistic": [np.array([-5.672104932393778, -19.5, -1.0, -0.0, 0.25, 3.0, 11.0,
                               19.75])],
    "negative_zero": [np.array([-0.0, -0.25, 0.0, 1.5], np.float32)],
    # +inf and NaN weights of a transposed convolution: as an input, then as constants.
    "lhs_dilation_inf_weight": [
        np.arange(1, 9, dtype=np.float32).reshape(1, 2, 4) / 4,
        np.array([np.inf, 0.5, 2, -1, 0.25, np.nan] + [1] * 6, np.float32).reshape(2, 2, 3)],
    "lhs_dilation_inf_const": [(np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1) - 4) / 2],
    "lgamma_negative_zero": [np.array([-2.75, -2.5, -0.5, 0.5, 2.75, -3.25], np.float32)],
}


def _finding(k: int, name: str) -> Case:
    """Finding `name`, reported as seed k (which also seeds its tolerance trials)."""
    graph = load_graph(DATA / f"{name}.mlir")
    rg = RandomGraph(k, graph, [], Counter(n.op for n in graph.walk()))
    return prepare(k, rg=rg, inputs=FINDINGS[name])


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    found = [_finding(k, name) for k, name in enumerate(FINDINGS)]
    return [prepare(seed) for seed in SAMPLE] + found


def test_the_sample_goes_through_mlir(cases: list[Case]) -> None:
    # Printed, parsed, imported and unchanged: the importer is under test too.
    assert sum(c.mlir is not None for c in cases[:len(SAMPLE)]) >= len(SAMPLE) // 2
    assert all(c.problem is None for c in cases), [c.problem for c in cases if c.problem]


@pytest.mark.parametrize("board", BOARDS)
def test_random_graphs_match_the_reference(board: str, cases: list[Case],
                                           tmp_path: Path) -> None:
    bad = [o for o in run_batch(cases, board, tmp_path) if not o.ok]
    assert not bad, "\n".join(f"seed {o.seed}: {o.status}: {o.detail}" for o in bad)


def test_only_finite_constant_kernels_skip_the_holes() -> None:
    """A transposed convolution is computed by output phase (loops/phases.py), which
    never visits the taps on the zeros between dilated input elements: exact only when
    0 * w is 0 for every weight. The finite constant kernel of lhs_dilation_inf_const
    keeps its 4 phases; the one holding inf and NaN, and a kernel read as an input,
    compute every tap (the four boards' results are checked above)."""
    phases = {}
    for name in ("lhs_dilation_inf_const", "lhs_dilation_inf_weight"):
        convs = [n for n in load_graph(DATA / f"{name}.mlir").nodes if n.op == "convolution"]
        phases[name] = [len(phases_of(lower_node(n))) for n in convs]
    assert phases == {"lhs_dilation_inf_const": [0, 4], "lhs_dilation_inf_weight": [0]}


def test_failures_are_charged_to_their_own_graph(cases: list[Case], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong reference output is a mismatch of that graph alone; a graph that fails
    to build fails alone (the batch is split until it stands alone)."""
    picked = copy.deepcopy([c for c in cases[:len(SAMPLE)] if c.want and c.problem is None][:4])
    wrong, poisoned = picked[1], picked[2]
    flat = wrong.want[0].reshape(-1)
    flat[0] = ~flat[0] if flat.dtype.kind in "iub" else flat[0] + 1
    real = pipeline.compile_graph
    poisoned.build_graph.outputs[0].name = "poisoned"  # the batch's graphs are copies

    def compile_graph(graph, *args, **kwargs):
        if any(t.name == "poisoned" for t in graph.outputs):
            raise RuntimeError("poisoned graph")
        return real(graph, *args, **kwargs)

    monkeypatch.setattr(pipeline, "compile_graph", compile_graph)
    statuses = [o.status for o in run_batch(picked, "x86-64", tmp_path)]
    assert statuses == ["ok", "mismatch", "build", "ok"]


def test_bench_writes_its_results(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "random_graphs.py"), "--graphs", "3",
         "--boards", "x86-64", "--seed", "7", "--results", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((tmp_path / "random_graphs.json").read_text())
    assert data["boards"]["x86-64"]["graphs"] == data["boards"]["x86-64"]["ok"] == 3
    assert data["seeds"] == [7_000_000, 7_000_002]
    assert "| x86-64 | 3 | 3 | 0 |" in (tmp_path / "random_graphs.md").read_text()
    bad = subprocess.run([sys.executable, str(ROOT / "bench" / "random_graphs.py"),
                          "--boards", "nosuchboard"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown board 'nosuchboard'" in bad.stderr
