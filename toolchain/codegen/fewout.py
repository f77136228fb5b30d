"""An int8 convolution to 1-7 output channels: one call of runtime_c's pixel-tile kernel.

schedule/fewout_records.py says why and binds the records (the layer's geometry, then
per pair of output channels the biases, interleaved weight pairs and requantization)
that runtime_c/ukernel/dsp/mrt_fewout_dsp.c reads. The dispatch is the stack scratch of
the staged rows (KH rows and a row of pad values) and one call of `mrt_fo_conv_s8`,
which stages each input row once and walks the output rows two pixels a tile.
"""

from __future__ import annotations

from dataclasses import replace

from llvmlite import ir

from toolchain.codegen.errors import EmitError
from toolchain.kernel.form import Kernel
from toolchain.schedule.fewout_records import fewout_plan

I32 = ir.IntType(32)
PTR = ir.PointerType()
SYMBOL = "mrt_fo_conv_s8"

__all__ = ["FewoutEmitter"]


class FewoutEmitter:
    """The few-output dispatch, for NestEmitter (which provides the builder and the
    buffers)."""

    b: ir.IRBuilder
    k: Kernel

    def emit_fewout(self) -> None:
        """The whole nest (module docstring)."""
        k = self.k
        # offered: the plans the tuning database may bind too (a strict one is one).
        plan = fewout_plan(replace(k, records=-1), offered=True)
        if plan is None or k.records < 0:
            raise EmitError(f"kernel {k.name!r}: its schedule is the few-output kernel's, "
                            f"which it cannot take")
        b = self.b
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        scratch = b.alloca(ir.ArrayType(I32, plan.scratch_words()), name="fo_scratch")
        scratch.align = 8
        b.position_at_end(here)
        fn = b.module.globals.get(SYMBOL)
        if fn is None:
            fn = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, PTR]),
                             SYMBOL)
        b.call(fn, [self.buffers[plan.base.x.operand], self.buffers[len(k.operands)],
                    self.buffers[k.records], b.bitcast(scratch, PTR)])
