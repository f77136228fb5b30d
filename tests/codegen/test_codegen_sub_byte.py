"""Bit-packed sub-byte operands (kernel/sub_byte.py) read by generated code, on the host.

The window models' float convolutions (padding on some sides, strides, dilations,
transposed and depthwise ones, odd channel counts that leave remainder tiles) with
their weights stored as int4 (`--quantize int4-weights`) and bit-packed: every schedule
each target's rules choose, forward and with its tiles reversed, must give the
interpreter's result on the unpacked weights. Where a weight's position in its byte is
known at build time the code shifts by a constant, elsewhere by one computed at run
time; both run here. The same kernels reading ui4, i2 and ui2 constants instead check
the 4-to-a-byte layout and zero extension.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from host_program import kernel_steps
from window_models import float_windows

from toolchain.kernel.form import Kernel
from toolchain.kernel.interpret import run_kernel
from toolchain.kernel.sub_byte import pack_bits, unpack_bits
from toolchain.loops import choose_schedule
from toolchain.loops.rules import plain_schedule
from toolchain.passes import QuantizeOptions, fold_constants, quantize_weights
from toolchain.schedule import schedule
from toolchain.schedule.sub_byte import pack_sub_byte_constants
from toolchain.target import load_target
from toolchain.types import TensorType, dtype

TARGETS = ["cortex-m4", "cortex-m0plus", "riscv32", "x86-64"]


@pytest.fixture(scope="module")
def cases():
    """(kernel, operand arrays as stored, the interpreter's result) for each dispatch
    that reads a bit-packed int4 weight."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 7, 9, 3)).astype(np.float32)
    graph = quantize_weights(fold_constants(float_windows()),
                             QuantizeOptions("int4-weights", min_elements=0))
    program = schedule(graph)
    assert pack_sub_byte_constants(program)
    out = [(step.kernel, args, result) for step, args, result in kernel_steps(program, [x])
           if isinstance(step.kernel, Kernel) and step.kernel.bit_packed]
    assert len(out) >= 5
    return out


def _schedules(kernels: list[Kernel], target: str, reverse: bool) -> dict:
    out = {}
    for k in kernels:
        s = plain_schedule(k) if target == "plain" else choose_schedule(k, load_target(target))
        out[k.name] = replace(s, nests=tuple(replace(n, dot="", reverse=reverse)
                                             for n in s.nests))
    return out


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("target", TARGETS + ["plain"])
def test_int4_weights_every_schedule(target: str, reverse: bool, cases, jit) -> None:
    kernels = [replace(k, name=f"k{i}") for i, (k, _, _) in enumerate(cases)]
    schedules = _schedules(kernels, target, reverse)
    module = jit(kernels, schedules=schedules)
    for k, (_, args, want) in zip(kernels, cases, strict=True):
        np.testing.assert_allclose(module.run(k.name, *args), want, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{target} {schedules[k.name].format()}")


@pytest.mark.parametrize("name", ["ui4", "i2", "ui2"])
def test_other_sub_byte_types(name: str, cases, jit) -> None:
    """The same kernels with their packed operand retyped: values of `name`'s whole
    range, packed 2 or 4 to a byte, widened with the type's own sign."""
    dt = dtype(name)
    lo, hi = (0, (1 << dt.bits) - 1) if dt.kind == "u" else \
        (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1)
    rng = np.random.default_rng(dt.bits)
    kernels, runs = [], []
    for i, (k, args, _) in enumerate(cases):
        ops, stored, plain = list(k.operands), list(args), list(args)
        for j in k.bit_packed:
            ops[j] = TensorType(ops[j].shape, dt)
            plain[j] = rng.integers(lo, hi + 1, ops[j].shape).astype(dt.np_dtype)
            stored[j] = pack_bits(plain[j], dt)
            assert np.array_equal(unpack_bits(stored[j], dt, ops[j].shape), plain[j])
        packed = replace(k, name=f"{name}_{i}", operands=tuple(ops))
        kernels.append(packed)
        runs.append((packed, stored, run_kernel(replace(packed, bit_packed=()), plain)))
    schedules = _schedules(kernels, "cortex-m4", False)
    module = jit(kernels, schedules=schedules)
    for packed, stored, want in runs:
        np.testing.assert_allclose(module.run(packed.name, *stored), want, rtol=1e-5,
                                   atol=1e-6, err_msg=schedules[packed.name].format())
