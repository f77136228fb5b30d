"""A cache of compiled runtime_c objects, shared by every build of this user.

Each build compiles the same dozen runtime_c sources with the same flags for its target
(only a --max-cycles budget or another --boot-check changes a flag), which cost about a
third of a second of clang CPU time per build on cortex-m4. The objects are
reproducible byte for byte (compile_sources: prefix maps, no absolute path, no time
stamp), so one compiled before is the object clang would write now, as long as nothing
it was made from differs. The key therefore covers all of it: the whole clang command
but its output path (flags, target, include and prefix-map directories), the directory
it runs in, the clang binary (its `--version` text, resolved path, size and
modification time), the source's bytes, the bytes of every header under runtime_c
and the extra include directories (a source may include any of them), and the bytes of
every other file the source includes by name (a .c including another .c: included_files).

Entries live in ``$MINIRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/minirt``, else
``~/.cache/minirt``, under ``objects/``; ``MINIRT_CACHE=off`` turns the cache off. The
same directory keeps, under ``tools/``, what the build asks of its tools (clang's and
ld.lld's versions, gcc's libgcc.a) per binary (tool_answer).
An entry is the SHA-256 of the object followed by the object: one whose digest does not
match (a torn copy, a disk error, someone's edit) is ignored and compiled again. Writers
write a temporary file in the cache directory and rename it into place, so concurrent
builds never see half an entry; two builds storing the same key store the same bytes.
The cache never holds the only copy of anything: any failure to read or write it just
means compiling.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from toolchain.disk_cache import EntryStore, binary_identity, cache_root

__all__ = ["HEADER_SUFFIXES", "EntryStore", "ObjectCache", "binary_identity", "cache_root",
           "compiler_identity", "default_cache", "included_files", "tool_answer"]

# What a runtime source may #include besides its own file.
HEADER_SUFFIXES = (".h", ".inc")

# An #include of a name written out ("x.c" or <x.c>).
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^">\r\n]+)[">]', re.MULTILINE)


def included_files(source: Path, search: Sequence[Path]) -> list[Path]:
    """The files other than headers (HEADER_SUFFIXES, which the key hashes all of) that
    `source` includes, directly or through each other, in the order first met:
    runtime_c/platform/uart/stm32_lpuart.c includes stm32_usart_v2.c, whose edits must
    reach the includer's key. A name is looked up as clang looks up a quoted one: beside
    the including file, then in the `search` directories (the -I ones); a name found
    nowhere is clang's to report."""
    found: list[Path] = []
    todo = [Path(source)]
    while todo:
        here = todo.pop()
        try:
            text = here.read_bytes()
        except OSError:
            continue
        for name in _INCLUDE.findall(text):
            rel = Path(name.decode(errors="replace"))
            if rel.suffix in HEADER_SUFFIXES:
                continue
            for d in (here.parent, *search):
                candidate = Path(d) / rel
                if candidate.is_file():
                    if candidate not in found and candidate != Path(source):
                        found.append(candidate)
                        todo.append(candidate)
                    break
    return found


def _headers_digest(dirs: Sequence[Path]) -> bytes:
    """SHA-256 over the names and bytes of every header under `dirs`."""
    h = hashlib.sha256()
    for d in dirs:
        for f in sorted(Path(d).rglob("*")):
            if f.suffix in HEADER_SUFFIXES and f.is_file():
                h.update(str(f).encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.digest()


class ObjectCache(EntryStore):
    """The object entries under `root`/objects for compiles whose headers live under
    `header_dirs` and whose compiler is described by `compiler` (its version text and
    binary's identity)."""

    def __init__(self, root: Path, header_dirs: Sequence[Path], compiler: str) -> None:
        super().__init__(Path(root) / "objects", ".o")
        self._base = hashlib.sha256(compiler.encode() + b"\0" + _headers_digest(header_dirs))

    def key(self, command: Sequence[str], cwd: Path, source: bytes,
            included: Sequence[tuple[str, bytes]] = ()) -> str:
        """The key of compiling `source` (its bytes) with `command` (without its output
        path) in directory `cwd`, the source including the `included` files (path and
        bytes: included_files)."""
        h = self._base.copy()
        h.update("\0".join([*command, "cwd", str(cwd)]).encode() + b"\0\0")
        h.update(hashlib.sha256(source).digest())
        for path, content in included:
            h.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
        return h.hexdigest()


def compiler_identity(tool: str, version: str) -> str:
    """What identifies a compiler binary for the cache: its `--version` text and its
    binary_identity (a rebuilt clang of the same version differs)."""
    return f"{binary_identity(tool)}\0{version}"


def tool_answer(argv: Sequence[str], ask: Callable[[], tuple[str, bool]]) -> str:
    """What running `argv` prints, as `ask` finds it (it runs the program and returns its
    answer and whether that answer may be kept), remembered in the cache's tools/ per
    argument list and binary_identity of argv[0]: a build asks clang and ld.lld for
    their versions and gcc for its libgcc.a, three processes (30-40 ms) whose answers
    change only with the binaries. A failed run's answer is not kept."""
    root = cache_root()
    if root is None:
        return ask()[0]
    store = EntryStore(root / "tools", ".txt")
    key = hashlib.sha256("\0".join([binary_identity(argv[0]), *argv]).encode()).hexdigest()
    kept = store.get(key)
    if kept is not None:
        with contextlib.suppress(UnicodeDecodeError):
            return kept.decode()
    answer, keep = ask()
    if keep:
        store.put(key, answer.encode())
    return answer


def default_cache(header_dirs: Sequence[Path], compiler: str) -> ObjectCache | None:
    """The user's object cache (cache_root), or None when it is turned off."""
    root = cache_root()
    return None if root is None else ObjectCache(root, header_dirs, compiler)
