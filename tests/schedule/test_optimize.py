"""`--optimize auto|speed|size` (toolchain/schedule/optimize.py): what each mode stores.

On a small int8 model (window_models.int8_windows) for cortex-m4: `size` keeps every
weight int8, `speed` and `auto` store the ones the packed steps read pre-extended, `auto`
only while they fit the board's flash budget; the choice is recorded and described;
the firmware is the reference's bit for bit in both extreme modes under QEMU, and the
flash differs by the pre-extended bytes.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from window_models import int8_windows

from toolchain import pipeline
from toolchain.emu.run import run_image
from toolchain.kernel.form import Kernel
from toolchain.pipeline import (
    compile_graph,
    decode_outputs,
    module_outputs,
    prepare_graph,
    schedule_for_board,
)
from toolchain.reference import run_graph
from toolchain.report.layers import DISPATCHES_FILE, read_optimize
from toolchain.report.size import size_report
from toolchain.schedule.optimize import (
    CODE_ALLOWANCE,
    DEFAULT_OPTIMIZE,
    OPTIMIZE_MODES,
    OptimizeChoice,
)
from toolchain.target import load_board


@pytest.fixture(autouse=True)
def _without_first_layer_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests follow the packed steps' pre-extended weights; the first layers'
    records (schedule/first_layer_records.py, counted alike: records_bound) would take
    the models' 3-channel convolutions away from them (tested in
    tests/codegen/test_first_layers_im2col.py), and the few-output records
    (schedule/fewout_records.py) their convolutions to 1-7 channels (tested in
    tests/codegen/test_fewout.py)."""
    monkeypatch.setattr(pipeline, "store_first_layer_records", lambda *args: 0)
    monkeypatch.setattr(pipeline, "store_fewout_records", lambda *args: 0)


def _paired_constants(program) -> set[int]:
    return {s.buffers[j].index for s in program.steps if isinstance(s.kernel, Kernel)
            for j in s.kernel.paired}


def _program(board, mode: str):
    return schedule_for_board(prepare_graph(int8_windows()), board, mode)


def test_the_modes_are_a_table_with_auto_the_default() -> None:
    assert set(OPTIMIZE_MODES) == {"auto", "speed", "size"}
    assert DEFAULT_OPTIMIZE == "auto"
    assert all(mode.means for mode in OPTIMIZE_MODES.values())


def test_size_keeps_int8_and_speed_pre_extends_what_the_packed_steps_read() -> None:
    board = load_board("cortex-m4")
    size, speed, auto = (_program(board, m) for m in ("size", "speed", "auto"))
    assert not _paired_constants(size)
    assert all(np.asarray(c).dtype != np.int16 for c in size.constants)
    paired = _paired_constants(speed)
    assert paired and _paired_constants(auto) == paired  # a few KB fit the budget
    # The paired constants are twice their int8 bytes; everything else is as under size.
    for i, (a, b) in enumerate(zip(size.constants, speed.constants, strict=True)):
        assert b.nbytes == (2 * a.nbytes if i in paired else a.nbytes)
    extra = sum(size.constants[i].nbytes for i in paired)
    assert size.optimize == OptimizeChoice("size", speed.optimize.int8_bytes,
                                           speed.optimize.int8_bytes, 0, len(paired))
    assert speed.optimize == OptimizeChoice("speed", size.optimize.int8_bytes,
                                            size.optimize.int8_bytes + extra, len(paired),
                                            len(paired))
    assert auto.optimize == dataclasses.replace(speed.optimize, mode="auto")


def test_auto_pre_extends_only_within_the_flash_budget_and_speed_regardless() -> None:
    board = load_board("cortex-m4")
    int8 = _program(board, "size").optimize.int8_bytes
    # A flash budget with room for the constants at their int8 size and no more.
    tight = dataclasses.replace(board, budgets=dataclasses.replace(
        board.budgets, flash=CODE_ALLOWANCE + int8))
    auto = _program(tight, "auto")
    assert not _paired_constants(auto)
    assert auto.optimize.describe() == (f"weights: int8, {int8 / 1000:.1f} KB "
                                        "(optimize auto: none fits the budget)")
    speed = _program(tight, "speed")
    assert _paired_constants(speed) == _paired_constants(_program(board, "speed"))


