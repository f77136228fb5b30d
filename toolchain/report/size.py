"""Flash and RAM of a firmware image, split by component.

Every byte of the image's allocated sections is attributed to exactly one component, so
the components always add up to the ELF's totals:

* The ld.lld map (``-Map``) lists each input section with the object it came from and
  its address. Objects compiled from ``runtime_c/<part>`` (the link names them
  ``runtime_c__<part>__<file>.o``) give *runtime* (core), *startup* (platform: vector
  table, reset, semihosting / syscalls), *harness*, and *dispatch* code (ukernel: the
  microkernels the generated dispatches call); members of an archive
  (``libgcc.a(_udivsi3.o)``) are *compiler helpers*; the caller's own objects (the
  generated ``dispatch.o``) are *dispatch* code.
* The generated ``.rodata.mrt_image_module`` section is the ``.mrt`` module, split with
  ``toolchain.module.reader.read_module`` into *constants* (constant table + pool) and
  *schedule* (header, signature, commands and padding).
* Sections the linker made itself by merging strings / constants from several objects
  (``<internal>:(.rodata)``) are split piece by piece, each piece going to the first
  object (in link order) that holds it.
* Alignment padding between input sections goes to the section that needed it (the
  next one); padding at the end of an output section to the one before it.
* Anything still unexplained is *other*, shown rather than hidden.

Flash is the load image (every allocated section with contents: ``.text``,
``.rodata``, ``.data``); RAM is every writable allocated section (``.data``, ``.bss``)
plus the board's stack. RAM components: *arena*, *I/O buffers*, *state* (the values a
model keeps between inferences: its resource variables; all three from the generated
object), *runtime* data/bss (runtime_c and helpers), *stack*, *other*.

Run as ``python -m toolchain.report.size BUILD_DIR [--symbols N] [--json]``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from toolchain.codegen.image import SHARED_PREFIX
from toolchain.link.build_result import BuildResult
from toolchain.link.elf_symbols import read_sections
from toolchain.link.map_file import MapSection, OutputSection, parse_map
from toolchain.module import format as fmt
from toolchain.module.reader import ModuleFormatError, read_module
from toolchain.schedule.optimize import OptimizeChoice
from toolchain.target import Board, load_board

__all__ = [
    "COMPONENT_LABELS",
    "FLASH_COMPONENTS",
    "RAM_COMPONENTS",
    "RAM_SPLIT",
    "MapSection",
    "SizeReport",
    "SymbolSize",
    "main",
    "parse_map",
    "size_report",
    "size_report_from_files",
]

FLASH_COMPONENTS: tuple[str, ...] = (
    "runtime",
    "dispatch",
    "constants",
    "schedule",
    "startup",
    "harness",
    "helpers",
    "other",
)
RAM_COMPONENTS: tuple[str, ...] = ("arena", "io", "state", "stack", "runtime", "other")
# What the RAM split line always shows, even at 0 B.
RAM_SPLIT: tuple[str, ...] = ("arena", "io", "stack")
# Rows the table shows only when they hold a byte: a model without state has none.
OPTIONAL_ROWS: tuple[str, ...] = ("state",)

# Row order and names of the printed table (one row per component, flash and RAM).
COMPONENT_LABELS: dict[str, str] = {
    "runtime": "runtime",
    "dispatch": "dispatch code",
    "constants": "constants",
    "schedule": "schedule/signature",
    "startup": "startup",
    "harness": "harness",
    "helpers": "compiler helpers",
    "arena": "arena",
    "io": "I/O buffers",
    "state": "state",
    "stack": "stack",
    "other": "other",
}

MODULE_SECTION = ".rodata.mrt_image_module"
MODULE_SYMBOL = "mrt_image_module"
# The microkernels (runtime_c/ukernel) are the dispatches' inner loops, called from
# nothing else: dispatch code.
_RUNTIME_PARTS = {"core": "runtime", "platform": "startup", "harness": "harness",
                  "ukernel": "dispatch"}


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class SymbolSize:
    """One row of the per-symbol table."""

    name: str
    size: int
    kind: str  # "func" or "object"
    section: str
    component: str  # the component of its first byte
    address: int = 0
    # Its bytes per component, in flash (sections with contents) and in RAM (writable
    # sections): the embedded module is one symbol but two components (schedule and
    # constants), and initialized data counts in both memories.
    flash_parts: tuple[tuple[str, int], ...] = ()
    ram_parts: tuple[tuple[str, int], ...] = ()


@dataclass
class SizeReport:
    """Flash and RAM by component, the totals they add up to, and the board's budgets."""

    board: str
    flash: dict[str, int]  # FLASH_COMPONENTS -> bytes
    ram: dict[str, int]  # RAM_COMPONENTS -> bytes (stack included)
    flash_total: int  # the load image: every allocated section with contents
    ram_static: int  # writable allocated sections (.data + .bss)
    stack: int
    budget_flash: int
    budget_ram: int
    sections: dict[str, int]  # allocated ELF section -> size
    berkeley: dict[str, int]  # GNU size -B: text, data, bss, dec
    symbols: list[SymbolSize] = field(default_factory=list)  # largest first
    # The build's commands in the model's own names (report/layers.py attach_layers):
    # per dispatch its function, label, kind, sources, code and weights bytes.
    layers: list[dict[str, Any]] = field(default_factory=list)
    # What the build chose under --optimize (schedule/optimize.py): the weights' layout
    # and the mode, a line of the tables. None for an image without the record.
    optimize: OptimizeChoice | None = None
    # The layers whose schedule the tuning database gave (Program.tuned).
    tuned: list[dict[str, Any]] = field(default_factory=list)

    def symbol_label(self, name: str) -> str:
        """How the tables name a symbol: a dispatch function by its layer's label (the
        model's own name), any other symbol by its own name."""
        # A body identical dispatches share is named after the first of them
        # (codegen/image.py SHARED_PREFIX).
        shared = name.removeprefix(SHARED_PREFIX)
        for layer in self.layers:
            if layer["function"] == name:
                return f"{layer['label']} (code)"
            if layer["function"] == shared:
                return f"{layer['label']} (shared code)"
        return name

    @property
    def ram_total(self) -> int:
        """Static RAM plus the stack: what must fit in the board's RAM."""
        return self.ram_static + self.stack

    @property
    def over_budget(self) -> list[str]:
        """One line per exceeded budget; empty when the image fits."""
        problems = []
        for what, used, budget in (
            ("flash", self.flash_total, self.budget_flash),
            ("RAM", self.ram_total, self.budget_ram),
        ):
            if used > budget:
                problems.append(
                    f"board {self.board}: {what} {_num(used)} B is over the budget of "
                    f"{_num(budget)} B by {_num(used - budget)} B"
                )
        return problems

    def percent(self, memory: str, size: int) -> float:
        """``size`` as a percentage of the board's flash (memory "flash") or RAM budget."""
        budget = self.budget_flash if memory == "flash" else self.budget_ram
        return 100.0 * size / budget if budget else float("inf")

    def percentages(self) -> dict[str, dict[str, float]]:
        """Every component and total as a percentage of its memory's budget."""
        return {
            "flash": {**{k: self.percent("flash", v) for k, v in self.flash.items()},
                      "total": self.percent("flash", self.flash_total)},
            "ram": {**{k: self.percent("ram", v) for k, v in self.ram.items()},
                    "total": self.percent("ram", self.ram_total)},
        }

    def format_budget_table(self, symbols: int = 10) -> str:
        """The component table with each row as a percentage of the board's budgets, the
        RAM split and (symbols > 0) the largest symbols with theirs (minirt-size)."""
        rows = [f"board {self.board}: flash budget {_num(self.budget_flash)} B, RAM budget "
                f"{_num(self.budget_ram)} B", ""]
        body = [[label, _num(f), _pct(self.percent("flash", f)), _num(r),
                 _pct(self.percent("ram", r))]
                for key, label in COMPONENT_LABELS.items()
                for f, r in [(self.flash.get(key, 0), self.ram.get(key, 0))]
                if key not in OPTIONAL_ROWS or f or r]
        body.append(["total", _num(self.flash_total),
                     _pct(self.percent("flash", self.flash_total)), _num(self.ram_total),
                     _pct(self.percent("ram", self.ram_total))])
        rows += _columns([["component", "flash", "% budget", "RAM", "% budget"], *body],
                         first=20, least=10)
        split = ", ".join(f"{COMPONENT_LABELS[k]} {_num(self.ram[k])} B "
                          f"({_pct(self.percent('ram', self.ram[k]))})"
                          for k in RAM_COMPONENTS if self.ram.get(k) or k in RAM_SPLIT)
        rows += ["", f"RAM split: {split}", *self._optimize_lines()]
        if symbols > 0 and self.symbols:
            table = [["size", "% budget", "memory", "component", "symbol"]]
            for sym in self.symbols[:symbols]:
                memory = "flash" if sym.flash_parts else "RAM"
                pct = self.percent("ram" if memory == "RAM" else "flash", sym.size)
                table.append([_num(sym.size), _pct(pct), memory,
                              COMPONENT_LABELS.get(sym.component, sym.component),
                              self.symbol_label(sym.name)])
            rows += ["", *_columns(table, least=9, right=2)]
        rows += [f"OVER BUDGET: {line}" for line in self.over_budget]
        return "\n".join(rows)

    def to_json(self) -> dict[str, Any]:
        """A JSON-serializable dict (for CI)."""
        b = self.berkeley
        return {
            "board": self.board,
            "flash": dict(self.flash),
            "ram": dict(self.ram),
            "flash_total": self.flash_total,
            "ram_static": self.ram_static,
            "stack": self.stack,
            "ram_total": self.ram_total,
            "budget": {"flash": self.budget_flash, "ram": self.budget_ram},
            "over_budget": self.over_budget,
            "sections": dict(self.sections),
            "berkeley": {**b, "hex": f"{b['dec']:x}"},
            "symbols": [
                {"name": s.name, "size": s.size, "kind": s.kind, "section": s.section,
                 "component": s.component,
                 **({"label": label} if (label := self.symbol_label(s.name)) != s.name
                    else {})}
                for s in self.symbols
            ],
            **({"layers": self.layers} if self.layers else {}),
            **({"optimize": self.optimize.to_json()} if self.optimize else {}),
            **({"tuned": self.tuned} if self.tuned else {}),
        }

    def _optimize_lines(self) -> list[str]:
        """The weights line of the tables (OptimizeChoice.describe), and a line per
        layer scheduled from the tuning database."""
        return ([self.optimize.describe()] if self.optimize else []) + [
            f"tuned schedule: {', '.join(t['kernels'])} ({t['label']}; from {t['source']})"
            for t in self.tuned]

    def format_table(self, symbols: int = 0) -> str:
        """The component table, the Berkeley line and (symbols > 0) the top symbols."""
        table = [["component", "flash", "ram"]]
        table += [[label, _num(self.flash.get(key, 0)), _num(self.ram.get(key, 0))]
                  for key, label in COMPONENT_LABELS.items()
                  if key not in OPTIONAL_ROWS or self.flash.get(key) or self.ram.get(key)]
        table.append(["total", _num(self.flash_total), _num(self.ram_total)])
        rows = _columns(table, first=20, least=9)
        rows[-1] += f"   (budget {_num(self.budget_flash)} / {_num(self.budget_ram)})"
        b = self.berkeley
        rows += ["", *_columns([["text", "data", "bss", "dec", "hex"],
                                [*(str(b[k]) for k in ("text", "data", "bss", "dec")),
                                 f"{b['dec']:x}"]], least=8, right=5)]
        rows += self._optimize_lines()
        if symbols > 0 and self.symbols:
            table = [["size", "component", "section", "symbol"]]
            table += [[_num(s.size), s.component, s.section, self.symbol_label(s.name)]
                      for s in self.symbols[:symbols]]
            rows += ["", *_columns(table, least=7, right=1)]
        rows += [f"OVER BUDGET: {line}" for line in self.over_budget]
        return "\n".join(rows)


