"""StableHLO (+ func, arith) op tree -> Graph.

One converter per op turns the generic Operation into a graph op name and plain
attributes; calls are inlined. Problems are collected over the whole module, so a
model with several unsupported ops or dynamic shapes is reported in one go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.diagnostics import CompileError, ErrorCollector, raise_all
from toolchain.frontend import tosa
from toolchain.frontend.cfg import import_cfg
from toolchain.frontend.chlo import CHLO_EXPANDERS, ChloError, expand_chlo
from toolchain.frontend.chlo import UNSUPPORTED as CHLO_UNSUPPORTED
from toolchain.frontend.regions import RegionScope, capture, import_regions
from toolchain.frontend.stablehlo_linalg import LINALG_CONVERTERS, LinalgError
from toolchain.frontend.stablehlo_misc import MISC_EXPANDERS, expand_misc
from toolchain.frontend.stablehlo_quant import (
    LAYOUT_OPS,
    QUANT_CONVERTERS,
    QuantError,
    is_quantized,
)
from toolchain.frontend.stablehlo_random import expand_rng
from toolchain.frontend.stablehlo_tuples import flatten_tuples
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import COMPLEX_OPS, OPS, ShapeError
from toolchain.graph.verify import tensor_type_error, verify_node
from toolchain.mlir.ir import (
    ArrayAttr,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    StringAttr,
    StructAttr,
    SymbolRefAttr,
    TypeAttr,
)
from toolchain.types import DType, FunctionType, TensorType, round_to_bf16, to_bf16


class _Unsupported(Exception):
    """Raised by a converter for an op instance we cannot express in the graph."""


# ------------------------------------------------------------------ attribute readers


def _ints(op: Operation, key: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    a = op.attr(key)
    if a is None:
        if default is None:
            raise _Unsupported(f"missing attribute '{key}'")
        return default
    if isinstance(a, DenseArrayAttr):
        return tuple(int(v) for v in a.values)
    if isinstance(a, DenseAttr):
        return tuple(int(v) for v in a.array.reshape(-1))
    if isinstance(a, ArrayAttr) and all(isinstance(i, IntAttr) for i in a.items):
        return tuple(i.value for i in a.items)
    raise _Unsupported(f"attribute '{key}' must be a list of integers")


def _int(op: Operation, key: str, default: int | None = None) -> int:
    a = op.attr(key)
    if a is None and default is not None:
        return default
    if not isinstance(a, IntAttr):
        raise _Unsupported(f"attribute '{key}' must be an integer")
    return a.value


def _padding(op: Operation, key: str, rank: int) -> tuple[tuple[int, int], ...]:
    a = op.attr(key)
    if a is None:
        return ((0, 0),) * rank
    if not isinstance(a, DenseAttr) or a.array.size != 2 * rank:
        raise _Unsupported(f"attribute '{key}' must be a {rank}x2 integer tensor")
    return tuple((int(lo), int(hi)) for lo, hi in a.array.reshape(rank, 2))


def _enum(op: Operation, key: str) -> str:
    a = op.attr(key)
    if not isinstance(a, OpaqueAttr):
        raise _Unsupported(f"missing attribute '{key}'")
    return a.body.split()[-1]


def _result_type(op: Operation, i: int = 0) -> TensorType:
    # Scalar results (`arith.constant 1.0 : f32`) are rank-0 tensors in the graph.
    return _as_tensor_type(op.results[i].type)  # type: ignore[return-value]


# ------------------------------------------------------------------ converters

Converter = Callable[[Operation], tuple[str, dict[str, Any]]]
_BODY_KINDS = {"stablehlo.add": "add", "stablehlo.multiply": "multiply",
               "stablehlo.maximum": "maximum", "stablehlo.minimum": "minimum",
               "stablehlo.and": "and", "stablehlo.or": "or"}


def _plain(name: str) -> Converter:
    return lambda op: (name, {})


def _convert(op: Operation) -> tuple[str, dict]:
    return "convert", {"dtype": _result_type(op).dtype.name}


def _compare(op: Operation) -> tuple[str, dict]:
    attrs = {"direction": _enum(op, "comparison_direction")}
    # TOTALORDER on floats orders -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN (what
    # JAX's sort comparators use); on integers it is the ordinary order.
    operand = _as_tensor_type(op.operands[0].type) if op.operands else None
    if (op.attr("compare_type") is not None and _enum(op, "compare_type") == "TOTALORDER"
            and operand is not None and operand.dtype.is_float):
        attrs["total_order"] = True
    return "compare", attrs


def _broadcast(op: Operation) -> tuple[str, dict]:
    return "broadcast_in_dim", {"dims": _ints(op, "broadcast_dimensions"),
                                "shape": _result_type(op).shape}


def _broadcast_sizes(op: Operation) -> tuple[str, dict]:
    """The old `broadcast`: sizes prepended to the operand's shape, a broadcast_in_dim
    whose operand dims are the trailing ones."""
    sizes = _ints(op, "broadcast_sizes")
    rank = op.operands[0].type.rank  # type: ignore[union-attr]
    return "broadcast_in_dim", {"dims": tuple(range(len(sizes), len(sizes) + rank)),
                                "shape": _result_type(op).shape}


def _fft(op: Operation) -> tuple[str, dict]:
    return "fft", {"fft_type": _enum(op, "fft_type"), "fft_length": _ints(op, "fft_length")}


def _bitcast_convert(op: Operation) -> tuple[str, dict]:
    t = _result_type(op)
    return "bitcast_convert", {"dtype": t.dtype.name, "shape": t.shape}


def _rng_bit_generator(op: Operation) -> tuple[str, dict]:
    t = _result_type(op, 1)
    return "rng_bit_generator", {"algorithm": _enum(op, "rng_algorithm"),
                                 "dtype": t.dtype.name, "shape": t.shape}


def _rng(op: Operation) -> tuple[str, dict]:
    # The shape operand is the result type's shape (static here), so it is dropped:
    # KEPT_OPERANDS. frontend/stablehlo_random.py says what rng computes.
    t = _result_type(op)
    return "rng", {"distribution": _enum(op, "rng_distribution"), "dtype": t.dtype.name,
                   "shape": t.shape}


def _reshape(op: Operation) -> tuple[str, dict]:
    return "reshape", {"shape": _result_type(op).shape}


def _transpose(op: Operation) -> tuple[str, dict]:
    return "transpose", {"permutation": _ints(op, "permutation")}


def _reverse(op: Operation) -> tuple[str, dict]:
    return "reverse", {"dims": _ints(op, "dimensions")}


def _concatenate(op: Operation) -> tuple[str, dict]:
    return "concatenate", {"dimension": _int(op, "dimension")}


def _slice(op: Operation) -> tuple[str, dict]:
    start = _ints(op, "start_indices")
    return "slice", {"start": start, "limit": _ints(op, "limit_indices"),
                     "strides": _ints(op, "strides", (1,) * len(start))}


def _pad(op: Operation) -> tuple[str, dict]:
    low = _ints(op, "edge_padding_low")
    return "pad", {"low": low, "high": _ints(op, "edge_padding_high"),
                   "interior": _ints(op, "interior_padding", (0,) * len(low))}


def _iota(op: Operation) -> tuple[str, dict]:
    t = _result_type(op)
    return "iota", {"dimension": _int(op, "iota_dimension"), "shape": t.shape,
                    "dtype": t.dtype.name}


def _constant(op: Operation) -> tuple[str, dict]:
    v = op.attr("value")
    dt = _result_type(op).dtype
    # The host holds bf16 in float32: literals are rounded to bf16 here, once, so that
    # folding, the reference, the kernels and the module all see the model's values.
    if isinstance(v, DenseAttr):
        return "constant", {"value": round_to_bf16(v.array) if dt.name == "bf16" else v.array}
    if isinstance(v, IntAttr | FloatAttr):
        value = np.array(v.value)
        return "constant", {"value": to_bf16(value) if dt.name == "bf16" else
                            value.astype(dt.np_dtype)}
    raise _Unsupported("constant value must be a dense literal")


def _dot_general(op: Operation) -> tuple[str, dict]:
    dn = op.attr("dot_dimension_numbers")
    if not isinstance(dn, StructAttr):
        raise _Unsupported("missing attribute 'dot_dimension_numbers'")
    return "dot_general", {
        "lhs_batch": tuple(dn.get("lhs_batching_dimensions", ())),
        "rhs_batch": tuple(dn.get("rhs_batching_dimensions", ())),
        "lhs_contract": tuple(dn.get("lhs_contracting_dimensions", ())),
        "rhs_contract": tuple(dn.get("rhs_contracting_dimensions", ())),
        "dtype": _result_type(op).dtype.name}


def _dot(op: Operation) -> tuple[str, dict]:
    rank = op.operands[0].type.rank  # type: ignore[union-attr]
    return "dot_general", {"lhs_batch": (), "rhs_batch": (), "lhs_contract": (rank - 1,),
                           "rhs_contract": (0,), "dtype": _result_type(op).dtype.name}


def _convolution(op: Operation) -> tuple[str, dict]:
    dn = op.attr("dimension_numbers")
    if not isinstance(dn, StructAttr):
        raise _Unsupported("missing attribute 'dimension_numbers'")
    nsp = len(dn.get("input_spatial_dimensions"))
    ones = (1,) * nsp
    rev = op.attr("window_reversal")
    if isinstance(rev, DenseArrayAttr) and any(rev.values):
        raise _Unsupported("window_reversal is not supported")
    g = dn.get
    return "convolution", {
        "strides": _ints(op, "window_strides", ones),
        "padding": _padding(op, "padding", nsp),
        "lhs_dilation": _ints(op, "lhs_dilation", ones),
        "rhs_dilation": _ints(op, "rhs_dilation", ones),
        "input_batch": g("input_batch_dimension"), "input_feature": g("input_feature_dimension"),
        "input_spatial": tuple(g("input_spatial_dimensions")),
        "kernel_input": g("kernel_input_feature_dimension"),
        "kernel_output": g("kernel_output_feature_dimension"),
        "kernel_spatial": tuple(g("kernel_spatial_dimensions")),
        "output_batch": g("output_batch_dimension"),
        "output_feature": g("output_feature_dimension"),
        "output_spatial": tuple(g("output_spatial_dimensions")),
        "feature_group_count": _int(op, "feature_group_count", 1),
        "batch_group_count": _int(op, "batch_group_count", 1),
        "dtype": _result_type(op).dtype.name}


def _body_kind(op: Operation) -> str:
    """The reduction a single-op body computes, e.g. `add` for `return add(a, b)`."""
    if len(op.operands) != 2 or len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        raise _Unsupported("only single-operand reductions with one-block bodies are supported")
    block = op.regions[0].blocks[0]
    if len(block.ops) == 2 and block.ops[1].name in ("stablehlo.return", "func.return"):
        body, ret = block.ops
        kind = _BODY_KINDS.get(body.name)
        if (kind and ret.operands == body.results
                and {id(v) for v in body.operands} == {id(a) for a in block.args}):
            return kind
    raise _Unsupported("reduction body must be a single add / multiply / maximum / minimum / "
                       "and / or of its two arguments")


def _reduce(op: Operation) -> tuple[str, dict]:
    # A single add / max / ... of one operand is the fast path (a `kind`); any other
    # body (argmax's compare / select over two operands, say) stays a region.
    try:
        return "reduce", {"kind": _body_kind(op), "dims": _ints(op, "dimensions")}
    except _Unsupported:
        return "reduce_region", {"dims": _ints(op, "dimensions")}


def _reduce_window(op: Operation) -> tuple[str, dict]:
    window = _ints(op, "window_dimensions")
    ones = (1,) * len(window)
    attrs = {"window": window, "strides": _ints(op, "window_strides", ones),
             "base_dilations": _ints(op, "base_dilations", ones),
             "window_dilations": _ints(op, "window_dilations", ones),
             "padding": _padding(op, "padding", len(window))}
    try:
        return "reduce_window", {"kind": _body_kind(op), **attrs}
    except _Unsupported:
        return "reduce_window_region", attrs


def _while(op: Operation) -> tuple[str, dict]:
    return "while", {}


def _sort(op: Operation) -> tuple[str, dict]:
    return "sort", {"dimension": _int(op, "dimension", -1),
                    "is_stable": _bool(op, "is_stable")}


def _bool(op: Operation, key: str) -> bool:
    a = op.attr(key)
    if a is None:
        return False
    if not isinstance(a, BoolAttr):
        raise _Unsupported(f"attribute '{key}' must be true or false")
    return a.value


def _scatter(op: Operation) -> tuple[str, dict]:
    dn = op.attr("scatter_dimension_numbers")
    if not isinstance(dn, StructAttr):
        raise _Unsupported("missing attribute 'scatter_dimension_numbers'")
    return "scatter", {
        "update_window_dims": tuple(dn.get("update_window_dims", ())),
        "inserted_window_dims": tuple(dn.get("inserted_window_dims", ())),
        "input_batching_dims": tuple(dn.get("input_batching_dims", ())),
        "scatter_indices_batching_dims": tuple(dn.get("scatter_indices_batching_dims", ())),
        "scatter_dims_to_operand_dims": tuple(dn.get("scatter_dims_to_operand_dims", ())),
        "index_vector_dim": int(dn.get("index_vector_dim", 0)),
        "indices_are_sorted": _bool(op, "indices_are_sorted"),
        "unique_indices": _bool(op, "unique_indices")}


def _select_and_scatter(op: Operation) -> tuple[str, dict]:
    rank = op.operands[0].type.rank  # type: ignore[union-attr]
    ones = (1,) * rank
    return "select_and_scatter", {"window": _ints(op, "window_dimensions", ones),
                                  "strides": _ints(op, "window_strides", ones),
                                  "padding": _padding(op, "padding", rank)}


def _gather(op: Operation) -> tuple[str, dict]:
    dn = op.attr("dimension_numbers")
    if not isinstance(dn, StructAttr):
        raise _Unsupported("missing attribute 'dimension_numbers'")
    return "gather", {
        "offset_dims": tuple(dn.get("offset_dims", ())),
        "collapsed_slice_dims": tuple(dn.get("collapsed_slice_dims", ())),
        "operand_batching_dims": tuple(dn.get("operand_batching_dims", ())),
        "start_indices_batching_dims": tuple(dn.get("start_indices_batching_dims", ())),
        "start_index_map": tuple(dn.get("start_index_map", ())),
        "index_vector_dim": int(dn.get("index_vector_dim", 0)),
        "slice_sizes": _ints(op, "slice_sizes")}


def _batch_norm(op: Operation) -> tuple[str, dict]:
    eps = op.attr("epsilon")
    if not isinstance(eps, FloatAttr):
        raise _Unsupported("missing attribute 'epsilon'")
    return "batch_norm_inference", {"epsilon": eps.value,
                                    "feature_index": _int(op, "feature_index")}


def _linalg(convert: Converter) -> Converter:
    """A converter of frontend/stablehlo_linalg.py, its errors reported like ours."""
    def run(op: Operation) -> tuple[str, dict]:
        try:
            return convert(op)
        except LinalgError as e:
            raise _Unsupported(str(e)) from None

    return run


_ELEMENTWISE = [n for n, s in OPS.items() if s.group == "elementwise" and not s.attrs]
CONVERTERS: dict[str, Converter] = {
    **{f"stablehlo.{n}": _plain(n) for n in _ELEMENTWISE},
    "stablehlo.convert": _convert,
    "stablehlo.compare": _compare,
    "stablehlo.broadcast_in_dim": _broadcast,
    "stablehlo.reshape": _reshape,
    "stablehlo.transpose": _transpose,
    "stablehlo.reverse": _reverse,
    "stablehlo.concatenate": _concatenate,
    "stablehlo.slice": _slice,
    "stablehlo.pad": _pad,
    "stablehlo.iota": _iota,
    "stablehlo.constant": _constant,
    "arith.constant": _constant,
    "stablehlo.dot_general": _dot_general,
    "stablehlo.dot": _dot,
    "stablehlo.convolution": _convolution,
    "stablehlo.reduce": _reduce,
    "stablehlo.reduce_window": _reduce_window,
    "stablehlo.gather": _gather,
    "stablehlo.batch_norm_inference": _batch_norm,
    "stablehlo.dynamic_slice": lambda op: ("dynamic_slice",
                                           {"slice_sizes": _ints(op, "slice_sizes")}),
    "stablehlo.dynamic_update_slice": lambda op: ("dynamic_update_slice", {}),
    "stablehlo.map": lambda op: ("map", {"dimensions": _ints(op, "dimensions"),
                                         "operands": len(op.operands)}),
    "stablehlo.while": _while,
    "stablehlo.if": lambda op: ("if", {}),
    "stablehlo.case": lambda op: ("case", {}),
    "stablehlo.sort": _sort,
    "stablehlo.scatter": _scatter,
    "stablehlo.select_and_scatter": _select_and_scatter,
    "stablehlo.broadcast": _broadcast_sizes,
    "stablehlo.fft": _fft,
    "stablehlo.bitcast_convert": _bitcast_convert,
    "stablehlo.rng_bit_generator": _rng_bit_generator,
    "stablehlo.rng": _rng,
    "stablehlo.uniform_quantize": lambda op: ("uniform_quantize", {}),
    "stablehlo.uniform_dequantize": lambda op: ("uniform_dequantize", {}),
    **{name: _linalg(convert) for name, convert in LINALG_CONVERTERS.items()},
}


# Graph ops that keep only their first operands (rng's shape operand is its result's).
KEPT_OPERANDS = {"rng": 2}

# Ops the importer expands into several graph nodes: (builder, inputs, attrs, node
# counter) -> results. rng is rng_bit_generator bits through XLA's distributions.
EXPANSIONS = {"rng": expand_rng}

# Ops that only change how a value is typed, tensor<T> <-> T: a branch condition is an
# i1, a StableHLO value a tensor<i1>, and the graph holds scalars as rank-0 tensors.
SCALAR_VIEWS = ("builtin.unrealized_conversion_cast", "tensor.extract", "tensor.from_elements")


# ------------------------------------------------------------------ the importer


# Element types the parser reads but the backends cannot hold, with the reason. Every
# other type of toolchain.types.DTYPES runs end to end (tests/e2e/test_dtypes.py checks
# that each has a module type and an I/O layout).
UNSUPPORTED_DTYPES = {
    "i4": "minirt has no 4-bit integer buffers; widen the model to i8",
}


def _dtype_problem(t: TensorType | None) -> str | None:
    """Why tensors of t's element type cannot be compiled, or None."""
    reason = None if t is None else UNSUPPORTED_DTYPES.get(t.dtype.name)
    if reason is None:
        return None
    return f"has element type '{t.dtype}', which is not supported ({reason})"


