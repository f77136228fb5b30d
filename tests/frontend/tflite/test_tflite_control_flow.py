"""TFLite IF and WHILE (frontend/tflite/control_flow.py) against TFLite Micro's own
interpreter: on minirt's reference, and as firmware under QEMU on cortex-m4, x86-64 and riscv32
(one image holding every case). Integer outputs exact; float ones within
numpy.isclose(rtol=1e-5, atol=1e-6), the project's float bound (the bodies add,
subtract and multiply in float32 as TFLite Micro does; the loop runs up to 5 times).

The models (tests/tflite_control_models.py) take every branch and run their loops 0, 1
and several times, with a trip count that is a model input; int8 and int16 subgraphs
declare quantization of their own for the values they are handed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_control_models import (
    growing_body_model,
    if_inputs,
    if_model,
    nested_inputs,
    nested_model,
    while_inputs,
    while_model,
)
from tflite_models import Op, Tensor, run_tflm
from tflite_state_models import Subgraph, build_subgraphs

from toolchain.frontend.tflite import ops
from toolchain.frontend.tflite.control_flow import MAX_NESTING, MAX_SUBGRAPH_IMPORTS
from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.graph.ir import Graph
from toolchain.reference.executor import run_graph
from toolchain.testing.difftest import run_side_by_side

pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                    reason="tflite-micro is not installed")

RTOL, ATOL = 1e-5, 1e-6


def _cases() -> list[tuple[str, bytes, list[list[np.ndarray]]]]:
    """(name, model, input sets) of every model the tests compare."""
    return [
        *((f"if-{dt}", if_model(dt), if_inputs(dt, seed))
          for seed, dt in enumerate(("float32", "int8", "int16"))),
        *((f"if-const-{flag}-{dt}", if_model(dt, flag), if_inputs(dt, 5, flag))
          for flag in (True, False) for dt in ("float32", "int8")),
        *((f"while-{dt}", while_model(dt), while_inputs(dt, 7)) for dt in ("float32", "int8")),
        ("nested", nested_model(), nested_inputs(9)),
    ]


CASES = _cases()


def _assert_same(got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    assert len(got) == len(want), what
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g).reshape(w.shape)
        assert g.dtype == w.dtype, what
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


def _ops(graph: Graph) -> set[str]:
    return {n.op for n in graph.nodes}


def test_rows_take_any_element_type() -> None:
    assert ops.OPS["IF"].every is not None and ops.OPS["WHILE"].every is not None


@pytest.mark.parametrize(("name", "model", "sets"), CASES, ids=[c[0] for c in CASES])
def test_reference_matches_tflite_micro(name: str, model: bytes,
                                        sets: list[list[np.ndarray]]) -> None:
    graph = import_model(read_model(model))
    for k, xs in enumerate(sets):
        want, _ = run_tflm(model, xs)
        _assert_same(run_graph(graph, xs), want, f"{name} input set {k}")


def test_control_flow_nodes() -> None:
    """A run-time condition is an `if`, a constant one is inlined (its branch's operators
    alone), a WHILE is a `while` with the IF nested in its body region."""
    assert "if" in _ops(import_model(read_model(if_model("int8"))))
    for flag, taken, other in ((True, "add", "subtract"), (False, "subtract", "add")):
        folded = _ops(import_model(read_model(if_model("float32", flag))))
        assert "if" not in folded and taken in folded and other not in folded
    graph = import_model(read_model(nested_model()))
    (loop,) = [n for n in graph.nodes if n.op == "while"]
    assert "if" in _ops(loop.regions[1])


def _one_line_error(model: bytes) -> str:
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "m.tflite")
    text = str(e.value)
    assert "\n" not in text and text.startswith("m.tflite: operator 0 (")
    return text


def _passing(name: str, *values: Tensor) -> Subgraph:
    """A subgraph of no operators giving back its last input."""
    return Subgraph([], list(values), [values[-1]], name=name)


def test_refuses_a_body_that_changes_a_shape() -> None:
    text = _one_line_error(growing_body_model())
    assert ("WHILE's body subgraph 2 turns loop value 0 from tensor<2xf32> into "
            "tensor<4xf32>; minirt's shapes are static") in text, text


def test_refuses_a_condition_that_is_not_a_bool_as_tflite_micro_does() -> None:
    c, x, y = Tensor((1,), "int32", name="c"), Tensor((3,), "float32"), Tensor((3,), "float32")
    main = Subgraph([Op("IF", [c, x], [y], {"then_subgraph_index": 1,
                                            "else_subgraph_index": 2})], [c, x], [y])
    f = [Tensor((3,), "float32") for _ in range(2)]
    model = build_subgraphs([main, _passing("then", f[0]), _passing("else", f[1])])
    text = _one_line_error(model)
    assert "TFLite Micro's IF takes one BOOL" in text, text
    with pytest.raises(RuntimeError):  # TFLite Micro's Prepare refuses it too
        run_tflm(model, [np.array([1], np.int32), np.zeros(3, np.float32)])


def _if_on(sub_then: Subgraph, sub_else: Subgraph) -> bytes:
    c, x, y = Tensor((1,), "bool", name="c"), Tensor((3,), "float32"), Tensor((3,), "float32")
    main = Subgraph([Op("IF", [c, c, x], [y], {"then_subgraph_index": 1,
                                               "else_subgraph_index": 2})], [c, x], [y])
    return build_subgraphs([main, sub_then, sub_else])


def _f3(name: str = "") -> Tensor:
    return Tensor((3,), "float32", name=name)


def test_refuses_a_subgraph_that_calls_itself() -> None:
    c, x, y = Tensor((1,), "bool"), _f3(), _f3()
    again = Subgraph([Op("IF", [c, c, x], [y], {"then_subgraph_index": 1,
                                                "else_subgraph_index": 2})], [c, x], [y])
    text = _one_line_error(_if_on(again, _passing("else", Tensor((1,), "bool"), _f3())))
    assert "IF's then subgraph 1 is already being run" in text and "recursive" in text, text


def test_names_the_branch_operator_it_cannot_import() -> None:
    c, x, y = Tensor((1,), "bool"), _f3(), _f3()
    then = Subgraph([Op("REAL", [x], [y])], [c, x], [y])
    text = _one_line_error(_if_on(then, _passing("else", Tensor((1,), "bool"), _f3())))
    assert "IF's then subgraph 1: operator 0 (REAL) is not supported" in text, text


def test_refuses_state_inside_a_branch() -> None:
    c, x, y = Tensor((1,), "bool"), _f3(), _f3()
    v = _f3("v")
    then = Subgraph([Op("ADD", [x, v], [y])], [c, x], [y], variables=[v])
    text = _one_line_error(_if_on(then, _passing("else", Tensor((1,), "bool"), _f3())))
    assert "IF's then subgraph 1 reads or writes a variable (state)" in text, text


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64", "riscv32"])
def test_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    """Every case and input set in one image, run once under QEMU."""
    runs = [(f"{name} input set {k}", model, xs)
            for name, model, sets in CASES for k, xs in enumerate(sets)]
    graphs = [import_model(read_model(model)) for _, model, _ in runs]
    inputs = [x for _, _, xs in runs for x in xs]
    outputs = run_side_by_side(graphs, inputs, board, tmp_path / "fw")
    at = 0
    for (what, model, xs), graph in zip(runs, graphs, strict=True):
        n = len(graph.outputs)
        want, _ = run_tflm(model, xs)
        _assert_same(outputs[at:at + n], want, f"{board} {what}")
        at += n
    assert at == len(outputs)


def _chain(levels: int) -> bytes:
    """IF(c, c, x) in subgraph 0 and in each of subgraphs 1..levels-1, both branches
    calling the next subgraph; subgraph `levels` gives x back."""
    subgraphs = []
    for k in range(levels):
        c, x, y = Tensor((1,), "bool"), _f3(), _f3()
        subgraphs.append(Subgraph([Op("IF", [c, c, x], [y], {
            "then_subgraph_index": k + 1, "else_subgraph_index": k + 1})], [c, x], [y]))
    subgraphs.append(_passing("last", Tensor((1,), "bool"), _f3()))
    return build_subgraphs(subgraphs)


def test_nested_branches_run_like_tflite_micro() -> None:
    model = _chain(3)
    graph = import_model(read_model(model))
    x = np.array([1.5, -2.0, 0.25], np.float32)
    for flag in (True, False):
        want, _ = run_tflm(model, [np.array([flag]), x])
        _assert_same(run_graph(graph, [np.array([flag]), x]), want, str(flag))


def test_refuses_nesting_deeper_than_the_limit() -> None:
    text = _one_line_error(_chain(MAX_NESTING + 1))
    assert f"is nested {MAX_NESTING + 1} subgraphs deep; minirt takes {MAX_NESTING}" in text


def test_refuses_branches_that_double_past_the_import_budget() -> None:
    # Both branches of every IF call the next level: 2 + 4 + ... imports.
    text = _one_line_error(_chain(10))
    assert f"minirt imports at most {MAX_SUBGRAPH_IMPORTS}" in text, text
