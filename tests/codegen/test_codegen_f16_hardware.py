"""fp16 weights are widened by the hardware where the target has it, and by our own
bit-exact integer routine elsewhere; never by a compiler-helper call."""

from __future__ import annotations

import dataclasses

import pytest

from toolchain.codegen.emit import emit_kernel
from toolchain.codegen.target_machine import TargetInfo
from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.target import load_target
from toolchain.types import TensorType, dtype

F16, F32 = dtype("f16"), dtype("f32")
WIDEN = Kernel("widen", (8,), 1, (TensorType((8,), F16),), TensorType((8,), F32),
               Apply("convert", (Load(0, (Index(0),)),), F32))


def _assembly(info: TargetInfo) -> str:
    module = info.new_module("f16")
    emit_kernel(module, WIDEN)
    return info.emit_assembly(module)


@pytest.mark.parametrize(("target", "instruction"), [
    ("cortex-m4", "vcvtb.f32.f16"), ("cortex-m7", "vcvtb.f32.f16"),
    ("cortex-m33", "vcvtb.f32.f16"), ("aarch64", "fcvt"),
])
def test_hardware_conversion(target: str, instruction: str) -> None:
    asm = _assembly(TargetInfo.load(target))
    assert instruction in asm
    assert "__extendhfsf2" not in asm and "__gnu_h2f_ieee" not in asm


def test_x86_64_uses_f16c_when_the_target_enables_it() -> None:
    base = load_target("x86-64")
    with_f16c = dataclasses.replace(
        base, features=base.features + ",+f16c,+avx",
        capabilities=dataclasses.replace(base.capabilities, f16_conversion=True))
    assert "vcvtph2ps" in _assembly(TargetInfo.load(with_f16c))
    assert "vcvtph2ps" not in _assembly(TargetInfo.load(base))


@pytest.mark.parametrize("target", ["x86-64", "riscv32", "riscv32-nofpu", "cortex-m0plus",
                                    "cortex-m3"])
def test_software_conversion_calls_nothing(target: str) -> None:
    asm = _assembly(TargetInfo.load(target))
    assert "__extendhfsf2" not in asm and "__gnu_h2f_ieee" not in asm
    assert "vcvtb" not in asm
