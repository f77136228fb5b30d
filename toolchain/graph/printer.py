"""Human-readable text form of a Graph (what `minirt-build --dump-ir` prints).

A node with regions prints them below itself, indented, each as a header with its
inputs (block arguments, then captured values) and its nodes, ending in `return`.
"""

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


# What each op's regions are called in the printed text (StableHLO's names).
REGION_NAMES = {
    "while": ("cond", "body"), "if": ("true_branch", "false_branch"),
    "reduce_region": ("body",), "reduce_window_region": ("body",), "sort": ("comparator",),
    "scatter": ("update_computation",), "select_and_scatter": ("select", "scatter"),
}


def _region_name(node: Node, i: int) -> str:
    if node.op == "cfg":
        return f"^bb{i}"
    names = REGION_NAMES.get(node.op, ())
    return names[i] if i < len(names) else f"branch{i}"


def _body_lines(graph: Graph, indent: str) -> list[str]:
    """The nodes of `graph` and of their regions, then its return, at `indent`. A loop
    over an explicit stack: regions may nest deeper than Python's recursion allows."""
    lines: list[str] = []
    stack: list[tuple[str, Graph | Node | None, str]] = [("return", graph, indent)]
    stack += [("node", n, indent) for n in reversed(graph.nodes)]
    while stack:
        kind, item, ind = stack.pop()
        if kind == "line":
            lines.append(ind)
        elif kind == "return":
            lines.append(ind + "return " + ", ".join(f"%{t.name}" for t in item.outputs))
        else:
            lines.append(ind + format_node(item))
            inner = ind + "    "
            for i in reversed(range(len(item.regions))):
                region = item.regions[i]
                stack.append(("line", None, ind + "  }"))
                stack.append(("return", region, inner))
                stack += [("node", n, inner) for n in reversed(region.nodes)]
                args = ", ".join(f"%{t.name}: {t.type}" for t in region.inputs)
                stack.append(("line", None, f"{ind}  {_region_name(item, i)}({args}) {{"))
    return lines


def print_graph(graph: Graph) -> str:
    """The graph as text, one node per line, tensors numbered in order."""
    graph.rename()
    args = ", ".join(f"%{t.name}: {t.type}" for t in graph.inputs)
    results = ", ".join(str(t.type) for t in graph.outputs)
    lines = [f"graph @{graph.name}({args}) -> ({results}) {{"]
    lines += _body_lines(graph, "  ")
    lines.append("}")
    n_in, n_out, n = len(graph.inputs), len(graph.outputs), len(graph.states)
    for k, s in enumerate(graph.states):  # which arguments and results are state
        lines.append(f"// state '{s.key}': %{graph.inputs[n_in - n + k].name} at the start, "
                     f"result {n_out - n + k} at the end")
    return "\n".join(lines) + "\n"
