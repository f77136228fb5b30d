"""Files a build may keep between runs: where they live, and entries that are only read
back whole.

The runtime objects (link/object_cache.py) and the generated code's objects
(codegen/object_cache.py) both keep entries here, so the store sits below either layer.
Entries live in ``$MINIRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/minirt``, else
``~/.cache/minirt``; ``MINIRT_CACHE=off`` turns every cache off. An entry is the SHA-256
of its content followed by the content: one whose digest does not match (a torn copy, a
disk error, someone's edit) is ignored. Writers write a temporary file in the cache
directory and rename it into place, so concurrent builds never see half an entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["EntryStore", "binary_identity", "cache_root"]

_DIGEST = 32  # bytes of SHA-256 before the content in an entry


def cache_root() -> Path | None:
    """The directory minirt caches in (see the module docstring), or None when the
    cache is turned off."""
    if os.environ.get("MINIRT_CACHE", "").lower() in ("off", "0", "no"):
        return None
    explicit = os.environ.get("MINIRT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "minirt"


class EntryStore:
    """Entries under one directory, each the SHA-256 of its content then the content,
    named by key: read back only when whole, written atomically."""

    def __init__(self, directory: Path, suffix: str) -> None:
        self.dir = Path(directory)
        self.suffix = suffix

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}{self.suffix}"

    def get(self, key: str) -> bytes | None:
        """The content stored under `key`, or None when there is none or it is damaged."""
        try:
            data = self._path(key).read_bytes()
        except OSError:
            return None
        digest, content = data[:_DIGEST], data[_DIGEST:]
        if len(digest) != _DIGEST or hashlib.sha256(content).digest() != digest:
            return None
        return content

    def put(self, key: str, content: bytes) -> None:
        """Stores `content` under `key` atomically (temporary file, then rename); a
        cache that cannot be written is left as it is."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(content).digest() + content)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def binary_identity(tool: str) -> str:
    """A program's resolved path, size and modification time: an upgraded or rebuilt
    binary differs."""
    real = os.path.realpath(tool)
    try:
        st = os.stat(real)
        stat = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        stat = "?"
    return f"{real}\0{stat}"
