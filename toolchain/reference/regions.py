"""Reference semantics of the ops with regions: control flow runs its regions with the
executor, reducers and comparators are evaluated element by element, in the order the
compiled kernels use (which the spec leaves to the implementation):

- `reduce_region` folds the reduced positions in row-major order of `dims` (as listed),
  starting from the init values, accumulator arguments first: acc = body(acc, x);
- `reduce_window_region` folds each window in row-major order, padding and base
  dilation holes included (they hold the init values, as in the spec);
- `sort` is stable (for `is_stable = false` too: any order is allowed there);
- `scatter` applies the updates in row-major order of the update index space; updates
  whose result index falls outside the operand are skipped, element by element;
- `select_and_scatter` selects the first element of each window that the select
  region prefers over every later one, over the positions inside the operand.

A region over scalars whose nodes are all elementwise runs vectorized over every
position at once (numpy broadcasting); any other region runs once per element.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from toolchain.graph.ir import Graph, Node
from toolchain.reference.executor import run_graph
from toolchain.reference.table import KERNELS as TABLE
from toolchain.reference.table import Kernel
from toolchain.types import to_dtype


def _run(region: Graph, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    return run_graph(region, list(args))


def _elementwise_only(region: Graph) -> bool:
    """Every node elementwise over scalars: the region can run on whole arrays at once
    (a body that also computes on a tensor, even a dead one, cannot: its tensor does
    not broadcast against the arrays of positions; found by the random graph fuzzer)."""
    from toolchain.graph.ops import OPS

    return all((n.op == "constant" or (OPS[n.op].group == "elementwise" and not n.regions))
               and all(t.type.shape == () for t in n.outputs) for n in region.nodes)


def map_region(region: Graph, args: Sequence[np.ndarray],
               shape: tuple[int, ...]) -> list[np.ndarray]:
    """Runs a region over scalars at every position of `shape`: each argument for a
    scalar region input is an array broadcastable to `shape` (one value per position),
    each other argument (a captured tensor) is passed whole. Vectorized when every node
    is elementwise and every argument is per position, else one region run per position.
    Returns one array of `shape` per region result, of the result's element type."""
    arrays = [np.asarray(a) for a in args]
    scalar = [t.type.shape == () for t in region.inputs]
    dtypes = [t.type.dtype for t in region.outputs]
    if _elementwise_only(region) and all(scalar):
        env = {id(t): a for t, a in zip(region.inputs, arrays)}
        for node in region.nodes:
            with np.errstate(all="ignore"):
                value = TABLE[node.op](node, *[env[id(t)] for t in node.inputs])
            env[id(node.output)] = np.asarray(value)
        return [to_dtype(np.broadcast_to(env[id(t)], shape), dt)
                for t, dt in zip(region.outputs, dtypes)]
    per_position = [np.broadcast_to(a, shape) if s else a for a, s in zip(arrays, scalar)]
    outs = [np.empty(shape, dtype=dt.np_dtype) for dt in dtypes]
    for idx in np.ndindex(*shape):
        vals = _run(region, [a[idx] if s else a for a, s in zip(per_position, scalar)])
        for o, v in zip(outs, vals):
            o[idx] = v
    return outs


# ---------------------------------------------------------------- control flow


def _while(node: Node, *args: np.ndarray) -> list[np.ndarray]:
    cond, body = node.regions
    n = len(body.outputs)
    carried, captures = list(args[:n]), list(args[n:])
    while bool(_run(cond, carried + captures)[0]):
        carried = _run(body, carried + captures)
    return carried


def _if(node: Node, pred: np.ndarray, *captures: np.ndarray) -> list[np.ndarray]:
    return _run(node.regions[0 if bool(pred) else 1], captures)


def _case(node: Node, index: np.ndarray, *captures: np.ndarray) -> list[np.ndarray]:
    i = int(index)
    last = len(node.regions) - 1
    # Out of range picks the last branch (the spec's rule).
    return _run(node.regions[i if 0 <= i <= last else last], captures)


def _cfg(node: Node, *inputs: np.ndarray) -> list[np.ndarray]:
    """A function's blocks (frontend/cfg.py), from block 0 until a return."""
    blocks = node.attrs["blocks"]
    shared: dict[int, np.ndarray] = dict(enumerate(inputs))
    k = 0
    while True:
        n_args, reads, writes, term = blocks[k]
        outs = _run(node.regions[k], [shared[i] for i in reads])
        n_term = len(outs) - len(writes)
        shared.update(zip(writes, outs[n_term:]))
        if term[0] == "return":
            return outs[:n_term]
        if term[0] == "br":
            k, args = term[1], outs[:term[2]]
        else:
            _, t, n_t, f, n_f = term
            k, args = (t, outs[1:1 + n_t]) if bool(outs[0]) else (f, outs[1 + n_t:1 + n_t + n_f])
        shared.update(zip(blocks[k][1][:blocks[k][0]], args))


# ---------------------------------------------------------------- reducers