def _columns(table: list[list[str]], first: int = 0, least: int = 0,
             right: int | None = None) -> list[str]:
    """``table``'s rows as aligned text: a left-aligned first column of at least
    ``first`` characters (when ``first`` > 0), then the next ``right`` columns (default:
    all) right-aligned in at least ``least`` characters, then the rest left-aligned after
    two spaces. A column grows to its widest cell plus two spaces, so that numbers of any
    size never run into each other."""
    lead = 1 if first else 0
    right = len(table[0]) - lead if right is None else right
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = []
    for row in table:
        cells = [f"{row[0]:<{max(first, widths[0] + 2)}}"] if lead else []
        cells += [f"{c:>{max(least, w + 2)}}"
                  for c, w in zip(row[lead:lead + right], widths[lead:lead + right])]
        rest = row[lead + right:]
        if rest:
            cells.append("  " + "".join(f"{c:<{w + 2}}" for c, w in
                                        zip(rest, widths[lead + right:])).rstrip())
        lines.append("".join(cells).rstrip())
    return lines


def _num(n: int) -> str:
    """1234567 -> '1,234,567': commas, as the other messages and the docs group digits
    (a space inside a number is read as the gap between two columns)."""
    return f"{n:,}"


def _pct(p: float) -> str:
    """A percentage with two decimals: small parts of a large budget stay visible."""
    return f"{p:.2f} %"


