"""bench/shapes.py's comparisons: another board's layers against cortex-m4's (issue 21's
10 % goal for cortex-m7 and cortex-m33), and an earlier run named by file or commit."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench():  # noqa: ANN202  (a script, loaded by path)
    spec = importlib.util.spec_from_file_location("shapes_bench", ROOT / "bench" / "shapes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _row(label: str, instructions: int) -> dict:
    return {"label": label, "instructions": instructions}


def test_against_m4_counts_the_layers_over_ten_percent(tmp_path: Path) -> None:
    m4 = tmp_path / "shapes.json"
    m4.write_text(json.dumps([_row("a", 1000), _row("b", 1000), _row("c", 1000)]))
    rows = [_row("a", 1101), _row("b", 1100), _row("c", 990), _row("only here", 5)]
    section = _bench().against_m4(rows, m4)
    assert section[0] == "## Against cortex-m4"
    text = section[2]
    assert "3 layers compared, 1 over 1.10x" in text
    assert "the most 1.1010x (a)" in text and "the least 0.9900x (c)" in text


def test_against_m4_is_left_out_without_cortex_m4_results(tmp_path: Path) -> None:
    assert _bench().against_m4([_row("a", 1)], tmp_path / "shapes.json") == []


def test_before_reads_a_file_or_a_commit(tmp_path: Path) -> None:
    bench = _bench()
    f = tmp_path / "old.json"
    f.write_text(json.dumps([_row("a", 7)]))
    rows, line = bench._before(str(f), "shapes")
    assert rows == {"a": _row("a", 7)} and line == str(f)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout: no commit to read the committed results from")
    rows, line = bench._before(head.stdout.strip(), "shapes")
    assert rows and all(r["label"] == label for label, r in rows.items())
    assert f"as of commit {head.stdout.strip()}" in line
    with pytest.raises(SystemExit, match="neither a file nor a revision"):
        bench._before("no-such-revision-xyz", "shapes")
