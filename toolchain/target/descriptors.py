"""Target and board descriptors: YAML files loaded into frozen dataclasses.

A *target* (``targets/NAME.yaml``) describes an instruction set and ABI: the LLVM triple,
CPU, features, float ABI, capabilities that codegen may rely on, C flags for the runtime
and where compiler helpers (soft-float, ``__aeabi_*``) come from. A *board*
(``boards/NAME.yaml``) names a target and adds a memory map, size budgets, the runtime
platform layer and how to run the image under QEMU.

A board is either emulated by QEMU itself (its ``simulation`` section), or a real board
that QEMU does not model, verified on an emulated *sibling* with the same target
(``verify_on: {board: ...}``): then ``simulation`` is the sibling's, and the image runs
there as it is when every memory of the board is mapped on the sibling, else a copy
relinked for the sibling's memory map runs (``Board.verify_mode``). Real boards also
name their flash methods (``flash_methods``, run by ``minirt-flash``) and may have
extra memories (``memories``: CCM, ITCM, ...) that sections named after them go to.

The dataclasses below *are* the schema: every field without a default is required, the
annotation gives the type, and keys not named by a field are rejected. Every problem is
reported as one line that names the file and the field, e.g.
``boards/x.yaml: field 'ram.length': expected an integer``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from toolchain.target.esp import ESP_CHIPS, FLASH_SIZES

__all__ = [
    "FLASH_METHOD_FIELDS",
    "Board",
    "Budgets",
    "Capabilities",
    "CompilerHelpers",
    "DescriptorError",
    "FlashMethod",
    "MemoryRegion",
    "NamedMemory",
    "Simulation",
    "Target",
    "Uart",
    "UartSetup",
    "VerifyOn",
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
    # What the loop schedules (toolchain/loops) are chosen from. The defaults are the
    # cautious ones, so a new descriptor without them still builds correct code.
    fma: bool = False  # fused float multiply-add (VFMA, FMADD): x*y+acc rounded once
    # SIMD ISA; neon-dotprod: NEON with Armv8.2-A's SDOT (FEAT_DotProd)
    simd: Literal["none", "dsp", "mve", "neon", "neon-dotprod", "sse2", "avx2",
                  "avx512"] = "none"
    int_registers: int = 8  # general registers free for values in a loop
    float_registers: int = 0  # float (or SIMD) registers free for values in a loop


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
    # The core's timing table, targets/timing/<timing>.yaml (toolchain/target/timing.py);
    # empty: no cycle estimate (hosted targets).
    timing: str = ""
    # The LLVM CPU whose scheduling model orders the generated dispatches' instructions
    # (codegen/target_machine.py), where it is not `cpu`'s: the instruction set stays
    # `features`'. Empty: `cpu`. A measured choice, written in the target's file.
    schedule_cpu: str = ""
    # The target whose tuning database entries (toolchain/tunedb) this one reads for
    # the layers it has none of its own: one whose kernels and dispatch schedules it
    # shares, so a schedule measured there is measured here. Empty: only its own.
    tuning_from: str = ""
    path: Path = field(default=Path(), metadata={"yaml": False}, compare=False)

    @property
    def codegen_cpu(self) -> str:
        """The CPU LLVM compiles the generated dispatches for (schedule_cpu or cpu)."""
        return self.schedule_cpu or self.cpu

    @property
    def tuning_targets(self) -> tuple[str, ...]:
        """The targets whose tuning database entries a layer built for this one takes,
        first found first: its own, then `tuning_from`'s."""
        return (self.name, self.tuning_from) if self.tuning_from else (self.name,)


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
    # A Linux-process board whose code QEMU cannot execute (x86-64-v4: QEMU 7.2 lacks
    # AVX-512): its programs run natively on a host whose CPU has the target's level
    # (target/host_cpu.py), without instruction counts.
    native: bool = False


@dataclass(frozen=True)
class NamedMemory:
    """A memory besides the main flash and RAM (CCM, ITCM, ...). Nothing of minirt's goes
    there by itself: input sections named ``.<name>`` or ``.<name>.*`` are placed in it
    (not loaded, not zeroed: the application owns its contents)."""

    name: str  # a C identifier, lower case: the section name and, upper-cased, the region
    origin: int
    length: int
    note: str = ""  # what the datasheet calls it

    @property
    def end(self) -> int:
        """One past the last address."""
        return self.origin + self.length


