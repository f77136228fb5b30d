"""Control flow in the command list (schedule/control.py): programs with loops and
branches run on the host as the runtime runs them (tests/host_program.py) and must
give the reference's results, with no arena read of a clobbered buffer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from host_program import run_program

from toolchain.loader import load_graph
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import Program, schedule

DATA = Path(__file__).resolve().parents[1] / "e2e" / "data" / "control_flow"


def check(name: str, cases: list[list[np.ndarray]]) -> Program:
    graph = fold_constants(load_graph(DATA / name))
    program = schedule(graph)
    for inputs in cases:
        want = run_graph(graph, inputs)
        for got, w in zip(run_program(program, inputs), want):
            np.testing.assert_array_equal(got, w)
    return program


X = np.array([1, -2, 3, 4], np.float32)


def test_loops() -> None:
    program = check("loops.mlir", [[X, np.int32(n)] for n in (0, 1, 2, 3, 6)])
    branches = [s for s in program.steps if s.is_branch]
    # Six loops, each a conditional branch and an unconditional jump back.
    assert len(branches) == 2 * 6


def test_branches() -> None:
    check("branches.mlir", [[np.bool_(p), np.int32(k), X]
                            for p, k in ((True, 0), (False, 1), (True, 2), (False, -1),
                                         (True, 3), (False, 40), (True, 5))])


def test_blocks() -> None:
    """A function of several blocks (cf.br / cf.cond_br): a loop, a diamond, values of
    dominating blocks read without being passed, a forward reference."""
    program = check("blocks.mlir", [[np.int32(n), X] for n in (0, 1, 2, 5)])
    assert sum(s.is_branch for s in program.steps) >= 5


def loop_bodies(program: Program) -> list[list[str]]:
    """The kernel names between each conditional branch and the next jump back."""
    bodies, body = [], None
    for step in program.steps:
        if step.is_branch:
            if step.kernel.operands:
                body = []
                bodies.append(body)
            else:
                body = None
        elif body is not None:
            body.append(step.kernel.name)
    return bodies


def test_loop_state_is_updated_in_place_when_nothing_reads_the_old_value() -> None:
    """`acc = acc * 0.5 + x` and `i = i + 1` write the state directly (elementwise, at
    the element they read): no copy; the swap of (a, b) writes b in place after a's
    new value is computed, and copies that new value into a."""
    program = schedule(fold_constants(load_graph(DATA / "loops.mlir")))
    bodies = loop_bodies(program)
    assert [n.split("_", 1)[1] for n in bodies[0]] == ["multiply_add", "add"]
    assert [n.split("_", 1)[1] for n in bodies[1]] == ["add", "multiply", "add", "copy"]


def test_runaway_loop_never_finishes() -> None:
    graph = fold_constants(load_graph(DATA / "runaway.mlir"))
    program = schedule(graph)
    np.testing.assert_array_equal(run_program(program, [X, np.int32(0)])[0], X)
    with pytest.raises(AssertionError, match="still running after 1000 commands"):
        run_program(program, [X, np.int32(1)], max_commands=1000)


def test_branch_commands_in_the_module() -> None:
    """Branch commands carry the flag in their ordinal, in the module and in the image
    contract alike (so the loader pins them); the dispatch table is indexed without it,
    and runtime_c's executor tests the same bit."""
    from toolchain.module import format as fmt
    from toolchain.module.contract import image_contract
    from toolchain.module.dump import dump_module
    from toolchain.module.from_program import module_from_program
    from toolchain.module.reader import read_module

    program = schedule(fold_constants(load_graph(DATA / "runaway.mlir")))
    data = module_from_program(program, "cortex-m4")
    contract = image_contract(program, data, 7)
    module = read_module(data, image=contract)
    flags = [bool(c.ordinal & fmt.BRANCH_FLAG) for c in module.commands]
    assert flags == [s.is_branch for s in program.steps] and any(flags)
    assert [c.head & 0xFFFF for c in contract.commands] == [c.ordinal for c in module.commands]
    assert contract.dispatch_count == module.dispatch_count == len(program.steps)
    assert "branch  " in dump_module(data)
    executor = (Path(__file__).resolve().parents[2] / "runtime_c" / "core" / "executor.c")
    assert f"#define MRT_COMMAND_BRANCH {fmt.BRANCH_FLAG:#x}u" in executor.read_text()
