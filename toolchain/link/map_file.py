"""Reads the link map ld.lld writes beside each image (``-Map``, link/build.py).

The map is the linker's account of where every input section went, and its row format
is the linker's: so its parser lives with the link that writes it. The size report
(report/size.py) attributes bytes by it and the profile (emu/profile.py) charges code
ranges by it; both read it through here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MapSection", "OutputSection", "parse_map"]

# "     VMA      LMA     Size Align Out     In      Symbol" rows: four hex/dec columns,
# then the name indented by 0 (output section), 8 (input section) or 16 (symbol).
_MAP_ROW = re.compile(r"^\s*([0-9a-fA-F]+)\s+([0-9a-fA-F]+)\s+([0-9a-fA-F]+)\s+(\d+) (.*)$")
_INPUT = re.compile(r"^(?P<file>.*?)(?:\((?P<member>[^()]*)\))?:\((?P<section>[^()]*)\)$")


@dataclass(frozen=True)
class MapSection:
    """One input section of the link map."""

    output: str  # the output section it went into (".text")
    vma: int
    lma: int
    size: int
    align: int
    file: str  # object or archive path as the map writes it; "<internal>" for the linker's
    member: str | None  # archive member ("_udivsi3.o") or None
    name: str  # the input section name (".text.main")


@dataclass(frozen=True)
class OutputSection:
    """One output section of the link map (".text", ".bss")."""

    name: str
    vma: int
    lma: int
    size: int


def parse_map(text: str) -> tuple[dict[str, OutputSection], list[MapSection]]:
    """Parses an ld.lld ``-Map`` file: output sections by name, and input sections."""
    outputs: dict[str, OutputSection] = {}
    inputs: list[MapSection] = []
    current: str | None = None
    for line in text.splitlines():
        m = _MAP_ROW.match(line)
        if not m:
            continue
        vma, lma, size = (int(m.group(i), 16) for i in (1, 2, 3))
        align = int(m.group(4))
        rest = m.group(5)
        indent = len(rest) - len(rest.lstrip(" "))
        name = rest.strip()
        if indent == 0:
            # Output sections and top-level assignments ("_stack_size = 0x4000").
            current = None if "=" in name or not name else name
            if current is not None:
                outputs[current] = OutputSection(current, vma, lma, size)
        elif indent == 8 and current is not None:
            im = _INPUT.match(name)
            if im:
                inputs.append(
                    MapSection(current, vma, lma, size, align, im.group("file"),
                               im.group("member"), im.group("section"))
                )
    return outputs, inputs
