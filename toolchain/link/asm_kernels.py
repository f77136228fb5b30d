"""Assembles a build's per-layer assembly kernels (codegen/asm_kernels.py) and links
their object into the dispatch object.

The texts are assembled by the clang that compiles the runtime, with the runtime's flags
for the target (its triple, CPU, FPU and ABI), as one assembly file; the object is kept
beside the generated objects (codegen/object_cache.py: ``codegen/``, the least recently
used removed past its MAX_BYTES, as these grow with every model built too) keyed by the
whole text, the whole command and the clang binary's identity, so any change of a
kernel's text (a constant of the layer) or of the target's flags assembles again. `ld.lld -r` then
joins that object and the dispatch object into one relocatable object, so everything
that takes the dispatch object (the firmware link, the library archive, the size
report) takes the kernels with it; each kernel keeps its own section for
--gc-sections. An assembler error is an AsmKernelError naming the kernel and the
assembler's first error line.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

from toolchain.codegen.object_cache import codegen_cache
from toolchain.link.build import LinkError, _clang, _lld, _version
from toolchain.link.object_cache import compiler_identity
from toolchain.target import Target
from toolchain.timings import stage

__all__ = ["AsmKernelError", "assemble_kernels", "link_kernels"]

_ERROR = re.compile(r"^[^:\n]*:(?P<line>\d+):\d+: error: (?P<msg>.*)$", re.M)


class AsmKernelError(LinkError):
    """A per-layer assembly kernel the assembler refused (a compiler bug, or a target
    whose assembler lacks an instruction the kernel uses)."""


def _command(target: Target) -> list[str]:
    """clang with the target's own flags (triple, CPU, FPU, ABI): the C flags' others
    (-g among them, which would name the temporary directory) mean nothing here."""
    return [_clang(), f"--target={target.llvm_triple}", *target.cflags, "-x", "assembler",
            "-c", "kernels.s"]


def _failure(target: Target, kernels: dict[str, str], text: str, stderr: str) -> str:
    """One paragraph: the kernel and line the assembler's first error is in."""
    m = _ERROR.search(stderr)
    if m is None:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        return (f"assembling the per-layer kernels for {target.name} failed: "
                f"{lines[-1] if lines else 'the assembler failed'}")
    number = int(m["line"])
    before = text.splitlines()[:number]
    symbol = next((s for s in reversed([ln.rstrip(":") for ln in before])
                   if s in kernels), "?")
    return (f"assembling the per-layer kernel {symbol} for {target.name} failed at line "
            f"{number} ({before[-1].strip() if before else ''!r}): {m['msg']}")


def assemble_kernels(target: Target, kernels: dict[str, str]) -> bytes:
    """The object of `kernels` (symbol -> assembly text) for `target`, from the cache
    when assembled before with the same text, command and clang."""
    text = "".join(kernels[s] for s in sorted(kernels))
    cmd = _command(target)
    h = hashlib.sha256(b"minirt asm 1\0")
    h.update(compiler_identity(_clang(), _version(_clang())).encode() + b"\0")
    h.update("\0".join(cmd).encode() + b"\0\0" + text.encode())
    key = h.hexdigest()
    store = codegen_cache()
    found = store.get(key) if store is not None else None
    if found is not None:
        return found
    with tempfile.TemporaryDirectory(prefix="minirt-asm-") as tmp:
        (Path(tmp) / "kernels.s").write_text(text)
        proc = subprocess.run([*cmd, "-o", "kernels.o"], cwd=tmp, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise AsmKernelError(_failure(target, kernels, text, proc.stderr))
        obj = (Path(tmp) / "kernels.o").read_bytes()
    if store is not None:
        store.put(key, obj)
    return obj


def link_kernels(target: Target, dispatch: bytes, kernels: dict[str, str]) -> bytes:
    """The dispatch object `dispatch` joined with the object of its per-layer kernels
    (`ld.lld -r`); `dispatch` itself where there are none."""
    if not kernels:
        return dispatch
    with stage("asm kernels"):
        return _join(target, dispatch, assemble_kernels(target, kernels))


def _join(target: Target, dispatch: bytes, asm: bytes) -> bytes:
    with tempfile.TemporaryDirectory(prefix="minirt-asm-") as tmp:
        d = Path(tmp)
        (d / "dispatch.o").write_bytes(dispatch)
        (d / "kernels.o").write_bytes(asm)
        proc = subprocess.run([_lld(), "-r", "-o", "joined.o", "dispatch.o", "kernels.o"],
                              cwd=d, capture_output=True, text=True)
        if proc.returncode != 0:
            raise LinkError(f"joining the per-layer kernels with the dispatch object for "
                            f"{target.name} failed:\n{proc.stderr}")
        return (d / "joined.o").read_bytes()
