"""Human-readable text form of a Graph (what `minirt-build --dump-ir` prints)."""

from __future__ import annotations

from typing import Any

import numpy as np

from toolchain.graph.ir import Graph, Node

_MAX_INLINE = 8


def _fmt_value(v: Any) -> str:
    if isinstance(v, np.ndarray):
        if v.size <= _MAX_INLINE:
            return np.array2string(v.reshape(-1), separator=", ", precision=6)
        return f"<{v.size} values, min {v.min():.6g}, max {v.max():.6g}>"
    if isinstance(v, tuple):
        return "[" + ", ".join(_fmt_value(x) for x in v) + "]"
    return str(v)


def format_node(node: Node) -> str:
    outs = ", ".join(f"%{t.name}" for t in node.outputs)
    ins = ", ".join(f"%{t.name}" for t in node.inputs)
    attrs = ", ".join(f"{k} = {_fmt_value(v)}" for k, v in sorted(node.attrs.items()))
    types = ", ".join(str(t.type) for t in node.outputs)
    text = f"{outs} = {node.op}({ins})"
    if attrs:
        text += f" {{{attrs}}}"
    text += f" : {types}"
    if node.loc is not None:
        text += f"  // {node.loc}"
    return text


def print_graph(graph: Graph) -> str:
    """The graph as text, one node per line, tensors numbered in order."""
    graph.rename()
    args = ", ".join(f"%{t.name}: {t.type}" for t in graph.inputs)
    results = ", ".join(str(t.type) for t in graph.outputs)
    lines = [f"graph @{graph.name}({args}) -> ({results}) {{"]
    lines += ["  " + format_node(n) for n in graph.nodes]
    lines.append("  return " + ", ".join(f"%{t.name}" for t in graph.outputs))
    lines.append("}")
    return "\n".join(lines) + "\n"
