"""Per-dispatch profile of one inference: where the instructions go, counted exactly.

The QEMU plugin (plugin/insn_count.c) charges every retired instruction to a row by the
address range it executes in. The ranges come from the link map (every function has its
own input section, and the map names the object each came from):

* each dispatch function (``dN_...`` of the generated object) is a row of its own;
* runtime_c's core (the command loop, module checks), platform part (start-up, I/O
  calls) and harness are the rows ``runtime``, ``start-up`` and ``harness``;
* callees are charged to the code that called them: compiler helpers (archive members
  such as ``__aeabi_fmul``), runtime functions the generated code calls (``memcpy``),
  the microkernels' own functions (runtime_c/ukernel) and any other function of the
  generated object. The plugin cannot read registers, so the
  caller is the last dispatch entered or owner code run; a callee only runs in between.
  A dispatch's row also says how many of its instructions ran in callees;
* addresses in no range go to ``other``: none inside the inference; before it, code
  that is not the image's (QEMU's riscv ``virt`` machine runs 6 instructions of its
  reset ROM before jumping to the image).

The rows' instructions between the benchmark markers add up exactly to the count
``minirt-run`` prints; what ran before and after (start-up, module load, the harness's
file I/O) is reported per row as ``outside``.

MACs per dispatch come from the kernel form: a contraction (a reduction by ``add`` of a
product) does one multiply-accumulate per point of its domain, padded window taps
included (they are executed); other kernels have none.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile

from toolchain.emu.cycles import CycleEstimate, cycles_by_row
from toolchain.emu.run import EmuError
from toolchain.kernel.form import Apply, Kernel
from toolchain.link.map_file import MapSection, parse_map

__all__ = [
    "CodeRange",
    "Profile",
    "ProfileLayout",
    "ProfileProbe",
    "ProfileRow",
    "kernel_macs",
    "profile_layout",
]

# Row kinds, and the plugin's range kinds: d = a dispatch (its entry makes it the owner of
# the callees that follow), o = owner code (runtime, start-up, harness), c = a callee.
DISPATCH, RUNTIME, STARTUP, HARNESS, OTHER = "dispatch", "runtime", "start-up", "harness", "other"
_OWNER_ROWS = (RUNTIME, STARTUP, HARNESS, OTHER)  # after the dispatch rows, in this order
_RUNTIME_PART_ROW = {"core": RUNTIME, "platform": STARTUP, "harness": HARNESS}
_DISPATCH_NAME = re.compile(r"d(\d+)_\w*$")
# What --profile --json copies of each dispatch's row in the build's dispatches file.
_LAYER_FIELDS = ("label", "sources", "weights_bytes", "activation_in_bytes",
                 "activation_out_bytes", "arena_live_bytes")
_RANGES_FILE = "minirt_profile_ranges.txt"
_PROFILE_FILE = "minirt_profile.txt"


@dataclass(frozen=True)
class CodeRange:
    """[start, end) of code, what kind of code it is ('d', 'o' or 'c') and its row."""

    start: int
    end: int
    kind: str
    row: int


@dataclass(frozen=True)
class ProfileLayout:
    """The rows of a profile (dispatch functions in program order, then runtime,
    start-up, harness, other) and the code ranges charged to them."""

    rows: tuple[str, ...]
    kinds: tuple[str, ...]  # per row: DISPATCH, RUNTIME, STARTUP, HARNESS or OTHER
    ranges: tuple[CodeRange, ...]

    def ranges_text(self) -> str:
        """The plugin's ranges file."""
        lines = [f"rows {len(self.rows)}"]
        lines += [f"{r.start:x} {r.end:x} {r.kind} {r.row}" for r in self.ranges]
        return "\n".join(lines) + "\n"


def _generated(section: MapSection) -> bool:
    """Whether an input section comes from generated code (not runtime_c, whose objects
    the link compiles into obj/, nor an archive)."""
    return (section.member is None and section.file != "<internal>"
            and Path(section.file).parent.name != "obj")


def _function(section: MapSection) -> str:
    """The function an input section holds (-ffunction-sections: ``.text.NAME``)."""
    return section.name.removeprefix(".text.") if section.name.startswith(".text.") else ""


