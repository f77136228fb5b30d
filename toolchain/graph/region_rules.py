"""The type rules of the graph ops with regions (graph/ops.py holds the table that names
each op's rule): while, if, case, reduce_region, reduce_window_region, map, sort,
scatter, select_and_scatter and cfg. Apart from the other rules (graph/type_rules.py)
because they check closed sub-graphs against their node, not only operands and
attributes.

A region's inputs are its block arguments, then the captured values; the node's last
operands are those captured values, in the same order (toolchain/graph/ir.py).
"""

from __future__ import annotations

from toolchain.graph.dominance import dominators
from toolchain.graph.ir import Node
from toolchain.graph.type_rules import _check_dims, _fmt, _require, window_output_shape
from toolchain.types import I1, TensorType

__all__ = ["window_output_shape"]


def _types(tensors: list) -> list[TensorType]:
    return [t.type for t in tensors]


def _fmt_types(types: list[TensorType]) -> str:
    return "(" + ", ".join(map(str, types)) + ")"


def _region_sig(node: Node, r: int, args: list[TensorType], captures: list[TensorType],
                results: list[TensorType] | None, what: str) -> list[TensorType]:
    """Checks region r takes `args` then `captures` (and yields `results` when given);
    returns what it yields."""
    region = node.regions[r]
    want = args + captures
    got = _types(region.inputs)
    _require(got == want, f"{what} takes {_fmt_types(got)}, expected {_fmt_types(want)}")
    out = _types(region.outputs)
    if results is not None:
        _require(out == results, f"{what} yields {_fmt_types(out)}, expected "
                 f"{_fmt_types(results)}")
    return out


def _scalar(t: TensorType) -> TensorType:
    return TensorType((), t.dtype, t.quant)


def _while(node: Node) -> list[TensorType]:
    n = len(node.regions[1].outputs)
    _require(len(node.inputs) >= n, f"while carries {n} values but has {len(node.inputs)} "
             "operands")
    carried, captures = _types(node.inputs[:n]), _types(node.inputs[n:])
    _region_sig(node, 0, carried, captures, [TensorType((), I1)], "while's cond region")
    _region_sig(node, 1, carried, captures, carried, "while's body region")
    return carried


def _branches(node: Node, selector: str, dtypes: tuple[str, ...]) -> list[TensorType]:
    """if / case: operand 0 picks the branch; every branch takes the captured values and
    yields the same types."""
    sel = node.inputs[0].type
    _require(sel.shape == () and sel.dtype.name in dtypes,
             f"{node.op}'s {selector} must be a scalar {' or '.join(dtypes)}, not {sel}")
    captures = _types(node.inputs[1:])
    results = _region_sig(node, 0, [], captures, None, f"{node.op}'s branch 0")
    for r in range(1, len(node.regions)):
        _region_sig(node, r, [], captures, results, f"{node.op}'s branch {r}")
    return results


def _if(node: Node) -> list[TensorType]:
    return _branches(node, "predicate", ("i1",))


def _case(node: Node) -> list[TensorType]:
    return _branches(node, "index", ("i32",))


