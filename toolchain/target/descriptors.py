"""Target and board descriptors: YAML files loaded into frozen dataclasses.

A *target* (``targets/NAME.yaml``) describes an instruction set and ABI: the LLVM triple,
CPU, features, float ABI, capabilities that codegen may rely on, C flags for the runtime
and where compiler helpers (soft-float, ``__aeabi_*``) come from. A *board*
(``boards/NAME.yaml``) names a target and adds a memory map, size budgets, the runtime
platform layer and how to run the image under QEMU.

The dataclasses below *are* the schema: every field without a default is required, the
annotation gives the type, and keys not named by a field are rejected. Every problem is
reported as one line that names the file and the field, e.g.
``boards/x.yaml: field 'ram.length': expected an integer``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

__all__ = [
    "Board",
    "Budgets",
    "Capabilities",
    "CompilerHelpers",
    "DescriptorError",
    "MemoryRegion",
    "Simulation",
    "Target",
    "boards_dir",
    "list_boards",
    "list_targets",
    "load_board",
    "load_target",
    "targets_dir",
]


class DescriptorError(Exception):
    """A descriptor file is missing, unreadable or does not match the schema."""


# --------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Capabilities:
    """What the code generator may assume about the CPU."""

    fpu: Literal["none", "sp", "dp"]
    dsp: bool  # Arm DSP extension (SMLAD, SSAT, packed 8/16-bit arithmetic)
    vector_bits: int  # widest SIMD register, 0 if none
    f16_conversion: bool  # hardware half <-> single conversion


@dataclass(frozen=True)
class CompilerHelpers:
    """Where compiler helper routines (soft-float, 64-bit division, ...) come from.

    ``library: libgcc`` means the ``libgcc.a`` that ``gcc`` with ``gcc_flags`` selects
    (``gcc -print-libgcc-file-name``), i.e. the multilib matching the target.
    """

    library: Literal["libgcc", "none"]
    package: str = ""  # the Debian package that ships ``gcc``
    gcc: str = ""
    gcc_flags: tuple[str, ...] = ()
    required: bool = True  # fail the link if the library cannot be found
    # "GNU_NAME=LIBRARY_NAME": LLVM calls some helpers by their GNU names (__addsf3)
    # where this library only has the AEABI entry with the same contract (__aeabi_fadd,
    # Armv6-M's libgcc). The linker maps a name only when an object actually uses it.
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Target:
    """An instruction set + ABI, as LLVM and clang see it."""

    name: str
    target_id: int  # the id the module header carries (mrt_module_load checks it)
    triple: str  # Rust-style name, e.g. thumbv7em-none-eabihf
    llvm_triple: str  # what LLVM / clang accept, e.g. riscv32-unknown-none-elf
    os: Literal["none", "linux"]
    pointer_bits: int
    cpu: str
    features: str  # LLVM features string, e.g. "+dsp,+vfp4d16sp"
    float_abi: Literal["hard", "soft", "softfp"]
    capabilities: Capabilities
    cflags: tuple[str, ...]
    compiler_helpers: CompilerHelpers
    abi: str = ""  # LLVM target ABI (ilp32f, aapcs, ...) when it is not the default
    path: Path = field(default=Path(), metadata={"yaml": False}, compare=False)


@dataclass(frozen=True)
class MemoryRegion:
    """A contiguous address range."""

    origin: int
    length: int

    @property
    def end(self) -> int:
        """One past the last address."""
        return self.origin + self.length


@dataclass(frozen=True)
class Budgets:
    """How many bytes of flash and RAM the image may use (checked at link time)."""

    flash: int
    ram: int


@dataclass(frozen=True)
class Simulation:
    """How to run an image under QEMU."""

    qemu: str  # executable, e.g. qemu-system-arm
    mode: Literal["system", "user"]  # system: bare metal (-kernel); user: Linux process
    machine: str = ""  # -M value, required in system mode
    args: tuple[str, ...] = ()
    timeout: int = 60  # seconds, default for runs of this board


@dataclass(frozen=True)
class Board:
    """A concrete board (or emulated machine) with a target, memory map and runner."""

    identifier: str
    name: str
    target: str
    platform: tuple[str, ...]  # runtime_c/platform/<part> directories to build
    flash: MemoryRegion
    ram: MemoryRegion
    stack_size: int
    budgets: Budgets
    console: Literal["stdout", "semihosting"]
    simulation: Simulation
    target_info: Target = field(
        default=None,  # type: ignore[assignment]  # filled by load_board
        metadata={"yaml": False},
        compare=False,
    )
    path: Path = field(default=Path(), metadata={"yaml": False}, compare=False)


# --------------------------------------------------------------------------- locating


def _descriptor_roots() -> list[Path]:
    """Directories that may hold ``targets/`` and ``boards/``, most specific first."""
    roots: list[Path] = []
    env = os.environ.get("MINIRT_HOME")
    if env:
        roots.append(Path(env))
    roots.append(Path(__file__).resolve().parents[2])  # source tree / editable install
    roots.append(Path(__file__).resolve().parent / "data")  # if packaged with the module
    roots.append(Path(sys.prefix) / "share" / "minirt")  # if installed as data files
    return roots


def _find_dir(kind: str) -> Path:
    for root in _descriptor_roots():
        if (root / kind).is_dir():
            return root / kind
    searched = ", ".join(str(r / kind) for r in _descriptor_roots())
    raise DescriptorError(f"no '{kind}' directory found (searched {searched})")


def targets_dir() -> Path:
    """The directory holding ``targets/*.yaml``."""
    return _find_dir("targets")


def boards_dir() -> Path:
    """The directory holding ``boards/*.yaml``."""
    return _find_dir("boards")


def _display(path: Path) -> str:
    """``boards/x.yaml`` for files in the descriptor tree, else the path as given."""
    try:
        return str(path.resolve().relative_to(path.resolve().parents[1]))
    except (ValueError, IndexError):
        return str(path)


# --------------------------------------------------------------------------- validation


def _describe(tp: Any) -> str:
    """Human words for a Literal annotation: ``one of 'a', 'b'``."""
    return "one of " + ", ".join(repr(v) for v in typing.get_args(tp))


def _convert(tp: Any, value: Any, where: str, fail: typing.Callable[[str, str], None]) -> Any:
    """Checks ``value`` against annotation ``tp`` and returns the dataclass-ready value."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            fail(where, "expected a mapping")
        return _build(tp, value, where + ".", fail)
    if origin is Literal:
        if value not in typing.get_args(tp) or isinstance(value, bool):
            fail(where, f"expected {_describe(tp)}, got {value!r}")
        return value
    if origin is tuple:
        (item_tp, _) = typing.get_args(tp)
        if not isinstance(value, list):
            fail(where, "expected a list")
        return tuple(_convert(item_tp, item, f"{where}[{i}]", fail) for i, item in enumerate(value))
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if value is None else _convert(inner, value, where, fail)
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            fail(where, "expected an integer")
        if value < 0:
            fail(where, f"expected a non-negative integer, got {value}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            fail(where, "expected a boolean (true/false)")
        return value
    if tp is str:
        if not isinstance(value, str):
            fail(where, "expected a string")
        return value
    raise TypeError(f"descriptor schema uses unsupported type {tp!r}")  # programming error


def _build(cls: type, data: dict[str, Any], prefix: str, fail: Any) -> Any:
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.metadata.get("yaml", True)]
    known = {f.name for f in fields}
    for key in data:
        if key not in known:
            fail(f"{prefix}{key}", f"unknown field (expected one of: {', '.join(sorted(known))})")
    kwargs: dict[str, Any] = {}
    for f in fields:
        where = prefix + f.name
        if f.name not in data:
            has_default = (
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            )
            if not has_default:
                fail(where, "missing required field")
            continue
        kwargs[f.name] = _convert(hints[f.name], data[f.name], where, fail)
    return cls(**kwargs)


def _load(path: Path, cls: type) -> Any:
    shown = _display(path)

    def fail(where: str, message: str) -> typing.NoReturn:
        raise DescriptorError(f"{shown}: field '{where}': {message}")

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DescriptorError(f"{shown}: cannot read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DescriptorError(f"{shown}: invalid YAML{line}: {problem}") from None
    if not isinstance(data, dict):
        raise DescriptorError(f"{shown}: expected a mapping at the top level")
    obj = _build(cls, data, "", fail)
    obj = dataclasses.replace(obj, path=path)
    _check_consistency(obj, path, fail)
    return obj


def _check_consistency(obj: Any, path: Path, fail: Any) -> None:
    """Cross-field rules the types alone cannot express."""
    if isinstance(obj, Target):
        if obj.name != path.stem:
            fail("name", f"must match the file name '{path.stem}', got {obj.name!r}")
        if obj.pointer_bits not in (32, 64):
            fail("pointer_bits", f"expected 32 or 64, got {obj.pointer_bits}")
        helpers = obj.compiler_helpers
        if helpers.library == "libgcc" and not helpers.gcc:
            fail("compiler_helpers.gcc", "missing required field (library is libgcc)")
    elif isinstance(obj, Board):
        if obj.identifier != path.stem:
            fail("identifier", f"must match the file name '{path.stem}', got {obj.identifier!r}")
        for region in ("flash", "ram"):
            if getattr(obj, region).length == 0:
                fail(f"{region}.length", "must be greater than 0")
        if obj.flash.origin < obj.ram.end and obj.ram.origin < obj.flash.end:
            fail("ram", "overlaps the flash region")
        if obj.stack_size >= obj.ram.length:
            fail("stack_size", f"{obj.stack_size} does not fit in ram.length {obj.ram.length}")
        if obj.simulation.mode == "system" and not obj.simulation.machine:
            fail("simulation.machine", "missing required field (mode is system)")
        if not obj.platform:
            fail("platform", "expected at least one runtime_c/platform part")


# --------------------------------------------------------------------------- public API


def _resolve(kind: str, name_or_path: str | os.PathLike[str]) -> Path:
    text = os.fspath(name_or_path)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        path = Path(text)
        if not path.is_file():
            raise DescriptorError(f"{text}: no such {kind[:-1]} descriptor")
        return path
    directory = _find_dir(kind)
    path = directory / f"{text}.yaml"
    if not path.is_file():
        known = ", ".join(p.stem for p in sorted(directory.glob("*.yaml")))
        raise DescriptorError(f"unknown {kind[:-1]} '{text}' (known: {known})")
    return path


def load_target(name: str | os.PathLike[str]) -> Target:
    """Loads ``targets/NAME.yaml`` (or a YAML file path) and validates it."""
    return _load(_resolve("targets", name), Target)


def load_board(name: str | os.PathLike[str]) -> Board:
    """Loads ``boards/NAME.yaml`` (or a YAML file path), validates it and its target."""
    path = _resolve("boards", name)
    board: Board = _load(path, Board)
    try:
        target_path = _resolve("targets", board.target)
    except DescriptorError as exc:
        raise DescriptorError(f"{_display(path)}: field 'target': {exc}") from None
    return dataclasses.replace(board, target_info=load_target(target_path))


def list_targets() -> list[str]:
    """Names of all target descriptors, sorted."""
    return sorted(p.stem for p in targets_dir().glob("*.yaml"))


def list_boards() -> list[str]:
    """Identifiers of all board descriptors, sorted."""
    return sorted(p.stem for p in boards_dir().glob("*.yaml"))
