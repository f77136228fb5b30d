"""Shared tuning (Target.tuning_from, toolchain/tunedb/database.py "Shared tuning"): a
cortex-m7 or cortex-m33 build takes the tuning database's cortex-m4 entry for a layer,
riscv32 does not, and an entry measured on the target itself wins (no firmware built
here: the graph is only scheduled, as in test_database.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board
from toolchain.target.descriptors import DescriptorError, load_target
from toolchain.tunedb.database import Session, build_session


def _dense(path: Path) -> Path:
    """A dense 64->32 int8 layer of the shape sweep: on the Arm DSP cores it goes
    through the rules' tile search (23 candidates), so an entry can change its tile."""
    op, x, y = int8_layer_op(np.random.default_rng(0), "dense", 1, 1, 64, 32, 1, 1,
                             name="L0", in_scale=0.05, in_zp=-3)
    path.write_bytes(build_model([op], [x], [y]))
    return path


def _schedule(model: Path, board: str, session: Session) -> list[list[list[int]]]:
    """The blocks of each reduction's schedule when `model` is scheduled for `board` in
    `session` (what the code generator takes, as --dump-schedule)."""
    b = load_board(board)
    with build_session(session):
        program = schedule_for_board(prepare_graph(load_graph(model)), b)
        schedules = [step.schedule or choose_schedule(step.kernel, b.target_info)
                     for step in program.steps if isinstance(step.kernel, Kernel)]
    return [[list(blk) for n in s.nests for blk in n.blocks] for s in schedules]


def _layers(model: Path, board: str) -> dict[str, dict[str, Any]]:
    """The tuner's record of the layers' keys and candidates on `board`."""
    seen = Session(forced={}, seen={})
    _schedule(model, board, seen)
    assert seen.seen
    return seen.seen


def _other(seen: dict[str, Any]) -> dict[str, Any]:
    """A candidate the rules did not pick, with other blocks than the rule's."""
    return next(p for p in seen["candidates"] if p["blocks"] != seen["rule"]["blocks"])


def _as(target: str, key: str) -> str:
    """`key` (`<target>:<digest>`) on another target."""
    return f"{target}:{key.split(':', 1)[1]}"


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33"])
def test_cortex_m4_entry_serves(board: str, tmp_path: Path) -> None:
    model = _dense(tmp_path / "m.tflite")
    layers = _layers(model, board)
    # The same layer on cortex-m4: the same digest, candidates and rule's pick, the
    # premise of sharing its entries.
    m4 = _layers(model, "cortex-m4")
    assert {_as("cortex-m4", k): v["candidates"] for k, v in layers.items()} == \
        {k: v["candidates"] for k, v in m4.items()}
    key, seen = next(iter(layers.items()))
    other = _other(seen)
    m4_key = _as("cortex-m4", key)
    rules = _schedule(model, board, Session())
    assert seen["rule"]["blocks"] in rules and other["blocks"] not in rules
    shared = Session(entries={m4_key: {"schedule": other}}, sources={m4_key: "m4.json"})
    assert other["blocks"] in _schedule(model, board, shared)
    assert list(shared.used) == [m4_key] and shared.used[m4_key]["source"] == "m4.json"
    # The target's own entry wins over cortex-m4's.
    third = next(p for p in seen["candidates"]
                 if p["blocks"] not in (seen["rule"]["blocks"], other["blocks"]))
    both = Session(entries={m4_key: {"schedule": other}, key: {"schedule": third}},
                   sources={m4_key: "m4.json", key: "mine.json"})
    picked = _schedule(model, board, both)
    assert third["blocks"] in picked and other["blocks"] not in picked
    assert list(both.used) == [key]


def test_riscv32_does_not_take_cortex_m4_entries(tmp_path: Path) -> None:
    """riscv32 names no tuning_from: an entry under cortex-m4 of its very digest, with
    one of its own candidates, is not read."""
    model = _dense(tmp_path / "m.tflite")
    key, seen = next(iter(_layers(model, "riscv32").items()))
    other = _other(seen)
    m4_key = _as("cortex-m4", key)
    session = Session(entries={m4_key: {"schedule": other}}, sources={m4_key: "m4.json"})
    assert other["blocks"] not in _schedule(model, "riscv32", session)
    assert not session.used
    own = Session(entries={key: {"schedule": other}}, sources={key: "mine.json"})
    assert other["blocks"] in _schedule(model, "riscv32", own)


def test_tuning_targets() -> None:
    assert load_target("cortex-m7").tuning_targets == ("cortex-m7", "cortex-m4")
    assert load_target("cortex-m33").tuning_targets == ("cortex-m33", "cortex-m4")
    assert load_target("cortex-m4").tuning_targets == ("cortex-m4",)
    assert load_target("riscv32").tuning_targets == ("riscv32",)


def test_unknown_tuning_from_is_one_line(tmp_path: Path) -> None:
    text = load_target("cortex-m33").path.read_text()
    bad = tmp_path / "cortex-m33.yaml"
    bad.write_text(text.replace("tuning_from: cortex-m4", "tuning_from: cortex-m99"))
    with pytest.raises(DescriptorError, match="field 'tuning_from': unknown target "
                       "'cortex-m99'") as e:
        load_target(bad)
    assert "\n" not in str(e.value) and "cortex-m33.yaml: " in str(e.value)
