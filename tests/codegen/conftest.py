"""Runs generated kernels on the host: llvmlite MCJIT + ctypes.

Kernels are emitted into a module set up for the x86-64 descriptor (so they see its
feature flags: hardware sqrt, software f16), optimised with that descriptor's pipeline
(so the tests check optimised code, as shipped) and then JIT-compiled for the host.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from toolchain.codegen import TargetFeatures, TargetInfo, emit_kernel
from toolchain.codegen.mathlib import set_target_features
from toolchain.codegen.target_machine import initialize_llvm
from toolchain.kernel.form import Kernel
from toolchain.loops import LoopSchedule

_DISPATCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class JitModule:
    """A set of kernels compiled together; call run(name, *inputs)."""

    def __init__(self, kernels: list[Kernel], features: TargetFeatures | None = None,
                 schedules: dict[str, LoopSchedule] | None = None) -> None:
        initialize_llvm()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        info = TargetInfo.load("x86-64")
        module: ir.Module = info.new_module("jit")
        if features is not None:
            set_target_features(module, features)
        for k in kernels:
            emit_kernel(module, k, (schedules or {}).get(k.name))
        self.kernels = {k.name: k for k in kernels}
        self.ir_text = str(module)
        ref = info.compile(module)
        ref.triple = llvm.get_process_triple()
        tm = llvm.Target.from_default_triple().create_target_machine(jit=True)
        self.engine = llvm.create_mcjit_compiler(ref, tm)
        self.engine.finalize_object()
        self._ref = ref

    def run(self, name: str, *inputs: np.ndarray) -> np.ndarray:
        k = self.kernels[name]
        # A bit-packed operand (Kernel.bit_packed) is passed as its packed bytes.
        args = [
            np.ascontiguousarray(a, dtype=np.uint8) if j in k.bit_packed else
            np.ascontiguousarray(np.asarray(a, dtype=t.dtype.np_dtype).reshape(t.shape))
            for j, (a, t) in enumerate(zip(inputs, k.operands, strict=True))
        ]
        out = np.zeros(k.result.shape, dtype=k.result.dtype.np_dtype)
        ptrs = [a.ctypes.data for a in args] + [out.ctypes.data]
        bindings = (ctypes.c_void_p * len(ptrs))(*ptrs)
        fn = _DISPATCH(self.engine.get_function_address(name))
        fn(ctypes.cast(bindings, ctypes.c_void_p))
        return out


@pytest.fixture(scope="session")
def jit() -> Callable[..., JitModule]:
    """jit(kernels, features=None, schedules=None) -> JitModule (schedules: kernel name ->
    LoopSchedule; the plain schedule for the others)."""
    return JitModule