@dataclass(frozen=True)
class FlashMethod:
    """One way of writing the image into the board's flash (``minirt-flash`` runs it).
    Which fields a method takes is the table FLASH_METHOD_FIELDS."""

    method: Literal["pyocd", "openocd", "dfu", "uf2", "esptool"]
    target: str = ""  # pyocd: the pyOCD target type (``pyocd list --targets``)
    config: tuple[str, ...] = ()  # openocd: the -f configuration files, in order
    device: str = ""  # dfu: the USB VID:PID of the DFU bootloader
    alt: int = 0  # dfu: the alternate setting that is the internal flash
    family: int = 0  # uf2: the UF2 family ID the bootloader accepts
    board_id: str = ""  # uf2: what the Board-ID line of the drive's INFO_UF2.TXT starts with
    drive: str = ""  # uf2: the drive's volume name, for the "plug it in" message
    chip: str = ""  # esptool: the --chip name, a row of target/esp.py ESP_CHIPS
    flash_size: str = ""  # esptool: the module's flash chip size (4MB), for the image header


# method -> (required fields, optional fields); any other field is refused for it.
FLASH_METHOD_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "pyocd": (frozenset({"target"}), frozenset()),
    "openocd": (frozenset({"config"}), frozenset()),
    "dfu": (frozenset({"device"}), frozenset({"alt"})),
    "uf2": (frozenset({"family", "board_id"}), frozenset({"drive"})),
    "esptool": (frozenset({"chip"}), frozenset({"flash_size"})),
}


@dataclass(frozen=True)
class UartSetup:
    """One register update the device harness makes before its UART driver starts (a
    peripheral clock gate, a pin's function): ``*address = (*address & ~clear) | set``
    (``clear`` a whole field, ``set`` its new value)."""

    address: int
    set: int = 0
    clear: int = 0
    note: str = ""  # what it does, in the reference manual's words


@dataclass(frozen=True)
class Uart:
    """The UART the device harness talks over (``minirt-build --harness device``)."""

    # The driver: runtime_c/platform/uart/<kind>.c (docs/device.md lists them).
    kind: Literal["cmsdk_uart", "stm32_usart", "stm32_usart_v2", "stm32_lpuart",
                  "sifive_uart", "nrf_uart", "sam_sercom", "ns16550", "esp32_uart"]
    base: int  # the peripheral's base address
    baud: int
    clock_hz: int  # the peripheral's input clock as the image finds it: the divisor's base
    tx: str = ""  # the pins, as the board's documentation names them
    rx: str = ""
    setup: tuple[UartSetup, ...] = ()
    # Which of QEMU's -serial options is this UART (0: the first) on a board QEMU models.
    qemu_serial: int = 0
    note: str = ""


