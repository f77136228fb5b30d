"""Does a firmware's model code compute in floating point? Read off its disassembly.

An int8 model must not pay for floats: on a Cortex-M0+ or M3 every float operation is a
call into libgcc's soft-float routines. This walks the call graph from every dispatch
function (the generated `dN_*` symbols) through the linked image and lists each float
instruction (VFP / FPU mnemonics) and each call to a soft-float helper it reaches. The
runtime and start-up code are not searched: only what the model's code runs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

__all__ = ["FloatUse", "float_use"]

_FUNCTION = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_INSN = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)(.*)$")
_TARGET = re.compile(r"<([^>+]+)(?:\+0x[0-9a-f]+)?>")
_DISPATCH = re.compile(r"^d\d+_")
# libgcc / compiler-rt soft-float entry points, in their ARM EABI and GNU spellings.
_SOFT_FLOAT = re.compile(
    r"^__aeabi_(?:[fd](?:add|sub|rsub|mul|div|neg|cmp\w*|2\w+)|[ul]?[il]2[fd]|h2f|f2h)\w*$"
    r"|^__(?:add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord|fix|fixuns|float|floatun|"
    r"extend|trunc|pow|powi)\w*[sdhtx]f\w*$")
# Float mnemonics: VFP and FPU data processing on Arm (MVE integer vector ops would
# also start with v, but the targets this guards have neither), f-prefixed RISC-V
# float instructions, SSE scalar/packed float on x86.
_FLOAT_MNEMONIC = {
    "arm": re.compile(r"^v(?!push|pop)"),
    "riscv": re.compile(r"^f(?!ence)"),
    "x86": re.compile(r"^(?:v?(?:add|sub|mul|div|min|max|sqrt|cvt\w*|ucomi|comi)[sp][sd]$|"
                      r"f\w+)"),
}


class FloatUse(list):
    """One line per float instruction or soft-float call: 'function: what'."""


def _architecture(text: str) -> str:
    m = re.search(r"file format (\S+)", text)
    fmt = m.group(1) if m else ""
    if "arm" in fmt:
        return "arm"
    if "riscv" in fmt:
        return "riscv"
    return "x86"


def float_use(elf: Path) -> FloatUse:
    """Float work reachable from the model's dispatch functions in `elf`."""
    objdump = shutil.which("llvm-objdump")
    if objdump is None:
        raise RuntimeError("llvm-objdump not found (install Debian's llvm package)")
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(elf)], check=True,
                          capture_output=True, text=True).stdout
    mnemonic = _FLOAT_MNEMONIC[_architecture(text)]
    body: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        if m := _FUNCTION.match(line):
            current = body.setdefault(m.group(1), [])
        elif current is not None and (m := _INSN.match(line)):
            current.append((m.group(1), m.group(2)))
    found = FloatUse()
    todo = [name for name in body if _DISPATCH.match(name)]
    seen = set(todo)
    while todo:
        fn = todo.pop()
        if _SOFT_FLOAT.match(fn):
            found.append(f"{fn}: soft-float routine")
            continue
        for op, args in body.get(fn, []):
            if mnemonic.match(op):
                found.append(f"{fn}: {op}{args}")
            for callee in _TARGET.findall(args):
                if callee in body and callee not in seen and callee != fn:
                    seen.add(callee)
                    todo.append(callee)
    return found
