"""Scalar work of the other kernel kinds (codegen/reduction.py, sort.py, ...) done by
ordinary kernels.

A kind's emitter writes its own loops and keeps its scalars (loop indices,
accumulators, compared elements) in stack *slots*, each a one-element buffer in its
element type's storage format. Whatever it computes from them is a generic Kernel of
rank 0 over those slots and the dispatch's buffers (an index a slot holds is a gather
index), emitted by emit.emit_kernel like any dispatch and called with a bindings array
built on the stack. The helper functions are internal and always inlined, so after
LLVM's SROA the slots are registers: every scalar op keeps exactly the semantics (and
the code) the generic kernels have, with no second expression emitter to keep in step.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from toolchain.codegen.element_types import storage_type
from toolchain.codegen.emit import emit_kernel
from toolchain.kernel.form import Kernel
from toolchain.types import DType

I32 = ir.IntType(32)
PTR = ir.PointerType()


class Frame:
    """One dispatch function being built: its entry block for slots, its builder."""

    def __init__(self, module: ir.Module, name: str, n_bindings: int,
                 returns: ir.Type | None = None) -> None:
        self.module = module
        self.name = name
        self.fn = ir.Function(module, ir.FunctionType(returns or ir.VoidType(), [PTR]), name)
        self.fn.linkage = "hidden"
        self.fn.section = f".text.{name}"
        self.fn.attributes.add("nounwind")
        self.fn.attributes.add("norecurse")
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.buffers = []
        for i in range(n_bindings):
            slot = self.b.gep(self.fn.args[0], [ir.Constant(I32, i)], inbounds=True,
                              source_etype=PTR)
            self.buffers.append(self.b.load(slot, typ=PTR, name=f"buf{i}"))
        self._helpers: dict[str, ir.Function] = {}
        self._count = 0

    def slot(self, dt: DType, name: str = "slot") -> ir.Value:
        """A one-element stack buffer of `dt`, in its storage format."""
        here = self.b.block
        self.b.position_at_start(self.entry)
        s = self.b.alloca(storage_type(dt), name=name)
        self.b.position_at_end(here)
        return s

    def call(self, kernel: Kernel, bindings: list[ir.Value]) -> None:
        """Runs a rank-0 (or any) kernel on `bindings` (its operands, then its result)."""
        fn = self._helpers.get(kernel.name)
        if fn is None:
            fn = emit_kernel(self.module, kernel)
            fn.linkage = "internal"
            fn.attributes.add("alwaysinline")
            self._helpers[kernel.name] = fn
        array = self._array(len(bindings))
        for i, v in enumerate(bindings):
            self.b.store(v, self.b.gep(array, [ir.Constant(I32, i)], inbounds=True,
                                       source_etype=PTR))
        self.b.call(fn, [array])

    def _array(self, n: int) -> ir.Value:
        here = self.b.block
        self.b.position_at_start(self.entry)
        a = self.b.alloca(PTR, size=ir.Constant(I32, max(n, 1)), name="args")
        self.b.position_at_end(here)
        return a

    def helper_name(self, what: str) -> str:
        """A unique name for a helper kernel of this dispatch."""
        self._count += 1
        return f"{self.name}.{what}{self._count}"

    def element(self, buf: int, dt: DType, offset: ir.Value) -> ir.Value:
        """The address of element `offset` of binding `buf` (elements of `dt`)."""
        return self.b.gep(self.buffers[buf], [offset], inbounds=True,
                          source_etype=storage_type(dt))

    def loop(self, count: int, body: Callable[[ir.Value], object], name: str = "i") -> None:
        """for i in range(count): body(i) (do-while: count >= 1)."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(f"{name}.head")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I32, name=name)
        i.add_incoming(ir.Constant(I32, 0), pre)
        body(i)
        nxt = b.add(i, ir.Constant(I32, 1), flags=["nuw", "nsw"])
        i.add_incoming(nxt, b.block)
        done = self.fn.append_basic_block(f"{name}.end")
        b.cbranch(b.icmp_signed("<", nxt, ir.Constant(I32, count)), head, done)
        b.position_at_end(done)

    def copy(self, dst: ir.Value, src: ir.Value, dt: DType) -> None:
        """*dst = *src for one element of `dt` (storage format)."""
        self.b.store(self.b.load(src, typ=storage_type(dt)), dst)
