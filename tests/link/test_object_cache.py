"""The cache of compiled runtime objects (toolchain/link/object_cache.py): a hit gives
clang's own bytes, any change of what an object is made from misses, damaged entries are
ignored, concurrent writers never leave half an entry, and a cache that is off or not
writable only means compiling."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from toolchain.link import build as link_build
from toolchain.link.build import compile_sources, runtime_c_dir, runtime_sources
from toolchain.link.object_cache import ObjectCache, cache_root
from toolchain.target import load_board

BOARD = load_board("cortex-m4")
TARGET = BOARD.target_info


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(root))
    monkeypatch.delenv("MINIRT_CACHE", raising=False)
    return root


@pytest.fixture
def clang_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every clang compile command compile_sources runs (the real clang still runs)."""
    runs: list[list[str]] = []
    real = link_build.subprocess.run

    def counting(cmd, *args, **kwargs):
        if "-c" in cmd:
            runs.append(list(cmd))
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(link_build.subprocess, "run", counting)
    return runs


def _objects(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.o"))}


def _entries(root: Path) -> list[Path]:
    return sorted((root / "objects").rglob("*.o"))


def test_hit_gives_the_bytes_clang_writes(cache_dir: Path, tmp_path: Path,
                                          clang_runs: list, monkeypatch) -> None:
    sources = runtime_sources(BOARD)
    compile_sources(TARGET, sources, tmp_path / "first")
    assert len(clang_runs) == len(sources) and len(_entries(cache_dir)) == len(sources)
    compile_sources(TARGET, sources, tmp_path / "second")
    assert len(clang_runs) == len(sources)  # nothing compiled the second time
    monkeypatch.setenv("MINIRT_CACHE", "off")
    compile_sources(TARGET, sources, tmp_path / "uncached")
    assert len(clang_runs) == 2 * len(sources)
    fresh = _objects(tmp_path / "uncached")
    assert _objects(tmp_path / "first") == fresh == _objects(tmp_path / "second")


def test_cache_off_writes_nothing(cache_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MINIRT_CACHE", "off")
    assert cache_root() is None
    compile_sources(TARGET, runtime_sources(BOARD)[:1], tmp_path / "out")
    assert not cache_dir.exists()


def test_default_root_follows_xdg(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MINIRT_CACHE_DIR", raising=False)
    monkeypatch.delenv("MINIRT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == tmp_path / "minirt"


def _tree_copy(tmp_path: Path) -> Path:
    """A copy of runtime_c to edit (MINIRT_HOME points the build at it)."""
    home = tmp_path / "home"
    shutil.copytree(runtime_c_dir(), home / "runtime_c")
    return home


def test_changed_source_flag_or_header_misses(cache_dir: Path, tmp_path: Path,
                                              clang_runs: list, monkeypatch) -> None:
    home = _tree_copy(tmp_path)
    monkeypatch.setenv("MINIRT_HOME", str(home))
    source = home / "runtime_c" / "core" / "mem.c"
    first = compile_sources(TARGET, [source], tmp_path / "a")[0].read_bytes()
    compile_sources(TARGET, [source], tmp_path / "b")
    assert len(clang_runs) == 1

    # Another flag: another object, compiled.
    compile_sources(TARGET, [source], tmp_path / "c", extra_flags=["-DMRT_MAX_CYCLES=5ull"])
    assert len(clang_runs) == 2

    # A header the source may include changed (a new declaration: the object may not).
    header = home / "runtime_c" / "include" / "minirt.h"
    header.write_text(header.read_text() + "\nint mrt_cache_test_decl(void);\n")
    compile_sources(TARGET, [source], tmp_path / "d")
    assert len(clang_runs) == 3

    # The source itself changed: a new function, so the object differs from the cached.
    source.write_text(source.read_text() + "\nint mrt_cache_test_fn(void) { return 7; }\n")
    changed = compile_sources(TARGET, [source], tmp_path / "e")[0].read_bytes()
    assert len(clang_runs) == 4
    assert changed != first and b"mrt_cache_test_fn" in changed


def test_a_changed_included_source_misses(cache_dir: Path, tmp_path: Path,
                                          clang_runs: list, monkeypatch) -> None:
    """A source may include another .c (runtime_c/platform/uart/stm32_lpuart.c includes
    stm32_usart_v2.c), which no header digest covers: an edit of the included file must
    compile the includer again, not give its old object."""
    home = _tree_copy(tmp_path)
    monkeypatch.setenv("MINIRT_HOME", str(home))
    uart = home / "runtime_c" / "platform" / "uart"
    assert '#include "stm32_usart_v2.c"' in (uart / "stm32_lpuart.c").read_text()
    core = home / "runtime_c" / "core"
    (core / "cache_test_part.c").write_text("int mrt_cache_test_part(void) { return 1; }\n")
    (core / "cache_test_whole.c").write_text('#include "cache_test_part.c"\n')
    source = core / "cache_test_whole.c"
    first = compile_sources(TARGET, [source], tmp_path / "a")[0].read_bytes()
    (core / "cache_test_part.c").write_text("int mrt_cache_test_part(void) { return 2; }\n")
    second = compile_sources(TARGET, [source], tmp_path / "b")[0].read_bytes()
    assert len(clang_runs) == 2
    monkeypatch.setenv("MINIRT_CACHE", "off")
    assert second == compile_sources(TARGET, [source], tmp_path / "c")[0].read_bytes()
    assert second != first


def test_compiler_identity_is_part_of_the_key(cache_dir: Path) -> None:
    dirs = [runtime_c_dir()]
    a = ObjectCache(cache_dir, dirs, "clang A").key(["clang", "-c", "x.c"], Path("/"), b"x")
    b = ObjectCache(cache_dir, dirs, "clang B").key(["clang", "-c", "x.c"], Path("/"), b"x")
    c = ObjectCache(cache_dir, dirs, "clang A").key(["clang", "-c", "x.c"], Path("/w"), b"x")
    assert len({a, b, c}) == 3


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_damaged_entry_is_ignored_and_replaced(damage: str, cache_dir: Path, tmp_path: Path,
                                               clang_runs: list) -> None:
    source = runtime_sources(BOARD)[0]
    good = compile_sources(TARGET, [source], tmp_path / "a")[0].read_bytes()
    (entry,) = _entries(cache_dir)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        del data[len(data) // 2:]
    else:
        data.clear()
    entry.write_bytes(bytes(data))
    again = compile_sources(TARGET, [source], tmp_path / "b")[0].read_bytes()
    assert again == good and len(clang_runs) == 2  # compiled again, not read back
    assert entry.read_bytes()[32:] == good  # and the entry is whole again


def test_concurrent_writers_leave_one_whole_entry(cache_dir: Path) -> None:
    cache = ObjectCache(cache_dir, [runtime_c_dir()], "clang")
    key = cache.key(["clang", "-c", "x.c"], Path("/"), b"source")
    payload = os.urandom(1 << 20)  # large enough that an unguarded write would be seen torn
    stop = threading.Event()
    seen: list[bytes | None] = []

    def reader() -> None:
        while not stop.is_set():
            seen.append(cache.get(key))

    with ThreadPoolExecutor(max_workers=9) as pool:
        watch = pool.submit(reader)
        list(pool.map(lambda _: cache.put(key, payload), range(32)))
        stop.set()
        watch.result()
    assert cache.get(key) == payload
    assert all(s is None or s == payload for s in seen)  # a reader never got half
    leftovers = [p for p in (cache_dir / "objects").rglob("*") if p.is_file()]
    assert len(leftovers) == 1  # no temporary file left behind


def test_concurrent_builds_share_the_cache(cache_dir: Path, tmp_path: Path) -> None:
    sources = runtime_sources(BOARD)
    with ThreadPoolExecutor(max_workers=3) as pool:
        outs = list(pool.map(lambda i: compile_sources(TARGET, sources, tmp_path / f"o{i}"),
                             range(3)))
    digests = [{p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in o} for o in outs]
    assert digests[0] == digests[1] == digests[2]
    entries = _entries(cache_dir)
    assert len(entries) == len(sources)  # one per object, however many builds stored it
    for entry in entries:  # each whole: its digest matches its object
        data = entry.read_bytes()
        assert hashlib.sha256(data[32:]).digest() == data[:32]


def test_unwritable_cache_still_compiles(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(blocker))
    monkeypatch.delenv("MINIRT_CACHE", raising=False)
    (obj,) = compile_sources(TARGET, runtime_sources(BOARD)[:1], tmp_path / "out")
    assert obj.read_bytes().startswith(b"\x7fELF")


def test_tool_answers_are_kept_per_binary(cache_dir: Path, tmp_path: Path) -> None:
    """tool_answer runs the program once per version of its binary; a failed run's
    answer is asked again."""
    from toolchain.link.object_cache import tool_answer

    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho 1\n")
    asked: list[str] = []

    def ask(answer: str, keep: bool = True):
        return lambda: (asked.append(answer) or answer, keep)

    assert tool_answer([str(tool), "--version"], ask("v1")) == "v1"
    assert tool_answer([str(tool), "--version"], ask("not asked")) == "v1"
    assert tool_answer([str(tool), "-other"], ask("o")) == "o"  # other arguments
    assert asked == ["v1", "o"]
    tool.write_text("#!/bin/sh\necho 2 # a new build of the tool\n")  # size and mtime change
    assert tool_answer([str(tool), "--version"], ask("v2")) == "v2"
    assert tool_answer([str(tool), "-x"], ask("failed", keep=False)) == "failed"
    assert tool_answer([str(tool), "-x"], ask("again")) == "again"  # the failure not kept
    assert asked == ["v1", "o", "v2", "failed", "again"]


def test_tool_answers_without_a_cache(cache_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from toolchain.link.object_cache import tool_answer

    monkeypatch.setenv("MINIRT_CACHE", "off")
    calls = []
    for _ in range(2):
        tool_answer(["/bin/true"], lambda: (calls.append(1) or "x", True))
    assert len(calls) == 2 and not cache_dir.exists()
