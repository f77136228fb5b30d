"""minirt-build's output directory under several processes and under Ctrl-C: whatever
happens, -o DIR is absent, the previous complete build or a new complete one, with no
traceback and no staging directory left (toolchain/link/out_dir.py)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolchain.link.out_dir import verify_build

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"
TRIES = 20


def _start(out: Path, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "toolchain.cli.build", str(SEED), "--board",
                             "cortex-m4", "-o", str(out)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.fixture(scope="module")
def previous(tmp_path_factory) -> tuple[Path, float]:
    """A complete build to start from, and how long a build takes as a subprocess."""
    work = tmp_path_factory.mktemp("previous")
    start = time.monotonic()
    code, err = _finish(_start(work / "fw", work))
    assert code == 0, err
    return work / "fw", time.monotonic() - start


def test_concurrent_builds_into_one_new_directory(tmp_path: Path) -> None:
    """Used to end in FileNotFoundError tracebacks."""
    (tmp_path / "notes.txt").write_text("mine")
    out = tmp_path / "fw"
    procs = [_start(out, tmp_path) for _ in range(3)]
    results = [_finish(p) for p in procs]
    for code, err in results:
        assert "Traceback" not in err, err
        assert code == 0 or (code == 2 and err.count("\n") == 1), err
    assert any(code == 0 for code, _ in results)
    assert verify_build(out) is None
    assert sorted(os.listdir(tmp_path)) == ["fw", "notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_ctrl_c_at_any_moment(previous: tuple[Path, float], tmp_path: Path) -> None:
    """SIGINT after a random delay, two builds at a time, half of them over a previous
    build: each ends in exit 0 or 130 with one line, and DIR is absent or complete."""
    template, seconds = previous
    rng = random.Random(24)
    outcomes = []
    for pair in range(TRIES // 2):
        running = []
        for k in range(2):
            work = tmp_path / f"try{pair}-{k}"
            work.mkdir()
            (work / "notes.txt").write_text("mine")
            if k:
                shutil.copytree(template, work / "fw")
            running.append((work, _start(work / "fw", work), rng.uniform(0, seconds)))
        begun = time.monotonic()
        for _, proc, delay in sorted(running, key=lambda r: r[2]):
            time.sleep(max(0.0, begun + delay - time.monotonic()))
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for work, proc, delay in running:
            code, err = _finish(proc)
            outcomes.append(code)
            assert "Traceback" not in err, err
            assert code == 0 or (code == 130 and err.endswith("minirt-build: interrupted\n")
                                 and err.count("interrupted") == 1), (delay, code, err)
            listing = sorted(os.listdir(work))
            assert listing in (["notes.txt"], ["fw", "notes.txt"]), (delay, listing)
            assert (work / "notes.txt").read_text() == "mine"
            if "fw" in listing:
                assert verify_build(work / "fw") is None, delay
            elif code == 0 or (work / "fw").parent.name.endswith("-1"):
                pytest.fail(f"after {delay:.2f} s: the build is gone (exit {code})")
    assert 130 in outcomes  # the delays did interrupt builds


def test_ctrl_c_while_the_tool_loads(tmp_path: Path) -> None:
    """Used to print a KeyboardInterrupt traceback from an import."""
    proc = _start(tmp_path / "fw", tmp_path)
    time.sleep(0.3)  # numpy, llvmlite and the compiler take longer than this to import
    proc.send_signal(signal.SIGINT)
    code, err = _finish(proc)
    assert (code, err) == (130, "minirt-build: interrupted\n")
    assert os.listdir(tmp_path) == []
