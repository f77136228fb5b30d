"""`select_and_scatter` (max pooling's gradient) as a kernel kind that updates its
result in place.

The schedule first fills the result with the init value (an ordinary dispatch); then,
for every window (every element of `source`, row-major), the kernel selects one
position of the operand: the first position inside the operand, replaced by each later
one the `select` region does not prefer the current choice over (padding takes no part,
as in the spec); a window with no position inside selects nothing. The result element
at the selected position becomes `scatter(result element, source element)`.

`select` is an expression of Arg(0) (the current choice) and Arg(1) (the candidate),
`scatter` of Arg(0) (the result element) and Arg(1) (the source element); both may load
the scalar operands after the first two (the regions' captures).

Buffers, in order: the operand, the source, the captured scalars, then the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.graph.ir import Node
from toolchain.kernel.form import Expr, Load
from toolchain.kernel.lower import LoweringError
from toolchain.kernel.regions import region_expr, scalar_load, substitute
from toolchain.types import I1, TensorType


@dataclass(frozen=True)
class SelectAndScatter:
    name: str
    operands: tuple[TensorType, ...]
    results: tuple[TensorType, ...]
    window: tuple[int, ...]
    strides: tuple[int, ...]
    padding_low: tuple[int, ...]
    select: Expr
    scatter: Expr

    in_place = True  # it reads its result: the schedule fills it with the init value

    @property
    def binding_types(self) -> tuple[TensorType, ...]:
        """The types of the buffers a command binds to it, in order."""
        return self.operands + self.results

    def over(self, e: Expr, first: int, second: int) -> Expr:
        """`e` with Arg(0) / Arg(1) loaded from scalar operands `first` / `second`."""
        return substitute(e, arg=lambda a: Load(first if a.index == 0 else second, ()))


def lower_select_and_scatter(node: Node) -> SelectAndScatter:
    """The kernel of a graph `select_and_scatter` node (operand, source, init value,
    captures); the init value is the schedule's fill, not the kernel's."""
    captures: list[Expr] = []
    for j, t in enumerate(node.inputs[3:]):
        if t.type.shape != ():
            raise LoweringError("select_and_scatter's regions read a "
                                f"{t.type} from outside; only scalars can be captured")
        captures.append(scalar_load(2 + j))
    (select,) = region_expr(node.regions[0], captures, "select_and_scatter's select")
    (scatter,) = region_expr(node.regions[1], captures, "select_and_scatter's scatter")
    at = node.attrs
    operands = (node.inputs[0].type, node.inputs[1].type, *(t.type for t in node.inputs[3:]))
    return SelectAndScatter(node.op, operands, (node.outputs[0].type,), tuple(at["window"]),
                            tuple(at["strides"]), tuple(lo for lo, _ in at["padding"]),
                            select, scatter)


def run_select_and_scatter(k: SelectAndScatter, args: list[np.ndarray]) -> list[np.ndarray]:
    """The result on the host, by the generated code's walk (regions evaluated by the
    kernel interpreter)."""
    from toolchain.kernel.form import Kernel
    from toolchain.kernel.interpret import run_kernel

    m = len(k.operands)
    x, source, caps = args[0], args[1], list(args[2:m])
    out = np.array(args[m]).reshape(-1)
    dt = x.dtype
    scalar = TensorType((), k.results[0].dtype)
    slots = k.operands + (scalar, scalar)
    select = Kernel("select", (), 0, slots, TensorType((), I1), k.over(k.select, m, m + 1))
    scatter = Kernel("scatter", (), 0, slots, scalar, k.over(k.scatter, m, m + 1))
    for w in np.ndindex(*source.shape):
        best = None
        for off in np.ndindex(*k.window):
            pos = tuple(w[d] * k.strides[d] + off[d] - k.padding_low[d] for d in range(x.ndim))
            if not all(0 <= p < s for p, s in zip(pos, x.shape)):
                continue
            if best is None or not bool(run_kernel(select, args[:m] + [
                    np.asarray(x[best], dt), np.asarray(x[pos], dt)])):
                best = pos
        if best is not None:
            flat = int(np.ravel_multi_index(best, x.shape)) if x.ndim else 0
            out[flat] = run_kernel(scatter, [x, source, *caps, np.asarray(out[flat]),
                                             np.asarray(source[w])])
    return [out.reshape(k.results[0].shape)]
