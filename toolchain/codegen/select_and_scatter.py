"""select_and_scatter kernels (toolchain/kernel/select_and_scatter.py) as LLVM
functions: per window, a walk of its positions keeping the selected one (its flat
offset in a slot, -1 while none), then the scatter region on that result element; the
regions are rank-0 helper kernels over slots (codegen/slots.py)."""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.kinds import register
from toolchain.codegen.slots import I32, Frame
from toolchain.kernel.form import INDEX, Kernel
from toolchain.kernel.select_and_scatter import SelectAndScatter
from toolchain.types import I1, TensorType


@register(SelectAndScatter)
def emit_select_and_scatter(module: ir.Module, k: SelectAndScatter) -> ir.Function:
    """Adds the kernel's function to `module` and returns it."""
    m = len(k.operands)
    f = Frame(module, k.name, m + 1)
    b = f.b
    x, source = k.operands[0], k.operands[1]
    dt = k.results[0].dtype
    if 0 in source.shape or 0 in x.shape or 0 in k.window:
        b.ret_void()
        return f.fn
    scalar = TensorType((), dt)
    slots = k.operands + (scalar, scalar)
    select = Kernel(f.helper_name("select"), (), 0, slots, TensorType((), I1),
                    k.over(k.select, m, m + 1))
    scatter = Kernel(f.helper_name("scatter"), (), 0, slots, scalar,
                     k.over(k.scatter, m, m + 1))
    best = f.slot(INDEX, "best")
    chosen, candidate = f.slot(dt, "chosen"), f.slot(dt, "candidate")
    flag, new = f.slot(I1, "keep"), f.slot(dt, "new")
    rank = x.rank
    minus1 = ir.Constant(I32, -1)
    w_index: list[ir.Value] = [ir.Constant(I32, 0)] * rank

    def position(offsets: list[ir.Value]) -> None:
        ok: ir.Value = ir.Constant(ir.IntType(1), 1)
        linear: ir.Value = ir.Constant(I32, 0)
        for d in range(rank):
            p = b.add(b.mul(w_index[d], ir.Constant(I32, k.strides[d])),
                      b.sub(offsets[d], ir.Constant(I32, k.padding_low[d])))
            ok = b.and_(ok, b.icmp_unsigned("<", p, ir.Constant(I32, x.shape[d])))
            linear = b.add(b.mul(linear, ir.Constant(I32, x.shape[d])), p)
        with b.if_then(ok):
            f.copy(candidate, f.element(0, dt, linear), dt)
            # The first position inside is taken; a later one when select(chosen,
            # candidate) is false. The flag slot holds select's answer (0: take).
            with b.if_else(b.icmp_signed("==", b.load(best, typ=I32), minus1)) as (
                    first, later):
                with first:
                    b.store(ir.Constant(ir.IntType(8), 0), flag)
                with later:
                    f.call(select, f.buffers[:m] + [chosen, candidate, flag])
            take = b.icmp_unsigned("==", b.load(flag, typ=ir.IntType(8)),
                                   ir.Constant(ir.IntType(8), 0))
            with b.if_then(take):
                b.store(linear, best)
                f.copy(chosen, candidate, dt)

    def window_positions(level: int, offsets: list[ir.Value]) -> None:
        if level == rank:
            position(offsets)
            return
        f.loop(k.window[level], lambda o: window_positions(level + 1, offsets + [o]),
               f"k{level}")

    def windows(level: int, linear: ir.Value) -> None:
        if level == rank:
            b.store(minus1, best)
            window_positions(0, [])
            at = b.load(best, typ=I32)
            with b.if_then(b.icmp_signed("!=", at, minus1)):
                f.copy(chosen, f.element(m, dt, at), dt)
                f.copy(candidate, f.element(1, dt, linear), dt)
                f.call(scatter, f.buffers[:m] + [chosen, candidate, new])
                f.copy(f.element(m, dt, at), new, dt)
            return

        def body(i: ir.Value) -> None:
            w_index[level] = i
            windows(level + 1, b.add(b.mul(linear, ir.Constant(I32, source.shape[level])), i))

        f.loop(source.shape[level], body, f"w{level}")

    windows(0, ir.Constant(I32, 0))
    b.ret_void()
    return f.fn