def size_report(build: BuildResult) -> SizeReport:
    """The size report of a pipeline build (its ELF, map and board), stating what it
    chose under --optimize."""
    report = size_report_from_files(build.link.elf, build.link.map, build.board,
                                    helpers=build.link.helpers)
    report.optimize = build.program.optimize
    report.tuned = list(build.program.tuned)
    return report


def size_report_from_files(
    elf_path: Path,
    map_path: Path,
    board: Board,
    *,
    helpers: Path | None = None,
    generated: Sequence[str] | None = None,
) -> SizeReport:
    """The size report of any image linked by ``toolchain.link.link_firmware``.

    ``helpers`` is the compiler-helpers archive (any archive member counts as a helper
    when None); ``generated`` names the objects (as the map writes them) that are
    generated code; by default every object the link did not compile itself
    (i.e. not in its ``obj/`` directory).
    """
    elf_path, map_path = Path(elf_path), Path(map_path)
    outputs, inputs = parse_map(map_path.read_text())
    link_dir = map_path.parent
    with elf_path.open("rb") as f:
        elf = ELFFile(f)
        return _analyze(elf, outputs, inputs, link_dir, board, helpers, generated)


# --------------------------------------------------------------------------- analysis


@dataclass
class _Classifier:
    helpers: Path | None
    generated: frozenset[str] | None

    def component(self, s: MapSection) -> str:
        """The flash component of an input section (by the object it came from)."""
        if s.member is not None:
            archive = Path(s.file)
            if self.helpers is None or archive.name == self.helpers.name:
                return "helpers"
            return "other"
        name = Path(s.file).name
        m = re.match(r"runtime_c__([^_]+)__", name)
        if m:
            return _RUNTIME_PARTS.get(m.group(1), "other")
        if s.file == "<internal>":
            return "other"
        if self.generated is not None:
            return "dispatch" if s.file in self.generated else "other"
        return "other" if Path(s.file).parent.name == "obj" else "dispatch"

    def ram_component(self, s: MapSection) -> str:
        comp = self.component(s)
        if comp == "dispatch":
            if "mrt_image_arena" in s.name:
                return "arena"
            if re.search(r"mrt_image_(input|output)_\d+", s.name):
                return "io"
            if s.name.endswith("mrt_image_state"):  # kept between inferences
                return "state"
            return "other"
        return "runtime" if comp in ("runtime", "startup", "harness", "helpers") else "other"


