"""Epilogue fusion: an elementwise consumer that is a reduction's only reader runs as
its epilogue, so the reduction's accumulator never reaches RAM (kernel/form.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from generated_models import quantized_conv

from toolchain.kernel.form import Acc, postorder
from toolchain.loader import load_graph, random_inputs
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import schedule

DENSE = """
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = stablehlo.constant dense<0.25> : tensor<8x4xf32>
  %b = stablehlo.constant dense<[1.0, -2.0, 3.0, -4.0]> : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<2x4xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
  %s = stablehlo.add %d, %bb : tensor<2x4xf32>
  %r = stablehlo.maximum %s, %z : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
"""


def _has_acc(k) -> bool:
    return k.epilogue is not None and any(isinstance(e, Acc) for e in postorder(k.epilogue))


def test_bias_and_relu_run_on_the_accumulator(tmp_path: Path, execute) -> None:
    path = tmp_path / "dense.mlir"
    path.write_text(DENSE.replace("xf32", "xf32"))
    graph = load_graph(path)
    inputs = random_inputs(graph, seed=1)
    want = run_graph(graph, inputs)
    program = schedule(fold_constants(graph))
    assert len(program.steps) == 1 and program.arena_size == 0
    (step,) = program.steps
    assert step.kernel.combine == "add" and _has_acc(step.kernel)
    np.testing.assert_allclose(execute(program, inputs)[0], want[0], rtol=1e-6)


def test_f16_epilogue_sees_the_rounded_value(tmp_path: Path, execute) -> None:
    """An f16 dot folds in f32; its consumer read the f16 result, so the epilogue rounds
    the folded value to f16 first."""
    path = tmp_path / "dense16.mlir"
    path.write_text(DENSE.replace("f32", "f16"))
    graph = load_graph(path)
    inputs = random_inputs(graph, seed=2)
    want = run_graph(graph, inputs)
    program = schedule(fold_constants(graph))
    (step,) = program.steps
    assert step.kernel.acc_dtype.name == "f32" and step.kernel.result.dtype.name == "f16"
    np.testing.assert_array_equal(execute(program, inputs)[0], want[0])


def test_quantized_conv_is_one_dispatch_with_no_wide_tensor(execute) -> None:
    graph = quantized_conv()
    x = np.random.default_rng(5).integers(-128, 128, (1, 5, 5, 3)).astype(np.int8)
    want = run_graph(graph, [x])
    program = schedule(fold_constants(graph))
    assert len(program.steps) == 1 and program.arena_size == 0, [
        s.kernel.name for s in program.steps]
    (step,) = program.steps
    assert _has_acc(step.kernel) and step.kernel.acc_dtype.name == "i32"
    assert [t.dtype.name for t in step.kernel.operands][0] == "i8"  # the input, read as i8
    got = execute(program, [x])[0]
    assert got.dtype == np.int8 and np.array_equal(got, want[0])
    assert len(set(got.ravel().tolist())) > 20  # not all saturated: the test sees values