@dataclass(frozen=True)
class VerifyOn:
    """A real board that QEMU does not model is verified on an emulated sibling board
    with the same target (core, FPU, ABI)."""

    board: str  # the sibling: a board with a `simulation` section
    # Extra QEMU arguments that make the sibling start the image as the real board does
    # (e.g. the vector table address a bootloader hands over to).
    args: tuple[str, ...] = ()
    note: str = ""  # why this sibling


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
    uart: Uart | None = None  # the device harness's UART (real boards and their siblings)
    # How QEMU runs the image; for a board with `verify_on`, filled from the sibling.
    simulation: Simulation = None  # type: ignore[assignment]
    chip: str = ""  # the part, as its datasheet names it (real boards)
    # The core clock the board runs at (the cycle estimate's milliseconds), in Hz; 0: not
    # stated. The flash's wait states at that clock, and what hides them (a cache or an
    # accelerator: then the estimate assumes hits and adds none).
    clock_hz: int = 0
    flash_wait_states: int = 0
    flash_cache: str = ""
    memories: tuple[NamedMemory, ...] = ()
    flash_methods: tuple[FlashMethod, ...] = ()
    verify_on: VerifyOn | None = None
    # Where the CPU fetches code: flash.origin + this. Non-zero where the instruction bus
    # sees the image's memory at another address than the data bus (ESP32-C3: SRAM1 is
    # 0x3FC80000 for loads, 0x40380000 for fetches); .text is linked there.
    instruction_bus_offset: int = 0
    # The core's cycle counter where the architecture's is missing (CYCLE_COUNTERS);
    # empty: RISC-V mcycle, Cortex-M DWT / SysTick (docs/device.md).
    cycle_counter: Literal["", "esp_pccr"] = ""
    sibling: Board | None = field(default=None, metadata={"yaml": False}, compare=False)
    target_info: Target = field(
        default=None,  # type: ignore[assignment]  # filled by load_board
        metadata={"yaml": False},
        compare=False,
    )
    path: Path = field(default=Path(), metadata={"yaml": False}, compare=False)

    @property
    def regions(self) -> tuple[tuple[str, int, int], ...]:
        """(name, origin, end) of every memory: flash, ram, then the extra memories, and the
        flash as the instruction bus sees it when that is elsewhere."""
        off = self.instruction_bus_offset
        code = (("flash (instruction bus)", self.flash.origin + off, self.flash.end + off),)
        return (("flash", self.flash.origin, self.flash.end),
                ("ram", self.ram.origin, self.ram.end),
                *((m.name, m.origin, m.end) for m in self.memories),
                *(code if off else ()))

    @property
    def verify_mode(self) -> Literal["self", "image", "relink"]:
        """How QEMU verifies this board's code: ``self`` (QEMU models the board), ``image``
        (the very image runs on the sibling: every memory of the board is mapped there)
        or ``relink`` (the same objects relinked for the sibling's memory map)."""
        if self.sibling is None:
            return "self"
        mapped = self.sibling.regions
        inside = all(any(o <= origin and end <= e for _, o, e in mapped)
                     for _, origin, end in self.regions)
        return "image" if inside else "relink"

    def relinked_for_sibling(self) -> Board:
        """This board with the sibling's memory map: what the ``relink`` verification
        links the same objects for (same target, platform and stack)."""
        if self.sibling is None:
            raise ValueError(f"board {self.identifier} has no verify_on sibling")
        sib = self.sibling
        return dataclasses.replace(self, flash=sib.flash, ram=sib.ram, memories=sib.memories,
                                   budgets=sib.budgets, verify_on=None, sibling=None,
                                   flash_methods=(), instruction_bus_offset=0,
                                   cycle_counter=sib.cycle_counter)


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


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """The field annotations of a descriptor dataclass, evaluated once per class: they
    are strings here (``from __future__ import annotations``), compiled anew by every
    get_type_hints, and a build reads every target descriptor for its id (target_ids)."""
    return typing.get_type_hints(cls)


def _build(cls: type, data: dict[str, Any], prefix: str, fail: Any) -> Any:
    hints = _type_hints(cls)
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


# libyaml's parser where PyYAML was built with it: the same constructor and resolver
# as yaml.safe_load, so the same values, in a fraction of the time (the pure-Python
# parser took 40 ms of every build, reading the target descriptors for their ids).
_C_LOADER = getattr(yaml, "CSafeLoader", None)


def parse_yaml(text: str) -> Any:
    """yaml.safe_load(text), with libyaml's parser when there is one. A document that
    parser refuses is read again by the pure-Python one, whose error (with its line)
    is the one reported, as it always was."""
    if _C_LOADER is not None:
        try:
            return yaml.load(text, Loader=_C_LOADER)  # CSafeLoader: a safe loader
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def _load(path: Path, cls: type) -> Any:
    shown = _display(path)

    def fail(where: str, message: str) -> typing.NoReturn:
        raise DescriptorError(f"{shown}: field '{where}': {message}")

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DescriptorError(f"{shown}: cannot read: {exc.strerror}") from None
    try:
        data = parse_yaml(text)
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
        # Timing tables are the package's (toolchain/target/timing.py loads them from
        # there), wherever the target file itself was read from.
        if obj.timing and not (targets_dir() / "timing" / f"{obj.timing}.yaml").is_file():
            fail("timing", f"no timing table targets/timing/{obj.timing}.yaml")
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
        if (obj.simulation is None) == (obj.verify_on is None):
            fail("simulation", "give exactly one of 'simulation' (QEMU models the board) and "
                 "'verify_on' (a sibling board QEMU models)")
        if obj.simulation is not None and obj.simulation.mode == "system" \
                and not obj.simulation.machine:
            fail("simulation.machine", "missing required field (mode is system)")
        if not obj.platform:
            fail("platform", "expected at least one runtime_c/platform part")
        _check_clock(obj, fail)
        _check_memories(obj, fail)
        _check_flash_methods(obj, fail)
        _check_uart(obj, fail)
        if obj.cycle_counter and CYCLE_COUNTERS[obj.cycle_counter][0] not in obj.platform:
            fail("cycle_counter", f"'{obj.cycle_counter}' is read by the "
                 f"{CYCLE_COUNTERS[obj.cycle_counter][0]} platform part, which this board "
                 "does not build")
        code = obj.regions[-1]
        if obj.instruction_bus_offset and (code[2] > 1 << 32 or any(
                o < code[2] and code[1] < e for _, o, e in obj.regions[:-1])):
            fail("instruction_bus_offset", f"puts the code at [{code[1]:#x}, {code[2]:#x}), "
                 "over another memory or past 4 GiB")