def _undefined_in(objects: Iterable[Path]) -> set[str]:
    """Symbols the generated objects call without defining (memcpy, __aeabi_*)."""
    names: set[str] = set()
    for obj in objects:
        try:
            with obj.open("rb") as f:
                symtab = ELFFile(f).get_section_by_name(".symtab")
                if symtab is not None:
                    names.update(s.name for s in symtab.iter_symbols()
                                 if s.name and s["st_shndx"] == "SHN_UNDEF")
        except OSError as e:
            raise EmuError(f"{obj}: cannot read the generated object for the profile: "
                           f"{e.strerror or e} (rebuild)") from None
    return names


_OUTLINED = "OUTLINED_FUNCTION_"  # LLVM's machine outliner's functions
_UKERNEL = re.compile(r"runtime_c__ukernel__")  # runtime_c/ukernel's objects


def profile_layout(map_path: Path) -> ProfileLayout:
    """The profile rows and code ranges of a linked image, from its link map (and the
    generated objects it names, for the runtime functions they call)."""
    map_path = Path(map_path)
    try:
        _, inputs = parse_map(map_path.read_text())
    except OSError as e:
        raise EmuError(f"{map_path}: cannot read the link map: {e.strerror or e}") from None
    code = sorted((s for s in inputs if s.output == ".text" and s.size), key=lambda s: s.vma)
    generated = {s.file for s in code if _generated(s)}
    called = _undefined_in(map_path.parent / f for f in sorted(generated))
    dispatches = sorted(
        ((int(m.group(1)), _function(s)) for s in code
         if _generated(s) and (m := _DISPATCH_NAME.fullmatch(_function(s)))),
    )
    rows = [name for _, name in dispatches] + list(_OWNER_ROWS)
    kinds = [DISPATCH] * len(dispatches) + list(_OWNER_ROWS)
    row_of = {name: i for i, name in enumerate(rows)}
    ranges: list[CodeRange] = []
    for s in code:
        name = _function(s)
        if _generated(s):
            kind, row = ("d", row_of[name]) if name in row_of else ("c", 0)
        elif s.member is not None or name in called or name.startswith(_OUTLINED) or \
                _UKERNEL.match(Path(s.file).name):
            # a helper, runtime code the dispatches call, a sequence the machine
            # outliner (-Oz) took out of a runtime function, or a microkernel's own
            # function (runtime_c/ukernel, run only from the kernel a dispatch called):
            # its caller's row, whoever that is (owner code sets the row itself)
            kind, row = "c", 0
        else:
            part = re.match(r"runtime_c__([^_]+)__", Path(s.file).name)
            kind, row = "o", row_of[_RUNTIME_PART_ROW.get(part.group(1) if part else "", OTHER)]
        if ranges and ranges[-1].end > s.vma:
            raise EmuError(f"{map_path}: overlapping code sections at {s.vma:#x}")
        ranges.append(CodeRange(s.vma, s.vma + s.size, kind, row))
    return ProfileLayout(tuple(rows), tuple(kinds), tuple(ranges))


# --------------------------------------------------------------------------- MACs


def kernel_macs(kernel: Any) -> int:
    """Multiply-accumulates of one run of a dispatch's kernel: the domain size of a
    contraction (add-reduction of a product, through any conversions), else 0."""
    if not isinstance(kernel, Kernel) or kernel.combine != "add":
        return 0
    body = kernel.body
    while isinstance(body, Apply) and body.op == "convert" and len(body.args) == 1:
        body = body.args[0]
    if not (isinstance(body, Apply) and body.op == "multiply"):
        return 0
    macs = 1
    for extent in kernel.domain:
        macs *= extent
    return macs


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class ProfileRow:
    """One row: instructions of one inference (``instructions``, of which
    ``callee_instructions`` ran in called helpers) and before / after it (``outside``)."""

    name: str
    kind: str
    instructions: int
    callee_instructions: int
    outside: int
    macs: int | None = None  # dispatch rows whose kernel is known
    cycles: int | None = None  # estimated (toolchain/emu/cycles.py), when the core has a table
    # The build's row for the dispatch (report/layers.py): its label in the model's own
    # names, its sources, weights, activation and live arena bytes.
    layer: Mapping[str, Any] | None = None

    def title(self, names: str = "short") -> str:
        """The row's name in the table: the dispatch's label (``short``), every source
        name of the model it runs (``full``) or its function's name (``function``)."""
        if self.layer is None or names == "function":
            return self.name
        if names == "full":
            full = " | ".join(s["name"] for s in self.layer.get("sources", ()))
            return full or str(self.layer.get("label") or self.name)
        return str(self.layer.get("label") or self.name)

    @property
    def per_mac(self) -> float | None:
        """Instructions per multiply-accumulate, for contractions."""
        return self.instructions / self.macs if self.macs else None


