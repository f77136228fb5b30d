"""The StableHLO interpreter's tests (openxla/stablehlo, stablehlo/tests/interpret/,
copied into ../shared/suites/stablehlo_interpret/) run through minirt.

Each file holds `// -----` separated parts; a test is a function of a part that holds
`check.*` ops. Their operands are the values under test and their constants (or second
operands) the expected values, so the runner rewrites each check away: the function
returns every checked value (and, for a two-operand check, the value it is compared
with), which minirt imports, runs and compares as the check op says (compare.py). The
expected constants are read by minirt's own MLIR parser and importer, as a function
that returns them.

With `lift=True` the top-level constants of the imported graph become graph inputs fed
with their values: most tests compute on constants only, which constant folding would
turn into a copied result; lifted, the firmware computes.

Out of scope, refused by this runner with the reason:
- distributed ops (DISTRIBUTED): they need several devices or a host channel;
- `check.expect_serialized_eq` (probe.mlir): it compares with files the interpreter's
  probe instrumentation writes, not with values in the test;
- a part with no `check` op: its expected values are FileCheck text of the
  interpreter's printout (printing.mlir, api_input_arguments.mlir).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_graph
from toolchain.mlir.parser import parse_text
from toolchain.reference import run_graph
from toolchain.testing.conformance.compare import Judge, almost_eq, exact, ulp_close
from toolchain.testing.conformance.outcome import Prepared

__all__ = ["Test", "DISTRIBUTED", "collect", "prepare", "lift_constants", "suite_dir"]

# Ops whose semantics need several processes (replicas, partitions) or a host channel;
# a single-device firmware has neither.
DISTRIBUTED = {
    "all_gather": "gathers across replicas", "all_reduce": "reduces across replicas",
    "all_to_all": "exchanges across replicas",
    "collective_broadcast": "broadcasts across replicas",
    "collective_permute": "exchanges across replicas",
    "reduce_scatter": "scatters across replicas", "send": "a host channel",
    "recv": "a host channel", "infeed": "a host channel", "outfeed": "a host channel",
    "partition_id": "the device's partition", "replica_id": "the device's replica",
    "after_all": "orders host-channel tokens",
}

_FUNC = re.compile(r"^func\.func\s+(?:public\s+|private\s+)?@([\w.$]+)\s*\((.*?)\)\s*(->.*)?\{\s*$")
_CHECK = re.compile(r"^(\s*)check\.(\w+)\s+(.*?)\s*$")
_RETURN = re.compile(r"^(\s*)(?:func\.)?return\s*$")


def suite_dir(shared: Path) -> Path:
    return shared / "suites" / "stablehlo_interpret"


@dataclass
class Check:
    """One check op: the value under test, and either an expected literal (`literal`
    and `type`) or a second value (`other`); `judge` compares them."""

    value: str
    type: str
    judge: Judge
    literal: str | None = None
    other: str | None = None


@dataclass
class Test:
    """One test function: its file's op, its name, the rewritten module text (None when
    out of scope), the checks, and why it is out of scope."""

    op: str
    name: str
    text: str | None
    checks: list[Check]
    refusal: str = ""
    func: str = ""  # the function's own name (`name` is unique across the suite)


def _split_type(rest: str) -> tuple[str, str, dict[str, str]]:
    """'OPERANDS : TYPE {attrs}' -> (operands, first type, attributes)."""
    attrs: dict[str, str] = {}
    m = re.search(r"\{([^{}]*)\}\s*$", rest)
    if m:
        for kv in m.group(1).split(","):
            k, _, v = kv.partition("=")
            attrs[k.strip()] = v.strip()
        rest = rest[:m.start()]
    operands, _, types = rest.rpartition(" : ")
    first = _split_top(types)[0].strip()
    for part in _split_top(operands)[1:]:
        k, eq, v = part.partition("=")
        if eq:
            attrs[k.strip()] = v.strip()
    return operands, first, attrs


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside <>, [] and ()."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "<[(" and 1 or 0
        depth -= ch in ">])" and 1 or 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def _tolerance(attrs: dict[str, str]) -> float:
    value = attrs.get("tolerance")
    return almost_eq() if value is None else almost_eq(float(value.split(":")[0]))


def _check(kind: str, rest: str) -> Check | str:
    """The Check of one check op, or why it is refused."""
    operands, ty, attrs = _split_type(rest)
    ops = [p.strip() for p in _split_top(operands)]
    if kind in ("expect_eq_const", "expect_almost_eq_const"):
        judge = exact if kind == "expect_eq_const" else _tolerance(attrs)
        return Check(ops[0], ty, judge, literal=ops[1])
    if kind in ("expect_eq", "expect_almost_eq"):
        judge = exact if kind == "expect_eq" else _tolerance(attrs)
        return Check(ops[0], ty, judge, other=ops[1])
    if kind == "expect_close":
        return Check(ops[0], ty, ulp_close(int(attrs["max_ulp_difference"])), other=ops[1])
    if kind == "expect_serialized_eq":
        return "check.expect_serialized_eq compares with the interpreter's probe files"
    return f"check.{kind} is not a check this runner reads"


def _distributed(part: str) -> str:
    """Why a part using a distributed op is out of scope, or ''."""
    found = sorted(d for d in DISTRIBUTED if re.search(rf"stablehlo\.{d}\b", part))
    if not found:
        return ""
    return f"stablehlo.{found[0]} is a distributed op ({DISTRIBUTED[found[0]]}): " \
           "single device only"


def _depth(text: str) -> int:
    """How many <, [ and ( of `text` are still open at its end."""
    text = text.replace("->", "")
    return sum(text.count(c) for c in "<[(") - sum(text.count(c) for c in ">])")


def _join_checks(body: list[str]) -> list[str]:
    """`body` with each check op on one line (a long expected literal spans several)."""
    out: list[str] = []
    k = 0
    while k < len(body):
        line = body[k]
        k += 1
        if _CHECK.match(line):
            while (_depth(line) > 0 or " : " not in line) and k < len(body):
                line += " " + body[k].strip()
                k += 1
        out.append(line)
    return out


def _tests_of_part(op: str, part: str) -> Iterator[Test]:
    lines = part.splitlines()
    starts = [(i, m) for i, line in enumerate(lines) if (m := _FUNC.match(line))]
    for i, m in starts:
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("}"))
        body = _join_checks(lines[i + 1:end])
        found = [(k, c) for k, line in enumerate(body) if (c := _CHECK.match(line))]
        if not found:
            continue
        name = m.group(1)
        checks: list[Check] = []
        refusal = ""
        for _, c in found:
            got = _check(c.group(2), c.group(3))
            if isinstance(got, str):
                refusal = refusal or got
            else:
                checks.append(got)
        refusal = _distributed(part) or refusal
        if m.group(2).strip() or m.group(3):
            refusal = refusal or "a test function with arguments or results"
        if refusal:
            yield Test(op, name, None, [], refusal, func=name)
            continue
        values = [v for c in checks for v in (c.value, c.other) if v is not None]
        types = [c.type for c in checks for v in (c.value, c.other) if v is not None]
        sig = ", ".join(types)
        new_body = []
        for line in body:
            if _CHECK.match(line):
                continue
            r = _RETURN.match(line)
            new_body.append(f"{r.group(1)}func.return {', '.join(values)} : {sig}" if r
                            else line)
        header = lines[i].replace("()", f"() -> ({sig})", 1)
        text = "\n".join(lines[:i] + [header] + new_body + lines[end:])
        yield Test(op, name, text, checks, func=name)


def collect(root: Path) -> list[Test]:
    """Every test function of the suite at `root` (its .mlir files and chlo/'s), in
    file order; a part without any check op is one refused test."""
    tests: list[Test] = []
    names: set[str] = set()
    files = sorted(root.glob("*.mlir")) + sorted((root / "chlo").glob("*.mlir"))
    for f in files:
        op = ("chlo." if f.parent.name == "chlo" else "") + f.stem
        for k, part in enumerate(f.read_text().split("// -----")):
            found = list(_tests_of_part(op, part))
            if not found and "func.func" in part:
                found = [Test(op, f"part{k}", None, [], _distributed(part) or (
                    "no check op: the expected values are FileCheck text of the "
                    "interpreter's printout"))]
            for t in found:
                t.name = f"{op}/{t.name}"
                n = 2
                while t.name in names:  # a file may reuse a function name in two parts
                    t.name = f"{op}/{t.func or 'part'}#{n}"
                    n += 1
                names.add(t.name)
            tests.extend(found)
    return tests


def _expected(check: Check) -> np.ndarray:
    """An expected literal's value, read by minirt's parser and importer."""
    text = (f"func.func @expected() -> {check.type} {{\n"
            f"  %0 = stablehlo.constant {check.literal} : {check.type}\n"
            f"  func.return %0 : {check.type}\n}}\n")
    graph = import_module(parse_text(text, "expected.mlir"), "expected")
    return np.asarray(run_graph(graph, [])[0])


def lift_constants(graph: Graph) -> tuple[Graph, list[np.ndarray]]:
    """A copy of `graph` whose top-level constants are graph inputs, and their values
    (to feed after the graph's own inputs). Constants inside regions stay: a region is
    closed, and what it reads from outside is already a node operand."""
    graph = copy.deepcopy(graph)
    lifted: dict[int, Tensor] = {}
    values: list[np.ndarray] = []
    kept = []
    for node in graph.nodes:
        if node.op == "constant":
            t = graph.add_input(node.outputs[0].type, f"const{len(values)}")
            lifted[id(node.outputs[0])] = t
            values.append(np.asarray(node.attrs["value"]))
            continue
        node.inputs = [lifted.get(id(x), x) for x in node.inputs]
        kept.append(node)
    graph.nodes = kept
    graph.outputs = [lifted.get(id(x), x) for x in graph.outputs]
    return graph, values


def prepare(test: Test, lift: bool = False) -> Prepared:
    """The test's graph, inputs and expected values; raises the import's refusal."""
    if test.text is None:
        raise CompileError(test.refusal)
    graph = import_module(parse_text(test.text, f"{test.op}.mlir"), test.func)
    verify_graph(graph)
    inputs: list[np.ndarray] = []
    if lift:
        graph, inputs = lift_constants(graph)
        verify_graph(graph)
    checks: list[tuple[int, np.ndarray | int, Judge]] = []
    k = 0  # the output of the check's value: the function returns them in check order
    for c in test.checks:
        if c.literal is not None:
            checks.append((k, _expected(c), c.judge))
            k += 1
        else:  # compared with the next output, the check's second value
            checks.append((k, k + 1, c.judge))
            k += 2
    return Prepared(graph, inputs, checks, k)
