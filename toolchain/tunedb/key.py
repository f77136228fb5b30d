"""The tuning database's key for a layer: its loop nest's shape and element types, and
the target, stable across models and runs.

Two layers share a key when the rules would weigh the same candidates for both: the same
domain (which dims are parallel, their extents), the same operands' shapes and types,
the same access pattern (every load's index expressions, with their constants: strides,
offsets, dilations), the same operations. What the key leaves out is what does not
change the loops: the values of the layer's weights and of its quantization (zero
points, pad values, requantization multipliers and shifts), which differ between
otherwise identical layers of two models.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from toolchain.kernel.form import Acc, Apply, Const, Expr, Index, Kernel, Load, children, postorder

__all__ = ["layer_key", "layer_keys", "layer_label"]


def _describe(root: Expr, numbered: dict[int, int], lines: list[str], keep_consts: bool,
              index_nodes: set[int]) -> int:
    """Appends a line per node of `root` not yet numbered (children first) and returns
    the root's number. A constant's value is kept only in an index expression (where it
    is a stride or an offset), or everywhere with `keep_consts`."""
    for e in postorder(root):
        if id(e) in numbered:
            continue
        kids = ",".join(str(numbered[id(c)]) for c in children(e))
        if isinstance(e, Index):
            text = f"i{e.dim}"
        elif isinstance(e, Const):
            value = repr(e.value) if keep_consts or id(e) in index_nodes else "_"
            text = f"c{value}:{e.dtype.name}"
        elif isinstance(e, Load):
            text = (f"L{e.operand}[{kids}]" + ("p" if e.pad is not None else "")
                    + ("v" if e.valid is not None else ""))
        elif isinstance(e, Apply):
            text = f"{e.op}:{e.dtype.name}({kids})"
        elif isinstance(e, Acc):
            text = f"acc:{e.dtype.name}"
        else:  # pragma: no cover - Expr is closed
            raise TypeError(f"unknown expression node {type(e).__name__}")
        numbered[id(e)] = len(numbered)
        lines.append(text)
    return numbered[id(root)]


def _index_nodes(root: Expr) -> set[int]:
    """The nodes of `root` inside some load's index or validity test (by id)."""
    inside: set[int] = set()
    for e in postorder(root):
        if isinstance(e, Load):
            for part in (*e.index, e.valid):
                if part is not None:
                    inside.update(id(n) for n in postorder(part))
    return inside


def _text(k: Kernel) -> str:
    types = ";".join(f"{'x'.join(map(str, t.shape))}:{t.dtype.name}" for t in k.operands)
    head = (f"domain {k.domain} parallel {k.n_parallel} combine {k.combine} "
            f"operands {types} result {k.result.dtype.name} "
            f"acc {k.acc_dtype.name} paired {k.paired} interleaved {k.interleaved}")
    numbered: dict[int, int] = {}
    lines = [head]
    body_index = _index_nodes(k.body)
    lines.append(f"body {_describe(k.body, numbered, lines, False, body_index)}")
    if k.init is not None:
        lines.append(f"init {_describe(k.init, numbered, lines, False, set())}")
    if k.epilogue is not None:
        # The epilogue's loads are at the parallel indices: their access does not vary
        # between the layers a key groups; its constants are quantization.
        lines.append(f"epilogue {_describe(k.epilogue, numbered, lines, False, set())}")
    return "\n".join(lines)


def layer_key(k: Kernel, target: str) -> str:
    """`<target>:<16 hex digits>`: the key of kernel `k`'s loop nest on target `target`."""
    return layer_keys(k, (target,))[0]


def layer_keys(k: Kernel, targets: Sequence[str]) -> list[str]:
    """layer_key of `k` on each of `targets` (the digest computed once)."""
    digest = hashlib.sha256(_text(k).encode()).hexdigest()[:16]
    return [f"{t}:{digest}" for t in targets]


def layer_label(k: Kernel) -> str:
    """A readable summary for the database and the tuner's report: the domain (parallel
    dims | reduced dims) and the operand and result element types."""
    par = "x".join(map(str, k.domain[:k.n_parallel]))
    red = "x".join(map(str, k.domain[k.n_parallel:]))
    types = ",".join(t.dtype.name for t in k.operands)
    return f"{k.combine or 'map'} {par}" + (f" | {red}" if red else "") \
        + f" ({types} -> {k.result.dtype.name})"
