"""A sample of the reference passes built and run on boards under QEMU.

Cases are built in batches, their graphs side by side in one firmware (one build and one
QEMU boot for BATCH cases: difftest.merge_graphs); a batch that fails as a whole is
split in halves until each failing case stands alone, so every failure is charged to
one case. Each case's outputs are judged by its own checks (compare.py), against the
test's expected values, not the reference's: the firmware passes the suite itself.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from toolchain import pipeline
from toolchain.emu.run import EmuError, EmuTimeout, run_image
from toolchain.loops.rules import tiles_for_cold_kernels
from toolchain.module.reader import read_module
from toolchain.passes import complex_io
from toolchain.target import Board, load_board
from toolchain.testing.conformance.outcome import Prepared, Result, verdict_of_exception
from toolchain.testing.difftest import merge_graphs

__all__ = ["BOARDS", "BATCH", "run_on_board"]

# A Cortex-M4 (Thumb-2, single-precision FPU: f64 and i64 through compiler helpers) and a
# 64-bit host: the two ends of what minirt targets.
BOARDS = ("cortex-m4", "x86-64")
BATCH = 16
RUN_TIMEOUT_S = 60.0  # a batch of small graphs runs in well under a second


def run_on_board(cases: list[tuple[Result, list[Prepared]]], board: Board | str,
                 work: Path) -> list[Result]:
    """Each case (all its data sets) built and run on `board`; a Result per case."""
    board = load_board(board) if isinstance(board, str) else board
    units = [(r, p) for r, ps in cases for p in ps]
    verdicts: dict[int, tuple[str, str]] = {}
    for k in range(0, len(units), BATCH):
        _run_group(units[k:k + BATCH], board, work, verdicts)
    out = []
    for r, ps in cases:
        worst = ("pass", "")
        for p in ps:
            v = verdicts[id(p)]
            if v[0] != "pass":
                worst = v
                break
        out.append(Result(r.suite, r.name, r.op, *worst))
    return out


def _run_group(units: list[tuple[Result, Prepared]], board: Board, work: Path,
               verdicts: dict[int, tuple[str, str]]) -> None:
    if not units:
        return
    status, reason, outputs = _build_and_run([p for _, p in units], board, work)
    if status != "pass" and len(units) > 1:
        half = len(units) // 2
        _run_group(units[:half], board, work, verdicts)
        _run_group(units[half:], board, work, verdicts)
        return
    if status != "pass":
        verdicts[id(units[0][1])] = (status, reason)
        return
    k = 0
    for _, p in units:
        got = outputs[k:k + len(p.graph.outputs)]
        k += len(p.graph.outputs)
        problem = p.judge(got)
        verdicts[id(p)] = ("pass", "") if problem is None else ("wrong", problem)


def _build_and_run(prepared: list[Prepared], board: Board, work: Path,
                   ) -> tuple[str, str, list[np.ndarray]]:
    """(status, reason, outputs) of the cases' graphs built side by side and run."""
    work.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="fw-", dir=work))
    graphs = [p.graph for p in prepared]
    inputs = [x for p in prepared for x in p.inputs]
    try:
        try:
            with tiles_for_cold_kernels():  # small graphs, tiled as a large model's are
                build = pipeline.compile_graph(merge_graphs(graphs), board, tmp / "fw",
                                               log=lambda _: None)
        except Exception as e:  # noqa: BLE001 - sorted into a refusal or a crash
            return (*verdict_of_exception(e), [])
        module = read_module(build.module)
        try:
            result = run_image(board, build.elf, pipeline.encode_inputs(module.inputs, inputs),
                               timeout=RUN_TIMEOUT_S, count_instructions=False)
        except (EmuTimeout, EmuError) as e:
            return "crash", f"{type(e).__name__}: {e}".splitlines()[0], []
        if result.exit_code != 0 or result.outputs is None:
            extra = (result.console.strip() or result.stderr.strip())[-200:]
            return "crash", f"exit {result.exit_code}: {result.diagnosis} {extra}".strip(
                ).replace("\n", " "), []
        # A complex output arrives as its interleaved parts (passes/complex.py).
        outs = [t for g in graphs for t in g.outputs]
        return "pass", "", complex_io(pipeline.decode_outputs(module.outputs, result.outputs),
                                      outs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
