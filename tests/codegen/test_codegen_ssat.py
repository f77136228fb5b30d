"""An int8 clamp narrower than [-128, 127] (a fused activation) on targets with SSAT:
one SSAT and a compare for the narrower bound, instead of two compares and selects
(codegen/emit.py, _saturate_then_clamp). Its values are checked on the boards by
tests/kernel/test_requant.py (its int8 output clamps to [-100, 127])."""

from __future__ import annotations

import re

import pytest

from toolchain.codegen.emit import emit_kernel
from toolchain.codegen.target_machine import TargetInfo
from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.types import TensorType, dtype

I8, I32 = dtype("i8"), dtype("i32")


def _assembly(target: str, lo: int, hi: int) -> str:
    clamp = Apply("clamp", (Const(lo, I32), Load(0, (Index(0),)), Const(hi, I32)), I32)
    k = Kernel("narrow", (16,), 1, (TensorType((16,), I32),), TensorType((16,), I8),
               Apply("convert", (clamp,), I8))
    info = TargetInfo.load(target)
    module = info.new_module("narrow")
    emit_kernel(module, k)
    return info.emit_assembly(module)


def _compares(asm: str) -> int:
    return len(re.findall(r"^\s*(cmp|cmn)(\.w)?\s", asm, re.M))


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m3", "cortex-m33"])
@pytest.mark.parametrize(("lo", "hi"), [(-100, 127), (-128, 100), (-5, 127), (-128, 127)])
def test_narrow_clamp_is_one_ssat(target: str, lo: int, hi: int) -> None:
    asm = _assembly(target, lo, hi)
    assert re.search(r"\bssat\s+r\d+, #8", asm), asm
    # the loop's own compare, plus one per bound narrower than [-128, 127]
    assert _compares(asm) <= 1 + (lo > -128) + (hi < 127), asm


def test_usat_and_two_sided_clamps_stay_llvms() -> None:
    # [0, 255] and [0, 127] (a ReLU over zero point 0) are one USAT already; narrower on
    # both sides, SSAT would add an instruction
    assert re.search(r"\busat\s+r\d+, #8", _assembly("cortex-m4", 0, 255))
    assert re.search(r"\busat\s+r\d+, #7", _assembly("cortex-m4", 0, 127))
    assert not re.search(r"^\s*ssat\s", _assembly("cortex-m4", -100, 100), re.M)


def test_no_ssat_without_it() -> None:
    # Armv6-M has no SSAT: the clamp stays compares and selects
    assert not re.search(r"^\s*ssat\s", _assembly("cortex-m0plus", -100, 127), re.M)
