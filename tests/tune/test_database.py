"""The tuning database: files, precedence, the key, and what the rules take from it
(no firmware built here: the graph is only scheduled)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tune_models import BOARD, layer_model

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board
from toolchain.tune.measure import Measurement
from toolchain.tune.tuner import LayerTuning, Tuning
from toolchain.tunedb import database
from toolchain.tunedb.database import DatabaseError, Session, build_session, load_entries


def _seen(model: Path, session: Session | None = None) -> tuple[dict, list]:
    """The layers' candidates the rules record while `model` is scheduled for BOARD,
    and the steps' schedules."""
    s = session or Session(forced={}, seen={})
    target = load_board(BOARD).target_info
    with build_session(s):
        program = schedule_for_board(prepare_graph(load_graph(model)), load_board(BOARD))
        # The schedules the code generator takes (codegen/image.py), as --dump-schedule.
        schedules = [step.schedule or choose_schedule(step.kernel, target)
                     for step in program.steps if isinstance(step.kernel, Kernel)]
    return s.seen or {}, schedules


def test_round_trip(tmp_path: Path) -> None:
    entries = {"riscv32:00ff": {"schedule": {"blocks": [[1, 4]], "unroll": [], "loops": [6],
                                             "partials": 1, "dot": "", "vector": 1},
                                "label": "x", "instructions": 10, "rules_instructions": 12}}
    database.save_entries(tmp_path / "db.json", entries)
    assert load_entries(tmp_path / "db.json") == entries
    assert load_entries(tmp_path / "missing.json") == {}


@pytest.mark.parametrize("text, says", [
    ("{", "invalid JSON"),
    ('{"version": 7, "entries": {}}', "not a tuning database"),
    ('{"version": 1, "entries": {"k": {"label": "no schedule"}}}', "entry 'k' has no schedule"),
])
def test_bad_file_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "db.json").write_text(text)
    with pytest.raises(DatabaseError, match=says) as e:
        load_entries(tmp_path / "db.json")
    assert str(tmp_path / "db.json") in str(e.value) and "\n" not in str(e.value)


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user file's entry over the defaults' of the same key; --tuning-db over
    $MINIRT_TUNING_DB; "none" turns both off; a named file must exist."""
    defaults, env, flag = (tmp_path / n for n in ("defaults.json", "env.json", "flag.json"))
    entry = lambda n: {"schedule": {"n": n}}  # noqa: E731
    database.save_entries(defaults, {"a": entry(0), "b": entry(0)})
    database.save_entries(env, {"b": entry(1), "c": entry(1)})
    database.save_entries(flag, {"b": entry(2)})
    monkeypatch.setattr(database, "DEFAULTS", defaults)
    assert Session.for_build().entries == {"a": entry(0), "b": entry(0)}
    monkeypatch.setenv(database.ENV, str(env))
    s = Session.for_build()
    assert s.entries == {"a": entry(0), "b": entry(1), "c": entry(1)}
    assert s.wanted("b") == ({"n": 1}, str(env)) and s.wanted("a") == ({"n": 0}, "defaults")
    assert Session.for_build(flag).entries == {"a": entry(0), "b": entry(2)}
    assert Session.for_build("none").entries == {}
    monkeypatch.setenv(database.ENV, "none")
    assert Session.for_build().entries == {}
    with pytest.raises(DatabaseError, match="--tuning-db .*nothing.json: no such tuning"):
        Session.for_build(tmp_path / "nothing.json")


def test_key_is_the_shape_not_the_weights(tmp_path: Path) -> None:
    """Two models of the layer with other weights and quantization share its key; a
    layer of another shape has another."""
    a, _ = _seen(layer_model(tmp_path / "a.tflite", seed=0))
    b, _ = _seen(layer_model(tmp_path / "b.tflite", seed=5))
    c, _ = _seen(layer_model(tmp_path / "c.tflite", cin=16))
    assert len(a) == 1 and a.keys() == b.keys()
    assert a.keys().isdisjoint(c.keys())
    (key,) = a
    assert key.startswith(f"{load_board(BOARD).target_info.name}:")
    seen = a[key]
    assert seen["rule"] in seen["candidates"] and len(seen["candidates"]) > 3


def test_entry_picks_a_candidate(tmp_path: Path) -> None:
    """An entry naming one of the rules' candidates schedules the layer with it (and is
    reported as used); one the search does not offer is ignored."""
    model = layer_model(tmp_path / "m.tflite")
    layers, rules = _seen(model)
    ((key, seen),) = layers.items()
    other = next(p for p in seen["candidates"] if p != seen["rule"])
    tuned = Session(entries={key: {"schedule": other}}, sources={key: "mine.json"})
    _, schedules = _seen(model, tuned)
    blocks = lambda s: [list(b) for n in s.nests for b in n.blocks]  # noqa: E731
    assert blocks(rules[0]) == seen["rule"]["blocks"]
    assert blocks(schedules[0]) == other["blocks"]
    assert list(tuned.used) == [key] and tuned.used[key]["source"] == "mine.json"
    assert "tuned schedule for" in tuned.used_lines()[0]
    bogus = Session(entries={key: {"schedule": {**other, "blocks": [[3, 99]]}}},
                    sources={key: "mine.json"})
    _, schedules = _seen(model, bogus)
    assert blocks(schedules[0]) == seen["rule"]["blocks"] and not bogus.used


def test_wrong_candidate_is_never_stored() -> None:
    """A candidate whose outputs differ from the reference is reported, not stored, even
    with the fewest instructions."""
    rule = {"blocks": []}
    layer = LayerTuning("k", "label", "conv", rule, 1000, [
        ({"blocks": [[1, 2]]}, Measurement("a", "mismatch", 10, "output 0 differs")),
        ({"blocks": [[1, 4]]}, Measurement("b", "ok", 990)),
        ({"blocks": [[2, 4]]}, Measurement("c", "error", None, "no build"))])
    tuning = Tuning("m.tflite", BOARD, "riscv32", 1000, [layer])
    assert layer.best == ({"blocks": [[1, 4]]}, 990)
    assert len(layer.rejected) == 2
    assert tuning.entries()["k"]["schedule"] == {"blocks": [[1, 4]]}
    layer.tried.pop(1)
    assert layer.best is None and tuning.entries() == {}
    assert json.dumps(tuning.entries()) == "{}"


def test_builds_read_the_shipped_defaults(tmp_path: Path) -> None:
    """The layer is in the shipped defaults (bench/tune.py measured it): a build's
    session takes it from there, and "none" leaves the rules' pick."""
    model = layer_model(tmp_path / "m.tflite", seed=3)
    shipped = Session.for_build()
    layers, _ = _seen(model)
    ((key, seen),) = layers.items()
    assert key in load_entries(database.DEFAULTS)
    _seen(model, shipped)
    assert shipped.used[key]["source"] == "defaults"
    assert shipped.used[key]["schedule"] != seen["rule"]
    rules = Session.for_build("none")
    _seen(model, rules)
    assert not rules.used


def test_minirt_build_refuses_a_missing_database(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from toolchain.cli.build import main as build_main

    model = layer_model(tmp_path / "m.tflite")
    missing = tmp_path / "missing.json"
    assert build_main([str(model), "--board", BOARD, "-o", str(tmp_path / "b"),
                       "--tuning-db", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"minirt-build: error: --tuning-db {missing}: no such tuning database file")
