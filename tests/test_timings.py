"""toolchain/timings.py: exclusive stage times, and `minirt-build --timings`'s table."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from toolchain.cli import build as build_cli
from toolchain.timings import Timings, recording, stage

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "examples" / "seed.mlir"


def _spin(seconds: float) -> None:
    """Busy-waits, so the CPU clock advances too."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_nested_stage_pauses_the_outer_one() -> None:
    start = time.perf_counter()
    with recording() as t, stage("outer"):
        _spin(0.02)
        with stage("inner"):
            _spin(0.05)
        _spin(0.02)
    block = time.perf_counter() - start
    outer, inner = t.stages["outer"], t.stages["inner"]
    assert outer.wall >= 0.04 and inner.wall >= 0.05
    # Exclusive: the two add up to the block's time; counting the inner stage inside the
    # outer one too would exceed it by the inner 0.05 s (timing noise cannot: it is
    # in the block's time as well).
    assert abs(block - (outer.wall + inner.wall)) < 0.005
    assert t.total_wall == outer.wall + inner.wall
    assert (outer.calls, inner.calls) == (1, 1)


def test_a_stage_entered_twice_adds_up_and_keeps_its_first_place() -> None:
    with recording() as t:
        for name in ("a", "b", "a"):
            with stage(name):
                _spin(0.01)
    assert list(t.stages) == ["a", "b"]
    assert t.stages["a"].calls == 2 and t.stages["a"].wall >= 0.02


def test_no_recorder_no_record_and_recorders_nest() -> None:
    with stage("nobody asked"):
        pass  # no recorder installed: nothing to fail, nothing kept
    with recording() as outer:
        with recording() as inner, stage("x"):
            pass
        with stage("y"):
            pass
    assert list(inner.stages) == ["x"] and list(outer.stages) == ["y"]


def test_a_failing_stage_is_still_closed() -> None:
    with recording() as t:
        try:
            with stage("fails"):
                raise ValueError
        except ValueError:
            pass
        with stage("after"):
            pass
    assert list(t.stages) == ["fails", "after"] and not t._open


def test_format_and_json() -> None:
    t = Timings()
    t.add("load", 1.5, 0.25)
    t.add("codegen llvm", 0.5, 0.5)
    lines = t.format().splitlines()
    assert lines[0].split() == ["stage", "wall", "s", "cpu", "s"]
    assert lines[1].split() == ["load", "1.500", "0.250"]
    assert lines[-1].split() == ["total", "2.000", "0.750"]
    assert t.to_json() == {"load": {"wall": 1.5, "cpu": 0.25},
                           "codegen llvm": {"wall": 0.5, "cpu": 0.5}}


def test_build_timings_table_and_size_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(out),
                           "--timings"]) == 0
    text = capsys.readouterr().out
    table = text[text.index("stage  "):].splitlines()
    rows = {m.group(1).strip(): (float(m.group(2)), float(m.group(3))) for line in table[1:]
            if (m := re.fullmatch(r"(.+?)\s+(\d+\.\d{3})\s+(\d+\.\d{3})", line))}
    assert len(rows) == len(table) - 1, table  # every line a stage with two figures
    for name in ("load", "passes", "schedule", "codegen ir", "codegen llvm", "runtime cc",
                 "link", "images", "stack (qemu)", "size report", "total"):
        assert name in rows, name
    assert abs(rows["total"][0] - sum(w for n, (w, _) in rows.items() if n != "total")) < 0.01
    recorded = json.loads((out / "size.json").read_text())["timings"]
    assert {"load", "schedule", "codegen llvm", "link"} <= set(recorded)
    assert all(set(v) == {"wall", "cpu"} for v in recorded.values())


def test_build_without_timings_prints_no_table(tmp_path: Path, capsys) -> None:
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(tmp_path / "fw")]) == 0
    assert "stage  " not in capsys.readouterr().out


def test_the_compile_time_bench_reads_the_table(tmp_path: Path, capsys) -> None:
    """bench/compile_time.py parses what --timings prints: every stage, no total."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("compile_time",
                                                  REPO / "bench" / "compile_time.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(tmp_path / "fw"),
                           "--timings"]) == 0
    stages = bench.parse_timings(capsys.readouterr().out)
    assert "total" not in stages and {"load", "codegen llvm", "stack (qemu)"} <= set(stages)
    assert all(set(v) == {"wall", "cpu"} and v["wall"] >= 0 for v in stages.values())
