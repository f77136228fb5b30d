"""Every ONNX op case (onnx_cases.py) and every quantized case (onnx_qdq_cases.py)
compiled and run under QEMU on cortex-m4 and x86-64, against the numpy reference with
`minirt-run --check`'s rule (floats numpy.isclose(rtol=1e-5, atol=1e-6), integers
exactly: the int8 kernels are bit-exact).

All cases go into one graph (side by side, each with its own inputs and outputs), so
each board takes one build and one QEMU run.
"""

from __future__ import annotations

import pytest
from onnx_cases import CASES
from onnx_models import import_bytes, merge, run_firmware
from onnx_qdq_cases import QDQ_CASES

from toolchain.cli.run import compare
from toolchain.reference import run_graph

SUITES = {"float": lambda: {k: f()[:2] for k, f in CASES.items()},
          "quantized": lambda: {k: f()[:2] for k, f in QDQ_CASES.items()}}


@pytest.fixture(scope="module")
def suites() -> dict:
    """Per suite: case names, each case's output count, models, all inputs, all
    reference outputs."""
    out = {}
    for suite, make in SUITES.items():
        names, counts, models, inputs, want = [], [], [], [], []
        for name, (data, xs) in make().items():
            graph = import_bytes(data)
            names.append(name)
            counts.append(len(graph.outputs))
            models.append(data)
            inputs += xs
            want += run_graph(graph, xs)
        out[suite] = names, counts, models, inputs, want
    return out


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_every_op_on_the_board(board: str, suite: str, suites, tmp_path) -> None:
    names, counts, models, inputs, want = suites[suite]
    graph = merge([import_bytes(m) for m in models])
    got = run_firmware(graph, board, tmp_path / "fw", inputs)
    assert len(got) == len(want) == sum(counts)
    problems, k = [], 0
    for name, n in zip(names, counts):
        bad = compare(got[k:k + n], want[k:k + n])
        if bad:
            problems.append(f"{name}: " + "; ".join(bad))
        k += n
    assert not problems, "\n".join(problems)
