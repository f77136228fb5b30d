"""A cache of the objects LLVM made from IR text, shared by every build of this user.

LLVM's optimisation pipeline and code emission are the largest stage of a build
(`codegen llvm`: 0.3 s for the shared JAX cnn, 1.2 s for resnet8 on cortex-m4), and
their output is a function of their input: the same IR text, target machine and
pipeline give the same object, byte for byte. A build of a model that was built
before (the same model for another board of the same target, or with another
--max-cycles, --boot-check or --harness, which only the runtime sees; minirt-run
rebuilding after an option change; a CI job) makes the same IR text and takes its
object from here. A model that changed makes other IR text and is compiled.

The key covers everything the object is made from: the IR text as LLVM parses it
(module.py: the dispatch functions and the module bytes, weights included), the target
machine (triple, CPU, features, ABI, optimisation level, relocation and code model),
the pipeline's options and the source of toolchain/codegen/target_machine.py that
builds it, and LLVM itself (llvmlite's and LLVM's versions, the identity of
libllvmlite: its path, size and modification time). Entries live beside the runtime
objects (toolchain/disk_cache.py: ``$MINIRT_CACHE_DIR``, ``MINIRT_CACHE=off``)
under ``codegen/``, each the SHA-256 of the object followed by the object, read back
only when whole and renamed into place when written. Unlike the runtime's dozen
objects they grow with every model built, so the least recently used are removed past
MAX_BYTES.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from toolchain.disk_cache import EntryStore, binary_identity, cache_root

__all__ = ["MAX_BYTES", "CodegenCache", "codegen_cache"]

# What the codegen entries may take on disk before the least recently used go. A build's
# object is its code plus its module (weights included): 20 KB for the JAX cnn, 400 KB for
# vww_96_int8 on cortex-m4, so this keeps a few hundred builds.
MAX_BYTES = 256 << 20
_SUFFIX = ".o"


@functools.cache
def llvm_identity() -> str:
    """llvmlite's and LLVM's versions and libllvmlite's binary_identity: a rebuilt or
    upgraded LLVM may emit other bytes."""
    import llvmlite
    import llvmlite.binding as llvm
    from llvmlite.binding import ffi

    version = ".".join(map(str, llvm.llvm_version_info))
    # The library llvmlite loaded (its loader's path; else where llvmlite ships it).
    library = getattr(ffi.lib, "_name", None) or str(
        Path(ffi.__file__).with_name(ffi.get_library_name()))
    return f"llvmlite {llvmlite.__version__}\0llvm {version}\0{binary_identity(library)}"


@functools.cache
def _pipeline_source() -> bytes:
    """The SHA-256 of target_machine.py, which builds the target machine and the pass
    pipeline: a pass added there changes every key."""
    return hashlib.sha256(Path(__file__).with_name("target_machine.py").read_bytes()).digest()


class CodegenCache(EntryStore):
    """The codegen entries under `root`/codegen (see the module docstring)."""

    def __init__(self, root: Path, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(Path(root) / "codegen", _SUFFIX)
        self.max_bytes = max_bytes

    @staticmethod
    def key(machine: Iterable[str], text: str) -> str:
        """The key of the object of IR `text` made by the target machine and pipeline
        `machine` describes (TargetInfo.codegen_recipe)."""
        h = hashlib.sha256(b"minirt codegen 1\0" + llvm_identity().encode() + b"\0")
        h.update(_pipeline_source())
        h.update("\0".join(machine).encode() + b"\0\0")
        h.update(text.encode())
        return h.hexdigest()

    def get(self, key: str) -> bytes | None:
        """The object stored under `key` (marked as just used), or None."""
        found = super().get(key)
        if found is not None:
            with contextlib.suppress(OSError):
                os.utime(self._path(key))  # least recently used goes first: not this one
        return found

    def put(self, key: str, content: bytes) -> None:
        """Stores the object, then removes the least recently used entries while they
        take more than max_bytes."""
        super().put(key, content)
        self._prune()

    def _prune(self) -> None:
        entries = []
        for path in self.dir.glob(f"*/*{_SUFFIX}"):
            with contextlib.suppress(OSError):
                st = path.stat()
                entries.append((st.st_mtime_ns, st.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size


def codegen_cache() -> CodegenCache | None:
    """The user's codegen cache (toolchain.disk_cache.cache_root), or None when
    caching is turned off."""
    root = cache_root()
    return None if root is None else CodegenCache(root)
