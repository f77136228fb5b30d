"""Every JAX model in the shared zoo reproduces JAX's own outputs on the reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolchain.loader import load_graph
from toolchain.reference import run_graph


def test_model_matches_jax(jax_model: Path) -> None:
    data = np.load(jax_model.with_suffix(".npz"))
    graph = load_graph(jax_model)
    inputs = [data[f"input_{i}"] for i in range(len(graph.inputs))]
    outputs = run_graph(graph, inputs)
    assert len(outputs) == len([k for k in data.files if k.startswith("output_")])
    for i, got in enumerate(outputs):
        want = data[f"output_{i}"]
        assert got.shape == want.shape and got.dtype == want.dtype
        close = np.isclose(got, want, rtol=1e-5, atol=1e-6)
        assert close.all(), f"output_{i}: {np.count_nonzero(~close)} of {close.size} differ"