def _as_tensor_type(t: Any) -> TensorType | None:
    if isinstance(t, TensorType):
        return t
    if isinstance(t, DType):
        return TensorType((), t)
    return None


# Calls are inlined by recursion, one level per nested call: deeper chains are refused
# with an error rather than left to Python's recursion limit (exported models nest a few).
MAX_CALL_DEPTH = 100


class _Importer:
    def __init__(self, funcs: dict[str, Operation]):
        self.funcs = funcs
        # Errors inside an inlined call remember its call site: one error per op, in
        # source order, however many places call its function (raise_all merges).
        self.errors = ErrorCollector()
        self.graph: Graph | None = None
        # The regions being imported, by id of their env (frontend/regions.py).
        self.region_scopes: dict[int, RegionScope] = {}
        # Ops expanded so far (EXPANSIONS): each rng op draws from its own key.
        self.expanded = 0

    def error(self, message: str, op: Operation) -> None:
        self.errors.append(CompileError(message, op.loc))

    def inline(self, func: Operation, args: list[Tensor], stack: list[str]) -> list[Tensor]:
        assert self.graph is not None
        body = func.regions[0].blocks[0] if func.regions and func.regions[0].blocks else None
        if body is None:
            self.error(f"function '@{_sym(func)}' has no body", func)
            return []
        if len(func.regions[0].blocks) > 1:  # cf.br / cf.cond_br: frontend/cfg.py
            return import_cfg(self, func, args, stack, _sym(func))
        env: dict[int, Tensor] = {id(a): t for a, t in zip(body.args, args)}
        for op in body.ops:
            if op.name in ("func.return", "stablehlo.return"):
                got = tuple(v.type for v in op.operands)
                want = _func_type(func).results
                if got != want:
                    self.error(f"'@{_sym(func)}' returns {_types(got)} but its signature "
                               f"declares {_types(want)}", op)
                return [self.lookup(env, v) for v in op.operands]
            outs = self.convert(op, [self.lookup(env, v) for v in op.operands], stack, env)
            for r, t in zip(op.results, outs):
                env[id(r)] = t
        self.error(f"function '@{_sym(func)}' does not end in a return", func)
        return []

    def lookup(self, env: dict[int, Tensor], v: Any) -> Tensor:
        t = env.get(id(v))
        if t is None:  # a region's capture (frontend/regions.py)
            t = capture(self.region_scopes, env, v)
        if t is None:  # a value from an op that failed to convert, or from an outer scope
            ty = _as_tensor_type(v.type) or TensorType((), DType("?", np.dtype("f4"), 0, "?"))
            t = env[id(v)] = Tensor(ty)
        return t

    def convert(self, op: Operation, inputs: list[Tensor], stack: list[str],
                env: dict[int, Tensor] | None = None) -> list[Tensor]:
        """The graph tensors of `op`'s results; `env` is the scope it sits in (its
        regions may capture values from there)."""
        assert self.graph is not None
        dummies = [Tensor(_as_tensor_type(r.type) or TensorType((), DType("?", np.dtype("f4"),
                                                                           0, "?")))
                   for r in op.results]
        if op.name in ("func.call", "call"):
            return self.call(op, inputs, stack) or dummies
        if op.name in tosa.CONVERTERS:  # a TOSA op may expand into several graph nodes
            return self.expand_tosa(op, inputs, env or {}, stack) or dummies
        types = [_as_tensor_type(v.type) for v in list(op.operands) + list(op.results)]
        if op.name in SCALAR_VIEWS and len(types) == 2 and types[0] == types[1] is not None:
            return inputs  # a rank-0 tensor seen as its scalar or back: the same value
        bad = [t for t in types if t is None or not t.is_static]
        converter = CONVERTERS.get(op.name)
        expander = op.name in CHLO_EXPANDERS or op.name in MISC_EXPANDERS
        if converter is None and not expander:
            why = CHLO_UNSUPPORTED.get(op.name)
            self.error(f"unsupported op '{op.name}'" + (f" ({why})" if why else ""), op)
            return dummies
        if bad:
            what = "a non-tensor type" if bad[0] is None else f"a dynamic shape ({bad[0]})"
            self.error(f"'{op.name}' has {what}; minirt needs static shapes", op)
            return dummies
        # Operands are results of earlier ops or arguments, which are checked there.
        problem = next(filter(None, map(_dtype_problem, types[len(op.operands):])), None)
        if problem is not None:
            self.error(f"'{op.name}' result {problem}", op)
            return dummies
        if op.name in MISC_EXPANDERS:  # stablehlo_misc.py: graph ops, a constant, a call
            return expand_misc(self, op, inputs, stack) or dummies
        if converter is None:  # a CHLO op: frontend/chlo.py adds its nodes
            try:
                return expand_chlo(GraphBuilder(self.graph, op.loc), op, inputs)
            except ChloError as e:
                self.error(f"'{op.name}' {e}", op)
                return dummies
        try:
            gop, attrs = converter(op)
        except _Unsupported as e:
            self.error(f"'{op.name}': {e}", op)
            return dummies
        results = [t for t in types[len(op.operands):]]
        if gop not in COMPLEX_OPS and any(t.dtype.is_complex for t in types):
            self.error(f"'{op.name}' does not take complex values in minirt (the ops that "
                       "do: docs/ops.md)", op)
            return dummies
        inputs = inputs[:KEPT_OPERANDS.get(gop, len(inputs))]
        if gop in EXPANSIONS:
            try:  # checked as one node first: the expansion assumes a well-typed op
                OPS[gop].infer(Node(gop, inputs, [], attrs, op.loc))
            except ShapeError as e:
                self.error(f"'{op.name}': {e}", op)
                return dummies
            self.expanded += 1
            return EXPANSIONS[gop](GraphBuilder(self.graph, op.loc), inputs, attrs,
                                   self.expanded)
        regions: list[Graph] = []
        if gop in OPS and OPS[gop].regions != 0:
            regions, captures = import_regions(self, op, env or {}, stack)
            inputs = inputs + captures
        if is_quantized(types) or gop.startswith("uniform_"):
            quantized = self.quantized(op, gop, attrs, inputs, types)
            if quantized is not None:
                return quantized
            if gop not in LAYOUT_OPS:
                return dummies
        node = self.graph.add(gop, inputs, results, attrs, op.loc, regions)
        err = verify_node(node)
        if err is not None:
            self.errors.append(err)
        return node.outputs

    def expand_tosa(self, op: Operation, inputs: list[Tensor], env: dict[int, Tensor],
                    stack: list[str]) -> list[Tensor] | None:
        """A TOSA op's result tensors (toolchain/frontend/tosa), or None after an error;
        `env` is the scope it sits in (cond_if / while_loop regions capture from it)."""
        assert self.graph is not None
        try:
            return tosa.expand(GraphBuilder(self.graph, op.loc), op, inputs,
                               tosa.Scope(self, env, stack))
        except tosa.TosaError as e:
            self.error(f"'{op.name}': {e}", op)
            return None

    def quantized(self, op: Operation, gop: str, attrs: dict, inputs: list[Tensor],
                  types: list[TensorType]) -> list[Tensor] | None:
        """An op on `!quant.uniform` types (stablehlo_quant.py): its int8 graph, or None
        when the plain op applies to the stored integers (or an error was recorded)."""
        assert self.graph is not None
        results = types[len(op.operands):]
        if gop in QUANT_CONVERTERS:
            try:
                out = QUANT_CONVERTERS[gop](GraphBuilder(self.graph, op.loc), inputs,
                                            results[0], attrs)
            # The builder raises ShapeError when the op's own operands are ill-typed
            # (a uniform_quantize of booleans): an error in the model, at the op.
            except (QuantError, ValueError, ShapeError) as e:
                self.error(f"'{op.name}': {e}", op)
                return None
            if out.type != results[0]:
                self.error(f"'{op.name}' computes {out.type}, not the declared {results[0]}",
                           op)
            return [out]
        if gop not in LAYOUT_OPS:
            self.error(f"'{op.name}' on quantized types is not supported", op)
            return None
        quants = {t.quant for t in types if t.quant is not None}
        if len(quants) > 1 or any(t.quant is None and t.dtype.is_float for t in types):
            self.error(f"'{op.name}' on quantized types needs one quantization for every "
                       "operand and result", op)
        return None

    def call(self, op: Operation, inputs: list[Tensor], stack: list[str]) -> list[Tensor] | None:
        callee = op.attr("callee")
        name = callee.name if isinstance(callee, SymbolRefAttr) else ""
        func = self.funcs.get(name)
        if func is None:
            self.error(f"call to unknown function '@{name}'", op)
            return None
        if name in stack:
            self.error(f"recursive call to '@{name}' cannot be inlined", op)
            return None
        if len(stack) > MAX_CALL_DEPTH:  # inlining recurses once per level
            self.error(f"calls nested more than {MAX_CALL_DEPTH} deep cannot be inlined", op)
            return None
        fty = _func_type(func)
        if tuple(v.type for v in op.operands) != fty.inputs:
            self.error(f"call arguments do not match the signature of '@{name}'", op)
            return None
        if tuple(r.type for r in op.results) != fty.results:
            self.error(f"call results {_types(r.type for r in op.results)} do not match the "
                       f"signature of '@{name}' ({_types(fty.results)})", op)
            return None
        with self.errors.called_from(f"'@{name}' is called here", op.loc):
            outs = self.inline(func, inputs, stack + [name])
        return outs if len(outs) == len(op.results) else None