def _analyze(
    elf: ELFFile,
    outputs: dict[str, OutputSection],
    inputs: list[MapSection],
    link_dir: Path,
    board: Board,
    helpers: Path | None,
    generated: Sequence[str] | None,
) -> SizeReport:
    cls = _Classifier(helpers, frozenset(generated) if generated is not None else None)
    flash = dict.fromkeys(FLASH_COMPONENTS, 0)
    ram = dict.fromkeys(RAM_COMPONENTS, 0)
    sections: dict[str, int] = {}
    berkeley = {"text": 0, "data": 0, "bss": 0}
    # (start, end, flash component, ram component) for the symbol table.
    spans: list[tuple[int, int, str, str]] = []
    pieces = _MergePieces(inputs, link_dir, cls)

    for sec in elf.iter_sections():
        flags = sec["sh_flags"]
        if not flags & SH_FLAGS.SHF_ALLOC or sec["sh_size"] == 0:
            continue
        size, vma = sec["sh_size"], sec["sh_addr"]
        nobits = sec["sh_type"] == "SHT_NOBITS"
        writable = bool(flags & SH_FLAGS.SHF_WRITE)
        sections[sec.name] = size
        if nobits:
            berkeley["bss"] += size
        elif writable:
            berkeley["data"] += size
        else:
            berkeley["text"] += size
        out = outputs.get(sec.name)
        if out is not None and out.size != size:
            raise ValueError(f"map says {sec.name} is {out.size} B, the ELF {size} B")
        members = sorted(
            (s for s in inputs if s.output == sec.name and s.size), key=lambda s: s.vma
        )
        parts = _split_section(sec, vma, size, members, cls, pieces, elf)
        for start, end, comp, ram_comp in parts:
            if not nobits:
                flash[comp] += end - start
            if writable:
                ram[ram_comp] += end - start
            spans.append((start, end, comp, ram_comp))

    stack = _reserved_stack(elf, board)
    ram["stack"] = stack
    flash_total = sum(size for name, size in sections.items() if _has_contents(elf, name))
    ram_static = sum(size for name, size in sections.items() if _is_writable(elf, name))
    berkeley["dec"] = berkeley["text"] + berkeley["data"] + berkeley["bss"]
    return SizeReport(
        board=board.identifier,
        flash=flash,
        ram=ram,
        flash_total=flash_total,
        ram_static=ram_static,
        stack=stack,
        budget_flash=board.budgets.flash,
        budget_ram=board.budgets.ram,
        sections=sections,
        berkeley=berkeley,
        symbols=_symbols(elf, spans),
    )