def _reduce_region(node: Node, *args: np.ndarray) -> list[np.ndarray]:
    body = node.regions[0]
    n = len(body.outputs)
    xs, inits, captures = args[:n], args[n:2 * n], list(args[2 * n:])
    dims = list(node.attrs["dims"])
    kept = [d for d in range(xs[0].ndim) if d not in dims]
    kept_shape = tuple(xs[0].shape[d] for d in kept)
    count = int(np.prod([xs[0].shape[d] for d in dims], dtype=np.int64))
    flat = [np.transpose(x, kept + dims).reshape(kept_shape + (count,)) for x in xs]
    accs = [np.broadcast_to(i, kept_shape) for i in inits]
    for r in range(count):
        accs = map_region(body, accs + [f[..., r] for f in flat] + captures, kept_shape)
    return [to_dtype(np.broadcast_to(a, kept_shape), t.type.dtype)
            for a, t in zip(accs, node.outputs)]


def _pad_with(x: np.ndarray, value: np.ndarray, low: Sequence[int], high: Sequence[int],
              interior: Sequence[int]) -> np.ndarray:
    """x with `interior` holes between elements and `low` / `high` edges (negative:
    cropped), all holding `value`."""
    shape = [d + max(d - 1, 0) * it for d, it in zip(x.shape, interior)]
    inner = np.full(shape, value, dtype=x.dtype)
    inner[tuple(slice(None, None, it + 1) for it in interior)] = x
    out = np.pad(inner, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)],
                 constant_values=value)
    return out[tuple(slice(-min(lo, 0), out.shape[i] + min(hi, 0))
                     for i, (lo, hi) in enumerate(zip(low, high)))]


def _windows(at: dict, rank: int, out_shape: Sequence[int]) -> list[tuple[slice, ...]]:
    """Per window position (row-major), the strided slice of the padded operand that
    holds that element of every window."""
    dil = at.get("window_dilations", (1,) * rank)
    return [tuple(slice(w[i] * dil[i], w[i] * dil[i] + (out_shape[i] - 1) * at["strides"][i] + 1,
                        at["strides"][i]) for i in range(rank))
            for w in np.ndindex(*at["window"])]


def _reduce_window_region(node: Node, *args: np.ndarray) -> list[np.ndarray]:
    at = node.attrs
    body = node.regions[0]
    n = len(body.outputs)
    xs, inits, captures = args[:n], args[n:2 * n], list(args[2 * n:])
    out_shape = tuple(node.outputs[0].type.shape)
    rank = xs[0].ndim
    padded = [_pad_with(x, init.astype(x.dtype), [p[0] for p in at["padding"]],
                        [p[1] for p in at["padding"]], [d - 1 for d in at["base_dilations"]])
              for x, init in zip(xs, inits)]
    accs = [np.broadcast_to(i, out_shape) for i in inits]
    if 0 not in out_shape:
        for sl in _windows(at, rank, out_shape):
            accs = map_region(body, accs + [p[sl] for p in padded] + captures, out_shape)
    return [to_dtype(np.broadcast_to(a, out_shape), t.type.dtype)
            for a, t in zip(accs, node.outputs)]


def _map(node: Node, *args: np.ndarray) -> list[np.ndarray]:
    return map_region(node.regions[0], list(args), tuple(node.outputs[0].type.shape))


# ---------------------------------------------------------------- sort


def _stable_order(less: np.ndarray) -> np.ndarray | None:
    """The stable sorting permutation from the matrix less[i, j] = comparator(i, j), or
    None when the comparator is not a strict weak order (the ranks collide)."""
    n = less.shape[0]
    equiv = ~less & ~less.T
    rank = less.sum(axis=0) + np.tril(equiv, -1).sum(axis=1)
    order = np.empty(n, dtype=np.int64)
    if sorted(rank.tolist()) != list(range(n)):
        return None
    order[rank] = np.arange(n)
    return order


def _sort(node: Node, *args: np.ndarray) -> list[np.ndarray]:
    comparator = node.regions[0]
    n = len(comparator.inputs) - len(node.inputs)
    xs, captures = args[:n], list(args[n:])
    if xs[0].size == 0:
        return [x.copy() for x in xs]
    dim = node.attrs["dimension"] % max(xs[0].ndim, 1)
    moved = [np.moveaxis(x, dim, -1) for x in xs]
    length = moved[0].shape[-1]
    rows = [m.reshape(-1, length) for m in moved]
    outs = [r.copy() for r in rows]
    vector = _elementwise_only(comparator) and all(c.shape == () for c in captures)
    for r in range(rows[0].shape[0]):
        keys = [row[r] for row in rows]
        order = None
        if vector and length <= 2048:
            pairs = [a for k in keys for a in (k[:, None], k[None, :])]
            order = _stable_order(map_region(comparator, pairs + captures,
                                             (length, length))[0])
        if order is None:
            def less(i: int, j: int, keys: list = keys) -> bool:
                pairs = [a for k in keys for a in (k[i], k[j])]
                return bool(_run(comparator, pairs + captures)[0])

            order = np.array(sorted(range(length), key=functools.cmp_to_key(
                lambda i, j: -1 if less(i, j) else (1 if less(j, i) else 0))), dtype=np.int64)
        for o, row in zip(outs, rows):
            o[r] = row[r][order]
    return [np.moveaxis(o.reshape(m.shape), -1, dim) for o, m in zip(outs, moved)]


