"""The SHA-256 of a source tree, each file's digest remembered by its identity.

Every build stamps the toolchain's sources and runtime_c's (pipeline.build_stamp: a build
made by other sources is never reused). Reading and hashing the toolchain's 410 files
(4.3 MB) took 8-12 ms of CPU on every build; a file whose size, modification time and
inode are those of the last build has the digest it had, so only the files that changed
are read again. Python itself trusts less when it reuses a module's bytecode (its
modification time in seconds and its size). A file modified in the last RECENT_NS is
hashed every time and not remembered: a write within the file system's timestamp
granularity after it was hashed could keep its time (git's "racy" entries).

The remembered digests live in the user cache (toolchain/disk_cache.py, ``stamps/``),
one entry per tree; ``MINIRT_CACHE=off`` reads every file every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

from toolchain.disk_cache import EntryStore, cache_root

__all__ = ["RECENT_NS", "SOURCE_SUFFIXES", "tree_sha256"]

# What the toolchain and runtime_c trees hold that a build reads (pipeline.build_stamp):
# code, and data such as the shipped tuning defaults (toolchain/tunedb/defaults.json,
# which choose schedules).
SOURCE_SUFFIXES = (".py", ".c", ".h", ".inc", ".S", ".ld", ".yaml", ".json")
# Files modified this recently are hashed on every call and never remembered.
RECENT_NS = 2_000_000_000


def _sources(root: str, suffixes: tuple[str, ...]) -> list[tuple[tuple[str, ...], os.stat_result]]:
    """(path components under root, stat) of every file with one of `suffixes`, not in
    __pycache__ and not through a linked directory (as pathlib's rglob walks)."""
    found: list[tuple[tuple[str, ...], os.stat_result]] = []

    def walk(directory: str, parts: tuple[str, ...]) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                here = (*parts, entry.name)
                if entry.is_dir():
                    if entry.name != "__pycache__" and not entry.is_symlink():
                        walk(entry.path, here)
                elif os.path.splitext(entry.name)[1] in suffixes and entry.is_file():
                    found.append((here, entry.stat()))

    walk(root, ())
    return found


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _file_digest(path: str) -> bytes:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).digest()


def tree_sha256(root: str | Path, suffixes: Iterable[str]) -> str:
    """SHA-256 over the relative path ('/'-joined) and the SHA-256 of the bytes of every
    file under `root` with one of `suffixes` (not in __pycache__), in the order of their
    path components; a file unchanged since the last call reuses its digest (see the
    module docstring)."""
    root = str(root)
    files = sorted(_sources(root, tuple(suffixes)), key=lambda f: f[0])
    cache = cache_root()
    store = None if cache is None else EntryStore(cache / "stamps", ".json")
    key = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()
    known = _load(store, key)
    now = time.time_ns()
    kept: dict[str, list] = {}
    h = hashlib.sha256()
    for parts, st in files:
        rel = "/".join(parts)
        identity = _identity(st)
        was = known.get(rel)
        digest = b""
        if was is not None and was[:3] == identity:
            with contextlib.suppress(ValueError):  # not hex: read the file again
                digest = bytes.fromhex(was[3])
        if len(digest) != hashlib.sha256().digest_size:
            digest = _file_digest(os.path.join(root, *parts))
        if now - st.st_mtime_ns > RECENT_NS:
            kept[rel] = [*identity, digest.hex()]
        h.update(rel.encode() + b"\0")
        h.update(digest)
    if store is not None and kept != known:
        store.put(key, json.dumps(kept, separators=(",", ":")).encode())
    return h.hexdigest()


def _load(store: EntryStore | None, key: str) -> dict[str, list]:
    data = store.get(key) if store is not None else None
    if data is None:
        return {}
    try:
        table = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items()
            if isinstance(v, list) and len(v) == 4 and isinstance(v[3], str)}
