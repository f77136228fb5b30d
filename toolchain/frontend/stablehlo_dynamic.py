"""StableHLO's `dynamic_*` ops whose shape operands are constants, as their static forms.

minirt compiles static shapes only, but a dynamic op whose shape operands (a result
shape, paddings, slice sizes, limits) are known when the model is imported means the
same as the static op with those values as attributes: `dynamic_pad(x, v, low, high,
interior)` is `pad(x, v)` with `edge_padding_low = low`, ... The importer converts the
static op instead (so every check the static op has applies), once each shape operand
is a constant, or computed by pure ops from constants (`constant_value` folds those
with the reference kernels). An operand that is the result's shape (dynamic_iota's,
dynamic_reshape's, dynamic_broadcast_in_dim's) must equal the declared static result
shape, as the spec requires; a shape operand known only at run time is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.frontend.types import as_tensor_type
from toolchain.graph.ir import Tensor
from toolchain.mlir.ir import DenseAttr, Operation
from toolchain.reference.kernels import KERNELS
from toolchain.types import TensorType, dtype

__all__ = ["DYNAMIC_FORMS", "DynamicError", "DynamicForm", "constant_value"]

RESULT_SHAPE = ""  # marks a shape operand that must equal the result's shape
FOLD_DEPTH = 16  # ops of constants followed back to a shape operand's constants


class DynamicError(Exception):
    """A dynamic op minirt cannot make static (no location: the importer adds the op's)."""


@dataclass(frozen=True)
class DynamicForm:
    """How a dynamic op becomes a static one: the static op's name, how many leading
    operands it keeps, and the attribute each further (shape) operand becomes."""

    static: str
    kept: int
    shape_attrs: tuple[str, ...]

    def __call__(self, op: Operation, inputs: list[Tensor]) -> tuple[Operation, list[Tensor]]:
        """The static op `op` means, and the operand tensors it keeps."""
        if len(inputs) != self.kept + len(self.shape_attrs):
            raise DynamicError(f"takes {self.kept + len(self.shape_attrs)} operands, "
                               f"not {len(inputs)}")
        attrs = {k: v for k, v in {**op.attributes, **op.properties}.items()
                 if k not in _DROPPED}
        for key, t in zip(self.shape_attrs, inputs[self.kept:], strict=True):
            ints = _shape_operand(t, key)
            if key == RESULT_SHAPE:
                _check_result_shape(op, ints)
            else:
                attrs[key] = DenseAttr(TensorType(ints.shape, dtype("i64")), ints)
        static = Operation(self.static, list(op.operands[:self.kept]), list(op.results),
                           attrs, {}, list(op.regions), op.loc)
        return static, inputs[:self.kept]


DYNAMIC_FORMS: dict[str, DynamicForm] = {
    "stablehlo.dynamic_iota": DynamicForm("stablehlo.iota", 0, (RESULT_SHAPE,)),
    "stablehlo.dynamic_reshape": DynamicForm("stablehlo.reshape", 1, (RESULT_SHAPE,)),
    "stablehlo.dynamic_broadcast_in_dim": DynamicForm(
        "stablehlo.broadcast_in_dim", 1, (RESULT_SHAPE,)),
    "stablehlo.dynamic_pad": DynamicForm(
        "stablehlo.pad", 2, ("edge_padding_low", "edge_padding_high", "interior_padding")),
    "stablehlo.dynamic_gather": DynamicForm("stablehlo.gather", 2, ("slice_sizes",)),
    "stablehlo.dynamic_conv": DynamicForm("stablehlo.convolution", 2, ("padding",)),
    "stablehlo.real_dynamic_slice": DynamicForm(
        "stablehlo.slice", 1, ("start_indices", "limit_indices", "strides")),
}

def _shape_operand(t: Tensor, key: str) -> np.ndarray:
    value = constant_value(t)
    if value is None:
        what = "the result shape" if key == RESULT_SHAPE else f"'{key}'"
        raise DynamicError(f"needs {what} as a constant (minirt compiles static "
                           "shapes), not a value known only at run time")
    return value.astype(np.int64)


def _check_result_shape(op: Operation, ints: np.ndarray) -> None:
    result = as_tensor_type(op.results[0].type) if op.results else None
    if result is None or not result.is_static:
        raise DynamicError("needs a static result type")
    if tuple(ints.reshape(-1).tolist()) != tuple(result.shape):
        raise DynamicError(f"has result shape operand {ints.reshape(-1).tolist()} "
                           f"but declares {list(result.shape)}")


# Hints the dynamic op carries for shape inference, which its static form has no use for.
_DROPPED = ("known_expanding_dimensions", "known_nonexpanding_dimensions")


def constant_value(t: Tensor, depth: int = FOLD_DEPTH) -> np.ndarray | None:
    """The value of `t` if it is a constant or a pure op's result on constants (up to
    `depth` ops back), computed by the reference kernels; else None."""
    node = t.producer
    if node is None:
        return None
    if node.op == "constant":
        return np.asarray(node.attrs["value"])
    if depth == 0 or node.regions or len(node.outputs) != 1 or node.op not in KERNELS:
        return None
    args = [constant_value(i, depth - 1) for i in node.inputs]
    if any(a is None for a in args):
        return None
    out = np.asarray(KERNELS[node.op](node, *args))
    return out.astype(t.type.dtype.np_dtype).reshape(t.type.shape)


