"""LLVM target machines, the optimisation pipeline and object emission per target.

`TargetInfo` turns a target descriptor (targets/*.yaml, loaded by
toolchain.target.descriptors) into what llvmlite needs: a TargetMachine with the
descriptor's triple, CPU, features and ABI (static relocation, small code model), the
feature flags the IR emitters consult (hardware sqrt / f16 / f64), and the pass
pipeline. The pipeline is LLVM's new-pass-manager default pipeline built *with* the
target machine, so the vectorisers see the target's real vector width.

Bare-metal microcontroller targets (os: none) are optimised for size: every defined
function gets `optsize` (LLVM's -Os attribute: no unrolling-for-speed, smaller code
choices in instruction selection), loop unrolling is off, and the vectorisers only run
when the target has real SIMD registers (vector_bits >= 64, e.g. Helium on Cortex-M55).
Hosted targets (x86-64, aarch64) get the -O3 pipeline.

Known limitation (llvmlite exposes no TargetOptions.FloatABIType): for `*-eabihf` Arm
triples LLVM generates FPU instructions but the default (base AAPCS) calling convention
for float arguments, and the object carries no Tag_ABI_VFP_args attribute. Nothing we
export takes or returns a float (dispatch functions take `void *const *`; math helpers are
internal), and ld.lld accepts a missing tag, so this is harmless for minirt images; GNU
ld would refuse to mix such objects with -mfloat-abi=hard ones.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from toolchain.codegen.mathlib import TargetFeatures, set_target_features
from toolchain.target.descriptors import Target, load_target

__all__ = ["TargetInfo", "emit_object", "initialize_llvm"]


@functools.cache
def initialize_llvm() -> None:
    """Registers every target LLVM was built with (once per process)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


@dataclass(frozen=True)
class TargetInfo:
    """A target descriptor plus the LLVM objects derived from it."""

    target: Target

    @classmethod
    def load(cls, target: Target | TargetInfo | str) -> TargetInfo:
        """From a Target, a TargetInfo or a descriptor name such as 'cortex-m4'."""
        if isinstance(target, TargetInfo):
            return target
        if isinstance(target, str):
            target = load_target(target)
        return cls(target)

    # ----------------------------------------------------------- derived facts

    @property
    def triple(self) -> str:
        return self.target.llvm_triple

    @property
    def features(self) -> TargetFeatures:
        """What the emitters may assume. x86-64's baseline has no F16C, so f16 goes
        through the integer conversion there like on FPU-less targets."""
        caps = self.target.capabilities
        return TargetFeatures(
            hardware_sqrt=caps.fpu != "none",
            hardware_f16=caps.f16_conversion,
            hardware_f64=caps.fpu == "dp",
            simd=caps.simd,
        )

    @property
    def optimize_for_size(self) -> bool:
        """Microcontrollers (no OS) trade speed for flash."""
        return self.target.os == "none"

    @property
    def vectorize(self) -> bool:
        return self.target.capabilities.vector_bits >= 64

    @functools.cached_property
    def target_machine(self) -> llvm.TargetMachine:
        """Static relocation, small code model, opt level 2 (3 on hosted targets)."""
        initialize_llvm()
        t = self.target
        return llvm.Target.from_triple(t.llvm_triple).create_target_machine(
            cpu=t.codegen_cpu,
            features=t.features,
            opt=2 if self.optimize_for_size else 3,
            reloc="static",
            codemodel="small",
            abiname=t.abi,
        )

    @property
    def data_layout(self) -> str:
        return str(self.target_machine.target_data)

    # ----------------------------------------------------------- modules

    def new_module(self, name: str = "minirt") -> ir.Module:
        """An empty IR module for this target, with the emitters' feature flags set."""
        module = ir.Module(name=name)
        module.triple = self.triple
        module.data_layout = self.data_layout
        set_target_features(module, self.features)
        return module

    def _prepare_ir(self, module: ir.Module) -> None:
        if self.optimize_for_size:
            for fn in module.functions:
                if not fn.is_declaration:
                    fn.attributes.add("optsize")

    def ir_text(self, module: ir.Module | str) -> str:
        """The IR text LLVM is given for `module`: an IR module gets this target's
        triple, data layout and function attributes first; text is taken as it is."""
        if not isinstance(module, ir.Module):
            return module
        module.triple = self.triple
        module.data_layout = self.data_layout
        self._prepare_ir(module)
        # Name the object's source so link errors say which one ("dispatch"), not
        # llvmlite's default "<string>".
        return f'source_filename = "{module.name}"\n' + str(module)

    def compile(self, module: ir.Module | str) -> llvm.ModuleRef:
        """Parses, verifies and optimises module; returns the LLVM module."""
        ref = llvm.parse_assembly(self.ir_text(module))
        ref.verify()
        self.optimize(ref)
        return ref

    @property
    def codegen_recipe(self) -> tuple[str, ...]:
        """What, besides the IR text and LLVM itself, decides the object emit_object
        makes: the target machine's and the pipeline's settings (codegen/object_cache.py
        keys its entries with them)."""
        t = self.target
        # The CPU target_machine is made for: codegen_cpu (schedule_cpu, else cpu), which
        # orders and allocates the code, not the core it runs on (cortex-m7 schedules
        # for cortex-m4): keyed by t.cpu, a schedule_cpu change kept the old objects.
        return (t.llvm_triple, t.codegen_cpu or "", t.features or "", t.abi or "",
                f"opt={2 if self.optimize_for_size else 3}", "reloc=static",
                "codemodel=small", f"size={self.optimize_for_size}",
                f"vectorize={self.vectorize}")

    def optimize(self, ref: llvm.ModuleRef) -> None:
        """Runs the default new-pass-manager pipeline with this target machine."""
        size = self.optimize_for_size
        pto = llvm.create_pipeline_tuning_options(speed_level=2 if size else 3)
        pto.loop_unrolling = not size
        pto.loop_vectorization = self.vectorize
        pto.slp_vectorization = self.vectorize
        pb = llvm.create_pass_builder(self.target_machine, pto)
        pm = pb.getModulePassManager()
        pm.run(ref, pb)

    def emit_object(self, module: ir.Module | str | llvm.ModuleRef) -> bytes:
        """An ELF relocatable object for module (IR modules and text are optimised first;
        a ModuleRef is taken as already optimised). The object of IR text made before
        comes from the user's codegen cache (codegen/object_cache.py), byte for byte
        what LLVM would make again."""
        if isinstance(module, llvm.ModuleRef):
            return self.target_machine.emit_object(module)
        from toolchain.codegen.object_cache import codegen_cache

        text = self.ir_text(module)
        cache = codegen_cache()
        key = cache.key(self.codegen_recipe, text) if cache is not None else None
        found = cache.get(key) if key is not None else None
        if found is not None:
            return found
        obj = self.target_machine.emit_object(self.compile(text))
        if key is not None:
            cache.put(key, obj)
        return obj

    def emit_assembly(self, module: ir.Module | str | llvm.ModuleRef) -> str:
        """Assembly text, for --dump-after and for reading what the backend made."""
        ref = module if isinstance(module, llvm.ModuleRef) else self.compile(module)
        return self.target_machine.emit_assembly(ref)


def emit_object(module: ir.Module | str, target: Target | TargetInfo | str) -> bytes:
    """Optimises module for target and returns the ELF object bytes."""
    return TargetInfo.load(target).emit_object(module)
