"""The random generator's op table, listed: one row per graph op (toolchain/graph/ops.py)
with how often it is picked and a builder that draws its operands and attributes.

A builder takes the Gen (gen_context.py), adds its op (and any adapter or guard op
before it) and returns True, or False when it cannot build here (then another row is
tried). Attributes follow the StableHLO spec's constraints, not only what the verifier
checks, so every graph means what the spec says: unsorted broadcast dimensions, negative
padding, dilations, feature and batch groups, gathers with batching dimensions and
out-of-range start indices are all valid and all drawn. `mlir` is False for minirt's own
ops, which have no StableHLO spelling (the fixed-point primitives, dequantize): a graph
holding one skips the MLIR round trip.

The builders live by op family (elementwise_gens.py, layout_gens.py,
contraction_gens.py, reduction_gens.py, linalg_gens.py, complex_gens.py, bits_gens.py,
quant_gens.py; region ops in region_gens.py); this module lists their rows, in the
order that every seed's draws depend on, into op_table.OP_GENS. New ops join by adding
a row here. Importing this module is what fills the table: random_graphs.generate does.
"""

from __future__ import annotations

from toolchain.testing.bits_gens import bitcast_convert, rng, rng_bit_generator
from toolchain.testing.complex_gens import fft, make_complex, part
from toolchain.testing.contraction_gens import convolution, dot_general
from toolchain.testing.elementwise_gens import (
    CHLO_UNARY,
    DISCONTINUOUS,
    MATH_OPS,
    binary,
    clamp,
    compare,
    convert,
    next_after,
    select,
    unary,
    zeta_polygamma,
)
from toolchain.testing.layout_gens import (
    broadcast_in_dim,
    concatenate,
    constant,
    dynamic_slice,
    dynamic_update_slice,
    gather,
    iota,
    pad,
    reshape,
    reverse,
    slice_,
    transpose,
)
from toolchain.testing.linalg_gens import (
    batch_norm_grad,
    batch_norm_inference,
    batch_norm_training,
    cholesky,
    triangular_solve,
)
from toolchain.testing.op_table import OP_GENS, OpGen, build_one
from toolchain.testing.quant_gens import dequantize, fixed_point
from toolchain.testing.reduction_gens import reduce, reduce_window
from toolchain.testing.region_gens import REGION_GENS

__all__ = ["OP_GENS", "OpGen", "build_one", "MATH_OPS", "DISCONTINUOUS"]

# The elementwise ops drawn by the generic unary / binary builders (each op's element
# types come from its type rule, `accepts`).
UNARY = ("abs", "negate", "sign", "exponential", "exponential_minus_one", "log",
         "log_plus_one", "logistic", "sqrt", "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan",
         "floor", "ceil", "round_nearest_afz", "round_nearest_even", "not", "popcnt",
         "count_leading_zeros")
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
          "atan2", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
          "shift_right_logical")


def _rows() -> dict[str, OpGen]:
    rows = [OpGen(op, 1.0, unary(op)) for op in UNARY]
    rows += [OpGen(op, 0.4, unary(op)) for op in CHLO_UNARY]
    rows += [OpGen(op, 1.2, binary(op)) for op in BINARY]
    rows += [
        OpGen("is_finite", 0.5, unary("is_finite")),
        OpGen("compare", 2.0, compare),
        OpGen("select", 2.0, select),
        OpGen("clamp", 1.0, clamp),
        OpGen("convert", 2.0, convert),
        OpGen("broadcast_in_dim", 2.5, broadcast_in_dim),
        OpGen("reshape", 2.5, reshape),
        OpGen("transpose", 2.0, transpose),
        OpGen("reverse", 1.0, reverse),
        OpGen("concatenate", 1.5, concatenate),
        OpGen("slice", 1.5, slice_),
        OpGen("pad", 1.5, pad),
        OpGen("iota", 0.7, iota),
        OpGen("constant", 0.5, constant),
        OpGen("gather", 1.5, gather),
        OpGen("dynamic_slice", 1.0, dynamic_slice),
        OpGen("dynamic_update_slice", 1.0, dynamic_update_slice),
        OpGen("dot_general", 3.0, dot_general),
        OpGen("convolution", 3.0, convolution),
        OpGen("reduce", 3.0, reduce),
        OpGen("reduce_window", 2.0, reduce_window),
        OpGen("batch_norm_inference", 0.8, batch_norm_inference),
        OpGen("batch_norm_training", 0.5, batch_norm_training),
        OpGen("batch_norm_grad", 0.5, batch_norm_grad),
        OpGen("cholesky", 0.5, cholesky),
        OpGen("triangular_solve", 0.5, triangular_solve),
        OpGen("saturating_rounding_doubling_high_mul", 0.4,
              fixed_point("saturating_rounding_doubling_high_mul"), mlir=False),
        OpGen("rounding_divide_by_pot", 0.4, fixed_point("rounding_divide_by_pot"),
              mlir=False),
        OpGen("dequantize", 0.6, dequantize, mlir=False),
        OpGen("next_after", 0.4, next_after),
        OpGen("zeta", 0.3, zeta_polygamma("zeta")),
        OpGen("polygamma", 0.3, zeta_polygamma("polygamma")),
        OpGen("complex", 0.6, make_complex),
        OpGen("real", 0.5, part("real")),
        OpGen("imag", 0.5, part("imag")),
        OpGen("fft", 0.8, fft),
        OpGen("bitcast_convert", 0.8, bitcast_convert),
        # Low weights: their Threefry / Philox rounds are slow to compile (kernel/form.py).
        OpGen("rng_bit_generator", 0.25, rng_bit_generator),
        OpGen("rng", 0.25, rng),
    ]
    rows += REGION_GENS
    return {row.op: row for row in rows}


OP_GENS.update(_rows())
