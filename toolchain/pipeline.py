"""The whole build: model file -> verified graph -> Program -> objects -> firmware.

Everything is written into a fresh temporary directory beside the output directory and
moved into place only when every step succeeded, so a failed build leaves nothing
half-written behind.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolchain.codegen.image import emit_image_object
from toolchain.graph.ir import Graph
from toolchain.link.build import LinkResult, link_firmware
from toolchain.loader import load_graph
from toolchain.module.from_program import module_from_program
from toolchain.passes import fold_constants
from toolchain.schedule import Program, schedule
from toolchain.schedule.program import _nbytes
from toolchain.target import Board, load_board


@dataclass
class BuildResult:
    out_dir: Path
    board: Board
    graph: Graph
    program: Program
    module: bytes
    link: LinkResult

    @property
    def elf(self) -> Path:
        return self.out_dir / "firmware.elf"


def compile_graph(graph: Graph, board: Board, out_dir: Path, log=print) -> BuildResult:
    """Builds firmware for `graph` into `out_dir` (replaced only on success)."""
    target = board.target_info
    fold_constants(graph)
    program = schedule(graph)
    log(f"minirt-build: {len(program.steps)} dispatches, arena {program.arena_size} B, "
        f"{len(program.constants)} constants")
    module = module_from_program(program, target.name)
    obj = emit_image_object([s.kernel for s in program.steps], module, target.target_id,
                            program.arena_size, [_nbytes(t) for t in program.inputs],
                            [_nbytes(t) for t in program.outputs], target)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        (tmp / "model.mrt").write_bytes(module)
        (tmp / "dispatch.o").write_bytes(obj)
        link = link_firmware(board, [tmp / "dispatch.o"], tmp)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.replace(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    link = _moved(link, tmp, out_dir)
    return BuildResult(out_dir, board, graph, program, module, link)


def _moved(link: LinkResult, old: Path, new: Path) -> LinkResult:
    def fix(p):
        if isinstance(p, Path) and p.is_relative_to(old):
            return new / p.relative_to(old)
        return p

    fields = {k: fix(v) for k, v in link.__dict__.items()}
    fields["objects"] = tuple(fix(p) for p in link.objects)
    return LinkResult(**fields)


def build_model(model: str | Path, board_name: str, out_dir: str | Path | None = None,
                entry: str = "main", log=print) -> BuildResult:
    """Loads `model` and builds it for board `board_name`."""
    board = load_board(board_name)
    graph = load_graph(model, entry)
    if out_dir is None:
        out_dir = Path("build") / f"{Path(model).stem}-{board.identifier}"
    return compile_graph(graph, board, Path(out_dir), log)
