"""The conformance runners (toolchain/testing/conformance/, `make conformance`): their
parts on small inputs, and a fast deterministic sample of both suites on the reference
and on cortex-m4 and x86-64 under QEMU. The StableHLO part skips with the reason when
../shared is absent."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from toolchain.diagnostics import CompileError
from toolchain.testing.conformance import onnx_suite, stablehlo_suite
from toolchain.testing.conformance.boards import BOARDS, run_on_board
from toolchain.testing.conformance.compare import almost_eq, exact, onnx_close, ulp_close
from toolchain.testing.conformance.outcome import verdict_of_exception
from toolchain.testing.conformance.run import run_onnx, run_stablehlo, sample

SUITE = stablehlo_suite.suite_dir(Path(__file__).resolve().parents[2].parent / "shared")
needs_suite = pytest.mark.skipif(not SUITE.is_dir(), reason=f"{SUITE} is absent (the "
                                 "StableHLO interpreter tests live in ../shared)")

# The reference runs every 7th ONNX case and every 3rd StableHLO test by name; the boards
# every ONNX_EVERY-th and STABLEHLO_EVERY-th of those passes, SAMPLE at most (two
# firmware images a suite and board): a few seconds each. make conformance runs more.
ONNX_EVERY, STABLEHLO_EVERY, SAMPLE = 6, 4, 30

# Cases ONNX's expected outputs and minirt disagree on, with why (the full list is in
# bench/results/conformance.md): a wrong answer here is a finding, not a pass.
KNOWN_WRONG = {
    # Scales 0.6 of 4 give 2 outputs; ONNX's reference divides by the unrounded output
    # length (2.4 - 1), onnxruntime and minirt by the output's (2 - 1).
    "test_resize_downsample_scales_linear_align_corners",
}

PART = """
func.func @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  func.return %arg0 : tensor<2xf32>
}

