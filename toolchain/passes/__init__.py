"""Graph -> graph rewrites run before scheduling."""

from toolchain.passes.affine import fold_affine
from toolchain.passes.fold import fold_constants
from toolchain.passes.ptq import quantize_graph, quantize_int8
from toolchain.passes.quantize import QuantizeOptions, quantize_weights

__all__ = ["QuantizeOptions", "fold_affine", "fold_constants", "quantize_graph",
           "quantize_int8", "quantize_weights"]