# Plausible core clocks: a 32 kHz watch crystal up to a desktop part's turbo clock.
CLOCK_HZ_RANGE = (32_000, 10_000_000_000)
MAX_FLASH_WAIT_STATES = 15  # the widest wait-state field of the supported parts is 4 bits


def _check_clock(board: Board, fail: Any) -> None:
    """clock_hz is given and plausible; wait states are few."""
    low, high = CLOCK_HZ_RANGE
    if board.clock_hz == 0:
        fail("clock_hz", "missing required field (the core clock in Hz, from the datasheet)")
    if not low <= board.clock_hz <= high:
        fail("clock_hz", f"expected a core clock in Hz between {low} and {high}, got "
             f"{board.clock_hz} (write 168000000 for 168 MHz)")
    if board.flash_wait_states > MAX_FLASH_WAIT_STATES:
        fail("flash_wait_states", f"expected 0..{MAX_FLASH_WAIT_STATES}, got "
             f"{board.flash_wait_states}")


def _check_memories(board: Board, fail: Any) -> None:
    """Extra memories: named like C identifiers, not empty, overlapping nothing."""
    seen = [("flash", board.flash.origin, board.flash.end),
            ("ram", board.ram.origin, board.ram.end)]
    for i, mem in enumerate(board.memories):
        where = f"memories[{i}]"
        if not mem.name.isidentifier() or mem.name != mem.name.lower():
            fail(f"{where}.name", f"expected a lower-case identifier, got {mem.name!r}")
        if mem.length == 0:
            fail(f"{where}.length", "must be greater than 0")
        for name, origin, end in seen:
            if name == mem.name:
                fail(f"{where}.name", f"'{name}' is already a memory of this board")
            if mem.origin < end and origin < mem.end:
                fail(where, f"overlaps the {name} region")
        seen.append((mem.name, mem.origin, mem.end))


# Cycle counters other than the architecture's: the platform part that reads it and its
# function there, which the linker script makes the part's counter (link/script.py).
CYCLE_COUNTERS = {
    # Espressif's RISC-V cores implement no mcycle (reading it traps) but a performance
    # counter of their own (ESP32-C3 TRM, chapter "ESP-RISC-V CPU", "Performance
    # Counter": CSRs mpcer 0x7E0, mpcmr 0x7E1, mpccr 0x7E2).
    "esp_pccr": ("riscv", "mrt_riscv_cycles_esp_pccr"),
}


# UART kinds whose driver keeps the line rate a boot ROM set rather than programming a
# divisor (runtime_c/platform/uart/<kind>.c): the board's baud must be that rate.
_UART_FIXED_BAUD = {
    "esp32_uart": (115200, "the ESP32 ROM loader's UART0 rate, which esp32_uart keeps"),
}


def _check_uart(board: Board, fail: Any) -> None:
    """A UART on a bare-metal board, in its address space, at a rate its clock divides."""
    uart = board.uart
    if uart is None:
        return
    if board.simulation is not None and board.simulation.mode == "user":
        fail("uart", "a hosted board (simulation.mode user) has no UART of its own")
    top = 1 << 32
    if uart.base == 0 or uart.base >= top or uart.base % 4:
        fail("uart.base", f"expected a word-aligned 32-bit peripheral address, got "
             f"{uart.base:#x}")
    if uart.baud == 0:
        fail("uart.baud", "must be greater than 0")
    fixed = _UART_FIXED_BAUD.get(uart.kind)
    if fixed is not None and uart.baud != fixed[0]:
        fail("uart.baud", f"must be {fixed[0]} for {uart.kind} ({fixed[1]}), got {uart.baud}")
    if uart.clock_hz < 16 * uart.baud:
        fail("uart.clock_hz", f"{uart.clock_hz} Hz cannot clock {uart.baud} baud (16 "
             "samples a bit need at least 16 x baud)")
    for i, step in enumerate(uart.setup):
        if step.address >= top or step.address % 4 or step.set >= top or step.clear >= top:
            fail(f"uart.setup[{i}]", "expected a word-aligned 32-bit address and 32-bit "
                 "set / clear masks")


