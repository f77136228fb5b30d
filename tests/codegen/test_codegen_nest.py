"""Loop nests from schedules, run on the host: every schedule the rules choose for each
target computes what the kernel means (tests/window_models.py: padding on some sides,
strides, dilations, transposed convolutions, odd sizes that leave remainder tiles, a
long dot in partial sums; int8 bit for bit).

The code is compiled for the host, but the loop structure is each target's: blocking,
interiors, phases and partial sums are what differ between targets, not the ISA.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from host_program import kernel_steps
from window_models import all_windows

from toolchain.loops import LoopSchedule, choose_schedule
from toolchain.loops.rules import plain_schedule
from toolchain.passes import fold_constants
from toolchain.schedule import schedule
from toolchain.target import load_target

# Distinct register files and budgets: FPU + DSP (32 float registers), Thumb-1 with 8
# usable registers and soft float, and the two hosted ones (speed budget, SIMD).
TARGETS = ["cortex-m4", "cortex-m0plus", "x86-64", "aarch64"]


@pytest.fixture(scope="module")
def cases():
    """(kernel, operand arrays, the interpreter's result) per dispatch, the program run
    step by step so each dispatch sees its producers' results."""
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((1, 7, 9, 3)).astype(np.float32),
              rng.integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)]
    program = schedule(fold_constants(all_windows()))
    return [(step.kernel, args, result) for step, args, result in kernel_steps(program, inputs)]


def _on_the_host(s: LoopSchedule) -> LoopSchedule:
    """The schedule without packed int8 steps: those are the target's own instructions
    (Arm DSP), which the host cannot run; test_codegen_nest_boards runs them."""
    return replace(s, nests=tuple(replace(n, dot="") for n in s.nests))


def _check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("target", TARGETS + ["plain"])
def test_every_schedule_computes_the_kernel(target: str, reverse: bool, cases, jit) -> None:
    """Also with every nest's tiles run in reverse (Nest.reverse, which an overlapped
    placement may ask for): loops counting down, a remainder tile first, borders on
    either side or both around their interior, high side first."""
    kernels, schedules = [], {}
    for i, (k, _, _) in enumerate(cases):
        k = replace(k, name=f"k{i}")
        kernels.append(k)
        s = plain_schedule(k) if target == "plain" else \
            _on_the_host(choose_schedule(k, load_target(target)))
        schedules[k.name] = replace(s, nests=tuple(replace(n, reverse=reverse)
                                                   for n in s.nests))
    module = jit(kernels, schedules=schedules)
    for k, (_, args, want) in zip(kernels, cases, strict=True):
        _check(module.run(k.name, *args), want, f"{target} {schedules[k.name].format()}")


def test_fma_is_fused_only_where_the_schedule_says(cases, jit) -> None:
    k = replace(cases[0][0], name="conv")
    fused = jit([k], schedules={"conv": choose_schedule(k, load_target("cortex-m4"))})
    separate = jit([k], schedules={"conv": choose_schedule(k, load_target("x86-64"))})
    assert "llvm.fma.f32" in fused.ir_text
    assert "llvm.fma" not in separate.ir_text and "llvm.fmuladd" not in separate.ir_text
