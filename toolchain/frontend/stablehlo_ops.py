"""StableHLO (+ arith) ops that become one graph op each: the converter table.

A converter reads one generic Operation's attributes and returns the graph op's name
and its plain attributes; the importer (frontend/stablehlo.py) checks the op's types,
imports its regions and adds the node. The table is its own file because it is data
about ops, read by the importer and by the op report (toolchain/report/ops.py), and
grows one row per op, while the importer's walk over functions does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.frontend.stablehlo_linalg import LINALG_CONVERTERS, LinalgError
from toolchain.frontend.stablehlo_random import expand_rng
from toolchain.frontend.types import as_tensor_type, declared_result
from toolchain.graph.ops import OPS
from toolchain.mlir.ir import (
    ArrayAttr,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    StructAttr,
)
from toolchain.types import TensorType, round_to_bf16, to_bf16

__all__ = ["CONVERTERS", "EXPANSIONS", "KEPT_OPERANDS", "Converter", "Unsupported"]


class Unsupported(Exception):
    """Raised by a converter for an op instance we cannot express in the graph."""


# ------------------------------------------------------------------ attribute readers


def _ints(op: Operation, key: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    a = op.attr(key)
    if a is None:
        if default is None:
            raise Unsupported(f"missing attribute '{key}'")
        return default
    if isinstance(a, DenseArrayAttr):
        return tuple(int(v) for v in a.values)
    if isinstance(a, DenseAttr):
        return tuple(int(v) for v in a.array.reshape(-1))
    if isinstance(a, ArrayAttr) and all(isinstance(i, IntAttr) for i in a.items):
        return tuple(i.value for i in a.items)
    raise Unsupported(f"attribute '{key}' must be a list of integers")


def _int(op: Operation, key: str, default: int | None = None) -> int:
    a = op.attr(key)
    if a is None and default is not None:
        return default
    if not isinstance(a, IntAttr):
        raise Unsupported(f"attribute '{key}' must be an integer")
    return a.value


def _padding(op: Operation, key: str, rank: int) -> tuple[tuple[int, int], ...]:
    a = op.attr(key)
    if a is None:
        return ((0, 0),) * rank
    if not isinstance(a, DenseAttr) or a.array.size != 2 * rank:
        raise Unsupported(f"attribute '{key}' must be a {rank}x2 integer tensor")
    return tuple((int(lo), int(hi)) for lo, hi in a.array.reshape(rank, 2))


def _enum(op: Operation, key: str) -> str:
    a = op.attr(key)
    if not isinstance(a, OpaqueAttr):
        raise Unsupported(f"missing attribute '{key}'")
    return a.body.split()[-1]


def _result_type(op: Operation, i: int = 0) -> TensorType:
    # Scalar results (`arith.constant 1.0 : f32`) are rank-0 tensors in the graph.
    return declared_result(op, i, Unsupported)


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
    operand = as_tensor_type(op.operands[0].type) if op.operands else None
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
    raise Unsupported("constant value must be a dense literal")


def _dot_general(op: Operation) -> tuple[str, dict]:
    dn = _struct(op, "dot_dimension_numbers", "stablehlo.dot")
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


def _struct(op: Operation, key: str, kind: str) -> StructAttr:
    """Attribute `key`, which must be a `#kind<...>` struct: the struct table
    (mlir/struct_attrs.py) then vouches for its fields' names and kinds, so a gather's
    dimension numbers on a convolution are refused here rather than read as missing."""
    dn = op.attr(key)
    if dn is None:
        raise Unsupported(f"missing attribute '{key}'")
    if not isinstance(dn, StructAttr) or dn.name != kind:
        raise Unsupported(f"attribute '{key}' must be a #{kind}<...>, not {_describe(dn)}")
    return dn


def _describe(a: object) -> str:
    return f"a #{a.name}<...>" if isinstance(a, StructAttr) else f"'{a}'"


def _convolution(op: Operation) -> tuple[str, dict]:
    dn = _struct(op, "dimension_numbers", "stablehlo.conv")
    nsp = len(dn.get("input_spatial_dimensions"))
    ones = (1,) * nsp
    rev = op.attr("window_reversal")
    if isinstance(rev, DenseArrayAttr) and any(rev.values):
        raise Unsupported("window_reversal is not supported")
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
        raise Unsupported("only single-operand reductions with one-block bodies are supported")
    block = op.regions[0].blocks[0]
    if len(block.ops) == 2 and block.ops[1].name in ("stablehlo.return", "func.return"):
        body, ret = block.ops
        kind = _BODY_KINDS.get(body.name)
        if (kind and ret.operands == body.results
                and {id(v) for v in body.operands} == {id(a) for a in block.args}):
            return kind
    raise Unsupported("reduction body must be a single add / multiply / maximum / minimum / "
                       "and / or of its two arguments")


def _reduce(op: Operation) -> tuple[str, dict]:
    # A single add / max / ... of one operand is the fast path (a `kind`); any other
    # body (argmax's compare / select over two operands, say) stays a region.
    try:
        return "reduce", {"kind": _body_kind(op), "dims": _ints(op, "dimensions")}
    except Unsupported:
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
    except Unsupported:
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
        raise Unsupported(f"attribute '{key}' must be true or false")
    return a.value


def _scatter(op: Operation) -> tuple[str, dict]:
    dn = _struct(op, "scatter_dimension_numbers", "stablehlo.scatter")
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
    dn = _struct(op, "dimension_numbers", "stablehlo.gather")
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
        raise Unsupported("missing attribute 'epsilon'")
    return "batch_norm_inference", {"epsilon": eps.value,
                                    "feature_index": _int(op, "feature_index")}


def _linalg(convert: Converter) -> Converter:
    """A converter of frontend/stablehlo_linalg.py, its errors reported like ours."""
    def run(op: Operation) -> tuple[str, dict]:
        try:
            return convert(op)
        except LinalgError as e:
            raise Unsupported(str(e)) from None

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
