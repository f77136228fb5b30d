"""StableHLO ops that need no graph op of their own: each becomes existing graph ops,
a constant, its operands, or an inlined call.

- `optimization_barrier` is the identity on its operands, any number of them (the spec
  gives it no other meaning: it only limits where an optimizer may move pure work,
  which changes no value minirt computes).
- `composite` is its `decomposition` function, inlined as a call; its `name`,
  `composite_attributes` and `version` only name it in errors.
- `get_dimension_size` is an i32 constant (shapes are static); `partition_id` and
  `replica_id` are a ui32 0: a minirt model runs as one replica of one partition.
- `reduce_precision` is computed on the value's bits (bitcast_convert, integer adds,
  ands, shifts, compares and selects) exactly as the StableHLO interpreter does it:
  round to nearest even at `mantissa_bits`, then values whose exponent the narrower
  format lacks overflow to a signed infinity or underflow to a signed zero (its
  subnormals are flushed), and a NaN stays the same NaN (becomes +inf with no mantissa
  bits left). A quantized tensor's is that of its dequantized value, quantized again
  to the result's type (the spec's dequantize_op_quantize). `reduce_precision_bits` /
  `_reference` are the same function on Python integers, element by element from the
  definition, to test the graph against.
- `einsum` / `unary_einsum` (`einsum_config` "ab,bc->ac", "ab->a"; `...` and the
  implicit numpy output allowed) become diagonals (a letter repeated in one operand: a
  strided slice of the flattened pair), sums over letters only one operand has, one
  `dot_general` (letters of both operands: batch when kept, contracted when not) and a
  transpose into the result's order.
- `torch_index_select(operand, index)` with `dim` and `batch_dims` is a `gather` of
  one index per position along `dim`, the first `batch_dims` dims shared (batching
  dims), giving operand.shape[:dim] + index.shape[batch_dims:] + operand.shape[dim+1:].

Each expander takes a `MiscOp` and returns the result tensors; `expand_misc` checks
them against the op's declared result types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.frontend.stablehlo_quant import QUANT_CONVERTERS, QuantError
from toolchain.frontend.types import declared_result
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.graph.ops import ShapeError
from toolchain.mlir.ir import IntAttr, Operation, StringAttr, SymbolRefAttr
from toolchain.types import DType, FunctionType, TensorType, dtype

__all__ = ["MISC_EXPANDERS", "MiscError", "MiscOp", "expand_misc", "reduce_precision_bits",
           "reduce_precision_reference"]


class MiscError(Exception):
    """An op here that is ill-formed or that minirt cannot take (no location: the
    importer adds the op's)."""


@dataclass
class MiscOp:
    """What an expander sees: the importer (for calls), the op, its operand tensors and
    the call stack it is imported under."""

    importer: Any  # stablehlo._Importer
    op: Operation
    inputs: list[Tensor]
    stack: list[str]

    @property
    def b(self) -> GraphBuilder:
        return GraphBuilder(self.importer.graph, self.op.loc)

    def result(self, i: int = 0) -> TensorType:
        return declared_result(self.op, i, MiscError)

    def int_attr(self, key: str) -> int:
        a = self.op.attr(key)
        if not isinstance(a, IntAttr):
            raise MiscError(f"needs an integer attribute '{key}'")
        return a.value

    def only_float(self) -> None:
        for t in self.inputs:
            if not t.type.dtype.is_float or t.type.dtype.is_complex or t.type.quant:
                raise MiscError(f"takes float tensors, not {t.type}")

    def arity(self, n: int) -> None:
        if len(self.inputs) != n or len(self.op.results) != 1:
            raise MiscError(f"takes {n} operand{'s' * (n != 1)} and has one result")


# ------------------------------------------------------------------ identity, calls, shapes


def _optimization_barrier(m: MiscOp) -> list[Tensor]:
    if [t.type for t in m.inputs] != [m.result(i) for i in range(len(m.op.results))]:
        raise MiscError("results must have the operands' types, one for one")
    return list(m.inputs)


def _composite(m: MiscOp) -> list[Tensor]:
    name = m.op.attr("name")
    what = f"composite '{name.value}'" if isinstance(name, StringAttr) else "composite"
    target = m.op.attr("decomposition")
    if not isinstance(target, SymbolRefAttr):
        raise MiscError(f"{what} needs a 'decomposition = @function'")
    func = m.importer.funcs.get(target.name)
    if func is None:
        raise MiscError(f"{what}: no function '@{target.name}' (its decomposition)")
    fty = getattr(func.attr("function_type"), "type", None)
    want = (tuple(v.type for v in m.op.operands), tuple(r.type for r in m.op.results))
    if not isinstance(fty, FunctionType) or (fty.inputs, fty.results) != want:
        raise MiscError(f"{what}: its operand and result types are not those of "
                        f"'@{target.name}' ({fty})")
    # The decomposition is what the composite computes (the spec's own reading): a call.
    call = Operation("func.call", m.op.operands, m.op.results,
                     properties={"callee": target}, loc=m.op.loc)
    outs = m.importer.call(call, m.inputs, m.stack)
    if outs is None:
        raise _Reported()
    return outs


class _Reported(MiscError):
    """The call recorded its own errors already."""


def _get_dimension_size(m: MiscOp) -> list[Tensor]:
    m.arity(1)
    dim, shape = m.int_attr("dimension"), m.inputs[0].type.shape
    if not 0 <= dim < len(shape):
        raise MiscError(f"dimension {dim} is outside the operand's rank {len(shape)}")
    return [m.b.const(np.int32(shape[dim]), dtype("i32"))]


def _zero_id(m: MiscOp) -> list[Tensor]:
    # One device, one replica, one partition: the id is always 0.
    m.arity(0)
    return [m.b.const(np.uint32(0), dtype("ui32"))]


# ------------------------------------------------------------------ reduce_precision

# (mantissa bits, exponent bits) of each float type by its width and name.
_FORMATS = {"f16": (10, 5), "bf16": (7, 8), "f32": (23, 8), "f64": (52, 11)}


def _precision_args(m: MiscOp) -> tuple[int, int]:
    e, mb = m.int_attr("exponent_bits"), m.int_attr("mantissa_bits")
    if e < 1:
        raise MiscError(f"exponent_bits must be at least 1, not {e}")
    if mb < 0:
        raise MiscError(f"mantissa_bits must be at least 0, not {mb}")
    return e, mb


def _reduce_precision(m: MiscOp) -> list[Tensor]:
    m.arity(1)
    e, mbits = _precision_args(m)
    x = m.inputs[0]
    q = x.type.quant
    if q is None:
        m.only_float()
        return [_reduce_precision_graph(m.b, x, e, mbits)]
    # Quantized: the spec's dequantize_op_quantize, through the expressed float type.
    out = m.result()
    if out.quant is None:
        raise MiscError("of a quantized operand needs a quantized result type")
    real = QUANT_CONVERTERS["uniform_dequantize"](
        m.b, [x], TensorType(x.type.shape, q.expressed), {})
    reduced = _reduce_precision_graph(m.b, real, e, mbits)
    return [QUANT_CONVERTERS["uniform_quantize"](m.b, [reduced], out, {})]


def _reduce_precision_graph(b: GraphBuilder, x: Tensor, e: int, mbits: int) -> Tensor:
    """The graph ops of reduce_precision(x) on float tensor `x`."""
    dt = x.type.dtype
    if dt.name not in _FORMATS:
        raise MiscError(f"does not take {dt}")
    src_m, src_e = _FORMATS[dt.name]
    if mbits >= src_m and e >= src_e:
        return x  # already as narrow as asked
    shape, width = x.type.shape, dt.bits
    u = dtype(f"ui{width}")
    full = (1 << width) - 1

    def k(value: int) -> Tensor:
        return b.splat(value & full, u, shape)

    bits = b.op("bitcast_convert", [x], dtype=u.name, shape=shape)
    if mbits < src_m:
        # Round to nearest even: add half an ulp of the narrower format, less one unless
        # the last kept bit is odd, then drop the bits below it.
        cut = src_m - mbits
        last_kept = b.op("and", [b.op("shift_right_logical", [bits, k(cut)]), k(1)])
        bias = b.op("add", [last_kept, k((1 << (cut - 1)) - 1)])
        bits = b.op("and", [b.op("add", [bits, bias]), k(~((1 << cut) - 1))])
    if e < src_e:
        bias, reduced = (1 << (src_e - 1)) - 1, (1 << (e - 1)) - 1
        exp_mask = ((1 << src_e) - 1) << src_m
        exponent = b.op("and", [bits, k(exp_mask)])
        over = b.op("compare", [exponent, k((bias + reduced) << src_m)], direction="GT")
        under = b.op("compare", [exponent, k((bias - reduced) << src_m)], direction="LE")
        zero = b.op("and", [bits, k(1 << (width - 1))])  # the sign alone
        inf = b.op("or", [zero, k(exp_mask)])
        bits = b.op("select", [over, inf, b.op("select", [under, zero, bits])])
    y = b.op("bitcast_convert", [bits], dtype=dt.name, shape=shape)
    nan = b.op("compare", [x, x], direction="NE")
    kept = x if mbits > 0 else b.splat(np.inf, dt, shape)
    return b.op("select", [nan, kept, y])


def reduce_precision_bits(bits: int, fmt: str, exponent_bits: int,
                          mantissa_bits: int) -> int:
    """reduce_precision of one value of float type `fmt` ("f16", "bf16", "f32", "f64")
    given and returned as its bit pattern, in Python integers (no wrap-around): the
    StableHLO interpreter's definition, written out for tests of the importer's graph.
    A NaN is the caller's to keep (see reduce_precision_reference)."""
    src_m, src_e = _FORMATS[fmt]
    width = 1 + src_e + src_m
    if mantissa_bits < src_m:
        cut = src_m - mantissa_bits
        bits += ((bits >> cut) & 1) + (1 << (cut - 1)) - 1
        bits &= ~((1 << cut) - 1)
    if exponent_bits < src_e:
        bias, reduced = (1 << (src_e - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exp_mask = ((1 << src_e) - 1) << src_m
        sign = bits & (1 << (width - 1))
        exponent = bits & exp_mask
        if exponent > (bias + reduced) << src_m:
            bits = sign | exp_mask
        elif exponent <= (bias - reduced) << src_m:
            bits = sign
    return bits & ((1 << width) - 1)


def reduce_precision_reference(x: np.ndarray, exponent_bits: int,
                               mantissa_bits: int) -> np.ndarray:
    """reduce_precision of a float16 / float32 / float64 array, element by element
    (reduce_precision_bits; a NaN stays itself, or is +inf with no mantissa bits)."""
    x = np.asarray(x)
    fmt = {np.float16: "f16", np.float32: "f32", np.float64: "f64"}[x.dtype.type]
    ui = np.dtype(f"u{x.dtype.itemsize}")
    flat = x.reshape(-1)
    out = np.array([reduce_precision_bits(int(v), fmt, exponent_bits, mantissa_bits)
                    for v in flat.view(ui)], ui).view(x.dtype)
    nan = np.isnan(flat)
    out[nan] = flat[nan] if mantissa_bits > 0 else np.inf
    return out.reshape(x.shape)


# ------------------------------------------------------------------ einsum


def _einsum_terms(config: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' label strings and the result's, with `...` spelled out as digits
    (right-aligned across operands, as numpy aligns them) and an implicit result (no
    `->`: the letters used once, sorted) made explicit."""
    text = config.replace(" ", "")
    lhs, arrow, out = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise MiscError(f"einsum_config '{config}' names {len(terms)} operand"
                        f"{'s' * (len(terms) != 1)}, the op has {len(ranks)}")
    if not all(c.isalpha() for t in terms + [out] for c in t.replace("...", "")):
        raise MiscError(f"einsum_config '{config}': labels are letters (and '...')")
    spelled = []
    ellipsis = 0
    for term, rank in zip(terms, ranks):
        if "..." in term:
            n = rank - len(term.replace("...", ""))
            if term.count("...") > 1 or n < 0:
                raise MiscError(f"einsum_config term '{term}' does not fit a rank-{rank} "
                                "operand")
            ellipsis = max(ellipsis, n)
            term = term.replace("...", "".join(str(9 - i) for i in range(n))[::-1])
        spelled.append(term)
    dots = "".join(str(9 - i) for i in range(ellipsis))[::-1]
    if arrow:
        out = out.replace("...", dots)
    else:
        letters = "".join(spelled)
        out = dots + "".join(sorted(c for c in set(letters) if c.isalpha()
                                    and letters.count(c) == 1))
    for term, rank in zip(spelled, ranks):
        if len(term) != rank:
            raise MiscError(f"einsum_config '{config}': term '{term}' does not fit a "
                            f"rank-{rank} operand")
    if len(set(out)) != len(out) or any(c not in "".join(spelled) for c in out):
        raise MiscError(f"einsum_config '{config}': each result label must appear once, "
                        "and in an operand")
    return spelled, out


def _diagonal(b: GraphBuilder, t: Tensor, term: str) -> tuple[Tensor, str]:
    """`t` with each label repeated in `term` taken once (the diagonal): the two dims
    moved last and flattened, every (n+1)-th element sliced out."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        shape = t.type.shape
        if shape[i] != shape[j]:
            raise MiscError(f"label '{c}' has sizes {shape[i]} and {shape[j]}")
        rest = [d for d in range(len(term)) if d not in (i, j)]
        t = b.op("transpose", [t], permutation=tuple(rest + [i, j]))
        n = shape[i]
        lead = tuple(shape[d] for d in rest)
        t = b.op("reshape", [t], shape=lead + (n * n,))
        t = b.op("slice", [t], start=(0,) * len(lead) + (0,), limit=lead + (n * n,),
                 strides=(1,) * len(lead) + (n + 1,))
        term = "".join(term[d] for d in rest) + c
    return t, term


def _sum_out(b: GraphBuilder, t: Tensor, term: str, keep: str) -> tuple[Tensor, str]:
    """`t` summed over the labels of `term` not in `keep`."""
    dims = tuple(i for i, c in enumerate(term) if c not in keep)
    if not dims:
        return t, term
    zero = b.const(False if t.type.dtype.kind == "b" else 0, t.type.dtype)
    kind = "or" if t.type.dtype.kind == "b" else "add"
    t = b.op("reduce", [t, zero], kind=kind, dims=dims)
    return t, "".join(c for c in term if c in keep)


def _transpose_to(b: GraphBuilder, t: Tensor, term: str, out: str) -> Tensor:
    perm = tuple(term.index(c) for c in out)
    return t if perm == tuple(range(len(perm))) else b.op("transpose", [t], permutation=perm)


def _einsum(m: MiscOp) -> list[Tensor]:
    if len(m.inputs) not in (1, 2) or len(m.op.results) != 1:
        raise MiscError("takes one or two operands and has one result")
    config = m.op.attr("einsum_config")
    if not isinstance(config, StringAttr):
        raise MiscError("needs a string attribute 'einsum_config'")
    for t in m.inputs:
        if t.type.dtype.is_complex or t.type.quant:
            raise MiscError(f"does not take {t.type}")
    terms, out = _einsum_terms(config.value, [t.type.rank for t in m.inputs])
    sizes: dict[str, int] = {}
    for term, t in zip(terms, m.inputs):
        for c, n in zip(term, t.type.shape):
            if sizes.setdefault(c, n) != n:
                raise MiscError(f"label '{c}' has sizes {sizes[c]} and {n}")
    b = m.b
    pairs = [_diagonal(b, t, term) for t, term in zip(m.inputs, terms)]
    if len(pairs) == 1:
        (t, term), = pairs
        t, term = _sum_out(b, t, term, out)
        return [_transpose_to(b, t, term, out)]
    (lhs, lt), (rhs, rt) = pairs
    lhs, lt = _sum_out(b, lhs, lt, out + rt)
    rhs, rt = _sum_out(b, rhs, rt, out + lt)
    batch = [c for c in lt if c in rt and c in out]
    contract = [c for c in lt if c in rt and c not in out]
    t = b.op("dot_general", [lhs, rhs], lhs_batch=tuple(lt.index(c) for c in batch),
             rhs_batch=tuple(rt.index(c) for c in batch),
             lhs_contract=tuple(lt.index(c) for c in contract),
             rhs_contract=tuple(rt.index(c) for c in contract),
             dtype=m.result().dtype.name)
    term = ("".join(batch) + "".join(c for c in lt if c not in rt)
            + "".join(c for c in rt if c not in lt))
    return [_transpose_to(b, t, term, out)]


# ------------------------------------------------------------------ torch_index_select


def _torch_index_select(m: MiscOp) -> list[Tensor]:
    m.arity(2)
    x, idx = m.inputs
    rank, irank = x.type.rank, idx.type.rank
    dim, batch = m.int_attr("dim"), m.int_attr("batch_dims")
    dim += rank if dim < 0 else 0
    batch += irank if batch < 0 else 0
    if not 0 <= dim < rank:
        raise MiscError(f"dim {m.int_attr('dim')} is outside the operand's rank {rank}")
    if not 0 <= batch <= min(dim, irank):
        raise MiscError(f"batch_dims {m.int_attr('batch_dims')} must be within 0..dim "
                        "and the index's rank")
    if not idx.type.dtype.is_integer:
        raise MiscError(f"the index must be integers, not {idx.type}")
    if x.type.shape[:batch] != idx.type.shape[:batch]:
        raise MiscError(f"the first {batch} dims of the operand {x.type.shape} and the "
                        f"index {idx.type.shape} must match (batch_dims)")
    shift = irank - batch  # dims the index puts where `dim` was, less the one it removes
    offset = tuple(range(batch, dim)) + tuple(range(dim + shift, rank - 1 + shift))
    sizes = tuple(1 if i < batch or i == dim else n for i, n in enumerate(x.type.shape))
    return [m.b.op("gather", [x, idx], offset_dims=offset, collapsed_slice_dims=(dim,),
                   operand_batching_dims=tuple(range(batch)),
                   start_indices_batching_dims=tuple(range(batch)), start_index_map=(dim,),
                   index_vector_dim=irank, slice_sizes=sizes)]


# ------------------------------------------------------------------ the table

MISC_EXPANDERS: dict[str, Callable[[MiscOp], list[Tensor]]] = {
    "stablehlo.optimization_barrier": _optimization_barrier,
    "stablehlo.composite": _composite,
    "stablehlo.get_dimension_size": _get_dimension_size,
    "stablehlo.partition_id": _zero_id,
    "stablehlo.replica_id": _zero_id,
    "stablehlo.reduce_precision": _reduce_precision,
    "stablehlo.einsum": _einsum,
    "stablehlo.unary_einsum": _einsum,
    "stablehlo.torch_index_select": _torch_index_select,
}


def expand_misc(importer: Any, op: Operation, inputs: list[Tensor],
                stack: list[str]) -> list[Tensor] | None:
    """The result tensors of `op` (one of MISC_EXPANDERS), or None once its errors are
    recorded with the importer."""
    try:
        outs = MISC_EXPANDERS[op.name](MiscOp(importer, op, inputs, stack))
    except _Reported:
        return None
    except (MiscError, QuantError, ShapeError, ValueError) as e:
        importer.error(f"'{op.name}': {e}", op)
        return None
    declared = [r.type if isinstance(r.type, TensorType) else TensorType((), r.type)
                for r in op.results]
    got = [t.type for t in outs]
    if got != declared:
        importer.error(f"'{op.name}' computes {_types(got)}, not the declared "
                       f"{_types(declared)}", op)
        return None
    return outs


def _types(types: list[TensorType | DType]) -> str:
    return ", ".join(str(t) for t in types)
