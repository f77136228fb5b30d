"""Linking: runtime_c built by clang for the board, a generated linker script, ld.lld."""

from toolchain.link.build import (
    DEFAULT_RUNTIME_PARTS,
    LinkError,
    LinkResult,
    c_flags,
    compile_sources,
    compiler_helpers_library,
    link_firmware,
    runtime_c_dir,
    runtime_sources,
)
from toolchain.link.images import LoadChunk, flash_chunks, intel_hex, raw_binary
from toolchain.link.script import linker_script

__all__ = [
    "DEFAULT_RUNTIME_PARTS",
    "LinkError",
    "LinkResult",
    "LoadChunk",
    "c_flags",
    "compile_sources",
    "compiler_helpers_library",
    "flash_chunks",
    "intel_hex",
    "link_firmware",
    "linker_script",
    "raw_binary",
    "runtime_c_dir",
    "runtime_sources",
]
