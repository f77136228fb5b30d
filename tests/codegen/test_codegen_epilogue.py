"""Kernels with an epilogue, compiled: the int8 convolution as one dispatch (i8 loads,
an i32 accumulator, the requantization on it) equals the reference bit for bit."""

from __future__ import annotations

import numpy as np
from generated_models import quantized_conv

from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import schedule


def test_quantized_conv_kernel_is_bit_exact(jit) -> None:
    graph = quantized_conv(zp_in=-128, zp_out=127)
    x = np.random.default_rng(8).integers(-128, 128, (1, 5, 5, 3)).astype(np.int8)
    want = run_graph(graph, [x])[0]
    program = schedule(fold_constants(graph))
    (step,) = program.steps
    k = step.kernel
    args = [x if b.kind == "input" else program.constants[b.index] for b in step.buffers[:-1]]
    got = jit([k]).run(k.name, *args)
    assert got.dtype == np.int8 and np.array_equal(got, want)