def _reserved_stack(elf: ELFFile, board: Board) -> int:
    """The image's stack reservation: its linker script's ``_stack_size`` (a build sizes
    it from the stack measured under QEMU, pipeline._size_stack), else the board's."""
    symtab = elf.get_section_by_name(".symtab")
    found = symtab.get_symbol_by_name("_stack_size") if symtab is not None else None
    return int(found[0]["st_value"]) if found else board.stack_size


def _has_contents(elf: ELFFile, name: str) -> bool:
    return elf.get_section_by_name(name)["sh_type"] != "SHT_NOBITS"


def _is_writable(elf: ELFFile, name: str) -> bool:
    return bool(elf.get_section_by_name(name)["sh_flags"] & SH_FLAGS.SHF_WRITE)


def _split_section(
    sec: Any,
    vma: int,
    size: int,
    members: list[MapSection],
    cls: _Classifier,
    pieces: _MergePieces,
    elf: ELFFile,
) -> list[tuple[int, int, str, str]]:
    """Covers [vma, vma + size) with (start, end, flash component, RAM component) spans."""
    spans: list[tuple[int, int, str, str]] = []
    cursor = vma
    end_of_section = vma + size
    for s in members:
        comp, ram_comp = cls.component(s), cls.ram_component(s)
        start = max(s.vma, cursor)
        if s.vma > cursor:  # alignment padding the next section asked for
            spans.append((cursor, s.vma, comp, ram_comp))
        stop = min(s.vma + s.size, end_of_section)
        if stop <= start:
            continue
        if s.name == MODULE_SECTION and comp == "dispatch":
            spans += _module_spans(sec, vma, start, stop, elf)
        elif s.file == "<internal>" and sec["sh_type"] != "SHT_NOBITS":
            data = sec.data()[start - vma : stop - vma]
            spans += [(a + start, b + start, c, r) for a, b, c, r in pieces.split(data)]
        else:
            spans.append((start, stop, comp, ram_comp))
        cursor = stop
    if cursor < end_of_section:  # trailing padding ('. = ALIGN(4)'): the last section's
        last = spans[-1] if spans else None
        comp, ram_comp = (last[2], last[3]) if last else ("other", "other")
        spans.append((cursor, end_of_section, comp, ram_comp))
    return spans


