"""A disk cache of the methods the dataclass decorator compiles while a command starts.

`@dataclass` writes the source of each class's ``__init__``, ``__repr__``, ``__eq__``,
``__hash__`` and (frozen) ``__setattr__`` / ``__delattr__`` and compiles it with ``exec``
when the class is defined. The toolchain defines about 160 dataclasses, so every command
compiled some 900 small functions before doing anything: 80 ms of CPU, a third of
minirt-build's start-up (bench/compile_time.py), and more than the import of numpy.
Python's own bytecode cache keeps the modules' code, not this.

A command (cli/__init__.py) installs this cache before its imports: the dataclasses
module's ``exec`` (a module global, looked up before the builtin) becomes
`DataclassCode.exec`, which runs the code object compiled from the same source text
when the cache has it and compiles (as ``exec`` would: file ``<string>``, no inherited
``__future__`` flags) and remembers it otherwise. Running a code object compiled from
the same text with the same globals and locals is what ``exec`` of the text does, so
the classes are the same; a text that changes is another key, so nothing goes stale.
The compiled code is saved by `DataclassCode.save` (run_tool, at the end of the
command) when something was compiled, in the user cache (toolchain/disk_cache.py,
``python/`` there, checked by its SHA-256 like every entry), one entry per command and
Python bytecode version. ``MINIRT_CACHE=off`` turns it off with the other caches.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import marshal
import sys
from types import CodeType
from typing import Any

from toolchain.disk_cache import EntryStore, cache_root

__all__ = ["MAX_ENTRIES", "DataclassCode", "install", "installed", "uninstall"]

# Past this many texts an entry keeps only what its last run used: the toolchain's own
# dataclasses make about 900, and each edit of a dataclass adds a few more.
MAX_ENTRIES = 4000


class DataclassCode:
    """The code objects of dataclass method sources, read from and saved to one entry
    of `store` (None: nothing is read or saved)."""

    def __init__(self, store: EntryStore | None, key: str) -> None:
        self.store, self.key = store, key
        self.known: dict[str, CodeType] = self._load()
        self.used: dict[str, CodeType] = {}
        self.compiled = 0  # texts compiled here (not found in the entry)
        self._saved = 0  # ... of which the entry holds this many

    def _load(self) -> dict[str, CodeType]:
        data = self.store.get(self.key) if self.store is not None else None
        if data is None:
            return {}
        try:
            table = marshal.loads(data)
        except (EOFError, ValueError, TypeError):  # another Python's, or not marshal
            return {}
        if not isinstance(table, dict):
            return {}
        return {k: v for k, v in table.items()
                if isinstance(k, str) and isinstance(v, CodeType)}

    def exec(self, source: Any, globals: dict | None = None,  # noqa: A002 (exec's names)
             locals: dict | None = None, /) -> None:  # noqa: A002
        """``exec(source, globals, locals)``, with the code of a source text compiled
        before when there is one."""
        if not isinstance(source, str):
            builtins.exec(source, globals, locals)
            return
        code = self.used.get(source) or self.known.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
        self.used[source] = code
        builtins.exec(code, globals, locals)

    def save(self) -> None:
        """Writes the entry when this process compiled something: what it used, with
        what the entry held while that stays under MAX_ENTRIES (the commands import
        other modules for other models)."""
        if self.store is None or self.compiled == self._saved:
            return
        table = {**self.known, **self.used}
        if len(table) > MAX_ENTRIES:
            table = dict(self.used)
        self.store.put(self.key, marshal.dumps(table))
        self.known, self._saved = table, self.compiled


_installed: DataclassCode | None = None


def install(command: str) -> DataclassCode:
    """Makes the dataclasses module compile through a cache for `command` (its entry in
    the user cache; none when caching is off). Returns the cache."""
    global _installed
    try:
        root = cache_root()
    except (RuntimeError, OSError):  # no home directory to cache in: compile as Python does
        root = None
    tag = f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}"
    store = None if root is None else EntryStore(root / "python", ".marshal")
    _installed = DataclassCode(store, f"dataclass-code-{tag}-{command}")
    dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
    return _installed


def installed() -> DataclassCode | None:
    """The cache `install` put in place, if any."""
    return _installed


def uninstall() -> None:
    """The dataclasses module's ``exec`` is the builtin again."""
    global _installed
    _installed = None
    vars(dataclasses).pop("exec", None)
