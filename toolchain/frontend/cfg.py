"""Functions with several blocks (`cf.br`, `cf.cond_br`) -> one `cfg` node.

Every value that more than one block touches gets a *shared* number: the function's
arguments first (the node's operands), then every other block's arguments, then each
value a block defines and another block reads (MLIR lets a block read any value of a
block that dominates it). Each block becomes a region whose inputs are its arguments,
then the shared values it reads (found as captures, frontend/regions.py), and whose
results are its terminator's operands, then the shared values it defines. The node's
`blocks` attribute says, per block, which shared value each input and each extra result
is, and where its terminator goes:

    ("return", n)                       the node's results are the first n results
    ("br", dest, n)                     block dest's arguments = the first n results
    ("cond_br", t, n_t, f, n_f)         result 0 (i1) picks t or f; their arguments follow

so the graph stays closed and the reference and the schedule (schedule/control.py) can
run it: blocks run from block 0 until a return.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolchain.frontend.regions import RegionScope
from toolchain.frontend.types import as_tensor_type, func_type, known_or_unknown
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_node
from toolchain.types import TensorType

if TYPE_CHECKING:
    from toolchain.mlir.ir import Block, Operation

RETURNS = ("func.return", "return", "stablehlo.return")
BRANCHES = ("cf.br", "cf.cond_br")


def import_cfg(importer: Any, func: Operation, args: list[Tensor], stack: list[str],
               name: str) -> list[Tensor]:
    """The results of the multi-block function `func` applied to `args`: one `cfg` node
    added to the importer's graph."""
    blocks = func.regions[0].blocks
    owner: dict[int, int] = {}
    for k, block in enumerate(blocks):
        for v in list(block.args) + [r for op in block.ops for r in op.results]:
            owner[id(v)] = k
    shared: dict[int, int] = {}
    types: list[TensorType] = []

    def share(v: Any) -> None:
        if id(v) not in shared:
            shared[id(v)] = len(types)
            types.append(known_or_unknown(v.type))

    for a in blocks[0].args:
        share(a)
    for block in blocks[1:]:
        for a in block.args:
            share(a)
    for k, block in enumerate(blocks):
        for op in block.ops:
            for inner in op.walk():
                for v in inner.operands:
                    if owner.get(id(v), k) != k:
                        share(v)
    # Placeholders for the shared values: what a block reads from outside itself.
    outer: dict[int, Tensor] = {}
    holder_id: dict[int, int] = {}
    for block in blocks:
        for v in list(block.args) + [r for op in block.ops for r in op.results]:
            if id(v) in shared:
                t = Tensor(types[shared[id(v)]])
                outer[id(v)] = t
                holder_id[id(t)] = shared[id(v)]
    regions, infos = [], []
    for k, block in enumerate(blocks):
        graph, info = _import_block(importer, block, k, blocks, outer, holder_id, shared,
                                    stack, func)
        regions.append(graph)
        infos.append(info)
    results = [t for t in (as_tensor_type(r) for r in _result_types(func))]
    if any(t is None for t in results):
        importer.error(f"'@{name}' returns a non-tensor type", func)
        return []
    node = importer.graph.add("cfg", list(args), results, {"blocks": tuple(infos)}, func.loc,
                              regions)
    err = verify_node(node)
    if err is not None:
        importer.errors.append(err)
    return node.outputs


def _result_types(func: Operation) -> tuple:
    return func_type(func).results


def _import_block(importer: Any, block: Block, k: int, blocks: list[Block],
                  outer: dict[int, Tensor], holder_id: dict[int, int],
                  shared: dict[int, int], stack: list[str], func: Operation
                  ) -> tuple[Graph, tuple]:
    """Block k as a region; returns it and its (n_args, reads, writes, terminator)."""
    graph = Graph(f"block{k}")
    scope = RegionScope(graph, {}, outer)
    for a in block.args:
        scope.env[id(a)] = graph.add_input(outer[id(a)].type)
    saved = importer.graph
    importer.graph = graph
    importer.region_scopes[id(scope.env)] = scope
    term: tuple = ("return", 0)
    outs: list[Tensor] = []
    try:
        for op in block.ops:
            if op.name in RETURNS or op.name in BRANCHES:
                outs = [importer.lookup(scope.env, v) for v in op.operands]
                term = _terminator(importer, op, blocks)
                break
            ins = [importer.lookup(scope.env, v) for v in op.operands]
            for r, t in zip(op.results, importer.convert(op, ins, stack, scope.env)):
                scope.env[id(r)] = t
        else:
            importer.error(f"block {k} of a function does not end in a return or branch", func)
    finally:
        importer.graph = saved
        del importer.region_scopes[id(scope.env)]
    reads = tuple(shared[id(a)] for a in block.args) + tuple(
        holder_id[id(c)] for c in scope.captures)
    written = [v for op in block.ops for v in op.results if id(v) in shared]
    graph.outputs = outs + [scope.env[id(v)] for v in written if id(v) in scope.env]
    writes = tuple(shared[id(v)] for v in written if id(v) in scope.env)
    return graph, (len(block.args), reads, writes, term)


def _terminator(importer: Any, op: Operation, blocks: list[Block]) -> tuple:
    index = {id(b): i for i, b in enumerate(blocks)}
    if op.name in RETURNS:
        return ("return", len(op.operands))
    targets = [index.get(id(b)) for b in op.successors]
    if None in targets or (op.name == "cf.br" and len(targets) != 1) or \
            (op.name == "cf.cond_br" and len(targets) != 2):
        importer.error(f"'{op.name}' branches to a block outside its function", op)
        return ("return", 0)
    if op.name == "cf.br":
        return ("br", targets[0], len(op.operands))
    sizes = op.attr("operandSegmentSizes")
    values = getattr(sizes, "values", None)
    if values is None or len(values) != 3 or values[0] != 1:
        importer.error("'cf.cond_br' lacks its operandSegmentSizes", op)
        return ("return", 0)
    return ("cond_br", targets[0], int(values[1]), targets[1], int(values[2]))
