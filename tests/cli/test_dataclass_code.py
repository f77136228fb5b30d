"""toolchain/cli/dataclass_code.py: the methods @dataclass compiles, kept between runs.

The classes made through the cache must be the classes Python makes (same methods, same
behaviour), a second run must compile nothing, and a damaged or foreign entry must be
ignored. The commands install it (cli/__init__.py) and save it when their body ends.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolchain.cli import dataclass_code
from toolchain.cli.dataclass_code import DataclassCode
from toolchain.disk_cache import EntryStore

REPO = Path(__file__).resolve().parents[2]

SOURCE = '''
from __future__ import annotations
import dataclasses

@dataclasses.dataclass(frozen=True)
class Point:
    """A point."""
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()

@dataclasses.dataclass(order=True)
class Box:
    lo: int
    hi: int = dataclasses.field(default=3, compare=False)
    notes: list = dataclasses.field(default_factory=list)

    def size(self) -> int:
        return self.hi - self.lo
'''


def _classes() -> dict:
    ns: dict = {"__name__": "__main__"}
    exec(compile(SOURCE, "<test>", "exec"), ns)  # noqa: S102 (the classes under test)
    return ns


@pytest.fixture
def cache(tmp_path: Path):
    """Installs a cache over tmp_path for the test, and removes it afterwards."""
    made: list[DataclassCode] = []

    def install() -> DataclassCode:
        code = DataclassCode(EntryStore(tmp_path, ".marshal"), "test-entry")
        dataclasses.exec = code.exec  # type: ignore[attr-defined]
        made.append(code)
        return code

    yield install
    dataclass_code.uninstall()


def _behaviour(ns: dict) -> list:
    point, box = ns["Point"], ns["Box"]
    p = point(1, tags=("a",))
    b = box(1)
    out = [repr(p), p == point(1, 0, ("a",)), hash(p) == hash(point(1, 0, ("a",))),
           repr(b), b < box(2), b == box(1, 9), b.size(), b.notes is not box(1).notes,
           point.__init__.__annotations__, point.__doc__, box.__doc__]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    return out


def test_classes_made_through_the_cache_behave_as_pythons_own(cache) -> None:
    plain = _behaviour(_classes())
    first = cache()
    assert _behaviour(_classes()) == plain
    assert first.compiled > 5  # it did compile through the cache
    first.save()
    second = cache()
    assert _behaviour(_classes()) == plain
    assert second.compiled == 0  # every method came from the entry


def test_a_process_that_compiled_nothing_writes_nothing(cache, tmp_path: Path) -> None:
    first = cache()
    _classes()
    first.save()
    entry = next(tmp_path.rglob("*.marshal"))
    before = entry.stat().st_mtime_ns
    second = cache()
    _classes()
    second.save()
    assert entry.stat().st_mtime_ns == before


@pytest.mark.parametrize("content", [b"not marshal at all", marshal.dumps([1, 2]),
                                     marshal.dumps({"def f(): pass": "not code"})])
def test_a_foreign_or_damaged_entry_is_ignored(cache, tmp_path: Path, content: bytes) -> None:
    EntryStore(tmp_path, ".marshal").put("test-entry", content)
    code = cache()
    assert code.known == {}
    assert _behaviour(_classes()) == _behaviour(_classes())
    assert code.compiled > 0


def test_an_entry_past_the_limit_keeps_what_the_run_used(cache, monkeypatch) -> None:
    monkeypatch.setattr(dataclass_code, "MAX_ENTRIES", 3)
    first = cache()
    first.known = {f"x = {i}": compile(f"x = {i}", "<string>", "exec") for i in range(5)}
    _classes()
    first.save()
    assert set(first.known) == set(first.used)


def _env(cache_dir: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIRT_CACHE")}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
               MINIRT_CACHE_DIR=str(cache_dir), **more)
    return env


def _command_compiles(env: dict[str, str]) -> int:
    """How many dataclass methods a command (minirt-size's module run as `python -m`,
    which installs the cache, then run_tool, which saves it) compiled at start-up."""
    code = ("import sys; sys.orig_argv = ['python', '-m', 'toolchain.cli.size']; "
            "import toolchain.cli.size; from toolchain.cli import common, dataclass_code; "
            "code = dataclass_code.installed(); "
            "common.run_tool('minirt-size', lambda argv: 0, []); "
            "print(code.compiled, code.store is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    return int(out[0]) if out[1] == "True" else -1


def test_a_command_compiles_its_dataclasses_once(tmp_path: Path) -> None:
    env = _env(tmp_path)
    assert _command_compiles(env) > 100  # the toolchain's dataclasses, compiled
    assert list((tmp_path / "python").rglob("*minirt-size.marshal"))
    assert _command_compiles(env) == 0  # ... and read back


def test_the_cache_is_off_with_the_others(tmp_path: Path) -> None:
    env = _env(tmp_path, MINIRT_CACHE="off")
    assert _command_compiles(env) == -1  # no entry read or saved
    assert not (tmp_path / "python").exists()


def test_no_home_directory_means_no_cache(monkeypatch) -> None:
    """A command started without a home directory (no HOME, no passwd entry) must still
    start: its dataclasses are compiled as Python does."""
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(dataclass_code, "cache_root", no_home)
    try:
        code = dataclass_code.install("minirt-test")
        assert code.store is None
        assert _behaviour(_classes()) == _behaviour(_classes())
        code.save()  # nothing to save to
    finally:
        dataclass_code.uninstall()
