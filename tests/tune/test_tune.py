"""minirt-tune end to end on one small layer (conftest.py): on local processes through
the command line, then the same measurements as Ray tasks on a local Ray instance, then
minirt-build with the database it wrote: fewer instructions, still bit-exact."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
from tune_models import BOARD, layer_model

from toolchain import api
from toolchain.cli.size import main as size_main
from toolchain.cli.tune import main as tune_main
from toolchain.tune.tuner import tune
from toolchain.tunedb.database import load_entries

CANDIDATES = 2  # the rules' two next-cheapest tiles: both beat their pick here


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory):
    """minirt-tune MODEL --board riscv32 --candidates 2 -j 2 --db DB, and what it
    printed."""
    work = tmp_path_factory.mktemp("tune")
    model = layer_model(work / "conv1x1.tflite")
    db = work / "db.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = tune_main([str(model), "--board", BOARD, "--candidates", str(CANDIDATES),
                          "-j", "2", "--db", str(db)])
    return model, db, code, out.getvalue()


def test_local_pool_finds_a_faster_schedule(local_run) -> None:
    _, db, code, printed = local_run
    assert code == 0, printed
    entries = load_entries(db)
    assert len(entries) == 1, printed
    ((key, entry),) = entries.items()
    assert key.startswith("riscv32:")
    assert entry["schedule"] != entry["rules_schedule"]
    assert entry["instructions"] < entry["rules_instructions"]
    assert "1 of 1 layer(s) improved" in printed and "0 candidate(s) rejected" in printed


def test_build_uses_the_database(local_run, tmp_path: Path) -> None:
    """The build with --tuning-db says it took the entry, its size report lists it, and
    it retires exactly the instructions the tuner measured, bit-exact."""
    model, db, _, _ = local_run
    (entry,) = load_entries(db).values()
    lines: list[str] = []
    build = api.build(model, BOARD, out_dir=tmp_path / "b", tuning_db=db, log=lines.append)
    assert any(line.startswith("minirt-build: tuned schedule for") for line in lines), lines
    (tuned,) = build.size.tuned
    assert tuned["schedule"] == entry["schedule"] and tuned["source"] == str(db)
    assert json.loads((tmp_path / "b" / "size.json").read_text())["tuned"][0]["key"] == \
        tuned["key"]
    assert "tuned schedule:" in build.size.format_table()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert size_main([str(tmp_path / "b")]) == 0
    assert f"tuned schedule: {', '.join(tuned['kernels'])}" in out.getvalue()
    run = build.run(check=True)  # raises Mismatch unless bit-exact with the reference
    assert run.instructions == entry["instructions"] < entry["rules_instructions"]


def test_ray_measures_the_same(local_run) -> None:
    """The same tuning as Ray tasks on a local instance started here: QEMU's counts are
    exact, so every candidate retires what it did on the local pool."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install "
                                            "'minirt[tune]'; make test installs it)")
    from toolchain.tune.ray_pool import RayPool

    model, db, _, _ = local_run
    (entry,) = load_entries(db).values()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        pool = RayPool()
        assert not pool.started  # the test's instance is used, and left to the test
        result = tune(model, BOARD, pool, count=CANDIDATES, log=lambda _: None)
    finally:
        ray.shutdown()
    (layer,) = result.layers
    assert result.baseline == entry["rules_instructions"]
    assert layer.best == (entry["schedule"], entry["instructions"])
    assert not layer.rejected


def test_cli_errors_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    model = layer_model(tmp_path / "m.tflite")
    assert tune_main([str(tmp_path / "none.tflite"), "--board", BOARD]) == 2
    assert capsys.readouterr().err.strip() == \
        f"minirt-tune: error: {tmp_path / 'none.tflite'}: no such model file"
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    assert tune_main([str(model), "--board", BOARD, "--ray", "local"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("minirt-tune: error: --ray needs Ray") and "\n" not in err
    assert "pip install 'minirt[tune]'" in err
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(api.InputError, match="bad.json: not a tuning database"):
        api.build(model, BOARD, out_dir=tmp_path / "b", tuning_db=bad)