def _check_flash_methods(board: Board, fail: Any) -> None:
    """Each flash method gives exactly the fields its method takes (FLASH_METHOD_FIELDS)."""
    defaults = {f.name: f.default for f in dataclasses.fields(FlashMethod)}
    names = [m.method for m in board.flash_methods]
    for i, method in enumerate(board.flash_methods):
        where = f"flash_methods[{i}]"
        if names.index(method.method) != i:
            fail(f"{where}.method", f"'{method.method}' is listed twice")
        required, optional = FLASH_METHOD_FIELDS[method.method]
        for name, default in defaults.items():
            given = getattr(method, name) != default
            if name in required and not given:
                fail(f"{where}.{name}", f"missing required field (method is {method.method})")
            if given and name != "method" and name not in required | optional:
                fail(f"{where}.{name}", f"does not apply to method '{method.method}'")
        if method.method == "dfu" and not re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}",
                                                         method.device):
            fail(f"{where}.device", f"expected a USB VID:PID like 0483:df11, got "
                 f"{method.device!r}")
        if method.method == "esptool" and method.chip not in ESP_CHIPS:
            fail(f"{where}.chip", f"expected one of {', '.join(ESP_CHIPS)}, got "
                 f"{method.chip!r}")
        if method.flash_size and method.flash_size not in FLASH_SIZES:
            fail(f"{where}.flash_size", f"expected one of {', '.join(FLASH_SIZES)}, got "
                 f"{method.flash_size!r}")
        if method.method == "uf2" and method.family > 0xFFFFFFFF:
            fail(f"{where}.family", f"expected a 32-bit UF2 family ID, got {method.family:#x}")


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
    path = _resolve("targets", name)
    target: Target = _load(path, Target)
    if target.tuning_from:
        try:
            _resolve("targets", target.tuning_from)
        except DescriptorError as exc:
            raise DescriptorError(f"{_display(path)}: field 'tuning_from': {exc}") from None
    return target


def load_board(name: str | os.PathLike[str]) -> Board:
    """Loads ``boards/NAME.yaml`` (or a YAML file path), validates it and its target; for
    a board verified on a sibling, loads the sibling too and takes its simulation (with
    ``verify_on.args`` added)."""
    path = _resolve("boards", name)
    board: Board = _load(path, Board)
    try:
        target_path = _resolve("targets", board.target)
    except DescriptorError as exc:
        raise DescriptorError(f"{_display(path)}: field 'target': {exc}") from None
    board = dataclasses.replace(board, target_info=load_target(target_path))
    if board.verify_on is not None:
        board = _with_sibling(board, path)
    return board


def _with_sibling(board: Board, path: Path) -> Board:
    """Resolves ``verify_on.board`` (looked up beside this board's file first)."""
    where = f"{_display(path)}: field 'verify_on.board'"
    name = board.verify_on.board  # type: ignore[union-attr]
    if name == board.identifier:
        raise DescriptorError(f"{where}: a board cannot be its own sibling")
    beside = path.parent / f"{name}.yaml"
    try:
        sibling = load_board(beside if beside.is_file() else name)
    except DescriptorError as exc:
        raise DescriptorError(f"{where}: {exc}") from None
    if sibling.verify_on is not None:
        raise DescriptorError(f"{where}: '{name}' is itself verified on another board; "
                              "name a board that QEMU models")
    if sibling.target != board.target:
        raise DescriptorError(f"{where}: '{name}' runs target '{sibling.target}', this "
                              f"board's target is '{board.target}'")
    if sibling.platform != board.platform:
        raise DescriptorError(f"{where}: '{name}' builds platform {list(sibling.platform)}, "
                              f"this board {list(board.platform)}")
    args = board.verify_on.args  # type: ignore[union-attr]
    simulation = dataclasses.replace(sibling.simulation,
                                     args=(*sibling.simulation.args, *args))
    return dataclasses.replace(board, simulation=simulation, sibling=sibling)


def list_targets() -> list[str]:
    """Names of all target descriptors, sorted."""
    return sorted(p.stem for p in targets_dir().glob("*.yaml"))


def list_boards() -> list[str]:
    """Identifiers of all board descriptors, sorted."""
    return sorted(p.stem for p in boards_dir().glob("*.yaml"))