def test_a_target_without_packed_steps_has_no_choice() -> None:
    board = load_board("cortex-m3")
    size, speed = _program(board, "size"), _program(board, "speed")
    assert not _paired_constants(speed)
    assert [c.nbytes for c in size.constants] == [c.nbytes for c in speed.constants]
    assert speed.optimize.pairable == 0
    assert speed.optimize.describe().endswith("(optimize speed: no packed int8 step reads "
                                             "them, nothing to pre-extend)")


@pytest.mark.parametrize(("choice", "line"), [
    (OptimizeChoice("size", 37476, 37476, 0, 5), "weights: int8, 37.5 KB (optimize size)"),
    (OptimizeChoice("auto", 37476, 56420, 5, 5),
     "weights: pre-extended 56.4 KB of 37.5 KB int8 (optimize auto: fits the budget)"),
    (OptimizeChoice("auto", 37476, 50000, 3, 5),
     "weights: pre-extended 50.0 KB of 37.5 KB int8 (optimize auto: 3 of 5 fit the budget)"),
    (OptimizeChoice("speed", 37476, 56420, 5, 5),
     "weights: pre-extended 56.4 KB of 37.5 KB int8 (optimize speed)"),
])
def test_the_choice_is_described_in_one_line(choice: OptimizeChoice, line: str) -> None:
    assert choice.describe() == line
    assert OptimizeChoice.from_json(json.loads(json.dumps(choice.to_json()))) == choice


def test_both_modes_are_bit_exact_on_cortex_m4_and_differ_in_flash(tmp_path) -> None:
    board = load_board("cortex-m4")
    inputs = [np.random.default_rng(21).integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)]
    builds = {m: compile_graph(int8_windows(), board, tmp_path / m, log=lambda _: None,
                               optimize=m) for m in ("size", "speed")}
    reports = {m: size_report(b) for m, b in builds.items()}
    runs = {}
    for mode, build in builds.items():
        run = run_image(board, build.elf, inputs)
        assert run.exit_code == 0, run.stderr
        for got, want in zip(decode_outputs(module_outputs(build.module), run.outputs),
                             run_graph(build.graph, inputs), strict=True):
            np.testing.assert_array_equal(got, want)
        runs[mode] = run.instructions
        # The choice is in the size tables, the report's JSON and the dispatches file.
        line = build.program.optimize.describe()
        assert line in reports[mode].format_table().splitlines()
        assert line in reports[mode].format_budget_table().splitlines()
        assert reports[mode].to_json()["optimize"]["mode"] == mode
        assert read_optimize(build.out_dir / DISPATCHES_FILE) == build.program.optimize
    size, speed = (builds[m].program.optimize for m in ("size", "speed"))
    extra = speed.stored_bytes - size.stored_bytes
    assert extra > 0
    # In the module each constant starts on a 16-byte boundary (module/format.py
    # POOL_ALIGN): the flash differs by the extra bytes up to that padding.
    grew = reports["speed"].flash["constants"] - reports["size"].flash["constants"]
    assert abs(grew - extra) < 16 * builds["speed"].program.optimize.paired
    assert runs["speed"] < runs["size"]  # what the flash buys


def test_an_unreadable_record_is_refused(tmp_path) -> None:
    path = tmp_path / DISPATCHES_FILE
    path.write_text(json.dumps({"dispatches": [], "optimize": {"mode": "size"}}))
    with pytest.raises(ValueError, match="--optimize record"):
        read_optimize(path)
    path.write_text(json.dumps({"dispatches": []}))
    assert read_optimize(path) is None  # a build older than the record