def _types(types: Any) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _sym(func: Operation) -> str:
    s = func.attr("sym_name")
    return s.value if isinstance(s, StringAttr) else "?"


def _func_type(func: Operation) -> FunctionType:
    t = func.attr("function_type")
    return t.type if isinstance(t, TypeAttr) else FunctionType((), ())


def import_module(module: Operation, entry: str = "main") -> Graph:
    """Builds the Graph of function `entry`, inlining every call. Raises CompileError
    listing every unsupported op, dynamic shape and ill-formed op in what it reaches."""
    funcs: dict[str, Operation] = {}
    for region in module.regions:
        for block in region.blocks:
            for op in block.ops:
                if op.name == "func.func":
                    if _sym(op) in funcs:
                        raise CompileError(f"redefinition of function '@{_sym(op)}'", op.loc)
                    funcs[_sym(op)] = op
    func = funcs.get(entry)
    if func is None:
        have = ", ".join(f"@{n}" for n in funcs) or "none"
        raise CompileError(f"no function '@{entry}' in the module (functions: {have})",
                           module.loc)
    # Tuples are resolved into their elements first (frontend/stablehlo_tuples.py).
    funcs, tuple_errors = flatten_tuples(funcs, entry)
    func = funcs[entry]
    importer = _Importer(funcs)
    importer.errors.extend(tuple_errors)
    graph = importer.graph = Graph(entry)
    fty = _func_type(func)
    for i, t in enumerate(fty.inputs):
        tt = _as_tensor_type(t)
        if tt is None or not tt.is_static:
            importer.error(f"argument {i} of '@{entry}' has type '{t}'; minirt needs static "
                           "tensor shapes", func)
            tt = TensorType((), DType("?", np.dtype("f4"), 0, "?"))
        elif (problem := tensor_type_error(tt)) is not None:
            importer.error(f"argument {i} of '@{entry}': {problem}", func)
        if (unsupported := _dtype_problem(tt)) is not None:
            importer.error(f"argument {i} of '@{entry}' {unsupported}", func)
        graph.add_input(tt)
    graph.outputs = importer.inline(func, list(graph.inputs), [entry])
    raise_all(importer.errors)
    return graph