# ---------------------------------------------------------------- scatter


def scatter_targets(node: Node, operand_shape: Sequence[int], indices: np.ndarray,
                    update_shape: Sequence[int]) -> np.ndarray:
    """For each update element (row-major), the flat index of the result element it
    updates, or -1 when that index is outside the operand (the spec's result_index)."""
    at = node.attrs
    window, inserted = tuple(at["update_window_dims"]), tuple(at["inserted_window_dims"])
    obatch, ibatch = at["input_batching_dims"], at["scatter_indices_batching_dims"]
    to_operand, ivd = at["scatter_dims_to_operand_dims"], at["index_vector_dim"]
    rank = len(operand_shape)
    count = int(np.prod(update_shape, dtype=np.int64))  # 1 for a rank-0 update
    grid = np.indices(tuple(update_shape)).reshape(len(update_shape), count)  # [urank, count]
    scatter_dims = [d for d in range(len(update_shape)) if d not in window]
    scatter_index = grid[scatter_dims]  # [n_scatter, count]
    idx = indices if ivd < indices.ndim else indices[..., None]
    idx = np.moveaxis(idx, ivd if ivd < indices.ndim else -1, -1)
    start = idx[tuple(scatter_index)] if scatter_dims else np.broadcast_to(
        idx.reshape(-1), (grid.shape[1], idx.shape[-1]))
    full = np.zeros((rank, grid.shape[1]), dtype=np.int64)
    for k, d in enumerate(to_operand):
        full[d] += start[:, k].astype(np.int64)
    for ob, ib in zip(obatch, ibatch):
        full[ob] += scatter_index[ib if ib < ivd else ib - 1]
    window_operand_dims = [d for d in range(rank) if d not in inserted + tuple(obatch)]
    for k, d in enumerate(window_operand_dims):
        full[d] += grid[window[k]]
    inside = np.all((full >= 0) & (full < np.array(operand_shape)[:, None]), axis=0)
    flat = np.ravel_multi_index(tuple(np.where(inside, full, 0)), tuple(operand_shape)) \
        if rank else np.zeros(grid.shape[1], dtype=np.int64)
    return np.where(inside, flat, -1)


def _scatter(node: Node, *args: np.ndarray) -> list[np.ndarray]:
    update = node.regions[0]
    n = len(update.outputs)
    xs, indices = args[:n], args[n]
    ups, captures = args[n + 1:2 * n + 1], list(args[2 * n + 1:])
    results = [x.copy().reshape(-1) for x in xs]
    targets = scatter_targets(node, xs[0].shape, indices, ups[0].shape)
    values = [u.reshape(-1) for u in ups]
    pending = np.flatnonzero(targets >= 0)
    # Updates of different elements commute: apply, per round, the earliest pending
    # update of every element at once; a round per repeat of the busiest element.
    while pending.size:
        _, first = np.unique(targets[pending], return_index=True)
        now = pending[first]
        where = targets[now]
        new = map_region(update, [r[where] for r in results] + [v[now] for v in values]
                         + captures, where.shape)
        for r, v in zip(results, new):
            r[where] = v
        pending = np.setdiff1d(pending, now, assume_unique=True)
    return [r.reshape(x.shape) for r, x in zip(results, xs)]


def _select_and_scatter(node: Node, x: np.ndarray, source: np.ndarray, init: np.ndarray,
                        *captures: np.ndarray) -> np.ndarray:
    at = node.attrs
    select, scatter = node.regions
    rank = x.ndim
    out = np.broadcast_to(init, x.shape).astype(x.dtype).reshape(-1)
    lows = [p[0] for p in at["padding"]]
    for w_idx in np.ndindex(*source.shape):
        best: int | None = None
        for k in np.ndindex(*at["window"]):
            pos = [w_idx[i] * at["strides"][i] + k[i] - lows[i] for i in range(rank)]
            if not all(0 <= p < s for p, s in zip(pos, x.shape)):
                continue  # padding takes no part in the selection
            flat = int(np.ravel_multi_index(pos, x.shape)) if rank else 0
            if best is None or not bool(_run(select, [x.reshape(-1)[best],
                                                      x.reshape(-1)[flat], *captures])[0]):
                best = flat
        if best is not None:
            out[best] = _run(scatter, [out[best], source[w_idx], *captures])[0]
    return out.reshape(x.shape)


KERNELS: dict[str, Kernel] = {
    "while": _while, "if": _if, "case": _case, "cfg": _cfg,
    "reduce_region": _reduce_region, "reduce_window_region": _reduce_window_region,
    "sort": _sort, "scatter": _scatter, "select_and_scatter": _select_and_scatter,
    "map": _map,
}
