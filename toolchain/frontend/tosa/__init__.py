"""TOSA (the MLIR dialect, as TOSA 1.0 / LLVM 20 and later print it) -> Graph.

The StableHLO importer (toolchain/frontend/stablehlo.py) walks functions, inlines calls
and collects errors for every dialect; for an op named in `CONVERTERS` it calls
`expand`, which runs the op's converter: a function of a `TosaOp` (the op, its operands
as graph tensors, a builder) that appends graph nodes and returns the result tensors.
One TOSA op may become several graph ops (RESCALE is a 64-bit multiply, add, shift and
clamp), so converters build nodes rather than name one graph op.

Integer TOSA is computed bit for bit as the specification's pseudo-code does, out of
plain graph ops that the numpy reference executes one by one; see each module:

- `elementwise.py`: unary, binary, comparison, logical, bitwise and shift ops, CLAMP,
  SELECT, CAST, MUL, NEGATE, TABLE;
- `rescale.py`: RESCALE and the spec's apply_scale_32 / apply_scale_16;
- `tensor_ops.py`: convolutions, MATMUL, pooling;
- `reductions.py`: REDUCE_* and ARGMAX;
- `data_layout.py`: CONST, CONST_SHAPE and data movement (GATHER, SCATTER);
- `image.py`: RESIZE;
- `control.py`: COND_IF and WHILE_LOOP, onto the graph's `if` and `while`;
- `unsupported.py`: what is read but refused, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable

from toolchain.frontend.tosa import (
    control,
    data_layout,
    elementwise,
    image,
    reductions,
    rescale,
    tensor_ops,
    unsupported,
)
from toolchain.frontend.tosa.context import Scope, TosaError, TosaOp
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.graph.ops import ShapeError
from toolchain.graph.verify import tensor_type_error
from toolchain.mlir.ir import Operation
from toolchain.types import DType, OpaqueType, TensorType

__all__ = ["CONVERTERS", "UNSUPPORTED", "Scope", "TosaError", "expand"]

Converter = Callable[[TosaOp], Tensor]

# Op name -> converter: every TOSA op the importer takes (docs/ops.md lists them from
# here). Those in UNSUPPORTED are read but refused, with the reason given there.
CONVERTERS: dict[str, Converter] = {
    **elementwise.CONVERTERS,
    **tensor_ops.CONVERTERS,
    **reductions.CONVERTERS,
    **data_layout.CONVERTERS,
    **image.CONVERTERS,
    **control.CONVERTERS,
    "tosa.rescale": rescale.rescale,
    **unsupported.CONVERTERS,
}
UNSUPPORTED: dict[str, str] = {f"tosa.{k}": v for k, v in unsupported.REASONS.items()}


def _is_shape(ty: object) -> bool:
    return isinstance(ty, OpaqueType) and ty.text.startswith("!tosa.shape<")


def _type_problem(ty: object) -> str | None:
    """Why a value of type `ty` cannot be compiled, or None."""
    if _is_shape(ty) or isinstance(ty, DType):
        return None
    if not isinstance(ty, TensorType):
        return f"has type '{ty}', which minirt does not compile"
    if not ty.is_static:
        return f"has a dynamic shape ({ty}); minirt needs static shapes"
    return tensor_type_error(ty)


def _same(got: TensorType, want: object) -> bool:
    """A converter's result against the declared type (quantization parameters are
    TOSA's annotations, not arithmetic: they need not match)."""
    if _is_shape(want):
        return True
    if isinstance(want, DType):
        want = TensorType((), want)
    return (isinstance(want, TensorType) and tuple(got.shape) == tuple(want.shape)
            and got.dtype == want.dtype)


def expand(b: GraphBuilder, op: Operation, inputs: list[Tensor],
           scope: Scope | None = None) -> list[Tensor]:
    """The graph tensors of TOSA op `op`'s results, its nodes appended through `b`;
    `scope` is the importer's where `op` sits (COND_IF and WHILE_LOOP import their
    regions there). Raises TosaError (no location: the importer adds the op's)."""
    for v in list(op.operands) + list(op.results):
        problem = _type_problem(v.type)
        if problem is not None:
            raise TosaError(problem)
    try:
        out = CONVERTERS[op.name](TosaOp(b, op, inputs, scope))
    except (ShapeError, ValueError) as e:
        raise TosaError(str(e)) from None
    outs = [out] if isinstance(out, Tensor) else list(out)
    if len(outs) != len(op.results):
        raise TosaError(f"computes {len(outs)} results, the op declares {len(op.results)}")
    for i, (t, r) in enumerate(zip(outs, op.results)):
        if not _same(t.type, r.type):
            raise TosaError(f"result {i} is {t.type} by TOSA's rules, not the declared "
                            f"{r.type}")
    return outs