@dataclass(frozen=True)
class Profile:
    """The per-row profile of one run; ``total`` equals the run's instruction count."""

    rows: tuple[ProfileRow, ...]
    total: int
    board: str = ""
    model: str = ""
    notes: tuple[str, ...] = field(default=())
    clock_hz: int = 0  # the board's clock, for the rows' estimated milliseconds

    @property
    def macs(self) -> int:
        return sum(r.macs or 0 for r in self.rows)

    def share(self, row: ProfileRow) -> float:
        """A row's share of the inference, in percent."""
        return 100.0 * row.instructions / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        """The profile as data (``minirt-run --profile --json``)."""
        return {
            "board": self.board,
            "model": self.model,
            "instructions": self.total,
            "macs": self.macs,
            "instructions_per_mac": self.total / self.macs if self.macs else None,
            "cycles": self.cycles,
            "ms": self.ms(self.cycles),
            "dispatches": [self._row_json(r) for r in self.rows if r.kind == DISPATCH],
            "other_rows": [self._row_json(r) for r in self.rows if r.kind != DISPATCH],
            "outside_inference": {r.name: r.outside for r in self.rows if r.outside},
            **self._memory_json(),
        }

    def _row_json(self, r: ProfileRow) -> dict[str, Any]:
        row = {"name": r.name, "kind": r.kind, "macs": r.macs,
               "instructions": r.instructions, "callee_instructions": r.callee_instructions,
               "instructions_per_mac": r.per_mac, "share": self.share(r),
               "cycles": r.cycles, "ms": self.ms(r.cycles)}
        if r.layer is not None:  # the model's names and the memory the layer touches
            row.update({key: r.layer.get(key) for key in _LAYER_FIELDS if key in r.layer})
            row["op"] = r.layer.get("kind")
        return row

    @property
    def cycles(self) -> int | None:
        """Estimated cycles of the inference (None: the core has no timing table)."""
        if any(r.cycles is None for r in self.rows):
            return None
        return sum(r.cycles or 0 for r in self.rows)

    def with_cycles(self, estimate: CycleEstimate | None, layout: ProfileLayout) -> Profile:
        """This profile with each row's estimated cycles (toolchain/emu/cycles.py), split
        over the rows by ``layout``'s code ranges; itself without an estimate."""
        if estimate is None:
            return self
        per_row = cycles_by_row(estimate, [(r.start, r.end, r.kind, r.row) for r in layout.ranges],
                                [r.callee_instructions for r in self.rows])
        rows = tuple(dataclasses.replace(r, cycles=c) for r, c in zip(self.rows, per_row,
                                                                       strict=True))
        return dataclasses.replace(self, rows=rows, clock_hz=estimate.clock_hz)

    def ms(self, cycles: int | None) -> float | None:
        """``cycles`` in milliseconds at the board's clock."""
        return cycles * 1000.0 / self.clock_hz if cycles is not None and self.clock_hz else None

    def _memory_json(self) -> dict[str, Any]:
        """The peak-memory timeline: arena bytes live at each command, and its peak."""
        live = [(r.title(), int(r.layer.get("arena_live_bytes", 0)))
                for r in self.rows if r.kind == DISPATCH and r.layer is not None]
        if not live:
            return {}
        return {"arena_timeline": [{"label": n, "arena_live_bytes": b} for n, b in live],
                "arena_peak_bytes": max(b for _, b in live)}

    def format(self, names: str = "short") -> str:
        """The profile as a table: one line per dispatch, then the runtime's rows and
        the total; what ran outside the inference below it. `names` picks how the
        dispatches are named (ProfileRow.title)."""
        width = max([len(r.title(names)) for r in self.rows] + [24])
        callees = any(r.callee_instructions for r in self.rows)
        timed = self.cycles is not None
        head = (f"{'dispatch':<{width}} {'MACs':>12} {'instructions':>13}"
                + (f" {'in callees':>11}" if callees else "")
                + f" {'insn/MAC':>9} {'share':>7}"
                + (f" {'est. cycles':>13} {'est. ms':>9}" if timed else ""))
        lines = [f"profile: one inference on {self.board} ({self.model})", head]

        def line(name: str, macs: int | None, insns: int, callee: int, share: float,
                 cycles: int | None) -> str:
            per = f"{insns / macs:9.2f}" if macs else f"{'':9}"
            ms = self.ms(cycles)
            return (f"{name:<{width}} {_num(macs) if macs else '':>12} {_num(insns):>13}"
                    + (f" {_num(callee) if callee else '':>11}" if callees else "")
                    + f" {per} {share:6.1f}%"
                    + (f" {_num(cycles or 0):>13} {ms or 0:9.3f}" if timed else ""))

        for r in self.rows:
            if r.kind == DISPATCH or r.instructions:
                lines.append(line(r.title(names), r.macs, r.instructions, r.callee_instructions,
                                  self.share(r), r.cycles))
        lines.append(line("total", self.macs, self.total,
                          sum(r.callee_instructions for r in self.rows), 100.0, self.cycles))
        outside = [f"{r.name} {_num(r.outside)}" for r in self.rows if r.outside]
        if outside:
            lines.append("outside the inference: " + ", ".join(outside))
        lines += list(self.notes)
        return "\n".join(lines)


