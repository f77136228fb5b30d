"""`chlo.scan`: a loop over one dimension of its inputs, carrying values between steps.

    %outs..., %carries... = chlo.scan(%xs...) inits(%inits...) dimension=d
        [attributes {is_reverse = true}] { ^bb0(x slices..., carries...): ...
        stablehlo.return out slices..., new carries... }

Step i gives the body the i-th slices of the inputs along `d` (that dimension removed)
and the carries, and takes from it one slice of each output and the next carries; the
outputs are the slices stacked along `d`, the results' last values the final carries
(StableHLO's chlo-legalize-to-stablehlo decomposition and the interpreter's tests, e.g.
a cumulative sum: outputs [1, 3, 6, 10], carry 10). With `is_reverse` the steps run from
the last index down and each slice still lands at its own index (suffix sums).

The trip count is the inputs' static length along `d`, so the importer unrolls the scan:
the body's ops once per step, in the graph. That is exact and lets fusion and constant
folding see through the steps; its cost is code, one body per step (a scan over a long
dimension is better written as `stablehlo.while`, which minirt compiles as a loop).
"""

from __future__ import annotations

from typing import Any

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.mlir.ir import Block, BoolAttr, DenseArrayAttr, IntAttr, Operation
from toolchain.types import TensorType

__all__ = ["SCAN_EXPANDERS", "expand_scan"]


class _ScanError(Exception):
    """An ill-formed scan (no location: the error is reported at the op)."""


def _segments(op: Operation) -> tuple[int, int]:
    seg = op.attr("operandSegmentSizes")
    if not isinstance(seg, DenseArrayAttr) or len(seg.values) != 2:
        raise _ScanError("needs operandSegmentSizes = array<i32: inputs, inits>")
    return int(seg.values[0]), int(seg.values[1])


def _run_block(importer: Any, block: Block, args: list[Tensor], stack: list[str],
               env: dict[int, Tensor]) -> list[Tensor]:
    """The body's returned tensors for one step; its ops are converted into the graph,
    with the enclosing scope's values visible (a capture is the same tensor each step)."""
    local = dict(env)
    for a, t in zip(block.args, args, strict=True):
        if as_type(a.type) != t.type:
            raise _ScanError(f"body argument of type {a.type} is given {t.type}")
        local[id(a)] = t
    for op in block.ops:
        if op.name in ("stablehlo.return", "chlo.return"):
            return [importer.lookup(local, v) for v in op.operands]
        outs = importer.convert(op, [importer.lookup(local, v) for v in op.operands], stack,
                                local)
        for r, t in zip(op.results, outs, strict=False):
            local[id(r)] = t
    raise _ScanError("body does not end in a return")


def as_type(t: Any) -> TensorType | None:
    """A block argument's type as a TensorType (a scalar type as rank 0)."""
    if isinstance(t, TensorType):
        return t
    return TensorType((), t) if t is not None else None


def _slice(b: GraphBuilder, x: Tensor, dim: int, i: int) -> Tensor:
    shape = tuple(x.type.shape)
    start = tuple(i if k == dim else 0 for k in range(len(shape)))
    limit = tuple(i + 1 if k == dim else s for k, s in enumerate(shape))
    piece = b.op("slice", [x], start=start, limit=limit, strides=(1,) * len(shape))
    return b.op("reshape", [piece], shape=shape[:dim] + shape[dim + 1:])


def _stack(b: GraphBuilder, pieces: list[Tensor], dim: int) -> Tensor:
    shape = tuple(pieces[0].type.shape)
    grown = [b.op("reshape", [p], shape=shape[:dim] + (1,) + shape[dim:]) for p in pieces]
    return grown[0] if len(grown) == 1 else b.op("concatenate", grown, dimension=dim)


def _scan(importer: Any, op: Operation, inputs: list[Tensor], stack: list[str],
          env: dict[int, Tensor]) -> list[Tensor]:
    n_in, n_init = _segments(op)
    dim_attr = op.attr("dimension")
    if not isinstance(dim_attr, IntAttr):
        raise _ScanError("needs an integer attribute 'dimension'")
    dim = dim_attr.value
    rev = op.attr("is_reverse")
    reverse = isinstance(rev, BoolAttr) and rev.value
    xs, carries = inputs[:n_in], inputs[n_in:n_in + n_init]
    if not xs:
        raise _ScanError("needs at least one scanned input (its length is the trip count)")
    lengths = {x.type.shape[dim] if 0 <= dim < x.type.rank else -1 for x in xs}
    if len(lengths) != 1 or -1 in lengths:
        raise _ScanError(f"inputs must all have dimension {dim}, of one length")
    (length,) = lengths
    n_out = len(op.results) - n_init
    if not op.regions or not op.regions[0].blocks:
        raise _ScanError("has no body")
    block = op.regions[0].blocks[0]
    b = GraphBuilder(importer.graph, op.loc)
    steps: dict[int, list[Tensor]] = {}
    for i in (reversed(range(length)) if reverse else range(length)):
        got = _run_block(importer, block, [_slice(b, x, dim, i) for x in xs] + carries,
                         stack, env)
        if len(got) != n_out + n_init:
            raise _ScanError(f"body returns {len(got)} values, the scan has "
                             f"{n_out + n_init} results")
        steps[i], carries = got[:n_out], got[n_out:]
    if length == 0:
        raise _ScanError("scans a dimension of length 0")
    outs = [_stack(b, [steps[i][j] for i in range(length)], dim) for j in range(n_out)]
    return outs + carries


def expand_scan(importer: Any, op: Operation, inputs: list[Tensor], stack: list[str],
                env: dict[int, Tensor] | None) -> list[Tensor] | None:
    """The result tensors of the chlo.scan `op`, unrolled into the importer's graph, or
    None once an error is recorded."""
    try:
        outs = _scan(importer, op, inputs, stack, env or {})
    except _ScanError as e:
        importer.error(f"'{op.name}' {e}", op)
        return None
    declared = [as_type(r.type) for r in op.results]
    got = [t.type for t in outs]
    if got != declared:
        importer.error(f"'{op.name}' computes {', '.join(map(str, got))}, not the declared "
                       f"{', '.join(map(str, declared))}", op)
        return None
    return outs


SCAN_EXPANDERS = {"chlo.scan": expand_scan}
