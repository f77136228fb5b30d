"""Scatter kernels (toolchain/kernel/scatter.py) as LLVM functions: a loop nest over the
update index space; per element the result index (rank-0 helper kernels over slots,
codegen/slots.py), a bounds check, then the update region's helpers on the old
elements and the update's, stored back in place."""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.kinds import register
from toolchain.codegen.slots import I32, Frame
from toolchain.kernel.form import INDEX, Expr, Kernel
from toolchain.kernel.regions import scalar_load, substitute
from toolchain.kernel.scatter import Scatter
from toolchain.types import TensorType


@register(Scatter)
def emit_scatter(module: ir.Module, s: Scatter) -> ir.Function:
    """Adds the scatter's function to `module` and returns it."""
    m, n = len(s.operands), len(s.results)
    f = Frame(module, s.name, m + n)
    b = f.b
    dims = len(s.domain)
    shape = s.results[0].shape
    dts = [t.dtype for t in s.results]
    if 0 in s.domain or 0 in shape:
        b.ret_void()
        return f.fn
    idx = [f.slot(INDEX, f"u{d}") for d in range(dims)]
    where = [f.slot(INDEX, f"t{d}") for d in range(len(shape))]
    current = [f.slot(dt, f"cur{k}") for k, dt in enumerate(dts)]
    new = [f.slot(dt, f"new{k}") for k, dt in enumerate(dts)]
    scalars = tuple(TensorType((), dt) for dt in dts)
    slot_types = s.operands + (TensorType((), INDEX),) * dims + scalars

    def over_slots(e: Expr) -> Expr:
        return substitute(e, arg=lambda a: scalar_load(m + dims + a.index) if a.index < n
                          else over_slots(s.values[a.index - n]),
                          index=lambda i: scalar_load(m + i.dim))

    targets = [Kernel(f.helper_name("target"), (), 0, slot_types, TensorType((), INDEX),
                      over_slots(e)) for e in s.target]
    updates = [Kernel(f.helper_name("update"), (), 0, slot_types, scalars[k], over_slots(e))
               for k, e in enumerate(s.update)]
    reads = f.buffers[:m] + idx + current

    def element() -> None:
        for k, slot in zip(targets, where):
            f.call(k, reads + [slot])
        ok: ir.Value = ir.Constant(ir.IntType(1), 1)
        linear: ir.Value = ir.Constant(I32, 0)
        for slot, size in zip(where, shape):
            t = b.load(slot, typ=I32)
            ok = b.and_(ok, b.icmp_unsigned("<", t, ir.Constant(I32, size)))
            linear = b.add(b.mul(linear, ir.Constant(I32, size)), t)
        with b.if_then(ok):
            for k, dt in enumerate(dts):
                f.copy(current[k], f.element(m + k, dt, linear), dt)
            for k, slot in zip(updates, new):
                f.call(k, reads + [slot])
            for k, dt in enumerate(dts):
                f.copy(f.element(m + k, dt, linear), new[k], dt)

    def nest(level: int) -> None:
        if level == dims:
            element()
            return
        f.loop(s.domain[level], lambda i: (b.store(i, idx[level]), nest(level + 1)),
               f"u{level}")

    nest(0)
    b.ret_void()
    return f.fn
