"""What a finished build is: the linked image and everything it was made from.

``pipeline.compile_graph`` makes a BuildResult and the tools above it read one (the size
report, report/size.py, reads its ELF, map and board). The type lives here, with the
link whose artifacts it names, so that report/ need not import the pipeline above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from toolchain.graph.ir import Graph
from toolchain.link.build import LinkResult
from toolchain.schedule.program import Program
from toolchain.target import Board

__all__ = ["BuildResult", "StackSizing"]


@dataclass(frozen=True)
class StackSizing:
    """The stack an image reserves: ``reserved`` = the ``measured`` depth of a run under
    QEMU plus emu/stack.py's margin."""

    measured: int
    reserved: int


@dataclass
class BuildResult:
    """A build's output directory, the board, graph, program and module it was built
    from, its link, and the stack it reserves."""

    out_dir: Path
    board: Board
    graph: Graph
    program: Program
    module: bytes
    link: LinkResult
    stack: StackSizing | None = None  # None: the board's stack_size (not measured)

    @property
    def elf(self) -> Path:
        return self.out_dir / "firmware.elf"
