"""The per-image object: every dispatch function plus the symbols of mrt_image.h.

One relocatable object holds the generated kernels, the dispatch table indexed by
dispatch ordinal (= position in the kernel list), the packed .mrt module in flash, and
the RAM the image needs (arena and one buffer per input / output), all in their own
sections so that `ld --gc-sections` keeps exactly what is referenced:

    symbol                     section                          kind
    mrt_image_dispatches       .rodata.mrt_image_dispatches     const fn-pointer array
    mrt_image_dispatch_count   .rodata.mrt_image_dispatch_count const u32
    mrt_image_module           .rodata.mrt_image_module         const u8[], align 16
    mrt_image_module_size      .rodata.mrt_image_module_size    const u32
    mrt_image_target_id        .rodata.mrt_image_target_id      const u32
    mrt_image_arena            .bss.mrt_image_arena             u8[max(1, n)], align 16
    mrt_image_arena_size       .rodata.mrt_image_arena_size     const u32
    mrt_image_inputs/outputs   .rodata.mrt_image_{inputs,outputs}  const pointer arrays
    (buffers)                  .bss.mrt_image_{input,output}_N  u8[max(1, n)], align 16

Zero-length arrays get one null / zero element so no symbol has size 0 (the counts
still say 0). The output depends only on the arguments: same inputs, same bytes.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.emit import emit_kernel
from toolchain.codegen.target_machine import TargetInfo
from toolchain.kernel.form import Kernel
from toolchain.target.descriptors import Target

__all__ = ["build_image_module", "emit_image_object"]

I8 = ir.IntType(8)
I32 = ir.IntType(32)
PTR = ir.PointerType()
ALIGN = 16  # MRT_MODULE_ALIGN: module base, arena and I/O buffers


def _global(
    module: ir.Module,
    name: str,
    ty: ir.Type,
    init: ir.Constant,
    *,
    const: bool,
    section: str,
    align: int | None = None,
    linkage: str = "",
) -> ir.GlobalVariable:
    g = ir.GlobalVariable(module, ty, name)
    g.initializer = init
    g.global_constant = const
    g.section = section
    g.linkage = linkage
    if not linkage:
        g.storage_class = "dso_local"  # static link: no GOT indirection
    if align is not None:
        g.align = align
    return g


def _u32(module: ir.Module, name: str, value: int) -> None:
    _global(
        module, name, I32, ir.Constant(I32, value), const=True, section=f".rodata.{name}", align=4
    )


def _bss_buffer(module: ir.Module, name: str, size: int, linkage: str = "") -> ir.GlobalVariable:
    ty = ir.ArrayType(I8, max(1, size))
    return _global(
        module,
        name,
        ty,
        ir.Constant(ty, None),
        const=False,
        section=f".bss.{name}",
        align=ALIGN,
        linkage=linkage,
    )


def _pointer_table(module: ir.Module, name: str, targets: list[ir.GlobalValue]) -> None:
    ty = ir.ArrayType(PTR, max(1, len(targets)))
    items = list(targets) or [ir.Constant(PTR, None)]
    _global(
        module, name, ty, ir.Constant(ty, items), const=True, section=f".rodata.{name}", align=ALIGN
    )


def build_image_module(
    kernels: list[Kernel],
    module_bytes: bytes,
    target_id: int,
    arena_size: int,
    input_sizes: list[int],
    output_sizes: list[int],
    target: Target | TargetInfo | str,
) -> ir.Module:
    """The image's IR module (before optimisation); see emit_image_object."""
    info = TargetInfo.load(target)
    module = info.new_module("dispatch")
    fns = [emit_kernel(module, k) for k in kernels]

    _pointer_table(module, "mrt_image_dispatches", fns)
    _u32(module, "mrt_image_dispatch_count", len(fns))

    data = bytes(module_bytes)
    mty = ir.ArrayType(I8, max(1, len(data)))
    _global(
        module,
        "mrt_image_module",
        mty,
        ir.Constant(mty, bytearray(data or b"\0")),
        const=True,
        section=".rodata.mrt_image_module",
        align=ALIGN,
    )
    _u32(module, "mrt_image_module_size", len(data))
    _u32(module, "mrt_image_target_id", target_id)

    _bss_buffer(module, "mrt_image_arena", arena_size)
    _u32(module, "mrt_image_arena_size", arena_size)

    for kind, sizes in (("input", input_sizes), ("output", output_sizes)):
        bufs = [
            _bss_buffer(module, f"mrt_image_{kind}_{i}", n, linkage="internal")
            for i, n in enumerate(sizes)
        ]
        _pointer_table(module, f"mrt_image_{kind}s", bufs)
    return module


def emit_image_object(
    kernels: list[Kernel],
    module_bytes: bytes,
    target_id: int,
    arena_size: int,
    input_sizes: list[int],
    output_sizes: list[int],
    target: Target | TargetInfo | str,
) -> bytes:
    """One ELF object with all dispatch functions and the mrt_image_* symbols.

    kernels[i] becomes dispatch ordinal i. target is a Target, a TargetInfo or a
    descriptor name; target_id is what the module header carries (normally
    target.target_id, passed explicitly so the caller states what it packed).
    """
    if arena_size < 0 or any(n < 0 for n in (*input_sizes, *output_sizes)):
        raise ValueError("buffer sizes must be >= 0")
    info = TargetInfo.load(target)
    module = build_image_module(
        kernels, module_bytes, target_id, arena_size, input_sizes, output_sizes, info
    )
    return info.emit_object(module)
