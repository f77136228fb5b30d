"""The graph op set: one table row per op with its arity, attributes and type rule.

Op names and semantics follow StableHLO (https://openxla.org/stablehlo/spec). The
common reductions carry a `kind` instead of a body (`reduce`, `reduce_window`: the fast
path); ops with regions (`while`, `if`, `case`, `sort`, `scatter`, `map`,
`select_and_scatter`, `reduce_region`, `reduce_window_region`, `cfg`) hold closed sub-graphs in
`Node.regions` (toolchain/graph/ir.py), whose inputs are the block arguments and then
the captured values, which are also the node's last operands; a function with several
blocks is one `cfg` node, a region per block (toolchain/frontend/cfg.py). Each rule takes the node
and returns its output types; it raises ShapeError when the node is ill-formed. The
verifier compares these with the types the node was built with. The rules live in
graph/type_rules.py and, for the ops with regions, graph/region_rules.py; this file
names each op's rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolchain.graph.ir import Node
from toolchain.graph.region_rules import (
    _case,
    _cfg,
    _if,
    _map,
    _reduce_region,
    _reduce_window_region,
    _scatter,
    _select_and_scatter,
    _sort,
    _while,
    window_output_shape,
)
from toolchain.graph.type_rules import (
    FFT_TYPES,
    REDUCE_KINDS,
    RNG_ALGORITHMS,
    B,
    C,
    F,
    I,
    ShapeError,
    _abs,
    _batch_norm_grad,
    _batch_norm_inference,
    _batch_norm_training,
    _binary,
    _bitcast_convert,
    _broadcast_in_dim,
    _cholesky,
    _clamp,
    _compare,
    _complex,
    _concatenate,
    _constant,
    _convert,
    _convolution,
    _dequantize,
    _dot_general,
    _dynamic_slice,
    _dynamic_update_slice,
    _fft,
    _fixed_point,
    _gather,
    _iota,
    _is_finite,
    _pad,
    _part,
    _reduce,
    _reduce_window,
    _reshape,
    _reverse,
    _rng,
    _rng_bit_generator,
    _select,
    _slice,
    _transpose,
    _triangular_solve,
    _unary,
    conv_output_shape,
)
from toolchain.types import DType, TensorType


@dataclass(frozen=True)
class OpSpec:
    name: str
    group: str  # elementwise / shape / contraction / reduction / source / control / misc
    arity: int | None  # None: variadic
    attrs: tuple[str, ...]
    infer: Callable[[Node], list[TensorType]]
    regions: int | None = 0  # how many regions the node holds; None: one or more


# ---------------------------------------------------------------- the table

_UNARY = {
    "negate": F + I + C, "sign": F + I + C, "exponential": F + C,
    "exponential_minus_one": F + C, "log": F + C, "log_plus_one": F + C, "logistic": F + C,
    "sqrt": F + C, "rsqrt": F + C, "cbrt": F + C, "tanh": F + C,
    "sine": F + C, "cosine": F + C, "tan": F + C, "floor": F, "ceil": F,
    "round_nearest_afz": F,
    "round_nearest_even": F, "not": I + B, "popcnt": I, "count_leading_zeros": I,
}
_BINARY = {
    "add": F + I + B + C, "subtract": F + I + C, "multiply": F + I + B + C,
    "divide": F + I + C,
    "remainder": F + I, "maximum": F + I + B + C, "minimum": F + I + B + C,
    "power": F + I + C,
    "atan2": F + C, "and": I + B, "or": I + B, "xor": I + B, "shift_left": I,
    "shift_right_arithmetic": I, "shift_right_logical": I,
}

OPS: dict[str, OpSpec] = {}


def _add(name: str, group: str, arity: int | None, attrs: tuple[str, ...],
         infer: Callable[[Node], list[TensorType]], regions: int | None = 0) -> None:
    OPS[name] = OpSpec(name, group, arity, attrs, infer, regions)


for _n, _k in _UNARY.items():
    _add(_n, "elementwise", 1, (), _unary(_k))
for _n, _k in _BINARY.items():
    _add(_n, "elementwise", 2, (), _binary(_k))
_add("abs", "elementwise", 1, (), _abs)
_add("is_finite", "elementwise", 1, (), _is_finite)
_add("compare", "elementwise", 2, ("direction",), _compare)
_add("select", "elementwise", 3, (), _select)
_add("clamp", "elementwise", 3, (), _clamp)
_add("convert", "elementwise", 1, ("dtype",), _convert)
_add("broadcast_in_dim", "shape", 1, ("dims", "shape"), _broadcast_in_dim)
_add("reshape", "shape", 1, ("shape",), _reshape)
_add("transpose", "shape", 1, ("permutation",), _transpose)
_add("reverse", "shape", 1, ("dims",), _reverse)
_add("concatenate", "shape", None, ("dimension",), _concatenate)
_add("slice", "shape", 1, ("start", "limit", "strides"), _slice)
_add("pad", "shape", 2, ("low", "high", "interior"), _pad)
_add("gather", "shape", 2, ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                            "start_indices_batching_dims", "start_index_map",
                            "index_vector_dim", "slice_sizes"), _gather)
_add("dynamic_slice", "shape", None, ("slice_sizes",), _dynamic_slice)
_add("dynamic_update_slice", "shape", None, (), _dynamic_update_slice)
_add("complex", "elementwise", 2, (), _complex)
_add("real", "elementwise", 1, (), _part)
_add("imag", "elementwise", 1, (), _part)
_add("fft", "misc", 1, ("fft_type", "fft_length"), _fft)
_add("bitcast_convert", "shape", 1, ("dtype", "shape"), _bitcast_convert)
_add("rng_bit_generator", "source", 1, ("algorithm", "dtype", "shape"), _rng_bit_generator)
_add("rng", "source", 2, ("distribution", "dtype", "shape"), _rng)
_add("iota", "source", 0, ("dimension", "shape", "dtype"), _iota)
_add("constant", "source", 0, ("value",), _constant)
_add("dot_general", "contraction", 2,
     ("lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract", "dtype"), _dot_general)
_add("convolution", "contraction", 2,
     ("strides", "padding", "lhs_dilation", "rhs_dilation", "input_batch", "input_feature",
      "input_spatial", "kernel_input", "kernel_output", "kernel_spatial", "output_batch",
      "output_feature", "output_spatial", "feature_group_count", "batch_group_count",
      "dtype"), _convolution)
_add("reduce", "reduction", 2, ("kind", "dims"), _reduce)
_add("reduce_window", "reduction", 2,
     ("kind", "window", "strides", "base_dilations", "window_dilations", "padding"),
     _reduce_window)
_add("batch_norm_inference", "misc", 5, ("epsilon", "feature_index"), _batch_norm_inference)
# Linear algebra with StableHLO's semantics; passes/linalg.py rewrites them into loops
# of dynamic slices and dot_generals before scheduling, reference/linalg.py computes
# them independently with numpy.
_add("batch_norm_training", "misc", 3, ("epsilon", "feature_index"), _batch_norm_training)
_add("batch_norm_grad", "misc", 5, ("epsilon", "feature_index"), _batch_norm_grad)
_add("cholesky", "misc", 1, ("lower",), _cholesky)
_add("triangular_solve", "misc", 2, ("left_side", "lower", "unit_diagonal", "transpose_a"),
     _triangular_solve)
# The two fixed-point primitives of integer (TFLite / gemmlowp) requantization, minirt's
# own elementwise ops (docs/int8.md): a * b / 2**31 rounded to nearest, ties toward
# +infinity, saturated; and x / 2**e rounded to nearest, ties away from zero, e clamped
# to [0, 31].
_add("saturating_rounding_doubling_high_mul", "elementwise", 2, (), _fixed_point)
_add("rounding_divide_by_pot", "elementwise", 2, (), _fixed_point)
# real = scale * stored (symmetric: zero point 0); minirt's own op for quantized weights.
_add("dequantize", "misc", 2, ("axis",), _dequantize)
# Ops with regions (operand counts depend on the regions: captures come last).
_add("while", "control", None, (), _while, 2)
_add("if", "control", None, (), _if, 2)
_add("case", "control", None, (), _case, None)
_add("reduce_region", "reduction", None, ("dims",), _reduce_region, 1)
_add("reduce_window_region", "reduction", None,
     ("window", "strides", "base_dilations", "window_dilations", "padding"),
     _reduce_window_region, 1)
_add("sort", "misc", None, ("dimension", "is_stable"), _sort, 1)
_add("map", "misc", None, ("dimensions", "operands"), _map, 1)
_add("scatter", "misc", None,
     ("update_window_dims", "inserted_window_dims", "input_batching_dims",
      "scatter_indices_batching_dims", "scatter_dims_to_operand_dims", "index_vector_dim",
      "indices_are_sorted", "unique_indices"), _scatter, 1)
_add("select_and_scatter", "misc", None, ("window", "strides", "padding"),
     _select_and_scatter, 2)
_add("cfg", "control", None, ("blocks",), _cfg, None)
# An operator of the user's own (graph/custom_ops.py): a C kernel in the firmware, a
# Python reference in the check; its result types are the ones the model declares.
_add("custom_call", "misc", None, ("op", "options", "ordinal", "result_types"),
     lambda node: list(node.attrs["result_types"]))

# CHLO's math functions (toolchain/frontend/chlo.py), float only; codegen in
# toolchain/codegen/mathlib_special.py, reference in toolchain/reference/special.py.
# next_after steps to the neighbouring value of the element type; zeta(s, q) is Hurwitz's,
# polygamma(n, x) the n-th derivative of digamma.
for _n in ("erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin", "acos",
           "atan", "sinh", "cosh", "asinh", "acosh", "atanh"):
    _add(_n, "elementwise", 1, (), _unary(F))
for _n in ("next_after", "zeta", "polygamma"):
    _add(_n, "elementwise", 2, (), _binary(F))

# The ops that take or give complex values. passes/complex.py rewrites each into real
# ops (a test keeps its rules and this set equal); the importer refuses complex tensors
# in any other op, so nothing downstream of that pass ever meets a complex value.
COMPLEX_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "negate", "abs", "exponential", "log", "sqrt",
    "sign", "compare", "select", "convert", "complex", "real", "imag", "constant", "fft",
    "pad", "reshape", "transpose", "slice", "reverse", "broadcast_in_dim", "concatenate",
    "dynamic_slice", "dynamic_update_slice", "gather", "iota",
    # passes/complex_math.py
    "sine", "cosine", "tan", "tanh", "exponential_minus_one", "log_plus_one", "logistic",
    "rsqrt", "cbrt", "power", "atan2", "maximum", "minimum"})

__all__ = ["COMPLEX_OPS", "OPS", "OpSpec", "ShapeError", "REDUCE_KINDS", "conv_output_shape",
           "DType", "FFT_TYPES", "RNG_ALGORITHMS", "window_output_shape"]