def _module_spans(sec: Any, vma: int, start: int, stop: int, elf: ELFFile) -> list:
    """Splits the embedded .mrt module into schedule (header, signature, commands,
    padding) and constants (constant table + pool)."""
    data = sec.data()[start - vma : stop - vma]
    symtab = elf.get_section_by_name(".symtab")
    syms = symtab.get_symbol_by_name(MODULE_SYMBOL) if symtab is not None else None
    offset, length = 0, len(data)
    if syms:
        offset = max(0, syms[0]["st_value"] - start)
        length = min(syms[0]["st_size"] or length, len(data) - offset)
    try:
        module = read_module(data[offset : offset + length], check_crc=False, strict=False)
    except ModuleFormatError:
        return [(start, stop, "other", "other")]
    h = module.header
    table = h.constant_count * fmt.CONSTANT_ENTRY.size
    table_at = start + offset + module.constant_table_offset
    pool_at = start + offset + h.pool_offset
    spans = [
        (start, table_at, "schedule", "other"),
        (table_at, table_at + table, "constants", "other"),
        (table_at + table, pool_at, "schedule", "other"),  # zero padding to the pool
        (pool_at, start + offset + h.total_size, "constants", "other"),
        (start + offset + h.total_size, stop, "schedule", "other"),
    ]
    return [s for s in spans if s[1] > s[0]]


class _MergePieces:
    """Strings and constants of the objects' mergeable sections, by first owner.

    The linker merges ``.rodata.str1.1`` (and ``.rodata.cstN``) of every object into one
    ``<internal>`` section; a piece is attributed to the first object in link order that
    has it (that object's copy is the one the linker kept).
    """

    def __init__(self, inputs: Iterable[MapSection], link_dir: Path, cls: _Classifier) -> None:
        self._inputs = list(inputs)
        self._link_dir = link_dir
        self._cls = cls
        self._table: dict[bytes, tuple[str, str]] | None = None

    def _load(self) -> dict[bytes, tuple[str, str]]:
        table: dict[bytes, tuple[str, str]] = {}
        seen: set[str] = set()
        for s in self._inputs:
            if s.member is not None or s.file == "<internal>" or s.file in seen:
                continue
            seen.add(s.file)
            path = self._link_dir / s.file
            if not path.is_file():
                continue
            owner = (self._cls.component(s), self._cls.ram_component(s))
            # Every object of the link, each build: read_sections, not pyelftools, whose
            # per-file set-up alone costs a few ms.
            for sec in read_sections(path):
                if not (sec.flags & SH_FLAGS.SHF_MERGE and sec.flags & SH_FLAGS.SHF_ALLOC):
                    continue
                for piece in _pieces(sec.data, sec.flags, sec.entsize or 1):
                    table.setdefault(piece, owner)
        return table

    def split(self, data: bytes) -> list[tuple[int, int, str, str]]:
        """(start, end, flash component, ram component) spans relative to data."""
        if self._table is None:
            self._table = self._load()
        table = self._table
        spans: list[tuple[int, int, str, str]] = []
        i = 0
        while i < len(data):
            owner = None
            nul = data.find(b"\0", i)
            if nul >= 0 and data[i : nul + 1] in table:
                owner, n = table[data[i : nul + 1]], nul + 1 - i
            else:
                for n in (16, 8, 4, 2):
                    if i + n <= len(data) and data[i : i + n] in table:
                        owner = table[data[i : i + n]]
                        break
            if owner is None:
                owner, n = ("other", "other"), 1
            if spans and spans[-1][1] == i and spans[-1][2:] == owner:
                spans[-1] = (spans[-1][0], i + n, *owner)
            else:
                spans.append((i, i + n, *owner))
            i += n
        return spans


