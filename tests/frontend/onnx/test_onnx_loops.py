"""ONNX Loop and Scan as the graph's `while` (toolchain/frontend/onnx/loops.py) and If
on a run-time condition as its `if`, against onnxruntime: a trip count given at run
time, a condition that ends the loop early, scan outputs stacked, a body reading the
enclosing scope's tensors and its own initializers, an If nested in a Loop body, Scan's
axes and directions; one model of all three on cortex-m4 and x86-64 under QEMU.

Tolerance: numpy.isclose(rtol=1e-5, atol=1e-6), minirt-run --check's rule: each
iteration is a few float adds and multiplies, rounded alike on both sides.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import run_firmware, run_ort

from toolchain.cli.run import compare
from toolchain.frontend.onnx.errors import OnnxError
from toolchain.loader import load_graph
from toolchain.reference import run_graph

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
vi = helper.make_tensor_value_info
n = helper.make_node


def _save(path: Path, nodes: list, inputs: list, outputs: list, inits: dict | None = None
          ) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(np.asarray(v), k)
                               for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def _check(path: Path, inputs: list[np.ndarray]) -> None:
    got = run_graph(load_graph(path), inputs)
    want = run_ort(path.read_bytes(), inputs)
    if want is None:
        pytest.skip("onnxruntime is not installed")
    assert not compare(got, want), compare(got, want)


def _loop_body(early_exit: bool) -> object:
    """acc = acc * decay + x (x and decay from the enclosing scope); with early_exit the
    loop continues while sum(acc) < 40."""
    nodes = [n("Mul", ["acc_in", "decay"], ["scaled"], name="scale"),
             n("Add", ["scaled", "x"], ["acc_out"], name="accumulate"),
             n("Cast", ["i"], ["i_f"], name="i_float", to=F),
             n("Mul", ["acc_out", "i_f"], ["row"], name="row")]
    if early_exit:
        nodes += [n("ReduceSum", ["acc_out"], ["total"], name="total", keepdims=0),
                  n("Less", ["total", "limit"], ["go_on"], name="go_on")]
    else:
        nodes += [n("Identity", ["cond_in"], ["go_on"], name="go_on")]
    outputs = [vi("go_on", BOOL, []), vi("acc_out", F, [2, 3])]
    if not early_exit:
        outputs.append(vi("row", F, [2, 3]))
    return helper.make_graph(nodes, "body", [vi("i", I64, []), vi("cond_in", BOOL, []),
                                             vi("acc_in", F, [2, 3])], outputs,
                             [numpy_helper.from_array(np.float32(40), "limit")])


X = np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3)
ACC = np.full((2, 3), 0.5, np.float32)


@pytest.mark.parametrize("trip", [0, 1, 7])
def test_a_loop_with_a_run_time_trip_count_and_an_early_exit(tmp_path: Path, trip: int
                                                             ) -> None:
    path = _save(tmp_path / "loop.onnx",
                 [n("Loop", ["M", "", "acc0"], ["acc"], name="loop", body=_loop_body(True))],
                 [vi("M", I64, []), vi("x", F, [2, 3]), vi("acc0", F, [2, 3])],
                 [vi("acc", F, [2, 3])], {"decay": np.float32(0.9)})
    _check(path, [np.array(trip, np.int64), X * 3, ACC])
    assert any(node.op == "while" for node in load_graph(path).nodes)


def test_scan_outputs_are_stacked_when_the_trip_count_is_known(tmp_path: Path) -> None:
    path = _save(tmp_path / "loop.onnx",
                 [n("Loop", ["M", "", "acc0"], ["acc", "rows"], name="loop",
                    body=_loop_body(False))],
                 [vi("x", F, [2, 3]), vi("acc0", F, [2, 3])],
                 [vi("acc", F, [2, 3]), vi("rows", F, [5, 2, 3])],
                 {"decay": np.float32(0.5), "M": np.int64(5)})
    _check(path, [X, ACC])


def test_scan_outputs_of_a_loop_that_may_end_early_are_refused(tmp_path: Path) -> None:
    body = _loop_body(True)
    body.output.append(vi("row", F, [2, 3]))
    path = _save(tmp_path / "loop.onnx",
                 [n("Loop", ["M", "", "acc0"], ["acc", "rows"], name="loop", body=body)],
                 [vi("x", F, [2, 3]), vi("acc0", F, [2, 3])],
                 [vi("acc", F, [2, 3]), vi("rows", F, ["k", 2, 3])],
                 {"decay": np.float32(0.5), "M": np.int64(5)})
    with pytest.raises(OnnxError, match=r"node 'loop' \(Loop\): its scan outputs have one "
                                        "row per iteration, and its condition may end it"):
        load_graph(path)


def _if_in_a_loop(path: Path) -> Path:
    """A Loop whose body holds an If on a value computed in the body: the running sum
    goes up by x while it is below 4, then down by half of x; a Scan reverses and
    accumulates the rows of the result."""
    then = helper.make_graph([n("Add", ["s_in", "x"], ["up"], name="up")], "then", [],
                             [vi("up", F, [3])])
    other = helper.make_graph([n("Mul", ["x", "half"], ["hx"], name="hx"),
                               n("Sub", ["s_in", "hx"], ["down"], name="down")], "else", [],
                              [vi("down", F, [3])],
                              [numpy_helper.from_array(np.float32(0.5), "half")])
    body = helper.make_graph(
        [n("ReduceMax", ["s_in"], ["top"], name="top", keepdims=0),
         n("Less", ["top", "four"], ["rising"], name="rising"),
         n("If", ["rising"], ["s_out"], name="step", then_branch=then, else_branch=other),
         n("Identity", ["s_out"], ["row"], name="row")],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("s_in", F, [3])],
        [vi("c", BOOL, []), vi("s_out", F, [3]), vi("row", F, [3])])
    scan_body = helper.make_graph(
        [n("Add", ["total_in", "r"], ["total_out"], name="total"),
         n("Mul", ["total_out", "r"], ["prod"], name="prod")],
        "scan_body", [vi("total_in", F, [3]), vi("r", F, [3])],
        [vi("total_out", F, [3]), vi("prod", F, [3])])
    return _save(path, [
        n("Loop", ["M", "", "s0"], ["s", "rows"], name="loop", body=body),
        n("Scan", ["s0", "rows"], ["total", "prods"], name="scan", body=scan_body,
          num_scan_inputs=1, scan_input_directions=[1], scan_output_axes=[1]),
    ], [vi("x", F, [3]), vi("s0", F, [3])],
        [vi("s", F, [3]), vi("rows", F, [6, 3]), vi("total", F, [3]),
         vi("prods", F, [3, 6])], {"M": np.int64(6), "four": np.float32(4)})


XS = [np.array([0.5, 1.25, -0.75], np.float32), np.array([0.1, 0.2, 0.3], np.float32)]


def test_an_if_in_a_loop_body_and_a_reversed_scan(tmp_path: Path) -> None:
    _check(_if_in_a_loop(tmp_path / "nested.onnx"), XS)


@pytest.mark.parametrize(("in_axis", "in_rev", "out_axis", "out_rev"),
                         [(0, 0, 0, 0), (1, 1, 0, 0), (1, 0, -1, 1), (0, 1, 1, 1)])
def test_scan_axes_and_directions(tmp_path: Path, in_axis: int, in_rev: int,
                                  out_axis: int, out_rev: int) -> None:
    body = helper.make_graph(
        [n("Add", ["acc_in", "v"], ["acc_out"], name="acc"),
         n("Sub", ["acc_out", "w"], ["diff"], name="diff")],
        "body", [vi("acc_in", F, [4]), vi("v", F, [4]), vi("w", F, [4])],
        [vi("acc_out", F, [4]), vi("diff", F, [4])])
    shape = [5, 4] if in_axis == 0 else [4, 5]
    out_shape = [5, 4] if out_axis == 0 else [4, 5]
    path = _save(tmp_path / "scan.onnx", [
        n("Scan", ["acc0", "v", "w"], ["acc", "diffs"], name="scan", body=body,
          num_scan_inputs=2, scan_input_axes=[in_axis, 0 if in_axis else 1],
          scan_input_directions=[in_rev, 0], scan_output_axes=[out_axis],
          scan_output_directions=[out_rev])],
        [vi("acc0", F, [4]), vi("v", F, shape), vi("w", F, shape[::-1])],
        [vi("acc", F, [4]), vi("diffs", F, out_shape)])
    rng = np.random.default_rng(in_axis * 8 + in_rev * 4 + out_rev)
    _check(path, [rng.standard_normal(4).astype(np.float32),
                  rng.standard_normal(shape).astype(np.float32),
                  rng.standard_normal(shape[::-1]).astype(np.float32)])


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_loops_on_the_board(tmp_path: Path, board: str) -> None:
    path = _if_in_a_loop(tmp_path / "nested.onnx")
    want = run_graph(load_graph(path), XS)
    got = run_firmware(load_graph(path), board, tmp_path / "fw", XS)
    assert not compare(got, want), compare(got, want)


def _one_loop(tmp_path: Path, body_nodes: list, body_out: list, inputs: list[str]) -> Path:
    body = helper.make_graph(body_nodes, "body", [vi("i", I64, []), vi("c", BOOL, []),
                                                  vi("v", F, [3])], body_out)
    return _save(tmp_path / "loop.onnx",
                 [n("Loop", inputs, ["out"], name="loop", body=body)],
                 [vi("v0", F, [3])], [vi("out", F, ["k"])],
                 {"M": np.int64(3), "go": np.array(True)})


@pytest.mark.parametrize(("body_nodes", "body_out", "inputs", "error"), [
    ([n("Concat", ["v", "v"], ["w"], name="grow", axis=0)],
     [vi("c", BOOL, []), vi("w", F, [6])], ["M", "", "v0"],
     r"carried value 0 enters the body as tensor<3xf32> and leaves it as tensor<6xf32>"),
    ([n("Identity", ["v"], ["w"], name="same")], [vi("c", BOOL, []), vi("w", F, [3])],
     ["", "", "v0"], "it has neither a trip count nor a condition"),
    ([n("RandomNormalLike", ["v"], ["w"], name="rnl")], [vi("c", BOOL, []),
                                                         vi("w", F, [3])],
     ["M", "go", "v0"], r"in its body: node 'rnl' \(RandomNormalLike\) is not supported"),
])
def test_loop_errors_are_one_line(tmp_path: Path, body_nodes: list, body_out: list,
                                  inputs: list[str], error: str) -> None:
    path = _one_loop(tmp_path, body_nodes, body_out, inputs)
    with pytest.raises(OnnxError, match=r"node 'loop' \(Loop\): " + error) as e:
        load_graph(path)
    assert len(e.value.render().splitlines()) == 1


def test_a_body_reading_a_failed_node_adds_no_second_error(tmp_path: Path) -> None:
    """The node that failed is the one error; the Loop whose body reads its output is
    skipped, as any node reading a failed one is."""
    body = helper.make_graph([n("Add", ["v", "bad"], ["w"], name="use")], "body",
                             [vi("i", I64, []), vi("c", BOOL, []), vi("v", F, [3])],
                             [vi("c", BOOL, []), vi("w", F, [3])])
    path = _save(tmp_path / "loop.onnx",
                 [n("RandomNormalLike", ["m"], ["bad"], name="rnl"),
                  n("Loop", ["M", "", "v0"], ["out"], name="loop", body=body)],
                 [vi("v0", F, [3]), vi("m", F, [3, 3])], [vi("out", F, [3])],
                 {"M": np.int64(3)})
    with pytest.raises(OnnxError) as e:
        load_graph(path)
    assert [line.split(": ", 1)[1] for line in e.value.render().splitlines()] == [
        "node 'rnl' (RandomNormalLike) is not supported"]


@pytest.mark.parametrize(("lo", "hi"), [(0, 1), (-6, -5), (1, 3)])
def test_a_slice_at_the_iteration_number(tmp_path: Path, lo: int, hi: int) -> None:
    """x[i + lo : i + hi] in a Loop body: starts computed at run time, the extent
    hi - lo proven from the graph (run_time_slice.py); a negative start counts from
    the end."""
    body = helper.make_graph(
        [n("Add", ["i", "lo"], ["s"], name="s"), n("Add", ["i", "hi"], ["e"], name="e"),
         n("Unsqueeze", ["s", "zero"], ["s1"], name="s1"),
         n("Unsqueeze", ["e", "zero"], ["e1"], name="e1"),
         n("Slice", ["table", "s1", "e1", "zero"], ["part"], name="part"),
         n("ReduceSum", ["part"], ["total"], name="total", keepdims=0),
         n("Add", ["acc", "total"], ["acc2"], name="acc2"),
         n("Identity", ["c"], ["c2"], name="c2")],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("acc", F, [])],
        [vi("c2", BOOL, []), vi("acc2", F, []), vi("part", F, [hi - lo, 2])])
    path = _save(tmp_path / "slice.onnx",
                 [n("Loop", ["M", "", "acc0"], ["acc", "parts"], name="loop", body=body)],
                 [vi("table", F, [6, 2]), vi("acc0", F, [])],
                 [vi("acc", F, []), vi("parts", F, [3, hi - lo, 2])],
                 {"M": np.int64(3), "lo": np.int64(lo), "hi": np.int64(hi),
                  "zero": np.array([0], np.int64)})
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    _check(path, [table, np.array(0.5, np.float32)])


def test_a_slice_of_unproven_extent_asks_for_constants(tmp_path: Path) -> None:
    body = helper.make_graph(
        [n("Unsqueeze", ["i", "zero"], ["s1"], name="s1"),
         n("Mul", ["i", "two"], ["e"], name="e"),
         n("Unsqueeze", ["e", "zero"], ["e1"], name="e1"),
         n("Slice", ["table", "s1", "e1", "zero"], ["part"], name="part"),
         n("ReduceSum", ["part"], ["acc2"], name="total", keepdims=0),
         n("Identity", ["c"], ["c2"], name="c2")],
        "body", [vi("i", I64, []), vi("c", BOOL, []), vi("acc", F, [])],
        [vi("c2", BOOL, []), vi("acc2", F, [])])
    path = _save(tmp_path / "slice.onnx",
                 [n("Loop", ["M", "", "acc0"], ["acc"], name="loop", body=body)],
                 [vi("table", F, [6]), vi("acc0", F, [])], [vi("acc", F, [])],
                 {"M": np.int64(3), "two": np.int64(2), "zero": np.array([0], np.int64)})
    with pytest.raises(OnnxError, match=r"node 'loop' \(Loop\): in its body: node 'part' "
                                        r"\(Slice\): input 1 \(starts\) must be a constant"):
        load_graph(path)
