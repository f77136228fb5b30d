"""Kernel-family entries (tunedb/hook.py choose_kernel): on cortex-m4 the rules send
some layers to a microkernel of their own (im2col, few-output, depthwise row pairs,
depthwise 5x5 pairs); the tuner records the families that can take such a layer under
its kernel key, and an entry naming one of them takes the layer there. Scheduling only
(as test_database.py), except the last test, which runs the firmware under QEMU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op

from toolchain import api
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board
from toolchain.tune.measure import Measurement
from toolchain.tune.tuner import Inner, LayerTuning, Tuning
from toolchain.tunedb.database import Session, build_session, save_entries
from toolchain.tunedb.hook import KERNEL_SUFFIX, TILES

BOARD = "cortex-m4"


def _layer(path: Path, kind: str, cin: int, cout: int, kh: int, kw: int, h: int = 10,
           w: int = 10) -> Path:
    """One int8 layer of the shape sweep (bench/shapes.py's input quantization)."""
    op, x, y = int8_layer_op(np.random.default_rng(cin), kind, h, w, cin, cout, kh, kw,
                             name="L0", in_scale=0.05, in_zp=-3)
    path.write_bytes(build_model([op], [x], [y]))
    return path


def _flags(model: Path, session: Session) -> list[set[str]]:
    """Per dispatch, the microkernel flags of its nests (im2col, fewout, row pairs,
    depthwise 5x5 pairs; none for the tile search's nests) when `model` is scheduled
    for BOARD in `session`."""
    board = load_board(BOARD)
    with build_session(session):
        program = schedule_for_board(prepare_graph(load_graph(model)), board)
        schedules = [step.schedule or choose_schedule(step.kernel, board.target_info)
                     for step in program.steps if isinstance(step.kernel, Kernel)]
    names = ("im2col", "fewout", "row_pairs", "depthwise5")
    return [{f for n in s.nests for f in names if getattr(n, f)} for s in schedules]


def _kernel_entry(model: Path) -> tuple[str, dict[str, Any]]:
    """The layer's kernel key and what the tuner's recorder noted under it: the first
    one asked (a depthwise layer is asked again after its weights are stored, as
    another kernel; the first decision, the arena plan's, is the one that holds)."""
    seen = Session(forced={}, seen={})
    _flags(model, seen)
    key = next(k for k in seen.seen if k.endswith(KERNEL_SUFFIX))
    return key, seen.seen[key]


# (layer, the rules' family and flag, the other families offered)
CASES = [
    (("conv", 13, 32, 1, 1), "im2col", [TILES]),
    (("conv", 3, 32, 3, 3), "im2col", [TILES]),
    (("conv", 3, 2, 5, 5), "fewout", ["im2col", TILES]),
    (("depthwise", 13, 13, 3, 3), "row_pairs", [TILES]),
    (("depthwise", 16, 16, 5, 5), "depthwise5", [TILES]),
]


@pytest.mark.parametrize("layer, rule, others", CASES, ids=lambda v: str(v))
def test_entry_takes_the_layer_to_another_family(tmp_path: Path, layer: tuple, rule: str,
                                                 others: list[str]) -> None:
    model = _layer(tmp_path / "m.tflite", *layer)
    key, seen = _kernel_entry(model)
    assert key.startswith(f"{BOARD}:")
    assert seen["rule"] == {"kernel": rule}
    assert seen["candidates"] == [{"kernel": f} for f in (rule, *others)]
    assert _flags(model, Session()) == [{rule}]
    for family in others:
        entry = Session(entries={key: {"schedule": {"kernel": family}}},
                        sources={key: "mine.json"})
        flags = _flags(model, entry)
        want = set() if family == TILES else {family}
        assert flags[-1] == want and all(rule not in f for f in flags)
        assert list(entry.used) == [key] and entry.used[key]["source"] == "mine.json"
    # A family the rules do not offer for this layer is ignored, as a stale tile is.
    stale = Session(entries={key: {"schedule": {"kernel": "no_such_kernel"}}},
                    sources={key: "mine.json"})
    assert _flags(model, stale) == [{rule}] and not stale.used


def test_tiles_entry_builds_bit_exact(tmp_path: Path) -> None:
    """Firmware: a pointwise layer over 13 channels left unpadded for the im2col kernel
    and sent to the tile search by an entry is scheduled again with its pad (pipeline
    schedule_for_board), and runs bit-exact with the reference, with the count of the
    tile search's schedule, not the rules'."""
    model = _layer(tmp_path / "m.tflite", "conv", 13, 32, 1, 1, 19, 6)
    key, _ = _kernel_entry(model)
    db = tmp_path / "db.json"
    save_entries(db, {key: {"schedule": {"kernel": TILES}}})
    rules = api.build(model, BOARD, out_dir=tmp_path / "rules", tuning_db="none")
    lines: list[str] = []
    tiles = api.build(model, BOARD, out_dir=tmp_path / "tiles", tuning_db=db,
                      log=lines.append)
    assert any(key in line for line in lines if "tuned schedule for" in line), lines
    n_rules = rules.run(check=True).instructions
    n_tiles = tiles.run(check=True).instructions  # raises Mismatch unless bit-exact
    assert n_rules is not None and n_tiles is not None and n_tiles != n_rules


def test_family_with_a_tile_under_it_is_two_entries() -> None:
    """The tuner's second round (tune/tuner.py): a family measured with a tile of the
    tile search's candidates forced under it. When that is the best, the layer's
    entries are the family (its kernel key) and the tile (the new layer key), and the
    layer saves the rules' count less that measurement, once."""
    family, tile = {"kernel": TILES}, {"blocks": [[2, 4]]}
    rule_tile = {"blocks": [[2, 5]]}
    layer = LayerTuning(f"{BOARD}:k{KERNEL_SUFFIX}", "label, kernel", "conv",
                        {"kernel": "row_pairs"}, 1000, [
                            (family, Measurement("a", "ok", 950)),
                            (family, Measurement("b", "ok", 940)),
                            (family, Measurement("c", "ok", 990))])
    layer.inner = {i: Inner(f"{BOARD}:t", "label", "conv", p, rule_tile, 950)
                   for i, p in ((1, tile), (2, {"blocks": [[1, 4]]}))}
    tuning = Tuning("m.tflite", BOARD, BOARD, 1000, [layer])
    assert layer.best == (family, 940) and layer.best_inner.params == tile
    entries = tuning.entries()
    assert entries[f"{BOARD}:k{KERNEL_SUFFIX}"]["schedule"] == family
    assert entries[f"{BOARD}:t"]["schedule"] == tile
    assert entries[f"{BOARD}:t"]["rules_schedule"] == rule_tile
    assert entries[f"{BOARD}:t"]["rules_instructions"] == 950
    assert tuning.saved == 60
    # Without the tile's round, the family alone, one entry.
    layer.tried.pop(1)
    layer.inner = {}
    assert layer.best == (family, 950) and layer.best_inner is None
    assert list(tuning.entries()) == [f"{BOARD}:k{KERNEL_SUFFIX}"] and tuning.saved == 50
