"""Every ONNX op case (onnx_cases.py) compiled and run under QEMU on cortex-m4 and
x86-64, against the numpy reference with `minirt-run --check`'s rule (floats
numpy.isclose(rtol=1e-5, atol=1e-6), integers exactly).

All cases go into one graph (side by side, each with its own inputs and outputs), so
each board takes one build and one QEMU run.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx_cases import CASES
from onnx_models import import_bytes, merge, run_firmware

from toolchain.cli.run import compare
from toolchain.reference import run_graph


@pytest.fixture(scope="module")
def cases() -> tuple[list[str], list[int], list[np.ndarray], list[np.ndarray]]:
    """Case names, each case's output count, all inputs, all reference outputs."""
    names, counts, inputs, want = [], [], [], []
    for name, make in CASES.items():
        data, xs = make()
        graph = import_bytes(data)
        names.append(name)
        counts.append(len(graph.outputs))
        inputs += xs
        want += run_graph(graph, xs)
    return names, counts, inputs, want


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_every_op_on_the_board(board: str, cases, tmp_path) -> None:
    names, counts, inputs, want = cases
    graph = merge([import_bytes(CASES[n]()[0]) for n in names])
    got = run_firmware(graph, board, tmp_path / "fw", inputs)
    assert len(got) == len(want) == sum(counts)
    problems, k = [], 0
    for name, n in zip(names, counts):
        bad = compare(got[k:k + n], want[k:k + n])
        if bad:
            problems.append(f"{name}: " + "; ".join(bad))
        k += n
    assert not problems, "\n".join(problems)
