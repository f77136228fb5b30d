"""Builds our QEMU TCG instruction-count plugin (plugin/insn_count.c) on demand.

The plugin is compiled by the host C compiler into a cache directory, keyed by a hash of
its sources and the compiler, so it is built once per machine and rebuilt when the
sources change. Several processes may build it at the same time: each writes a private
temporary file and renames it into place atomically.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PluginBuildError", "build_plugin", "cache_dir", "plugin_sources"]

_PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"
_CFLAGS = ("-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror")


class PluginBuildError(Exception):
    """The host compiler could not build the QEMU plugin."""


def plugin_sources() -> list[Path]:
    """The C files (and our header) that make up the plugin."""
    return sorted(_PLUGIN_DIR.glob("*.[ch]"))


def cache_dir() -> Path:
    """``$MINIRT_CACHE_DIR``, else ``build/.cache`` in the source tree if writable, else
    ``~/.cache/minirt``."""
    env = os.environ.get("MINIRT_CACHE_DIR")
    if env:
        return Path(env)
    tree = Path(__file__).resolve().parents[2]
    if (tree / "pyproject.toml").is_file() and os.access(tree, os.W_OK):
        return tree / "build" / ".cache"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "minirt"


def _host_cc() -> str:
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name) or name
    raise PluginBuildError("no host C compiler (cc, gcc or clang) to build the QEMU plugin")


def build_plugin() -> Path:
    """Returns the path of the built ``insn_count`` plugin, building it if needed."""
    cc = _host_cc()
    digest = hashlib.sha256()
    digest.update(os.path.realpath(cc).encode())
    digest.update(" ".join(_CFLAGS).encode())
    for source in plugin_sources():
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    out_dir = cache_dir()
    target = out_dir / f"insn_count-{digest.hexdigest()[:16]}.so"
    if target.is_file():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".insn_count-", suffix=".so", dir=out_dir)
    os.close(fd)
    try:
        cmd = [
            cc,
            *_CFLAGS,
            "-I",
            str(_PLUGIN_DIR),
            "-o",
            tmp_name,
            str(_PLUGIN_DIR / "insn_count.c"),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise PluginBuildError(f"building the QEMU plugin failed:\n{proc.stderr}")
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return target