def _pieces(data: bytes, flags: int, entsize: int) -> list[bytes]:
    if flags & SH_FLAGS.SHF_STRINGS:
        return [p + b"\0" for p in data.split(b"\0")[:-1]]
    return [data[i : i + entsize] for i in range(0, len(data), entsize)]


def _symbols(elf: ELFFile, spans: list[tuple[int, int, str, str]]) -> list[SymbolSize]:
    """Function and object symbols of allocated sections, largest first, each with its
    bytes per component (by the spans the section analysis made)."""
    symtab = elf.get_section_by_name(".symtab")
    if symtab is None:
        return []
    arm = elf["e_machine"] == "EM_ARM"
    spans = sorted(spans)
    starts = [sp[0] for sp in spans]
    rows = []
    for sym in symtab.iter_symbols():
        kind = sym["st_info"]["type"]
        if kind not in ("STT_FUNC", "STT_OBJECT") or sym["st_size"] == 0:
            continue
        shndx = sym["st_shndx"]
        if not isinstance(shndx, int):
            continue
        sec = elf.get_section(shndx)
        if not sec["sh_flags"] & SH_FLAGS.SHF_ALLOC:
            continue
        addr = sym["st_value"] & ~1 if arm and kind == "STT_FUNC" else sym["st_value"]
        end = addr + sym["st_size"]
        nobits = sec["sh_type"] == "SHT_NOBITS"
        writable = bool(sec["sh_flags"] & SH_FLAGS.SHF_WRITE)
        flash_parts: dict[str, int] = {}
        ram_parts: dict[str, int] = {}
        # The spans cover each section without gaps or overlaps: walk those it touches.
        i = max(0, bisect.bisect_right(starts, addr) - 1)
        while i < len(spans) and spans[i][0] < end:
            start, stop, flash_comp, ram_comp = spans[i]
            n = min(stop, end) - max(start, addr)
            if n > 0:
                if not nobits:
                    flash_parts[flash_comp] = flash_parts.get(flash_comp, 0) + n
                if writable:
                    ram_parts[ram_comp] = ram_parts.get(ram_comp, 0) + n
            i += 1
        first = next(iter(ram_parts if nobits else flash_parts), "other")
        rows.append(SymbolSize(sym.name, sym["st_size"], "func" if kind == "STT_FUNC" else
                               "object", sec.name, first, addr,
                               tuple(flash_parts.items()), tuple(ram_parts.items())))
    rows.sort(key=lambda r: (-r.size, r.name))
    return rows


# --------------------------------------------------------------------------- CLI


def _board_of(build_dir: Path) -> str:
    for script in sorted(build_dir.glob("*.ld")):
        m = re.search(r"for board '([^']+)'", script.read_text())
        if m:
            return m.group(1)
    raise SystemExit(f"{build_dir}: no generated linker script names the board (use --board)")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolchain.report.size BUILD_DIR``: prints the table (or JSON)."""
    ap = argparse.ArgumentParser(prog="python -m toolchain.report.size", description=__doc__
                                 and __doc__.splitlines()[0])
    ap.add_argument("build_dir", type=Path, help="a minirt-build output directory")
    ap.add_argument("--board", help="board name (default: from the linker script)")
    ap.add_argument("--name", default="firmware", help="image name (default: firmware)")
    ap.add_argument("--symbols", type=int, nargs="?", const=20, default=0, metavar="N",
                    help="also list the N largest symbols (default 20)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    board = load_board(args.board or _board_of(args.build_dir))
    report = size_report_from_files(args.build_dir / f"{args.name}.elf",
                                    args.build_dir / f"{args.name}.map", board)
    if args.json:
        data = report.to_json()
        if not args.symbols:
            data.pop("symbols")
        else:
            data["symbols"] = data["symbols"][: args.symbols]
        print(json.dumps(data, indent=2))
    else:
        print(report.format_table(args.symbols))
    return 1 if report.over_budget else 0


if __name__ == "__main__":
    sys.exit(main())