def _num(n: int) -> str:
    return f"{n:,}"


class ProfileProbe:
    """A run probe (toolchain.emu.run.Probe) that collects the per-row counts of
    ``layout``; ``profile(...)`` then makes the Profile."""

    def __init__(self, layout: ProfileLayout) -> None:
        self.layout = layout
        self.counts: list[tuple[int, int, int, int]] | None = None
        self.count: int | None = None

    def plugin_args(self, work: Path) -> dict[str, str]:
        """Writes the ranges file; the plugin writes the profile beside it."""
        (work / _RANGES_FILE).write_text(self.layout.ranges_text())
        return {"ranges": str(work / _RANGES_FILE), "profile": str(work / _PROFILE_FILE)}

    def collect(self, work: Path, count_line: str) -> None:
        """Reads the plugin's rows: 'ROW INSIDE INSIDE_CALLEES WHOLE WHOLE_CALLEES'."""
        path = work / _PROFILE_FILE
        if not path.is_file():
            return
        counts: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)] * len(self.layout.rows)
        for text in path.read_text().splitlines():
            row, *values = map(int, text.split())
            counts[row] = (values[0], values[1], values[2], values[3])
        self.counts = counts
        m = re.search(r"count=(\d+) begins=\d+ ends=(\d+)", count_line)
        if m and int(m.group(2)) > 0:
            self.count = int(m.group(1))

    def profile(self, macs: Mapping[str, int] | None = None, board: str = "",
                model: str = "", layers: Mapping[str, Mapping[str, Any]] | None = None
                ) -> Profile:
        """The Profile of the run; ``macs`` by dispatch function name (missing names
        have no MAC figure), ``layers`` the build's rows by function name (names,
        weights and memory: report/layers.py). Raises EmuError when the run left no
        profile."""
        if self.counts is None or self.count is None:
            raise EmuError("the run left no profile (it did not reach the end marker)")
        rows = []
        for name, kind, (inside, inside_callee, whole, _) in zip(
                self.layout.rows, self.layout.kinds, self.counts):
            rows.append(ProfileRow(name, kind, inside, inside_callee, whole - inside,
                                   (macs or {}).get(name) if kind == DISPATCH else None,
                                   layer=(layers or {}).get(name) if kind == DISPATCH else None))
        total = sum(r.instructions for r in rows)
        if total != self.count:  # the plugin counts both the same way: a bug if not
            raise EmuError(f"profile rows add up to {total} instructions, the run counted "
                           f"{self.count}")
        return Profile(tuple(rows), total, board, model)


def dispatch_macs(kernels: Sequence[Any]) -> dict[str, int]:
    """MACs per dispatch function name, from the program's kernels."""
    return {k.name: kernel_macs(k) for k in kernels if hasattr(k, "name")}
