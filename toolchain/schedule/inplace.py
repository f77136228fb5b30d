"""When a dispatch may write its result over one of its operands' buffers.

The arena planner (program.py) lets a result take the buffer of an operand whose last
use is that very dispatch, instead of a hole of its own, when the kernel's code is safe
for it whatever loop order, tiling, vector width or register blocking its schedule
picks: every load of that operand reads the element at the result element's own index,
in a buffer of the same layout and element size. Each result element is then stored
after its own value was computed (loop schedules store every output once, after its
reduction and epilogue: toolchain/loops/schedule.py), and the only element of the
operand that its store overwrites is the one it read itself: every element is read
before it is written at the same index, and no other output reads it.

That covers element-wise kernels (ReLU, a residual add, the pieces of a softmax after
their reductions, a requantization) and per-channel ones (a bias, a scale per channel:
the per-channel vector is another operand), and a reduction whose epilogue reads the
operand at its output's index (a residual added inside a convolution). A windowed op
(a depthwise convolution reading its input's neighbours) reads elements that earlier
outputs' stores would have overwritten, so it keeps a buffer of its own.
"""

from __future__ import annotations

from toolchain.graph.ir import Tensor
from toolchain.kernel.form import Index, Kernel
from toolchain.schedule.fuse import Dispatch
from toolchain.schedule.items import loads

__all__ = ["writes_over"]


def writes_over(d: Dispatch, operand: Tensor) -> bool:
    """Whether `d` may store its result in `operand`'s buffer (see the module docstring):
    it reads `operand` only element by element at the result's own index, and the two
    tensors have the same number of elements of the same size."""
    k = d.kernel
    if not isinstance(k, Kernel) or d.output is operand:
        return False
    slots = {i for i, t in enumerate(d.operands) if t is operand}
    if not slots:
        return False
    parallel = tuple(k.domain[:k.n_parallel])
    src, dst = operand.type, k.result
    if (tuple(src.shape) != parallel or src.dtype.itemsize != dst.dtype.itemsize
            or src.num_elements != dst.num_elements):
        return False
    identity = tuple(Index(i) for i in range(k.n_parallel))
    return all(tuple(load.index) == identity for load in loads(k) if load.operand in slots)
