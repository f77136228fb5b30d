"""The package's imports run one way: no cycle between files of toolchain/, and no file
of a lower layer importing a higher one (docs/architecture.md, "Layers").

Every import counts, at module level or inside a function, under `if TYPE_CHECKING`
or not: each is a place where a change in one file can break another. Read with `ast`
only, so the check needs nothing but the sources.

`from P import x` depends on the module P.x when there is one (importing a submodule
runs P's __init__ only for its own names), else on P itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolchain"

# Lowest first. A file may import its own layer's files (without a cycle) and any
# lower layer's; docs/architecture.md lists the same order with the reason for each.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("toolchain", "small_floats", "types", "diagnostics", "timings", "disk_cache",
     "tree_digest"),
    ("target",),
    ("mlir",),
    ("graph",),
    ("reference", "quant"),
    ("frontend", "loader"),
    ("passes",),
    ("kernel",),
    ("tunedb",),
    ("loops",),
    ("schedule",),
    ("module",),
    ("codegen",),
    ("link",),
    ("emu",),
    ("report",),
    ("pipeline", "stream"),
    ("library", "flash", "bench"),
    ("cli", "api", "tune"),
    ("testing",),
)

# The oracle computes what a graph means from the spec; it must not share the
# compiler's lowering, so that --check can catch an error in it.
REFERENCE_MAY_NOT_IMPORT = ("passes", "kernel", "loops", "schedule", "codegen")

MAX_LINES = 800


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {imported module of toolchain: first line importing it}."""
    mods = _modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    deps.setdefault(target, node.lineno)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _layer_of(module: str) -> int:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "toolchain"
    for level, names in enumerate(LAYERS):
        if key in names:
            return level
    raise AssertionError(f"{module}: its package '{key}' has no layer in LAYERS")


def test_no_import_cycles():
    graph = import_graph()
    lines = []
    for component in _cycles(graph):
        members = set(component)
        lines.append(f"cycle of {len(component)}: " + ", ".join(component))
        lines += [f"    {a} -> {b} (line {graph[a][b]})"
                  for a in component for b in sorted(graph[a]) if b in members]
    assert not lines, "\n".join(lines)


def test_imports_go_down_the_layers():
    graph = import_graph()
    upward = [f"{a} (layer {_layer_of(a)}) imports {b} (layer {_layer_of(b)}) "
              f"at line {line}"
              for a, deps in sorted(graph.items()) for b, line in sorted(deps.items())
              if _layer_of(b) > _layer_of(a)]
    assert not upward, "\n".join(upward)


def test_reference_owes_nothing_to_the_compiler():
    graph = import_graph()
    bad = [f"{a} imports {b} (line {line})"
           for a, deps in sorted(graph.items()) if a.startswith("toolchain.reference")
           for b, line in sorted(deps.items())
           if b.split(".")[1] in REFERENCE_MAY_NOT_IMPORT]
    assert not bad, "\n".join(bad)


def test_every_package_has_a_layer():
    for name in _modules():
        _layer_of(name)


def test_layers_are_written_down():
    """docs/architecture.md's layer line is this table, so the two cannot drift."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    match = re.search(r"^Layers, lowest first: (.+)$", text, re.MULTILINE)
    assert match, "docs/architecture.md has no 'Layers, lowest first: ...' line"
    written = [tuple(n.strip(" `.") for n in group.split(","))
               for group in match.group(1).split("→")]
    assert written == [tuple(g) for g in LAYERS]


def test_no_file_over_the_size_limit():
    """A file past MAX_LINES has usually grown a second idea; split it where that
    idea starts."""
    big = [f"{p.relative_to(ROOT)}: {n} lines" for p in sorted(PACKAGE.rglob("*.py"))
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not big, "\n".join(big)


def test_the_checker_sees_a_cycle_and_an_upward_import():
    """The checks above can fail: a two-file cycle and an upward edge are found."""
    graph = {"toolchain.graph.a": {"toolchain.graph.b": 1},
             "toolchain.graph.b": {"toolchain.graph.a": 3},
             "toolchain.graph.c": {}}
    assert _cycles(graph) == [["toolchain.graph.a", "toolchain.graph.b"]]
    assert _layer_of("toolchain.codegen.emit") > _layer_of("toolchain.schedule.program")
    assert _layer_of("toolchain") == 0