def _reducer_operands(node: Node) -> tuple[list[TensorType], list[TensorType],
                                           list[TensorType]]:
    """reduce_region / reduce_window_region: N inputs, N scalar inits, captures."""
    n = len(node.regions[0].outputs)
    _require(n >= 1 and len(node.inputs) >= 2 * n,
             f"{node.op} with {n} results needs {n} operands and {n} init values")
    xs, inits = _types(node.inputs[:n]), _types(node.inputs[n:2 * n])
    for i, (x, init) in enumerate(zip(xs, inits)):
        _require(x.shape == xs[0].shape, f"operand {i} has shape {_fmt(x.shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
        _require(init.shape == () and init.dtype == x.dtype,
                 f"init value {i} must be a scalar of operand {i}'s element type")
    _region_sig(node, 0, inits + [_scalar(x) for x in xs], _types(node.inputs[2 * n:]),
                inits, f"{node.op}'s body")
    return xs, inits, _types(node.inputs[2 * n:])


def _reduce_region(node: Node) -> list[TensorType]:
    xs, inits, _ = _reducer_operands(node)
    dims = tuple(node.attrs["dims"])
    _check_dims(dims, xs[0].rank, "reduce dimensions")
    shape = tuple(d for i, d in enumerate(xs[0].shape) if i not in dims)
    return [TensorType(shape, t.dtype, t.quant) for t in inits]


def _reduce_window_region(node: Node) -> list[TensorType]:
    xs, inits, _ = _reducer_operands(node)
    shape = window_output_shape(node, tuple(xs[0].shape))
    return [TensorType(shape, t.dtype, t.quant) for t in inits]


def _map(node: Node) -> list[TensorType]:
    """map: the first `operands` operands (one shape), then captures; the region maps one
    element of each to one result element."""
    n = node.attrs["operands"]
    _require(1 <= n <= len(node.inputs), f"map over {n} of {len(node.inputs)} operands")
    xs, captures = _types(node.inputs[:n]), _types(node.inputs[n:])
    for i, x in enumerate(xs):
        _require(x.shape == xs[0].shape, f"operand {i} has shape {_fmt(x.shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
    _require(tuple(node.attrs["dimensions"]) == tuple(range(xs[0].rank)),
             "map's dimensions must be every dimension in order")
    outs = _region_sig(node, 0, [_scalar(x) for x in xs], captures, None, "map's computation")
    _require(len(outs) == 1 and outs[0].shape == (), "map's computation must yield one scalar")
    return [TensorType(xs[0].shape, outs[0].dtype, outs[0].quant)]


def _sort(node: Node) -> list[TensorType]:
    # The comparator takes two scalars per operand and the captures, the node one
    # tensor per operand and the captures: the difference is the operand count.
    n = len(node.regions[0].inputs) - len(node.inputs)
    _require(1 <= n <= len(node.inputs), "sort's comparator must take two scalars per operand")
    xs, captures = _types(node.inputs[:n]), _types(node.inputs[n:])
    for i, x in enumerate(xs):
        _require(x.shape == xs[0].shape, f"operand {i} has shape {_fmt(x.shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
    dim = node.attrs["dimension"]
    _require(-xs[0].rank <= dim < max(xs[0].rank, 1), f"sort dimension {dim} out of range")
    pairs = [s for x in xs for s in (_scalar(x), _scalar(x))]
    _region_sig(node, 0, pairs, captures, [TensorType((), I1)], "sort's comparator")
    return xs


def _scatter(node: Node) -> list[TensorType]:
    at = node.attrs
    n = len(node.regions[0].outputs)
    _require(n >= 1 and len(node.inputs) >= 2 * n + 1,
             f"scatter with {n} results needs {n} operands, indices and {n} updates")
    xs, idx = _types(node.inputs[:n]), node.inputs[n].type
    ups, captures = _types(node.inputs[n + 1:2 * n + 1]), _types(node.inputs[2 * n + 1:])
    _require(idx.dtype.is_integer, "scatter indices must be integers")
    for i in range(n):
        _require(xs[i].shape == xs[0].shape, f"operand {i} has shape {_fmt(xs[i].shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
        _require(ups[i].shape == ups[0].shape, f"update {i} has shape {_fmt(ups[i].shape)} "
                 f"but update 0 has {_fmt(ups[0].shape)}")
        _require(ups[i].dtype == xs[i].dtype, f"update {i} element type {ups[i].dtype} "
                 f"differs from operand {i}'s {xs[i].dtype}")
    rank, urank = xs[0].rank, ups[0].rank
    window, inserted = tuple(at["update_window_dims"]), tuple(at["inserted_window_dims"])
    obatch, ibatch = tuple(at["input_batching_dims"]), tuple(at["scatter_indices_batching_dims"])
    to_operand, ivd = tuple(at["scatter_dims_to_operand_dims"]), at["index_vector_dim"]
    _check_dims(window, urank, "update_window_dims")
    _require(list(window) == sorted(window), "update_window_dims must be sorted")
    _check_dims(inserted + obatch, rank, "inserted_window_dims + input_batching_dims")
    _check_dims(to_operand, rank, "scatter_dims_to_operand_dims")
    _require(0 <= ivd <= idx.rank, f"index_vector_dim {ivd} out of range")
    _check_dims(ibatch, idx.rank, "scatter_indices_batching_dims")
    _require(ivd not in ibatch and len(ibatch) == len(obatch),
             "scatter batching dims do not pair up")
    nidx = idx.shape[ivd] if ivd < idx.rank else 1
    _require(len(to_operand) == nidx, f"scatter_dims_to_operand_dims has {len(to_operand)} "
             f"entries for index vectors of {nidx}")
    scatter_sizes = [d for i, d in enumerate(idx.shape) if i != ivd]
    _require(urank == len(window) + len(scatter_sizes),
             f"updates of rank {urank} do not fit {len(window)} window dims and "
             f"{len(scatter_sizes)} scatter dims")
    _require(len(window) + len(inserted) + len(obatch) == rank,
             "update_window_dims, inserted_window_dims and input_batching_dims do not "
             f"cover the {rank} operand dims")
    sizes = [d for i, d in enumerate(xs[0].shape) if i not in inserted + obatch]
    for k, d in enumerate(window):
        _require(ups[0].shape[d] <= sizes[k], f"update window dim {d} (size "
                 f"{ups[0].shape[d]}) is larger than the operand's dim ({sizes[k]})")
    rest = [d for d in range(urank) if d not in window]
    for u, s in zip(rest, scatter_sizes):
        _require(ups[0].shape[u] == s, f"update scatter dim {u} has size {ups[0].shape[u]}, "
                 f"the indices give {s}")
    scalars = [_scalar(x) for x in xs]
    _region_sig(node, 0, scalars + scalars, captures, scalars, "scatter's update region")
    return xs


def _cfg(node: Node) -> list[TensorType]:
    """A function's blocks (frontend/cfg.py): per block (n_args, reads, writes,
    terminator); shared value i < len(inputs) is operand i."""
    blocks = node.attrs["blocks"]
    _require(len(blocks) == len(node.regions) >= 1, "cfg needs one region per block")
    shared: dict[int, TensorType] = dict(enumerate(_types(node.inputs)))

    def bind(i: int, t: TensorType, what: str) -> None:
        _require(shared.setdefault(i, t) == t, f"{what}: shared value {i} is {t}, "
                 f"elsewhere {shared[i]}")

    results: list[TensorType] | None = None
    for k, ((n_args, reads, writes, term), region) in enumerate(zip(blocks, node.regions)):
        _require(len(reads) == len(region.inputs) and n_args <= len(reads),
                 f"block {k} reads {len(reads)} values but takes {len(region.inputs)}")
        for i, t in zip(reads, region.inputs):
            bind(i, t.type, f"block {k}")
        outs = _types(region.outputs)
        n_term = len(outs) - len(writes)
        _require(n_term >= 0, f"block {k} defines fewer values than it shares")
        for i, t in zip(writes, outs[n_term:]):
            bind(i, t, f"block {k}")
        if term[0] == "return":
            _require(term[1] == n_term, f"block {k} returns {n_term} values, not {term[1]}")
            _require(results is None or results == outs[:n_term],
                     f"block {k} returns {_fmt_types(outs[:n_term])}, another block "
                     f"{_fmt_types(results or [])}")
            results = outs[:n_term]
    successors: list[list[int]] = []
    for k, ((_, _, _, term), region) in enumerate(zip(blocks, node.regions)):
        outs = _types(region.outputs)
        successors.append([term[1]] if term[0] == "br" else
                          [term[1], term[3]] if term[0] == "cond_br" else [])
        if term[0] == "br":
            edges = [(term[1], outs[:term[2]])]
        elif term[0] == "cond_br":
            _require(outs and outs[0] == TensorType((), I1),
                     f"block {k}'s branch condition must be an i1")
            edges = [(term[1], outs[1:1 + term[2]]),
                     (term[3], outs[1 + term[2]:1 + term[2] + term[4]])]
        else:
            continue
        for dest, args in edges:
            _require(0 < dest < len(blocks), f"block {k} branches to block {dest}")
            n_args, reads = blocks[dest][0], blocks[dest][1]
            want = [shared[i] for i in reads[:n_args]]
            _require(args == want, f"block {k} passes {_fmt_types(args)} to block {dest}, "
                     f"which takes {_fmt_types(want)}")
    _require(results is not None, "no block returns")
    _check_cfg_dominance(node, successors)
    return list(results or [])


def _check_cfg_dominance(node: Node, successors: list[list[int]]) -> None:
    """Every value a block reads beyond its arguments is an operand of the node or is
    defined (as a block argument or a write) by a block that dominates it: else some
    run reaches the read before anything wrote the value."""
    blocks = node.attrs["blocks"]
    defined_in = [set(reads[:n_args]) | set(writes) for n_args, reads, writes, _ in blocks]
    for k, dom in enumerate(dominators(successors)):
        if dom is None:
            continue  # never runs
        n_args, reads = blocks[k][0], blocks[k][1]
        for i in reads[n_args:]:
            _require(i < len(node.inputs) or
                     any(i in defined_in[d] for d in dom if d != k),
                     f"block {k} reads shared value {i}, which no block dominating it "
                     "defines")


def _select_and_scatter(node: Node) -> list[TensorType]:
    x, source, init = _types(node.inputs[:3])
    captures = _types(node.inputs[3:])
    _require(init.shape == () and init.dtype == source.dtype,
             "select_and_scatter's init value must be a scalar of the source's type")
    _require(source.dtype == x.dtype, "select_and_scatter's source type differs from the "
             "operand's")
    want = window_output_shape(node, tuple(x.shape))
    _require(source.shape == want, f"select_and_scatter's source has shape "
             f"{_fmt(source.shape)}, the windows give {_fmt(want)}")
    s = _scalar(x)
    _region_sig(node, 0, [s, s], captures, [TensorType((), I1)], "select_and_scatter's select")
    _region_sig(node, 1, [s, s], captures, [s], "select_and_scatter's scatter")
    return [x]
