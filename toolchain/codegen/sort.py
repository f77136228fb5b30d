"""Sort kernels (toolchain/kernel/sort.py) as LLVM functions: binary insertion sort of
every slice, in place; the keys, the probed elements and the comparator's result live
in slots, the comparator is a rank-0 helper kernel (codegen/slots.py)."""

from __future__ import annotations

from math import prod

from llvmlite import ir

from toolchain.codegen.kinds import register
from toolchain.codegen.slots import I32, Frame
from toolchain.kernel.form import Kernel, Load
from toolchain.kernel.sort import Sort
from toolchain.types import I1, TensorType


@register(Sort)
def emit_sort(module: ir.Module, s: Sort) -> ir.Function:
    """Adds the sort's function to `module` and returns it."""
    m, n = len(s.operands), len(s.results)
    f = Frame(module, s.name, m + n)
    b = f.b
    shape = s.results[0].shape
    length = shape[s.dimension] if shape else 1
    if length <= 1 or 0 in shape:
        b.ret_void()
        return f.fn
    outer, inner = prod(shape[:s.dimension]), prod(shape[s.dimension + 1:])
    dts = [t.dtype for t in s.results]
    keys = [f.slot(dt, f"key{k}") for k, dt in enumerate(dts)]
    probes = [f.slot(dt, f"probe{k}") for k, dt in enumerate(dts)]
    flag = f.slot(I1, "less")
    scalars = tuple(TensorType((), dt) for dt in dts)
    less = Kernel(f.helper_name("less"), (), 0, s.operands + scalars + scalars,
                  TensorType((), I1), s.comparator_over(lambda k: Load(m + k, ()),
                                                        lambda k: Load(m + n + k, ())))
    step = ir.Constant(I32, inner)

    def at(base: ir.Value, i: ir.Value) -> ir.Value:
        return b.add(base, b.mul(i, step))

    def move(dst: list[ir.Value] | ir.Value, src: list[ir.Value] | ir.Value) -> None:
        """Copies all N results' elements (or slots) src -> dst; an offset is an
        element of each result."""
        for k, dt in enumerate(dts):
            d = dst[k] if isinstance(dst, list) else f.element(m + k, dt, dst)
            e = src[k] if isinstance(src, list) else f.element(m + k, dt, src)
            f.copy(d, e, dt)

    def one_slice(base: ir.Value) -> None:
        def insert(i: ir.Value) -> None:
            i = b.add(i, ir.Constant(I32, 1))  # elements 1 .. length - 1
            move(keys, at(base, i))
            # Binary search: the first p in [0, i) where key goes before element p.
            pre = b.block
            head = f.fn.append_basic_block("search")
            probe = f.fn.append_basic_block("probe")
            found = f.fn.append_basic_block("found")
            b.branch(head)
            b.position_at_end(head)
            lo, hi = b.phi(I32, "lo"), b.phi(I32, "hi")
            lo.add_incoming(ir.Constant(I32, 0), pre)
            hi.add_incoming(i, pre)
            b.cbranch(b.icmp_signed("<", lo, hi), probe, found)
            b.position_at_end(probe)
            mid = b.lshr(b.add(lo, hi), ir.Constant(I32, 1))
            move(probes, at(base, mid))
            f.call(less, f.buffers[:m] + keys + probes + [flag])
            before = b.icmp_unsigned("!=", b.load(flag, typ=ir.IntType(8)),
                                     ir.Constant(ir.IntType(8), 0))
            lo.add_incoming(b.select(before, lo, b.add(mid, ir.Constant(I32, 1))), b.block)
            hi.add_incoming(b.select(before, mid, hi), b.block)
            b.branch(head)
            b.position_at_end(found)
            # Shift elements [lo, i) up by one (from the top), then place the key.
            shift_pre = b.block
            shift = f.fn.append_basic_block("shift")
            move_block = f.fn.append_basic_block("move")
            placed = f.fn.append_basic_block("place")
            b.branch(shift)
            b.position_at_end(shift)
            j = b.phi(I32, "j")
            j.add_incoming(i, shift_pre)
            b.cbranch(b.icmp_signed(">", j, lo), move_block, placed)
            b.position_at_end(move_block)
            below = b.sub(j, ir.Constant(I32, 1))
            move(at(base, j), at(base, below))
            j.add_incoming(below, b.block)
            b.branch(shift)
            b.position_at_end(placed)
            move(at(base, lo), keys)

        f.loop(length - 1, insert, "i")

    def slices(a: ir.Value) -> None:
        f.loop(inner, lambda c: one_slice(b.add(b.mul(a, ir.Constant(I32, length * inner)),
                                                 c)), "inner")

    f.loop(outer, slices, "outer")
    b.ret_void()
    return f.fn
