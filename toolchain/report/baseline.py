"""A size report against a baseline size.json: the diff per component and the CI gate.

Firmware teams keep the size.json of their last release (or of the main branch) and
fail a change that makes any component grow past a threshold: ``minirt-size BUILD_DIR
--baseline OLD/size.json --max-growth PCT``. Every flash and RAM component is gated,
and so are the two totals. A component fails when it grows by more than PCT percent of
its baseline size; with the default of 0 %, by any byte at all. A component that was 0 B
in the baseline and is not now has grown without bound and fails at any PCT.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolchain.report.size import COMPONENT_LABELS, FLASH_COMPONENTS, RAM_COMPONENTS, _num

__all__ = ["DEFAULT_MAX_GROWTH", "BaselineError", "Change", "compare", "format_diff",
           "load_baseline"]

DEFAULT_MAX_GROWTH = 0.0  # percent: any growth fails unless the team allows some

_MEMORIES = (("flash", "flash", FLASH_COMPONENTS, "flash_total"),
             ("RAM", "ram", RAM_COMPONENTS, "ram_total"))


class BaselineError(Exception):
    """The baseline file cannot be read or is no size.json; the message says which."""


@dataclass(frozen=True)
class Change:
    """One component (or total) of one memory, in the baseline and now."""

    memory: str  # "flash" or "RAM"
    component: str  # a FLASH_COMPONENTS / RAM_COMPONENTS key, or "total"
    old: int
    new: int

    @property
    def label(self) -> str:
        return COMPONENT_LABELS.get(self.component, self.component)

    @property
    def delta(self) -> int:
        return self.new - self.old

    @property
    def percent(self) -> float | None:
        """Growth in percent of the baseline; None when the baseline was 0 B."""
        return 100.0 * self.delta / self.old if self.old else None

    def grew_past(self, max_growth: float) -> bool:
        """True when it grew by more than `max_growth` percent of its baseline size."""
        if self.delta <= 0:
            return False
        return self.old == 0 or self.delta * 100 > max_growth * self.old

    def describe(self) -> str:
        """'flash component dispatch code grew by 24 B (+16.44 %): 146 B -> 170 B'."""
        what = f"{self.memory} total" if self.component == "total" else \
            f"{self.memory} component {self.label}"
        pct = f"{self.percent:+.2f} %" if self.percent is not None else "from 0 B"
        return (f"{what} grew by {_num(self.delta)} B ({pct}): {_num(self.old)} B -> "
                f"{_num(self.new)} B")


def load_baseline(path: Path) -> dict[str, Any]:
    """The size.json at `path` (or in the build directory `path`), checked to have the
    fields a comparison reads. Raises BaselineError naming the file and the problem."""
    path = Path(path)
    if path.is_dir():
        path = path / "size.json"
    try:
        # A FIFO or device would block or never end: only a regular file is read.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise BaselineError(f"{path}: cannot read the baseline: not a regular file")
        if os.stat(path).st_size > _MAX_BASELINE:
            raise BaselineError(f"{path}: not a size.json (larger than "
                                f"{_MAX_BASELINE >> 20} MiB)")
        data = json.loads(path.read_text())
    except OSError as e:
        raise BaselineError(f"{path}: cannot read the baseline: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        reason = " ".join(str(e).split())
        raise BaselineError(f"{path}: not a size.json (invalid JSON: {reason})") from None
    except RecursionError:
        raise BaselineError(f"{path}: not a size.json (nested too deeply)") from None
    board = data.get("board") if isinstance(data, dict) else None
    if not isinstance(board, str) or not board.isprintable():
        raise BaselineError(f"{path}: not a size.json (no board)")
    for _, key, _, total in _MEMORIES:
        table = data.get(key)
        if not isinstance(table, dict) or not all(map(_is_byte_count, table.values())):
            raise BaselineError(f"{path}: not a size.json ('{key}' is not a table of byte "
                                "counts by component)")
        if total not in data:
            raise BaselineError(f"{path}: not a size.json (no '{total}')")
        if not _is_byte_count(data[total]):
            raise BaselineError(f"{path}: not a size.json ('{total}' is not a byte count)")
    return data


# Byte counts beyond any memory (and beyond a float, which the percentages divide in).
_MAX_BYTES = 1 << 64
_MAX_BASELINE = 64 << 20


def _is_byte_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_BYTES


def compare(current: dict[str, Any], baseline: dict[str, Any]) -> list[Change]:
    """Every component and total of both memories, baseline against current (both in
    size.json's form: SizeReport.to_json). A component missing on one side is 0 B."""
    changes = []
    for memory, key, components, total in _MEMORIES:
        names = list(components) + [k for k in baseline[key] if k not in components]
        for name in names:
            changes.append(Change(memory, name, baseline[key].get(name, 0),
                                  current[key].get(name, 0)))
        changes.append(Change(memory, "total", baseline[total], current[total]))
    return changes


def format_diff(changes: list[Change], max_growth: float) -> str:
    """The diff table: baseline, now, change in bytes and percent, and a mark on each
    row that fails the gate."""
    rows = [f"{'memory':<7}{'component':<20}{'baseline':>10}{'now':>10}{'change':>10}"
            f"{'%':>10}"]
    for c in changes:
        pct = f"{c.percent:+.2f}" if c.percent is not None else ("new" if c.new else "")
        mark = "  over the allowed growth" if c.grew_past(max_growth) else ""
        rows.append(f"{c.memory:<7}{c.label:<20}{_num(c.old):>10}{_num(c.new):>10}"
                    f"{c.delta:>+10}{pct:>10}{mark}")
    return "\n".join(rows)
