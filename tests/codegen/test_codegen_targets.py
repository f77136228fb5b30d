"""Objects for every target descriptor: they compile, and reference only compiler helpers.

One module per target holds a kernel that uses every elementwise op on every element type
plus reductions, padded loads and conversions. Its undefined symbols must all be
compiler-runtime helpers (libgcc: soft-float, 64-bit division, ...) or the mem functions
runtime_c provides; a libm name (expf, fmaxf, floorf, sqrtf, ...) fails the test.
"""

from __future__ import annotations

import io
import re

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.codegen import TargetInfo, emit_kernel, emit_object
from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.target.descriptors import list_targets, load_target
from toolchain.types import TensorType, dtype

# Compiler-runtime helper names (libgcc / compiler-rt): Arm EABI helpers, soft-float
# (__addsf3, __extendhfsf2, __gnu_h2f_ieee, ...), integer helpers (__udivsi3, __muldi3,
# __popcountsi2, __clzdi2, ...). runtime_c provides memcpy / memset / memmove / memcmp.
_HELPER = re.compile(
    r"^(__aeabi_\w+|__gnu_\w+|__(\w*)(sf|df|hf|tf|si|di|ti|bf)\d?\w*|"
    r"memcpy|memset|memmove|memcmp)$"
)
_LIBM = re.compile(
    r"^(exp|expm1|log|log1p|tanh|sqrt|cbrt|pow|sin|cos|tan|atan2|floor|ceil|round|rint|"
    r"trunc|fmod|fmax|fmin|ldexp|frexp|nearbyint)(f|l)?$"
)

UNARY_F = [
    "abs", "negate", "sign", "exponential", "exponential_minus_one", "log", "log_plus_one",
    "logistic", "sqrt", "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan", "floor", "ceil",
    "round_nearest_afz", "round_nearest_even",
]  # fmt: skip
BINARY_F = [
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power", "atan2",
]  # fmt: skip
UNARY_I = ["abs", "negate", "sign", "not", "popcnt", "count_leading_zeros"]
BINARY_I = [
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power", "and",
    "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
]  # fmt: skip
N = 16


def _ew(name: str, op: str, in_dt, out_dt, nargs: int) -> Kernel:
    t = TensorType((N,), in_dt)
    loads = tuple(Load(i, (Index(0),)) for i in range(nargs))
    return Kernel(name, (N,), 1, (t,) * nargs, TensorType((N,), out_dt), Apply(op, loads, out_dt))


def _chain(name: str, ops: list[str], dt, nargs: int) -> Kernel:
    """One kernel applying every op in turn (v = op(v, y)): one loop per element type
    keeps the compile time of the all-targets test low."""
    t = TensorType((N,), dt)
    v = Load(0, (Index(0),))
    y = Load(nargs - 1, (Index(0),))
    for op in ops:
        v = Apply(op, (v, y) if nargs == 2 else (v,), dt)
    return Kernel(name, (N,), 1, (t,) * nargs, t, v)


def all_op_kernels() -> list[Kernel]:
    """Every op on every element type the emitter supports, plus structured kernels."""
    ks: list[Kernel] = []
    i1 = dtype("i1")
    for dn in ("f32", "f16", "f64"):
        dt = dtype(dn)
        ks.append(_chain(f"u_{dn}", UNARY_F, dt, 1))
        ks.append(_chain(f"b_{dn}", BINARY_F, dt, 2))
        ks.append(_ew(f"fin_{dn}", "is_finite", dt, i1, 1))
        ks.append(_ew(f"lt_{dn}", "compare.LT", dt, i1, 2))
    for dn in ("i8", "i16", "i32", "i64", "ui8"):
        dt = dtype(dn)
        ks.append(_chain(f"u_{dn}", UNARY_I, dt, 1))
        ks.append(_chain(f"b_{dn}", BINARY_I, dt, 2))
    names = ("f32", "f16", "f64", "i8", "i32", "i64", "ui8", "i1")
    for s in names:
        # s -> d -> s for every d, chained in one body.
        sd = dtype(s)
        v = Load(0, (Index(0),))
        for d in names:
            if d != s:
                v = Apply("convert", (Apply("convert", (v,), dtype(d)),), sd)
        t = TensorType((N,), sd)
        ks.append(Kernel(f"cv_{s}", (N,), 1, (t,), t, v))
    f32 = dtype("f32")
    t = TensorType((8, 8), f32)
    ks.append(
        Kernel(
            "matmul",
            (8, 8, 8),
            2,
            (t, t),
            t,
            Apply("multiply", (Load(0, (Index(0), Index(2))), Load(1, (Index(2), Index(1)))), f32),
            combine="add",
            init=Const(0.0, f32),
        )
    )
    for comb in ("maximum", "minimum"):
        ks.append(
            Kernel(
                f"red_{comb}",
                (8, 8),
                1,
                (t,),
                TensorType((8,), f32),
                Load(
                    0,
                    (Index(0), Apply("add", (Index(1), Const(-1, dtype("i32"))), dtype("i32"))),
                    pad=Const(0.0, f32),
                ),
                combine=comb,
                init=Const(0.0, f32),
            )
        )
    return ks


def undefined_symbols(obj: bytes) -> set[str]:
    elf = ELFFile(io.BytesIO(obj))
    symtab = elf.get_section_by_name(".symtab")
    return {s.name for s in symtab.iter_symbols() if s.name and s["st_shndx"] == "SHN_UNDEF"}


@pytest.mark.parametrize("name", list_targets())
def test_every_op_compiles_without_libm(name: str) -> None:
    info = TargetInfo.load(name)
    module = info.new_module()
    for k in all_op_kernels():
        emit_kernel(module, k)
    obj = info.emit_object(module)
    assert obj[:4] == b"\x7fELF"
    undefined = undefined_symbols(obj)
    libm = sorted(s for s in undefined if _LIBM.match(s))
    assert not libm, f"{name}: libm calls {libm}"
    other = sorted(s for s in undefined if not _HELPER.match(s))
    assert not other, f"{name}: unexpected undefined symbols {other}"
    if info.target.capabilities.fpu == "none":
        assert "llvm.sqrt" not in str(module)


def _arm_attributes(elf: ELFFile) -> dict[str, object]:
    sec = elf.get_section_by_name(".ARM.attributes")
    return {
        a.tag: a.value
        for sub in sec.iter_subsections()
        for subsub in sub.iter_subsubsections()
        for a in subsub.iter_attributes()
    }


def test_fpu_use_and_sections() -> None:
    """Cortex-M4 objects use the FPU, Cortex-M0+ ones do not; each kernel sits in its own
    section with a hidden symbol."""
    k = _ew("scale", "multiply", dtype("f32"), dtype("f32"), 2)
    for name, fpu in (("cortex-m4", True), ("cortex-m0plus", False)):
        info = TargetInfo.load(load_target(name))
        module = info.new_module()
        emit_kernel(module, k)
        elf = ELFFile(io.BytesIO(emit_object(module, info)))
        assert elf["e_machine"] == "EM_ARM"
        attrs = _arm_attributes(elf)
        assert attrs["TAG_CPU_NAME"] == name
        assert ("TAG_FP_ARCH" in attrs) == fpu, name
        assert elf.get_section_by_name(".text.scale") is not None
        sym = {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols()}["scale"]
        assert sym["st_other"]["visibility"] == "STV_HIDDEN"
