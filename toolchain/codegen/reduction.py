"""Reductions with several accumulators (toolchain/kernel/reduction.py) as LLVM
functions: `void NAME(ptr bindings)`, loops over the parallel dimensions, then over the
reduced ones; the accumulators, the loop indices and the scalar work live in slots
(codegen/slots.py)."""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.kinds import register
from toolchain.codegen.slots import I32, Frame
from toolchain.kernel.form import INDEX, Expr, Kernel, Load
from toolchain.kernel.reduction import Reduction
from toolchain.kernel.regions import scalar_load, substitute
from toolchain.types import TensorType


@register(Reduction)
def emit_reduction(module: ir.Module, r: Reduction) -> ir.Function:
    """Adds the reduction's function to `module` and returns it."""
    n = len(r.results)
    n_ops, n_dims = len(r.operands), len(r.domain)
    f = Frame(module, r.name, n_ops + n)
    accs = [TensorType((), t.dtype) for t in r.results]
    idx_slots = [f.slot(INDEX, f"i{d}") for d in range(n_dims)]
    acc_slots = [f.slot(t.dtype, f"acc{i}") for i, t in enumerate(accs)]
    next_slots = [f.slot(t.dtype, f"next{i}") for i, t in enumerate(accs)]
    # Helper kernels read the dispatch's operands, then the index slots, then the
    # accumulators (Arg(j < N)); an element (Arg(j >= N)) is its expression, inlined.
    slot_types = r.operands + (TensorType((), INDEX),) * n_dims + tuple(accs)

    def over_slots(e: Expr) -> Expr:
        return substitute(e, arg=lambda a: scalar_load(n_ops + n_dims + a.index)
                          if a.index < n else over_slots(r.elements[a.index - n]),
                          index=lambda i: scalar_load(n_ops + i.dim))

    def helper(what: str, body: Expr, result: TensorType) -> Kernel:
        return Kernel(f.helper_name(what), (), 0, slot_types, result, over_slots(body))

    inits = [helper("init", e, accs[i]) for i, e in enumerate(r.inits)]
    steps = [helper("step", e, accs[i]) for i, e in enumerate(r.combine)]
    stores = [Kernel(f.helper_name("store"), (), 0, (acc,), acc, Load(0, ()))
              for acc in accs]
    reads = f.buffers[:n_ops] + idx_slots + acc_slots

    def reduced(level: int) -> None:
        if level == n_dims:
            for k, s in zip(steps, next_slots):
                f.call(k, reads + [s])
            for i, acc in enumerate(accs):
                f.copy(acc_slots[i], next_slots[i], acc.dtype)
            return
        f.loop(r.domain[level], lambda i: (f.b.store(i, idx_slots[level]),
                                          reduced(level + 1)), f"r{level}")

    def parallel(level: int, linear: ir.Value) -> None:
        if level == r.n_parallel:
            for k, s in zip(inits, acc_slots):
                f.call(k, reads + [s])
            if 0 not in r.domain[r.n_parallel:]:
                reduced(r.n_parallel)
            for i, (k, acc) in enumerate(zip(stores, accs)):
                f.call(k, [acc_slots[i], f.element(n_ops + i, acc.dtype, linear)])
            return

        def body(i: ir.Value) -> None:
            f.b.store(i, idx_slots[level])
            scaled = f.b.mul(linear, ir.Constant(I32, r.domain[level]), flags=["nuw", "nsw"])
            parallel(level + 1, f.b.add(scaled, i, flags=["nuw", "nsw"]))

        f.loop(r.domain[level], body, f"p{level}")

    if 0 not in r.domain[:r.n_parallel]:
        parallel(0, ir.Constant(I32, 0))
    f.b.ret_void()
    return f.fn
