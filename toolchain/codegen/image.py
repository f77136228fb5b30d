"""The per-image object: every dispatch function plus the symbols of mrt_image.h.

One relocatable object holds the generated kernels, the image's contract with its
module (`mrt_image`: dispatch table indexed by dispatch ordinal = position in the kernel
list, the shape of the command list with what each dispatch accesses through each
binding, the I/O buffer sizes, the target and the module's layout CRC;
toolchain/module/contract.py), the packed .mrt module in
flash, and the RAM the image needs (arena and one buffer per input / output), all in
their own sections so that `ld --gc-sections` keeps exactly what is referenced:

    symbol                     section                          kind
    mrt_image                  .rodata.mrt_image                const mrt_image_t
      (its tables)             .rodata.mrt_image_{dispatches,commands,io_sizes}
    mrt_image_module           .rodata.mrt_image_module         const u8[], align 16
    mrt_image_module_size      .rodata.mrt_image_module_size    const u32
    mrt_image_arena            .bss.mrt_image_arena             u8[max(1, n)], align 16
    mrt_image_arena_size       .rodata.mrt_image_arena_size     const u32
    mrt_image_inputs/outputs   .rodata.mrt_image_{inputs,outputs}  const pointer arrays
    (buffers)                  .bss.mrt_image_{input,output}_N  u8[max(1, n)], align 16
    mrt_image_state            .bss.mrt_image_state             u8[max(1, n)], align 16
    mrt_image_state_{initial,reset}  .rodata.mrt_image_state_*  const u8[], align 16
    mrt_image_state_{size,count}     .rodata.mrt_image_state_*  const u32

The state's slots (the last inputs and outputs of a stateful model) point into
mrt_image_state, an input and its output at the same address: the state is read and
written there in place, and lives on from one inference to the next.

Zero-length arrays get one null / zero element so no symbol has size 0 (the counts
still say 0). The output depends only on the arguments: same inputs, same bytes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from toolchain.codegen import asm_kernels
from toolchain.codegen.emit import emit_kernel
from toolchain.codegen.errors import EmitError
from toolchain.codegen.target_machine import TargetInfo
from toolchain.kernel.flatten import flatten_elementwise
from toolchain.kernel.form import Kernel
from toolchain.loops import LoopSchedule, choose_schedule
from toolchain.module import format as fmt
from toolchain.module.contract import ImageContract
from toolchain.target.descriptors import Target
from toolchain.timings import stage

__all__ = ["SHARED_PREFIX", "StateImage", "build_image_module", "emit_image_object",
           "function_key", "share_identical_bodies", "state_offsets"]

I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
PTR = ir.PointerType()
ALIGN = 16  # MRT_MODULE_ALIGN: module base, arena and I/O buffers
# The name of a body several dispatches share: no `dN_` name, so the profile charges its
# instructions to the dispatch whose thunk jumped there (toolchain/emu/profile.py).
SHARED_PREFIX = "mrt_shared_"


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


def _pointer_table(module: ir.Module, name: str, targets: list[ir.GlobalValue],
                   linkage: str = "") -> ir.GlobalVariable:
    ty = ir.ArrayType(PTR, max(1, len(targets)))
    items = list(targets) or [ir.Constant(PTR, None)]
    return _global(module, name, ty, ir.Constant(ty, items), const=True,
                   section=f".rodata.{name}", linkage=linkage)


def _u32_table(module: ir.Module, name: str, values: list[int]) -> ir.GlobalVariable:
    ty = ir.ArrayType(I32, max(1, len(values)))
    return _global(module, name, ty, ir.Constant(ty, list(values) or [0]), const=True,
                   section=f".rodata.{name}", align=4, linkage="internal")


def _image_struct(module: ir.Module, contract: ImageContract,
                  fns: list[ir.Function], pointer_bytes: int) -> None:
    """`const mrt_image_t mrt_image` (minirt.h): the addresses of the dispatch table, the
    I/O sizes and the command list's start and end (inside this very struct), the
    target, layout CRC and pool offset, then the module bytes the image pins as u32
    words (the C struct's header fields and its trailing structure[]: the same bytes on
    every target, the u16 counts sharing little-endian words)."""
    h = contract.header
    words = contract.words
    ty = ir.LiteralStructType([PTR, PTR, PTR, PTR, I32, I32, I32, ir.ArrayType(I32, len(words))])
    image = ir.GlobalVariable(module, ty, "mrt_image")
    head = (fmt.HEADER_SIZE - fmt.CRC_START) // 4

    def word(i: int) -> ir.Constant:
        """The address of pinned word i (i == len(words): the end)."""
        return image.gep([ir.Constant(I32, 0), ir.Constant(I32, 7), ir.Constant(I32, i)])

    fields = [
        _pointer_table(module, "mrt_image_dispatches", fns, linkage="internal"),
        _u32_table(module, "mrt_image_io_sizes", list(contract.io_sizes)),
        word(head + h.signature_size // 4),
        word(len(words)),
        *(ir.Constant(I32, v) for v in (contract.target_id, contract.layout_crc,
                                         h.pool_offset)),
        ir.Constant(ty.elements[-1], words),
    ]
    image.initializer = ir.Constant(ty, fields)
    image.global_constant = True
    image.section = ".rodata.mrt_image"
    image.storage_class = "dso_local"
    image.align = pointer_bytes


def function_key(fn: ir.Function) -> str:
    """What makes two dispatch functions interchangeable: the function's LLVM IR text
    before optimisation with its own name (its symbol and its `.text.NAME` section)
    blanked out. Everything a dispatch computes is in that text: its loops, constants
    and the bindings it reads; every global it uses is named there (so two texts naming
    the same global use the same one). Only exact references to the name are blanked:
    a global derived from it (`NAME_table`) keeps its name, so the bodies stay apart."""
    return (str(fn).replace(f'@"{fn.name}"', "@SELF")
            .replace(f'".text.{fn.name}"', '".text.SELF"'))


def _block_sizes(fn: ir.Function) -> tuple[int, ...]:
    """The instruction count of each of fn's blocks: equal for functions whose
    function_key is equal."""
    return tuple(len(b.instructions) for b in fn.blocks)


def _renamed(kernel: Any, name: str) -> Any:
    """The kernel under another function name (every kernel kind is a frozen dataclass
    with a `name`)."""
    return dataclasses.replace(kernel, name=name)


def _make_thunk(fn: ir.Function, body: ir.Function) -> None:
    """Replaces fn's body with a tail call of `body` (same signature): one branch
    instruction on every target."""
    fn.blocks = []
    b = ir.IRBuilder(fn.append_basic_block("thunk"))
    result = b.call(body, fn.args, tail=True)
    if isinstance(fn.ftype.return_type, ir.VoidType):
        b.ret_void()
    else:
        b.ret(result)


def share_identical_bodies(module: ir.Module, kernels: list[Any],
                           schedules: list[Any], fns: list[ir.Function]) -> int:
    """Dispatches whose functions are identical but for their name (function_key: kws's
    four depthwise + pointwise blocks of the same shapes, whose buffers and per-channel
    parameters all come through bindings) get one body, `mrt_shared_<first name>`,
    never inlined. Each dispatch function becomes a thunk that tail-calls it,
    so the dispatch table keeps one entry per ordinal (the image contract is per
    ordinal and unchanged) and the profile still tells the dispatches apart by the
    thunk each one enters; a thunk costs one branch per run (4 bytes of Thumb-2).
    Returns the number of function bodies saved."""
    # Printing a function's IR is most of the cost (resnet8: 0.9 of 3.6 s of its IR
    # under the profiler), so only functions that could be identical are printed: the
    # same instruction count in each block (identical texts have it).
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for i, fn in enumerate(fns):
        by_shape.setdefault(_block_sizes(fn), []).append(i)
    groups: dict[str, list[int]] = {}
    for same in by_shape.values():
        if len(same) > 1:
            for i in same:
                groups.setdefault(function_key(fns[i]), []).append(i)
    saved = 0
    # In the order of their first dispatch, as the shared bodies are emitted in it.
    for key, members in sorted(groups.items(), key=lambda g: g[1][0]):
        if len(members) < 2:
            continue
        first = members[0]
        body = emit_kernel(module, _renamed(kernels[first], SHARED_PREFIX + fns[first].name),
                           schedules[first])
        # The same emitter under another name must give the same text; if it ever did
        # not, keep the dispatches apart (LLVM drops the unused internal body).
        if function_key(body) != key:
            body.linkage = "internal"
            continue
        # Kept hidden like the dispatches, not internal: an internal function's
        # signature is LLVM's to change (argument promotion then moved the binding
        # loads into every thunk on x86-64).
        body.attributes.add("noinline")  # one copy, whatever LLVM's inliner would weigh
        for i in members:
            _make_thunk(fns[i], body)
        saved += len(members) - 1
    return saved


def build_image_module(
    kernels: list[Kernel],
    module_bytes: bytes,
    contract: ImageContract,
    arena_size: int,
    target: Target | TargetInfo | str,
    schedules: list[LoopSchedule | None] | None = None,
    state: StateImage | None = None,
) -> ir.Module:
    """The image's IR module (before optimisation); see emit_image_object."""
    if contract.dispatch_count > len(kernels):
        raise ValueError(f"the contract's commands call {contract.dispatch_count} "
                         f"dispatches, the image has {len(kernels)}")
    info = TargetInfo.load(target)
    module = info.new_module("dispatch")
    # Each dispatch's loops as the target's capabilities call for (toolchain/loops), of
    # the kernel with whole-tensor elementwise nests made one loop first (flatten.py).
    flat = [flatten_elementwise(k) for k in kernels]
    # A schedule the arena plan was checked with (a result overlapping its operand's
    # memory: schedule/overlap.py) is followed as given.
    given = schedules or [None] * len(flat)
    schedules = [s if s is not None else choose_schedule(k, info.target)
                 if isinstance(k, Kernel) else None for k, s in zip(flat, given, strict=True)]
    fns = [emit_kernel(module, k, s) for k, s in zip(flat, schedules)]
    share_identical_bodies(module, flat, schedules, fns)

    # The module first: it is the only 16-byte aligned object in flash, and right after
    # the (aligned) start of the generated .rodata it needs no padding before it.
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
    _image_struct(module, contract, fns, info.target.pointer_bits // 8)

    _bss_buffer(module, "mrt_image_arena", arena_size)
    _u32(module, "mrt_image_arena_size", arena_size)

    state = state or StateImage()
    region = _state_region(module, state)
    for kind, sizes in (("input", contract.input_sizes), ("output", contract.output_sizes)):
        first = len(sizes) - len(state.initial)
        bufs = [
            _bss_buffer(module, f"mrt_image_{kind}_{i}", n, linkage="internal")
            if i < first else region[i - first]
            for i, n in enumerate(sizes)
        ]
        _pointer_table(module, f"mrt_image_{kind}s", bufs)
    return module


@dataclass(frozen=True)
class StateImage:
    """The values kept between inferences (graph/ir.py `Graph.states`), as the bytes of
    each state slot at boot and after a reset, in slot order."""

    initial: tuple[bytes, ...] = ()
    reset: tuple[bytes, ...] = ()

    def offsets(self) -> list[int]:
        """Each slot's offset in the state region, then the region's size."""
        return state_offsets([len(data) for data in self.initial])


def state_offsets(sizes: list[int]) -> list[int]:
    """The offset of each state slot of `sizes` bytes in the state region (16-byte
    aligned, as I/O buffers are), then the region's size."""
    out = [0]
    for size in sizes:
        out.append(out[-1] + -(-size // ALIGN) * ALIGN)
    return out


def _state_region(module: ir.Module, state: StateImage) -> list[ir.Constant]:
    """The state region `mrt_image_state` (RAM, kept between inferences), its boot and
    reset contents in flash (`mrt_image_state_initial`, `_reset`: what the harness and
    the library copy in at start and on a reset), its size and slot count; returns each
    slot's address. Nothing references them in an image without state or a stream
    harness, so the linker's --gc-sections drops them."""
    offsets = state.offsets()
    size = offsets[-1]
    region = _bss_buffer(module, "mrt_image_state", size)
    for name, parts in (("initial", state.initial), ("reset", state.reset)):
        raw = bytearray(max(1, size))
        for offset, data in zip(offsets, parts):
            raw[offset:offset + len(data)] = data
        ty = ir.ArrayType(I8, len(raw))
        _global(module, f"mrt_image_state_{name}", ty, ir.Constant(ty, raw), const=True,
                section=f".rodata.mrt_image_state_{name}", align=ALIGN)
    _u32(module, "mrt_image_state_size", size)
    _u32(module, "mrt_image_state_count", len(state.initial))
    return [region.gep([ir.Constant(I32, 0), ir.Constant(I32, o)]) for o in offsets[:-1]]


def emit_image_object(
    kernels: list[Kernel],
    module_bytes: bytes,
    contract: ImageContract,
    arena_size: int,
    target: Target | TargetInfo | str,
    schedules: list[LoopSchedule | None] | None = None,
    state: StateImage | None = None,
    asm_out: dict[str, str] | None = None,
) -> bytes:
    """One ELF object with all dispatch functions and the mrt_image* symbols; `state`
    gives the state region's contents when the model keeps state. The per-layer
    assembly kernels the dispatches call (codegen/asm_kernels.py) go into `asm_out`
    (symbol -> text), for the caller to assemble and join (link/asm_kernels.py); an
    EmitError where there are some and no `asm_out`.

    kernels[i] becomes dispatch ordinal i; `contract` says what the image's commands need
    from a module and holds the target id and I/O sizes
    (toolchain.module.image_contract builds it).
    target is a Target, a TargetInfo or a descriptor name.
    """
    if arena_size < 0:
        raise ValueError("buffer sizes must be >= 0")
    info = TargetInfo.load(target)
    with stage("codegen ir"):
        module = build_image_module(kernels, module_bytes, contract, arena_size, info,
                                    schedules, state)
    kernels_asm = asm_kernels.kernels_of(module)
    if kernels_asm and asm_out is None:
        raise EmitError("the dispatches call per-layer assembly kernels "
                        f"({', '.join(sorted(kernels_asm))}), which this caller does not "
                        "take (emit_image_object's asm_out)")
    if asm_out is not None:
        asm_out.update(kernels_asm)
    with stage("codegen llvm"):
        return info.emit_object(module)
