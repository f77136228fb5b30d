"""Compile runtime_c for a board with clang and link a firmware image with ld.lld.

``link_firmware`` builds the runtime (``runtime_c/core``, the board's
``runtime_c/platform/<part>`` directories and ``runtime_c/harness``), links it with the
caller's objects (e.g. the generated dispatch object) and the target's compiler helpers
(``libgcc.a`` of the matching multilib) using a linker script generated from the board's
memory map, and writes ``firmware.elf``, ``firmware.map``, ``firmware.bin`` (+ its base
address) and ``firmware.hex``; ``firmware.uf2`` for a board with a UF2 bootloader,
``firmware.esp.bin`` (Espressif's image format) for a board esptool flashes, and
``verify/firmware.*`` (the same objects relinked for the emulated sibling) for a real
board whose memories its sibling does not map.

The link fails loudly on any undefined symbol, on dynamic sections and when the image
does not fit the board's memories. Builds are reproducible: sources are compiled from
their own directory with prefix maps, so no absolute build path or timestamp reaches the
image.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from toolchain.link.device import (
    DEFAULT_HARNESS,
    check_harness,
    device_cflags,
    device_sources,
    device_verify_board,
)
from toolchain.link.elf_symbols import (
    ET_EXEC,
    ELFFormatError,
    read_header,
    read_sections,
    read_symbols,
)
from toolchain.link.esp_image import ESP_IMAGE_SUFFIX, esp_image, load_segments
from toolchain.link.images import flash_chunks, intel_hex, raw_binary, uf2_image
from toolchain.link.object_cache import (
    compiler_identity,
    default_cache,
    included_files,
    tool_answer,
)
from toolchain.link.script import linker_script
from toolchain.target import Board, MemoryRegion, Target
from toolchain.timings import stage

__all__ = [
    "DEFAULT_RUNTIME_PARTS",
    "ImageTooLarge",
    "LinkError",
    "LinkResult",
    "c_flags",
    "compile_sources",
    "compiler_helpers_library",
    "enlarged_board",
    "link_firmware",
    "runtime_c_dir",
    "runtime_sources",
    "write_images",
]

DEFAULT_RUNTIME_PARTS: tuple[str, ...] = ("core", "platform", "harness")

# Flags every runtime_c object gets, whatever the target: no libc, no unwind tables,
# one section per function/object so --gc-sections can drop what is unused. The
# optimisation level depends on the target (_opt_flags).
_COMMON_CFLAGS: tuple[str, ...] = (
    "-std=c11",
    "-g",
    "-ffreestanding",
    "-nostdinc",
    "-fno-common",
    "-fno-pic",
    "-fno-stack-protector",
    "-fno-exceptions",
    "-fno-unwind-tables",
    "-fno-asynchronous-unwind-tables",
    "-ffunction-sections",
    "-fdata-sections",
    "-Wall",
    "-Wextra",
)

_LLD_FLAGS: tuple[str, ...] = (
    "--gc-sections",
    "-static",
    "--build-id=none",
    "--no-undefined",
    "-z",
    "noexecstack",
)


class LinkError(Exception):
    """Compiling or linking the firmware failed; the message says why and what to do."""


class ImageTooLarge(LinkError):
    """The image does not fit the board's memories (the linker's overflow checks)."""


@dataclass(frozen=True)
class LinkResult:
    """What ``link_firmware`` produced."""

    elf: Path
    map: Path
    linker_script: Path
    bin: Path  # flash content from bin_base on
    bin_base: int
    hex: Path
    objects: tuple[Path, ...]  # everything that went into the link, in order
    helpers: Path | None  # the libgcc.a linked for compiler helpers, if any
    flash_used: int  # bytes of flash: .text + .rodata + .data load image
    ram_used: int  # bytes of RAM: .data + .bss (stack not included)
    entry: int
    uf2: Path | None = None  # for boards with a UF2 bootloader (a `uf2` flash method)
    esp: Path | None = None  # for boards esptool flashes: the ESP image (link/esp_image.py)
    # False after link_firmware(images=False): .bin, .hex and .uf2 are not written yet
    # (bin_base is 0, uf2 None) until write_images.
    images: bool = True


# Where link_firmware puts the copy relinked for a real board's emulated sibling, when the
# sibling does not map the board's memories (Board.verify_mode == "relink").
VERIFY_DIR = "verify"


# --------------------------------------------------------------------------- tools


def runtime_c_dir() -> Path:
    """The runtime_c directory (source tree, or packaged next to toolchain/)."""
    env = os.environ.get("MINIRT_HOME")
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parents[2], Path(__file__).resolve().parents[1]]
    for root in candidates:
        if (root / "runtime_c" / "include" / "minirt.h").is_file():
            return root / "runtime_c"
    raise LinkError("runtime_c/include/minirt.h not found (set MINIRT_HOME to the minirt tree)")


def _tool(names: Sequence[str], package: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise LinkError(f"{names[0]} not found; install the Debian package '{package}'")


@functools.cache
def _clang() -> str:
    return _tool([os.environ.get("MINIRT_CLANG", "clang"), "clang-14"], "clang")


@functools.cache
def _lld() -> str:
    return _tool([os.environ.get("MINIRT_LLD", "ld.lld"), "ld.lld-14"], "lld")


@functools.cache
def _version(tool: str) -> str:
    def ask() -> tuple[str, bool]:
        proc = subprocess.run([tool, "--version"], capture_output=True, text=True,
                              check=False)
        return proc.stdout.strip() or f"exit status {proc.returncode}", proc.returncode == 0

    return tool_answer([tool, "--version"], ask)


def tool_versions() -> dict[str, str]:
    """The clang and ld.lld a link runs: path and `--version` output (part of what a
    build depends on; pipeline.build_stamp records it)."""
    return {"clang": f"{_clang()}: {_version(_clang())}",
            "ld.lld": f"{_lld()}: {_version(_lld())}"}


@functools.cache
def _clang_resource_include() -> str:
    out = subprocess.run(
        [_clang(), "-print-resource-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return str(Path(out) / "include")


@functools.cache
def compiler_helpers_library(target: Target) -> Path | None:
    """The ``libgcc.a`` that provides the target's compiler helpers, or None.

    Raises LinkError when the target requires it and the cross compiler that knows the
    multilib is missing (naming the Debian package to install).
    """
    helpers = target.compiler_helpers
    if helpers.library == "none":
        return None
    gcc = shutil.which(helpers.gcc)
    if gcc is None:
        if helpers.required:
            raise LinkError(
                f"target {target.name}: compiler helpers need {helpers.gcc} "
                f"(install the Debian package '{helpers.package}')"
            )
        return None
    argv = [gcc, *helpers.gcc_flags, "-print-libgcc-file-name"]

    def ask() -> tuple[str, bool]:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        out = proc.stdout.strip()
        return out, proc.returncode == 0 and Path(out).is_absolute()

    out = tool_answer(argv, ask)
    path = Path(out)
    if not path.is_absolute() or not path.is_file():
        if helpers.required:
            raise LinkError(
                f"target {target.name}: {helpers.gcc} {' '.join(helpers.gcc_flags)} "
                f"has no libgcc.a for this multilib (got {out!r})"
            )
        return None
    return path


# --------------------------------------------------------------------------- compiling


def _opt_flags(target: Target) -> list[str]:
    """-Oz on microcontrollers (no OS), where flash is the scarce resource: at -O2 clang
    unrolls the bitwise CRC loop and inlines the harness helpers, which tripled the
    runtime's code (seed on cortex-m4: 6424 B of flash at -O2, 3480 B at -Oz, 4012 B at
    -Os). The runtime's hot path is one indirect call per command, so speed does not
    suffer; hosted targets keep -O2. clang keeps r7/r11 as frame pointers on Arm unless
    told otherwise: -fomit-frame-pointer saves a push and an add in every function (the
    fault handler reports pc and lr from the exception frame, not a backtrace)."""
    return ["-Oz", "-fomit-frame-pointer"] if target.os == "none" else ["-O2"]


def c_flags(target: Target) -> list[str]:
    """The clang flags for runtime C code on ``target`` (without include paths)."""
    return [f"--target={target.llvm_triple}", *_COMMON_CFLAGS, *_opt_flags(target),
            *target.cflags]


def ukernel_sets(target: Target) -> list[str]:
    """The runtime_c/ukernel directories a target's firmware compiles: its SIMD
    instruction set's, and the DSP extension's where the core has it besides (Helium
    cores do: the rules may take the DSP microkernels there, loops/depthwise.py)."""
    caps = target.capabilities
    return list(dict.fromkeys([caps.simd, *(["dsp"] if caps.dsp else [])]))


def runtime_sources(board: Board, parts: Sequence[str] = DEFAULT_RUNTIME_PARTS) -> list[Path]:
    """The runtime_c ``.c`` files for ``board``: ``core`` and ``harness`` are whole
    directories; ``platform`` expands to the board's platform parts. With ``core`` come
    the microkernels of the target's SIMD instruction set (``runtime_c/ukernel/<simd>``,
    called by the generated code: codegen/dot_ukernel.py)."""
    root = runtime_c_dir()
    dirs: list[Path] = []
    for part in parts:
        if part == "platform":
            dirs += [root / "platform" / p for p in board.platform]
        else:
            dirs.append(root / part)
        if part == "core":
            dirs += [root / "ukernel" / s for s in ukernel_sets(board.target_info)]
    sources: list[Path] = []
    for d in dirs:
        if d.is_dir():
            sources += sorted(d.glob("*.c"))
        elif d.parent.name == "platform":
            raise LinkError(f"board {board.identifier}: no runtime_c/platform/{d.name}")
        # runtime_c/core or harness not there yet: the caller provides those symbols
    return sources


def _object_name(source: Path, root: Path) -> str:
    try:
        rel = source.resolve().relative_to(root.resolve())
    except ValueError:
        rel = Path(source.parent.name) / source.name
    return "__".join(rel.with_suffix("").parts) + ".o"


# Stands for clang's own header directory in a compile command until clang runs: asking
# clang for it is a process of its own (20 ms), which a build whose objects all come from
# the cache need not start. The cache key names the clang binary, which fixes the path.
_RESOURCE_INCLUDE = "<clang -print-resource-dir>/include"


def compile_sources(
    target: Target,
    sources: Sequence[Path],
    out_dir: Path,
    extra_flags: Sequence[str] = (),
    include_dirs: Sequence[Path] = (),
) -> list[Path]:
    """Compiles C sources for ``target`` into ``out_dir`` (one object per source).

    Each source is compiled from its own directory by file name with prefix maps, so the
    objects do not depend on where the tree or the build directory lives.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    root = runtime_c_dir()
    base = [
        _clang(),
        *c_flags(target),
        "-isystem",
        _RESOURCE_INCLUDE,
        "-I",
        str(root / "include"),
        *[f for d in include_dirs for f in ("-I", str(d))],
        "-fdebug-compilation-dir=.",
        f"-ffile-prefix-map={root.parent}=minirt",
        *extra_flags,
    ]
    jobs = []
    names: set[str] = set()
    for source in sources:
        source = Path(source).resolve()
        name = _object_name(source, root.parent)
        if name in names:
            raise LinkError(f"two sources map to the object name {name}")
        names.add(name)
        obj = (out_dir / name).resolve()
        cmd = [*base, f"-ffile-prefix-map={source.parent}=.", "-c", source.name]
        jobs.append((source, obj, cmd))
    # Objects compiled by an earlier build with exactly these inputs (object_cache.py):
    # the same bytes clang would write, without running it.
    cache = default_cache([root, *include_dirs],
                          compiler_identity(_clang(), _version(_clang()))) if jobs else None

    def run(job: tuple[Path, Path, list[str]]) -> Path:
        source, obj, cmd = job
        key = None
        # Only runtime_c's own sources: the cache key hashes the headers under `root` and
        # the include directories, not those beside a source from elsewhere (a test
        # double's, a caller's extra source), which could change unseen.
        if cache is not None and source.resolve().is_relative_to(Path(root).resolve()):
            try:
                included = [(str(f), f.read_bytes()) for f in
                            included_files(source, [root / "include", *include_dirs])]
                key = cache.key(cmd, source.parent, source.read_bytes(), included)
            except OSError:
                key = None  # unreadable: clang will say so below
            cached = cache.get(key) if key is not None else None
            if cached is not None:
                obj.write_bytes(cached)
                return obj
        cmd = [_clang_resource_include() if a == _RESOURCE_INCLUDE else a for a in cmd]
        proc = subprocess.run([*cmd, "-o", str(obj)], cwd=source.parent, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise LinkError(f"compiling {source} for {target.name} failed:\n{proc.stderr}")
        if cache is not None and key is not None:
            cache.put(key, obj.read_bytes())
        return obj

    if not jobs:
        return []

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return list(pool.map(run, jobs))


# --------------------------------------------------------------------------- linking

_UNDEFINED_RE = re.compile(r"undefined symbol: (\S+)(?:\n>>> referenced by (.*))?")


def _explain_lld_error(stderr: str, board: Board) -> str:
    undefined = _UNDEFINED_RE.findall(stderr)
    if undefined:
        names = sorted({name for name, _ in undefined})
        where = {name: ref.strip() for name, ref in reversed(undefined) if ref}
        listed = ", ".join(f"{n} (referenced by {where[n]})" if n in where else n for n in names)
        return (
            f"link for board {board.identifier} failed: undefined symbols: {listed}. "
            "Every library call must be provided deliberately: mem* functions by "
            "runtime_c/core, math by the code generator, helpers by the target's libgcc."
        )
    if "will not fit in region" in stderr or "minirt: " in stderr:
        # lld repeats each overflow per pass; our ASSERT lines say it in one sentence.
        ours = [ln.split("error: ", 1)[1] for ln in dict.fromkeys(stderr.splitlines())
                if "error: minirt: " in ln]
        fits = re.findall(r"section '([^']+)' will not fit in region '([^']+)': "
                          r"overflowed by (\d+) bytes", stderr)
        worst: dict[tuple[str, str], int] = {}
        for sec, region, n in fits:
            worst[(sec, region)] = max(worst.get((sec, region), 0), int(n))
        parts = [f"{sec} overflows {region} by {n} bytes" for (sec, region), n in worst.items()]
        detail = "; ".join(parts + [o.removeprefix("minirt: ") for o in ours])
        return (f"link for board {board.identifier} failed: the image does not fit the "
                f"board's memory: {detail}")
    return f"link for board {board.identifier} failed:\n{stderr}"


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return str(path)


def _check_elf(elf_path: Path) -> tuple[int, int, int]:
    """Rejects dynamic linking and undefined symbols; returns (flash, ram, entry)."""
    data = elf_path.read_bytes()
    try:  # elf_symbols.py: each link checks its image, pyelftools cost 5-10 ms a time
        header, sections, symbols = read_header(data), read_sections(data), read_symbols(data)
    except ELFFormatError as e:
        raise LinkError(f"{elf_path.name}: not a valid ELF file: {e}") from None
    if header.type != ET_EXEC:
        raise LinkError(f"{elf_path.name}: expected a static executable, got e_type "
                        f"{header.type}")
    if header.dynamic:
        raise LinkError(f"{elf_path.name}: has a PT_INTERP or PT_DYNAMIC segment (dynamic "
                        "link)")
    names = {s.name for s in sections}
    for name in (".dynamic", ".dynsym", ".interp", ".plt", ".got.plt"):
        if name in names:
            raise LinkError(f"{elf_path.name}: has a {name} section (dynamic link)")
    if symbols is None:
        raise LinkError(f"{elf_path.name}: no symbol table")
    undefined = sorted(symbols.undefined())
    if undefined:
        raise LinkError(f"{elf_path.name}: undefined symbols: {', '.join(undefined)}")
    sizes = {s.name: s.size for s in sections
             if s.name in (".text", ".rodata", ".data", ".bss")}
    return (
        sizes.get(".text", 0) + sizes.get(".rodata", 0) + sizes.get(".data", 0),
        sizes.get(".data", 0) + sizes.get(".bss", 0),
        header.entry,
    )


def _undefined_symbols(objects: Sequence[Path]) -> set[str]:
    names: set[str] = set()
    for obj in objects:
        data = Path(obj).read_bytes()
        names |= _object_undefined(hashlib.sha256(data).digest(), data)
    return names


# Keyed by the object's digest, the bytes beside it only to read them on a miss: a build
# links the same objects twice (before and after its stack is measured); hashing them
# costs less than reading their symbol tables (elf_symbols.py).
_UNDEFINED: dict[bytes, frozenset[str]] = {}


def _object_undefined(digest: bytes, data: bytes) -> frozenset[str]:
    """The undefined symbols of the object `data` (whose SHA-256 is `digest`)."""
    found = _UNDEFINED.get(digest)
    if found is None:
        try:
            symbols = read_symbols(data)
        except ELFFormatError as e:  # what ld.lld would refuse too, in its own words
            raise LinkError(f"an object of the link is no ELF object: {e}") from None
        found = frozenset() if symbols is None else symbols.undefined()
        if len(_UNDEFINED) > 4096:  # a long-lived process (tests, the API): stay small
            _UNDEFINED.clear()
        _UNDEFINED[digest] = found
    return found


def _helper_aliases(target: Target, objects: Sequence[Path]) -> list[str]:
    """--defsym flags for the target's helper aliases that the objects actually call
    (an unused alias would still pull its helper out of the library)."""
    wanted = _undefined_symbols(objects)
    flags = []
    for alias in target.compiler_helpers.aliases:
        gnu, _, provided = alias.partition("=")
        if gnu in wanted:
            flags.append(f"--defsym={gnu}={provided}")
    return flags


def link_firmware(
    board: Board,
    objects: Sequence[Path],
    out_dir: Path,
    *,
    runtime_parts: Sequence[str] = DEFAULT_RUNTIME_PARTS,
    extra_sources: Sequence[Path] = (),
    extra_cflags: Sequence[str] = (),
    name: str = "firmware",
    harness: str = DEFAULT_HARNESS,
    images: bool = True,
) -> LinkResult:
    """Builds the runtime for ``board`` and links it with ``objects`` into ``out_dir``.

    ``runtime_parts`` selects which runtime_c parts to build ("core", "platform",
    "harness"); ``extra_sources`` are further C files compiled with the same flags (plus
    ``extra_cflags``). ``harness`` "device" builds the image that serves inferences over
    the board's UART (link/device.py), with a copy for QEMU in ``verify/`` when the board
    is verified on a sibling (whose UART it talks to there). With ``images`` False the
    flashable images are left for write_images (a link that may be relinked with another
    stack size writes none; the copy relinked for an emulated sibling, in verify/, still
    gets its own). Raises LinkError with a one-paragraph explanation on failure.
    """
    target = board.target_info
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    check_harness(board, harness)
    sources = runtime_sources(board, runtime_parts)
    cflags = list(extra_cflags)
    if harness == "device":
        sources = device_sources(board, runtime_c_dir(), sources, runtime_parts)
        cflags += device_cflags(board)
    sources += [Path(s) for s in extra_sources]
    with stage("runtime cc"):
        built = compile_sources(target, sources, out_dir / "obj", extra_flags=cflags)
    all_objects = [*built, *[Path(o).resolve() for o in objects]]
    helpers = compiler_helpers_library(target)

    script = out_dir / f"{name}.ld"
    script.write_text(linker_script(board))
    elf = out_dir / f"{name}.elf"
    map_path = out_dir / f"{name}.map"
    cmd = [
        _lld(),
        *_LLD_FLAGS,
        # Bare metal: no page-aligned segments, so lld never maps the ELF and program
        # headers into a PT_LOAD below the image (it did at 0 for a flash origin of
        # 0x4000, over a UF2 bootloader, for whoever flashes the ELF).
        *(("--nmagic",) if target.os == "none" else ()),
        "-T",
        script.name,
        f"--Map={map_path.name}",
        "-o",
        elf.name,
        *[_relative(o, out_dir) for o in all_objects],
    ]
    if helpers is not None:
        cmd += _helper_aliases(target, all_objects)
        cmd.append(str(helpers))
    with stage("link"):
        proc = subprocess.run(cmd, cwd=out_dir, capture_output=True, text=True)
        if proc.returncode != 0:
            message = _explain_lld_error(proc.stderr, board)
            if "does not fit the board's memory" in message:
                raise ImageTooLarge(message)
            raise LinkError(message)
        flash_used, ram_used, entry = _check_elf(elf)
    # Budgets (smaller than the physical memories) are judged by the size report, so an
    # over-budget build still leaves its artifacts and table for the engineer to read.

    if harness == "device" and board.sibling is not None and runtime_parts:
        # The device image talks to the sibling's UART under QEMU: its runtime is built
        # again for that UART (and the sibling's memories, if it lacks the board's).
        link_firmware(device_verify_board(board), objects, out_dir / VERIFY_DIR,
                      runtime_parts=runtime_parts, extra_sources=extra_sources,
                      extra_cflags=extra_cflags, name=name, harness=harness)
    elif board.verify_mode == "relink" and harness != "device":
        # QEMU's sibling maps none of this board's flash: the same objects relinked for
        # the sibling's memory map are what runs under QEMU (toolchain/emu/run.py).
        try:
            link_firmware(board.relinked_for_sibling(), all_objects, out_dir / VERIFY_DIR,
                          runtime_parts=(), name=name)
        except LinkError:
            # Only an image larger than the sibling's memories (a real board's are
            # smaller; the size report's enlarged ones are not) gets here: it is still
            # this board's image, and running it says that the copy is missing.
            shutil.rmtree(out_dir / VERIFY_DIR, ignore_errors=True)
    result = LinkResult(
        elf=elf,
        map=map_path,
        linker_script=script,
        bin=out_dir / f"{name}.bin",
        bin_base=0,
        hex=out_dir / f"{name}.hex",
        objects=tuple(all_objects),
        helpers=helpers,
        flash_used=flash_used,
        ram_used=ram_used,
        entry=entry,
        images=False,
    )
    return write_images(result, board) if images else result


def write_images(link: LinkResult, board: Board) -> LinkResult:
    """Writes the flashable images of a link (``.bin`` + ``.bin.base``, ``.hex``, and
    ``.uf2`` / the ESP image for a board with a UF2 / esptool flash method) beside its
    ELF, unless written already; returns the result that names them."""
    if link.images:
        return link
    with stage("images"):
        chunks = flash_chunks(link.elf, board.flash.origin, board.flash.end)
        base, blob = raw_binary(chunks)
        link.bin.write_bytes(blob)
        link.bin.with_name(link.bin.name + ".base").write_text(f"{base:#010x}\n")
        link.hex.write_text(intel_hex(chunks, entry=link.entry))
        uf2_path = esp_path = None
        for method in board.flash_methods:
            if method.method == "uf2":
                uf2_path = link.elf.with_suffix(".uf2")
                uf2_path.write_bytes(uf2_image(chunks, method.family))
            if method.method == "esptool":
                # What the ESP32 ROM loader copies into SRAM, at the addresses the code
                # runs at.
                esp_path = link.elf.with_name(link.elf.stem + ESP_IMAGE_SUFFIX)
                esp_path.write_bytes(esp_image(load_segments(link.elf), link.entry,
                                               method.chip, method.flash_size))
    return dataclasses.replace(link, bin_base=base, uf2=uf2_path, esp=esp_path, images=True)


# --------------------------------------------------------------------------- oversized


def _alloc_bytes(objects: Sequence[Path]) -> int:
    """Bytes of every allocated section (code, data, bss) of relocatable objects."""
    total = 0
    for obj in objects:
        with open(obj, "rb") as f:
            for sec in ELFFile(f).iter_sections():
                if sec["sh_flags"] & SH_FLAGS.SHF_ALLOC:
                    total += sec["sh_size"]
    return total


def enlarged_board(board: Board, objects: Sequence[Path]) -> Board:
    """``board`` with flash and RAM grown so that an image of ``objects`` (plus the
    runtime and the compiler helpers) links whatever its size: the size report of an
    image that does not fit is made from such a link. Memories move only where the grown
    ones would overlap or leave the address space (RAM then follows flash), which does
    not change any section's size. Raises ImageTooLarge when even the address space is
    too small."""
    helpers = compiler_helpers_library(board.target_info)
    # An upper bound of what the image can need beyond the board's memories: everything
    # the objects allocate, the whole helper archive, the stack and 1 MiB for the runtime.
    extra = (_alloc_bytes(objects) + (helpers.stat().st_size if helpers else 0)
             + board.stack_size + (1 << 20))
    top = 1 << board.target_info.pointer_bits
    flash = MemoryRegion(board.flash.origin, board.flash.length + extra)
    ram = MemoryRegion(board.ram.origin, board.ram.length + extra)
    overlap = flash.origin < ram.end and ram.origin < flash.end
    if overlap or flash.end > top or ram.end > top:
        if flash.end > top:
            flash = MemoryRegion(0, flash.length)
        step = 1 << 20
        ram = MemoryRegion((flash.end + step - 1) // step * step, ram.length)
        if ram.end > top:
            raise ImageTooLarge(f"the image for board {board.identifier} needs more than the "
                                f"{board.target_info.pointer_bits}-bit address space")
    return dataclasses.replace(board, flash=flash, ram=ram,
                               budgets=dataclasses.replace(board.budgets, flash=flash.length,
                                                           ram=ram.length))
