"""Compiles the C kernels of the user's own operators (--custom-op, docs/custom-ops.md)
for the board, with the runtime's own flags, and checks each defines its function.

A compile error is one line, clang's first error with the user's own path
(`kernel.c:12:5: error: ...`), so it reads like every other model error; the
objects go into the link like the dispatch object, and --gc-sections drops whatever the
kernel defines that nothing calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from toolchain.graph.custom_ops import EXIT_CUSTOM_BASE, MAX_CUSTOM_OPS, CustomOp
from toolchain.graph.ir import Graph
from toolchain.kernel.custom_call import CustomCall
from toolchain.link.build import LinkError, compile_sources
from toolchain.link.out_dir import file_sha256
from toolchain.schedule import Program
from toolchain.target import Target

# clang's diagnostic line: FILE:LINE:COL: error: MESSAGE
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: "
                    r"(?P<msg>.*)$", re.M)


# Flags a user's kernel gets beyond the runtime's, by the start of the LLVM triple. clang
# puts small constants (a float literal's constant-pool entry) in RISC-V's small-data
# section .sdata, which is RAM the bare-metal start-up never fills: the link refuses it.
# The runtime has no such constants; a user's kernel often does (1.0f), so its constants
# go to .rodata (flash) instead.
_KERNEL_FLAGS: dict[str, tuple[str, ...]] = {
    "riscv32": ("-msmall-data-limit=0",),
    "riscv64": ("-msmall-data-limit=0",),
}


class CustomKernelError(LinkError):
    """A custom operator's C source does not compile or lacks its kernel function."""


def first_error(stderr: str, source: Path) -> str:
    """clang's first error as `SOURCE:LINE:COL: error: MESSAGE` with the user's own path
    for the source (clang names it by file name: it compiles from its directory)."""
    m = _ERROR.search(stderr)
    if m is None:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        return f"{source}: error: {lines[-1] if lines else 'the compiler failed'}"
    name = m["file"]
    where = source if Path(name).name == source.name else Path(source.parent, name)
    return f"{where}:{m['line']}:{m['col']}: error: {m['msg']}"


def _defines_function(obj: Path, name: str) -> bool:
    with obj.open("rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if not isinstance(section, SymbolTableSection):
                continue
            for sym in section.get_symbol_by_name(name) or []:
                if sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["type"] == "STT_FUNC" \
                        and sym["st_info"]["bind"] != "STB_LOCAL":
                    return True
    return False


def custom_ops_digest(ops: dict[str, CustomOp]) -> list[dict]:
    """What a build depends on of the --custom-op operators: their functions, the C
    files beside each kernel (headers it may include) and the reference's bytes."""
    out = []
    for code, op in sorted(ops.items()):
        files = sorted(f for f in op.source.parent.iterdir() if f.suffix in (".c", ".h"))
        out.append({"code": code, "c_function": op.c_function,
                    "py_function": op.py_function,
                    "sources": {f.name: file_sha256(f) for f in files},
                    "reference": str(op.reference), "reference_sha256":
                        file_sha256(op.reference)})
    return out


def compile_custom_kernels(target: Target, ops: Sequence[CustomOp], out_dir: Path,
                           extra_flags: Sequence[str] = ()) -> list[Path]:
    """One object per distinct C source of `ops`, compiled for `target` into `out_dir`.
    Raises CustomKernelError (one line) when a source does not compile or does not
    define (non-static) the function its operator names."""
    objects: list[Path] = []
    done: dict[Path, Path] = {}
    for op in ops:
        obj = done.get(op.source)
        if obj is None:
            try:
                arch = target.llvm_triple.split("-", 1)[0]
                flags = [*_KERNEL_FLAGS.get(arch, ()), *extra_flags]
                (obj,) = compile_sources(target, [op.source], out_dir, flags)
            except LinkError as e:
                text = str(e).split("\n", 1)[1] if "\n" in str(e) else str(e)
                raise CustomKernelError(f"custom op {op.code}: "
                                        f"{first_error(text, op.source)}") from None
            done[op.source] = obj
            objects.append(obj)
        if not _defines_function(obj, op.c_function):
            raise CustomKernelError(f"custom op {op.code}: {op.source} does not define the "
                                    f"function {op.c_function} (non-static), which "
                                    "--custom-op names")
    return objects


def custom_ops_of(program: Program) -> list[CustomOp]:
    """The user's operators the program's commands call (--custom-op), in order, each
    once."""
    ops = {step.kernel.op: None for step in program.steps if isinstance(step.kernel, CustomCall)}
    return list(ops)


def custom_op_failure(graph: Graph, exit_code: int) -> str | None:
    """The message of a run that ended because custom operator k's kernel returned
    non-zero (exit status EXIT_CUSTOM_BASE + k, runtime_c/harness/custom_op_exit.c),
    naming it; None for any other exit status."""
    k = exit_code - EXIT_CUSTOM_BASE
    if not 0 <= k < MAX_CUSTOM_OPS:
        return None
    for node in graph.nodes:
        if node.op == "custom_call" and node.attrs["ordinal"] == k:
            op: CustomOp = node.attrs["op"]
            return (f"custom op {op.code} (its kernel {op.c_function} in {op.source.name}) "
                    "returned a non-zero status; the inference stopped there")
    return None


__all__ = ["CustomKernelError", "compile_custom_kernels", "custom_op_failure",
           "custom_ops_digest",
           "custom_ops_of", "first_error"]
