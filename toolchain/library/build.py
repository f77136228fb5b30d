"""`minirt-build --emit library`: a model as a static library for the user's firmware.

The library is one relocatable object in an archive, libminirt_<name>.a:

* the runtime core, compiled from the same runtime_c source list as a firmware image
  (link.build.runtime_sources with the "core" and "library" parts: no start-up, no
  harness);
* the generated object (every dispatch, the image contract and the module), without the
  image's own I/O buffers (the caller passes its buffers to <name>_run) and, with
  ``--arena caller``, without its arena;
* the entry (sources.entry_source) and the compiler helpers the code calls, taken from
  the target's libgcc by the partial link (``ld.lld -r``), so the library needs nothing
  from the user's toolchain.

Every symbol but <name>_init and <name>_run is then made local (llvm-objcopy), so the
library cannot clash with the user's libc (memcpy, ...) or with a second model's
library; the sections stay one per function and object, so the user's --gc-sections
still drops what is not called. Arm exception index tables are dropped: nothing in the
library unwinds, and a user's linker script need not place them.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from toolchain import __version__
from toolchain.codegen.image import state_offsets
from toolchain.graph.ir import Graph
from toolchain.library.names import check_name
from toolchain.library.sources import (
    ARENA_MODES,
    LibrarySpec,
    cmake_snippet,
    entry_source,
    header_source,
    make_snippet,
    pkg_config_file,
)
from toolchain.link.build import (
    LinkError,
    _lld,
    _tool,
    c_flags,
    compile_sources,
    compiler_helpers_library,
    runtime_c_dir,
    runtime_sources,
)
from toolchain.link.custom_ops import compile_custom_kernels, custom_ops_of
from toolchain.link.out_dir import check_out_dir, staged_build
from toolchain.loader import UsageError
from toolchain.module.reader import read_module
from toolchain.passes import QuantizeOptions
from toolchain.report.layers import layers_of_program
from toolchain.schedule.optimize import DEFAULT_OPTIMIZE
from toolchain.target import Board, Target

__all__ = ["LIBRARY_RUNTIME_PARTS", "LibraryResult", "LibrarySizes", "build_library"]

# The runtime_c parts a library holds (a firmware image adds "platform" and "harness"
# instead of "library", the custom operators' failure record, a variable that only a
# user's start-up zeroes: runtime_c/library/custom_op.c).
LIBRARY_RUNTIME_PARTS: tuple[str, ...] = ("core", "library")

# Sections of the generated object (toolchain/codegen/image.py) a library leaves out.
_IO_TABLES = (".rodata.mrt_image_inputs", ".rodata.mrt_image_outputs")
_IO_BUFFER_PREFIXES = (".bss.mrt_image_input_", ".bss.mrt_image_output_")
_ARENA_SECTIONS = (".bss.mrt_image_arena", ".rodata.mrt_image_arena_size")


@functools.cache
def _objcopy() -> str:
    return _tool(["llvm-objcopy", "llvm-objcopy-14"], "llvm")


@functools.cache
def _ar() -> str:
    return _tool(["llvm-ar", "llvm-ar-14"], "llvm")


@dataclass(frozen=True)
class LibrarySizes:
    """Bytes of the library's object by kind (before the user's --gc-sections)."""

    code: int
    rodata: int  # read-only data: the module, the image contract, tables
    module: int  # of which the packed module (constants and schedule)
    data: int  # initialized writable data (flash and RAM)
    bss: int  # zero-initialized RAM, the static arena included


@dataclass(frozen=True)
class LibraryResult:
    """What build_library wrote."""

    out_dir: Path
    spec: LibrarySpec
    archive: Path
    header: Path
    sizes: LibrarySizes

    @property
    def files(self) -> list[str]:
        return sorted(p.name for p in self.out_dir.iterdir())


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LinkError(f"{what} failed:\n{proc.stderr.strip()}")


def _sections(obj: Path) -> list[str]:
    with obj.open("rb") as f:
        return [s.name for s in ELFFile(f).iter_sections()]


def _strip_image_buffers(obj: Path, out: Path, arena: str) -> None:
    """The generated object without its I/O buffers (and arena, for --arena caller)."""
    names = _sections(obj)
    drop = [n for n in names if n in _IO_TABLES or n.startswith(_IO_BUFFER_PREFIXES)]
    if arena == "caller":
        drop += [n for n in names if n in _ARENA_SECTIONS]
    missing = [n for n in (*_IO_TABLES, *(_ARENA_SECTIONS if arena == "caller" else ()))
               if n not in names]
    if missing:  # codegen/image.py changed its section names: say so, do not guess
        raise LinkError(f"the generated object has no section {', '.join(missing)}; "
                        "toolchain/library/build.py must follow toolchain/codegen/image.py")
    _run([_objcopy(), *[f"--remove-section={n}" for n in drop], str(obj), str(out)],
         "llvm-objcopy (dropping the image's I/O buffers)")


def _abi_flags(target: Target) -> list[str]:
    """Extra flags for the library's C objects. On Arm EABI targets: -fshort-enums, the
    default of arm-none-eabi-gcc, so GNU ld links the library into a gcc-built firmware
    without a warning about mismatched enum sizes (its build attributes). No enum type
    crosses the library's interface or lives in the runtime's structures (minirt.h uses
    them for constants only), so the code is the same either way."""
    return ["-fshort-enums"] if target.llvm_triple.startswith(("thumb", "arm")) else []


def _undefined(obj: Path) -> list[str]:
    with obj.open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return sorted(s.name for s in symtab.iter_symbols()
                      if s.name and s["st_shndx"] == "SHN_UNDEF")


def _sizes(obj: Path) -> LibrarySizes:
    code = rodata = data = bss = module = 0
    with obj.open("rb") as f:
        for sec in ELFFile(f).iter_sections():
            flags = sec["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC:
                continue
            size = sec["sh_size"]
            if sec["sh_type"] == "SHT_NOBITS":
                bss += size
            elif flags & SH_FLAGS.SHF_EXECINSTR:
                code += size
            elif flags & SH_FLAGS.SHF_WRITE:
                data += size
            else:
                rodata += size
                if sec.name == ".rodata.mrt_image_module":
                    module += size
    return LibrarySizes(code, rodata, module, data, bss)


def _link_library(board: Board, objects: list[Path], spec: LibrarySpec, out: Path,
                  custom: bool = False) -> None:
    """Partial link of `objects` (+ the helpers they call) into `out`, every symbol but
    the entry points made local; with `custom` (the model has operators of the user's
    own), mrt_custom_op_failure stays global too, for the firmware to read, and the weak
    mrt_custom_op_failed, for the firmware to replace."""
    target = board.target_info
    renames = [f"--redefine-sym={alias}" for alias in target.compiler_helpers.aliases]
    if renames:  # GNU helper names the target's libgcc provides under its ABI names
        for obj in objects:
            _run([_objcopy(), *renames, str(obj)], "llvm-objcopy (helper names)")
    helpers = compiler_helpers_library(target)
    combined = out.with_suffix(".r.o")
    _run([_lld(), "-r", "-o", str(combined), *map(str, objects),
          *([str(helpers)] if helpers else [])], "ld.lld -r (the library object)")
    _run([_objcopy(), f"--keep-global-symbol={spec.name}_init",
          f"--keep-global-symbol={spec.name}_run",
          f"--keep-global-symbol={spec.name}_reset_state",
          *(["--keep-global-symbol=mrt_custom_op_failure",
             "--keep-global-symbol=mrt_custom_op_failed"] if custom else []), "--wildcard",
          "--remove-section=.ARM.exidx*", "--remove-section=.rel.ARM.exidx*",
          str(combined), str(out)], "llvm-objcopy (the library's exports)")
    combined.unlink()
    undefined = _undefined(out)
    if undefined:
        raise LinkError(f"the library for board {board.identifier} would call "
                        f"{', '.join(undefined)}, which nothing in it provides (install the "
                        f"compiler helpers: Debian package "
                        f"'{target.compiler_helpers.package}')")


def _spec(name: str, model: str, board: Board, graph: Graph, module: bytes, arena_size: int,
          arena: str) -> LibrarySpec:
    target = board.target_info
    read = read_module(module)
    quant = {i: (t.type.quant.scales[0], t.type.quant.zero_points[0])
             for i, t in enumerate(list(graph.user_inputs) + list(graph.user_outputs))
             if t.type.quant is not None}
    n = len(graph.states)  # the state's slots: the library's own region, not the caller's
    offsets = state_offsets([s.byte_size for s in read.inputs[len(read.inputs) - n:]])
    return LibrarySpec(name=name, model=model, board=board.identifier, target=target.name,
                       triple=target.triple, cflags=tuple(target.cflags),
                       inputs=tuple(read.inputs[:len(read.inputs) - n]),
                       outputs=tuple(read.outputs[:len(read.outputs) - n]),
                       arena_size=arena_size, arena=arena, hosted=target.os != "none",
                       quantization=quant, state_offsets=tuple(offsets[:-1]),
                       state_size=offsets[-1] if n else 0)


def build_library(graph: Graph, board: Board, out_dir: Path, *, name: str, model: str,
                  arena: str = "static", quantize: QuantizeOptions | None = None,
                  stamp: dict | None = None, log=print,
                  optimize: str = DEFAULT_OPTIMIZE) -> LibraryResult:
    """Compiles `graph` for `board`'s target into a library in `out_dir` (replaced only
    on success, like a firmware build): libminirt_<name>.a, <name>.h, minirt.h,
    <name>.cmake, <name>.mk, minirt_<name>.pc, model.mrt and build.json. `model` is the
    model file's name (for the comments); `stamp` is recorded in build.json; `optimize`
    is the --optimize mode (schedule/optimize.py)."""
    from toolchain import pipeline

    check_name(name)
    if arena not in ARENA_MODES:
        raise UsageError(f"--arena {arena}: expected one of {', '.join(ARENA_MODES)}")
    out_dir = Path(out_dir)
    check_out_dir(out_dir)
    image = pipeline.compile_image(graph, board, quantize, log, optimize)
    spec = _spec(name, model, board, graph, image.module, image.program.arena_size, arena)
    spec = dataclasses.replace(spec, layers=tuple(
        (layer.label, layer.kind, layer.macs, layer.weights_bytes,
         tuple(src["name"] for src in layer.sources))
        for layer in layers_of_program(image.program)))
    target = board.target_info
    record = {"stamp": {**(stamp or {}), "emit": "library", "name": name, "arena": arena,
                        "c_flags": c_flags(target)}}
    with staged_build(out_dir, record, log=log) as tmp, \
            tempfile.TemporaryDirectory(prefix="minirt-lib-") as scratch_name:
        scratch = Path(scratch_name)
        (scratch / "include").mkdir()
        (scratch / "include" / f"{name}.h").write_text(header_source(spec))
        entry = scratch / "entry" / f"{name}_entry.c"
        entry.parent.mkdir()
        entry.write_text(entry_source(spec))
        (scratch / "dispatch.o").write_bytes(image.obj)
        _strip_image_buffers(scratch / "dispatch.o", scratch / "dispatch_lib.o", arena)
        sources = runtime_sources(board, LIBRARY_RUNTIME_PARTS) + [entry]
        objects = compile_sources(target, sources, scratch / "obj",
                                  extra_flags=_abi_flags(target),
                                  include_dirs=[scratch / "include"])
        # The user's own operators' kernels (--custom-op), with the library's ABI flags.
        custom = custom_ops_of(image.program)
        objects += compile_custom_kernels(target, custom, scratch / "custom",
                                          _abi_flags(target))
        obj = scratch / f"{name}.o"
        _link_library(board, [*objects, scratch / "dispatch_lib.o"], spec, obj,
                      bool(custom))
        sizes = _sizes(obj)
        archive = tmp / f"libminirt_{name}.a"
        _run([_ar(), "rcsD", str(archive), str(obj)], "llvm-ar")
        shutil.copyfile(scratch / "include" / f"{name}.h", tmp / f"{name}.h")
        shutil.copyfile(runtime_c_dir() / "include" / "minirt.h", tmp / "minirt.h")
        if custom:  # mrt_custom_op_failure: what a failed kernel left (its header)
            shutil.copyfile(runtime_c_dir() / "include" / "mrt_custom_op.h",
                            tmp / "mrt_custom_op.h")
        (tmp / f"{name}.cmake").write_text(cmake_snippet(spec))
        (tmp / f"{name}.mk").write_text(make_snippet(spec))
        (tmp / f"minirt_{name}.pc").write_text(pkg_config_file(spec, __version__))
        (tmp / "model.mrt").write_bytes(image.module)
    return LibraryResult(out_dir, spec, out_dir / f"libminirt_{name}.a", out_dir / f"{name}.h",
                         sizes)