func.func @t() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %2 = stablehlo.add %0, %1 : tensor<2xf32>
  %3 = func.call @helper(%2) : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_almost_eq_const %3,
      dense<[1.5, 2.2501]> : tensor<2xf32> {tolerance = 0.001 : f64}
  check.expect_eq %2, %3 : tensor<2xf32>
  func.return
}
"""


def _test(part: str = PART) -> stablehlo_suite.Test:
    (t,) = stablehlo_suite._tests_of_part("add", part)
    return t


def test_check_ops_become_results_and_expected_values() -> None:
    """A check's literal may span lines and carry a tolerance; a two-operand check
    returns both values; the helper function without checks is no test."""
    t = _test()
    assert t.func == "t" and t.refusal == "" and len(t.checks) == 2
    p = stablehlo_suite.prepare(t)
    assert p.n_outputs == 3
    (i, want, _), (j, other, _) = p.checks
    np.testing.assert_array_equal(want, np.float32([1.5, 2.2501]))
    assert (i, j, other) == (0, 1, 2)
    from toolchain.reference import run_graph
    assert p.judge(run_graph(p.graph, p.inputs)) is None


def test_a_wrong_value_is_found() -> None:
    """The judge fails a value off by more than the tolerance the check gives."""
    t = _test(PART.replace("tolerance = 0.001", "tolerance = 0.00001"))
    p = stablehlo_suite.prepare(t)
    from toolchain.reference import run_graph
    assert "output 0" in p.judge(run_graph(p.graph, p.inputs))


def test_lifted_constants_are_inputs_and_compute_the_same() -> None:
    t = _test()
    plain, lifted = stablehlo_suite.prepare(t), stablehlo_suite.prepare(t, lift=True)
    assert not plain.inputs
    assert len(lifted.inputs) == 2
    assert all(n.op != "constant" for n in lifted.graph.nodes)
    from toolchain.reference import run_graph
    assert lifted.judge(run_graph(lifted.graph, lifted.inputs)) is None


def test_distributed_and_probe_tests_are_out_of_scope() -> None:
    part = PART.replace("%2 = stablehlo.add %0, %1", '%2 = "stablehlo.all_reduce"(%0)')
    assert "distributed op" in _test(part).refusal
    probe = PART.replace("check.expect_eq %2, %3 : tensor<2xf32>",
                         'check.expect_serialized_eq %2, probe_id = "p" : tensor<2xf32>')
    assert "probe" in _test(probe).refusal
    with pytest.raises(CompileError):
        stablehlo_suite.prepare(_test(probe))


def test_almost_eq_is_the_interpreters_rule() -> None:
    """stablehlo/reference/Element.cpp: equal, both NaN, or both finite within the
    tolerance (0.0001 by default), with no test of the signs."""
    judge = almost_eq()
    f = np.float64
    assert judge(f([1.0, math.nan, 0.0]), f([1.0001, math.nan, 0.0])) is None
    assert judge(f([1.0]), f([1.0002])) is not None
    assert judge(f([-0.0]), f([0.0])) is None  # equal: compare() says so
    assert judge(f([-1e-15, -1e-5]), f([0.0, 1e-5])) is None  # no sign test there
    assert judge(f([-1e-4]), f([1e-4])) is not None
    assert judge(f([math.inf]), f([1e308])) is not None
    assert judge(np.complex64([1 + 1j]), np.complex64([1 + 1.01j])) is not None


def test_exact_and_ulp_and_onnx_judges() -> None:
    assert exact(np.int32([1, 2]), np.int32([1, 3])) is not None
    assert exact(np.float32([math.nan]), np.float32([math.nan])) is None
    one = np.float16(1.0)
    close = np.float16(one + 3 * np.spacing(one))
    assert ulp_close(3)(np.float16([close]), np.float16([one])) is None
    assert ulp_close(2)(np.float16([close]), np.float16([one])) is not None
    judge = onnx_close(1e-3, 1e-7)
    assert judge(np.float32([1.0009]), np.float32([1.0])) is None
    assert judge(np.float32([1.002]), np.float32([1.0])) is not None
    assert "element type" in judge(np.float64([1.0]), np.float32([1.0]))
    # float8 outputs are float32 values on the host: every one must be a float8 value
    want = np.float32([0.1015625, 448.0, math.nan]).astype(ml_dtypes.float8_e4m3fn)
    assert judge(np.float32([0.1015625, 448.0, math.nan]), want) is None
    assert "cannot" in judge(np.float32([0.1, 448.0, math.nan]), want)
    assert "differ" in judge(np.float32([0.109375, 448.0, math.nan]), want)


def test_refusals_and_crashes_are_told_apart() -> None:
    """minirt's own errors are refusals, one line each (an importer listing several
    says how many more); any other exception is a crash, with where it was raised."""
    assert verdict_of_exception(CompileError("a.mlir:1:2: first\na.mlir:3:4: second")) == (
        "refused", "a.mlir:1:2: first (and 1 more)")
    try:
        raise ValueError("boom\ndetail")
    except ValueError as e:
        status, reason = verdict_of_exception(e)
    assert status == "crash" and reason.startswith("ValueError: boom at test_conformance.py:")


def test_onnx_scope_excludes_what_the_issue_lists() -> None:
    cases = {c.name: c for c in onnx_suite.collect()}
    assert "training-only" in onnx_suite.exclusion(cases["test_adam"])
    assert "training mode" in onnx_suite.exclusion(cases["test_training_dropout"])
    assert "training mode" in onnx_suite.exclusion(cases["test_batchnorm_example_training_mode"])
    assert onnx_suite.exclusion(cases["test_dropout_default"]) is None
    assert onnx_suite.exclusion(cases["test_batchnorm_example"]) is None
    assert "random" in onnx_suite.exclusion(cases["test_bernoulli"])


@pytest.fixture(scope="module")
def onnx_results() -> list:
    return run_onnx(onnx_suite.collect()[::7])


@pytest.fixture(scope="module")
def stablehlo_results() -> list:
    if not SUITE.is_dir():
        pytest.skip(f"{SUITE} is absent")
    return run_stablehlo(stablehlo_suite.collect(SUITE)[::3], lift=True)


def _failures(results: list) -> list[str]:
    return [f"{r.name}: {r.status}: {r.reason}" for r in results
            if r.status in ("wrong", "crash") and r.name not in KNOWN_WRONG]


def test_onnx_sample_on_the_reference(onnx_results: list) -> None:
    """Every 7th case: none wrong or crashed, and each refusal one line."""
    assert not _failures([r for r, _ in onnx_results])
    assert all("\n" not in r.reason for r, _ in onnx_results)
    assert sum(r.status == "pass" for r, _ in onnx_results) > 150


@needs_suite
def test_stablehlo_sample_on_the_reference(stablehlo_results: list) -> None:
    """Every 3rd test, constants lifted: none wrong or crashed."""
    assert not _failures([r for r, _ in stablehlo_results])
    assert sum(r.status == "pass" for r, _ in stablehlo_results) > 100


@pytest.mark.parametrize("board", BOARDS)
def test_onnx_sample_on_board(board: str, onnx_results: list, tmp_path: Path) -> None:
    cases = sample(onnx_results, ONNX_EVERY)[:SAMPLE]
    assert len(cases) == SAMPLE
    assert not _failures(run_on_board(cases, board, tmp_path))


@needs_suite
@pytest.mark.parametrize("board", BOARDS)
def test_stablehlo_sample_on_board(board: str, stablehlo_results: list,
                                   tmp_path: Path) -> None:
    """Constants lifted to inputs: the firmware computes each checked value."""
    cases = sample(stablehlo_results, STABLEHLO_EVERY)[:SAMPLE]
    assert len(cases) == SAMPLE
    assert not _failures(run_on_board(cases, board, tmp_path))
