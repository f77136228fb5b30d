"""Producers that read only constants are inlined into every reader only while small
(schedule/fuse.py, MAX_CONSTANT_INLINE): an rng op's Threefry rounds on its constant
key are such a chain, and copied into each reader they made a 3-rng random graph
compile in 33 s instead of 3 s (the random graph campaign, docs/random_graphs.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolchain.kernel.form import postorder
from toolchain.loader import load_graph
from toolchain.pipeline import lower_for_backends, prepare_graph
from toolchain.reference import run_graph
from toolchain.schedule import schedule
from toolchain.schedule.fuse import MAX_CONSTANT_INLINE

RNG = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %lo = stablehlo.constant dense<-1.0> : tensor<f32>
  %hi = stablehlo.constant dense<2.0> : tensor<f32>
  %shape = stablehlo.constant dense<[4]> : tensor<1xi64>
  %r = "stablehlo.rng"(%lo, %hi, %shape) {rng_distribution = #stablehlo<rng_distribution NORMAL>}
      : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
  %a = stablehlo.add %r, %x : tensor<4xf32>
  %b = stablehlo.multiply %r, %x : tensor<4xf32>
  %c = stablehlo.subtract %r, %x : tensor<4xf32>
  %d = stablehlo.add %b, %c : tensor<4xf32>
  return %a, %d : tensor<4xf32>, tensor<4xf32>
}
"""


def test_an_rng_chain_on_a_constant_key_is_stored_not_copied(tmp_path: Path,
                                                             execute) -> None:
    # Copied into every reader, the kernels held 18,072 expression nodes (one of
    # 10,354); stored past the limit, 559 (the largest 56).
    path = tmp_path / "rng.mlir"
    path.write_text(RNG)
    graph = load_graph(path)
    inputs = [np.array([0.5, -1.0, 2.0, 0.0], np.float32)]
    want = run_graph(load_graph(path), inputs)
    program = schedule(lower_for_backends(prepare_graph(graph)))
    sizes = [len(postorder(s.kernel.body)) for s in program.steps]
    assert max(sizes) <= 2 * MAX_CONSTANT_INLINE and sum(sizes) < 1500, sizes
    for got, w in zip(execute(program, inputs), want):
        # The same operations in the same order (log, sqrt, cos of f32 in the
        # interpreter and the reference alike): within an ulp or two.
        np.testing.assert_allclose(got, w, rtol=2e-6, atol=1e-7)
