"""Random graphs compiled and run on boards under QEMU against the reference.

`prepare(seed)` generates graph `seed`, draws its inputs, runs the reference and the
tolerance estimate (tolerance.py), and sends the graph through MLIR when every op has a
StableHLO spelling: printed (to_mlir.py), parsed, imported, verified and compared with
the generated graph, which must come back unchanged; the imported graph is what gets
compiled. `run_batch` compiles several cases into one firmware (their graphs side by
side: one build and one QEMU boot for all, which is what makes a thousand graphs per
board affordable; fusion never crosses graphs, as they share no tensor), runs it and
judges each case. A batch that fails to build or run is split in halves until each
failing case stands alone, so every failure is charged to one graph.

Outcomes: `ok`; `mismatch` (an output outside its tolerance); `build` (the compiler
raised); `crash` (the firmware did not finish with status 0, or hung); `import` (the
printed MLIR does not parse or import) and `roundtrip` (it imports as another graph);
`reference` (the reference itself raised, a bug in it or in the generator).
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.emu.run import EmuError, EmuTimeout, run_image
from toolchain.frontend import import_module
from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_graph
from toolchain.loops.rules import tiles_for_cold_kernels
from toolchain.mlir.parser import parse_text
from toolchain.module.reader import read_module
from toolchain.passes import complex_io
from toolchain.reference import run_graph
from toolchain.target import Board, load_board
from toolchain.testing.random_graphs import RandomGraph, expand_rng, generate
from toolchain.testing.to_mlir import NotExpressible, graph_diff, graph_to_mlir
from toolchain.testing.tolerance import compare_outputs, tolerances

__all__ = ["Case", "Outcome", "prepare", "run_batch", "run_single", "merge_graphs",
           "run_side_by_side", "BOARDS"]

# The boards the campaign covers: a Cortex-M4 (Thumb-2, single-precision FPU: f64 and
# i64 through the compiler helpers), a 32-bit RISC-V with F, and two 64-bit hosts.
BOARDS = ("cortex-m4", "riscv32", "aarch64", "x86-64")
# QEMU runs of these small graphs take well under a second; a graph whose loop runs away
# is a failure, not a wait.
RUN_TIMEOUT_S = 30.0


@dataclass
class Case:
    """One random graph, ready to run: the graph to compile, its inputs, the reference
    outputs and their tolerances, and the MLIR it went through (None when it has ops
    StableHLO cannot spell)."""

    rg: RandomGraph
    build_graph: Graph
    inputs: list[np.ndarray]
    want: list[np.ndarray]
    atol: list[np.ndarray | None]
    mlir: str | None
    problem: Outcome | None = None  # a failure before any board (import, roundtrip, ...)

    @property
    def seed(self) -> int:
        return self.rg.seed


@dataclass
class Outcome:
    seed: int
    board: str
    status: str  # ok, mismatch, build, crash, import, roundtrip, reference
    detail: str = ""
    ops: Counter = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def prepare(seed: int, max_ops: int = 8, rg: RandomGraph | None = None,
            inputs: list[np.ndarray] | None = None) -> Case:
    """Graph `seed` (or `rg`) with its inputs (or `inputs`), reference outputs,
    tolerances and MLIR round trip. An rng node is computed as the importer expands
    it (random_graphs.expand_rng): that graph is what runs and what the import of the
    printed stablehlo.rng must give."""
    rg = rg or generate(seed, max_ops)
    inputs = rg.inputs() if inputs is None else list(inputs)
    graph = expand_rng(rg.graph)
    try:
        want = run_graph(graph, inputs)
        atol = tolerances(graph, inputs, want, rg.seed)
    except Exception as e:  # noqa: BLE001 - any exception here is the finding
        problem = Outcome(rg.seed, "host", "reference", _exc(e), rg.ops)
        return Case(rg, graph, inputs, [], [], None, problem)
    case = Case(rg, copy.deepcopy(graph), inputs, want, atol, None)
    try:
        case.mlir = graph_to_mlir(rg.graph, rg.seed)
    except NotExpressible:
        return case
    try:
        imported = import_module(parse_text(case.mlir, f"random_{rg.seed}.mlir"))
        verify_graph(imported)
    except CompileError as e:
        case.problem = Outcome(rg.seed, "host", "import", str(e), rg.ops)
        return case
    except Exception as e:  # noqa: BLE001
        case.problem = Outcome(rg.seed, "host", "import", _exc(e), rg.ops)
        return case
    diff = graph_diff(graph, imported)
    if diff is not None:
        case.problem = Outcome(rg.seed, "host", "roundtrip", diff, rg.ops)
        return case
    case.build_graph = imported
    return case


def _exc(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {e}{where}"


def merge_graphs(graphs: list[Graph]) -> Graph:
    """One graph computing all of `graphs` side by side (deep copies: the build
    rewrites its graph in place): their inputs in order, then their outputs."""
    merged = Graph("main")
    for g in copy.deepcopy(graphs):
        merged.inputs += g.inputs
        merged.nodes += g.nodes
        merged.outputs += g.outputs
    return merged


def run_side_by_side(graphs: list[Graph], inputs: list[np.ndarray], board: Board | str,
                     work: Path) -> list[np.ndarray]:
    """Builds `graphs` into one image for `board` (merge_graphs), runs it once under
    QEMU on `inputs` (every graph's inputs, in order) and returns every graph's outputs,
    in order: one firmware checks many small models. Raises FirmwareFailed with QEMU's
    diagnosis when the image does not finish its inference."""
    from toolchain.pipeline import FirmwareFailed, compile_graph, decode_outputs, encode_inputs

    board = load_board(board) if isinstance(board, str) else board
    result = compile_graph(merge_graphs(graphs), board, work, log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, inputs),
                    count_instructions=False)
    if run.exit_code != 0:
        raise FirmwareFailed(run.diagnosis)
    return decode_outputs(module.outputs, run.outputs)


def run_single(case: Case, board: Board | str, work: Path) -> Outcome:
    """Builds and runs one case on `board`."""
    return run_batch([case], board, work)[0]


def run_batch(cases: list[Case], board: Board | str, work: Path) -> list[Outcome]:
    """Builds the cases into one firmware for `board`, runs it and judges every case;
    a batch that fails as a whole is split until each failing case is found."""
    board = load_board(board) if isinstance(board, str) else board
    outcomes: dict[int, Outcome] = {}
    todo = []
    for c in cases:
        if c.problem is not None:
            outcomes[id(c)] = Outcome(c.seed, board.identifier, c.problem.status,
                                      c.problem.detail, c.rg.ops)
        else:
            todo.append(c)
    _run_group(todo, board, Path(work), outcomes)
    return [outcomes[id(c)] for c in cases]


def _run_group(cases: list[Case], board: Board, work: Path,
               outcomes: dict[int, Outcome]) -> None:
    if not cases:
        return
    status, detail, outputs = _build_and_run([c.build_graph for c in cases], board, work,
                                             [x for c in cases for x in c.inputs])
    if status != "ok" and len(cases) > 1:
        half = len(cases) // 2
        _run_group(cases[:half], board, work, outcomes)
        _run_group(cases[half:], board, work, outcomes)
        return
    if status != "ok":
        c = cases[0]
        outcomes[id(c)] = Outcome(c.seed, board.identifier, status, detail, c.rg.ops)
        return
    k = 0
    for c in cases:
        got = outputs[k:k + len(c.want)]
        k += len(c.want)
        problems = compare_outputs(got, c.want, c.atol)
        outcomes[id(c)] = Outcome(c.seed, board.identifier, "mismatch" if problems else "ok",
                                  "\n".join(problems), c.rg.ops)


def _build_and_run(graphs: list[Graph], board: Board, work: Path,
                   inputs: list[np.ndarray]) -> tuple[str, str, list[np.ndarray]]:
    """(status, detail, outputs) of building `graphs` side by side and running them."""
    from toolchain import pipeline

    work.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="fw-", dir=work))
    try:
        try:
            with tiles_for_cold_kernels():  # small graphs, tiled as a large model's are
                build = pipeline.compile_graph(merge_graphs(graphs), board, tmp / "fw",
                                               log=lambda _: None)
        except Exception as e:  # noqa: BLE001 - any exception here is the finding
            return "build", _exc(e), []
        module = read_module(build.module)
        try:
            result = run_image(board, build.elf, pipeline.encode_inputs(module.inputs, inputs),
                               timeout=RUN_TIMEOUT_S, count_instructions=False)
        except EmuTimeout as e:
            return "crash", f"timeout: {e}", []
        except EmuError as e:
            return "crash", str(e), []
        if result.exit_code != 0 or result.outputs is None:
            extra = (result.console.strip() or result.stderr.strip())[-300:]
            return "crash", f"exit {result.exit_code}: {result.diagnosis} {extra}".strip(), []
        # A complex output arrives as its interleaved parts (passes/complex.py).
        outputs = [t for g in graphs for t in g.outputs]
        return "ok", "", complex_io(pipeline.decode_outputs(module.outputs, result.outputs),
                                    outputs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
