"""Graph -> graph rewrites run before scheduling."""

from toolchain.passes.affine import fold_affine
from toolchain.passes.complex import complex_io, lower_complex
from toolchain.passes.fold import fold_constants
from toolchain.passes.linalg import lower_linalg
from toolchain.passes.merge_constants import merge_equal_constants
from toolchain.passes.ptq import quantize_graph, quantize_int8
from toolchain.passes.quantize import QuantizeOptions, quantize_weights
from toolchain.passes.random import lower_random

__all__ = ["QuantizeOptions", "complex_io", "fold_affine", "fold_constants",
           "lower_complex", "lower_linalg", "lower_random", "merge_equal_constants",
           "quantize_graph", "quantize_int8", "quantize_weights"]
