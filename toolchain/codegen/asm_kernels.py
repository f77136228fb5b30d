"""Per-layer assembly kernels: functions whose code is written as assembly text for one
layer, its constants as immediates, and assembled beside the dispatch object.

The dispatch's LLVM (llvmlite's) has no assembly parser for Arm, so an inline-asm
statement with text stops it; runtime_c's kernels are compiled once for every layer, so
a constant of one layer (a requantization shift, a row distance) is a register or a
table there. An emitter that wants a layer's own code calls `declare` with the text of
its body: the function is declared in the IR module and its text kept on the module;
emit_image_object hands the texts on (its `asm_out`), and the pipeline assembles them
with the runtime's clang and links the object into the dispatch object
(link/asm_kernels.py). The symbol carries a digest of the text, so two layers with the
same code share one function, different code never collides, and the dispatch's IR
text (the codegen cache's key) changes with the assembly's. Each function has its own
section, so --gc-sections drops one nothing calls.
"""

from __future__ import annotations

import hashlib

from llvmlite import ir

__all__ = ["SYMBOL_PLACEHOLDER", "declare", "kernels_of"]

# Stands for the function's symbol in the body text given to `declare` (labels, its
# .size), replaced once the symbol (which hashes the text) is known.
SYMBOL_PLACEHOLDER = "@SYMBOL@"
_ATTR = "minirt_asm_kernels"


def kernels_of(module: ir.Module) -> dict[str, str]:
    """The assembly kernels declared in `module`: symbol -> its whole assembly text."""
    return dict(getattr(module, _ATTR, {}))


def declare(module: ir.Module, stem: str, body: str, args: list[ir.Type]) -> ir.Function:
    """A function of `args` returning void whose code is `body` (Thumb-2 unified-syntax
    instructions; SYMBOL_PLACEHOLDER stands for its name), named `stem` and the digest of
    its text, declared in `module` (once for the same text)."""
    digest = hashlib.sha256(f"{stem}\0{body}".encode()).hexdigest()[:16]
    symbol = f"{stem}_{digest}"
    kept: dict[str, str] = getattr(module, _ATTR, None) or {}
    setattr(module, _ATTR, kept)
    if symbol not in kept:
        text = "\n".join([
            f"\t.section .text.{symbol},\"ax\",%progbits",
            "\t.syntax unified",
            "\t.thumb",
            "\t.p2align 2",
            f"\t.globl {symbol}",
            f"\t.type {symbol},%function",
            "\t.thumb_func",
            f"{symbol}:",
            body.replace(SYMBOL_PLACEHOLDER, symbol),
            f"\t.size {symbol}, .-{symbol}",
            ""])
        kept[symbol] = text
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), args), name=symbol)
    return fn
