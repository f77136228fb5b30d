"""A 16x8 depthwise 3x3 layer in one call: runtime_c's mrt_dw16_s16.

loops/depthwise16.py says which layers; runtime_c/ukernel/dsp/mrt_dw16_dsp.c how the
call stages the input's pairs of rows and computes two output rows at a time. The
dispatch makes the kernel's stack buffer (2 slots of staged rows, a word per channel
and staged column), fills its argument block (every field a constant of the layer but
the buffers' addresses) and calls it once; its row pairs run bottom-up where the nest
says `reverse`. The records (schedule/depthwise16_records.py)
are a constant bound with the schedule. The sums are exact int32 sums in another order
and the requantization TFLite's, so the results are the reference's bit for bit
(tests/codegen/test_depthwise16.py).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.errors import EmitError
from toolchain.kernel.form import Kernel
from toolchain.loops.depthwise import X, Y
from toolchain.loops.depthwise16 import SLOTS, depthwise16_plan, staged_columns

I32 = ir.IntType(32)
PTR = ir.PointerType()
KERNEL_SYMBOL = "mrt_dw16_s16"
# struct mrt_dw16_args: in, out, records, staged, h_in, w_in, channels, h_out, w_out,
# row, col, flags.
_ARGS = ir.LiteralStructType([PTR, PTR, PTR, PTR] + [I32] * 8)
X2_FLAG = 1  # a depth multiplier of 2
RELU_FLAG = 2  # clamp to [0, 32767]
REVERSE_FLAG = 4  # row pairs bottom-up (a result placed above its input)
S2_FLAG = 8  # stride 2

__all__ = ["KERNEL_SYMBOL", "Depthwise16Emitter"]


class Depthwise16Emitter:
    """The 16x8 depthwise dispatch, for NestEmitter (which provides the builder and
    RowPairEmitter's stack and function helpers)."""

    b: ir.IRBuilder
    k: Kernel

    def emit_depthwise16(self) -> None:
        """The whole nest (module docstring)."""
        k = self.k
        plan = depthwise16_plan(k)
        if plan is None or k.records < 0:
            raise EmitError(f"kernel {k.name!r}: its schedule is the 16x8 depthwise "
                            "microkernel's, which it cannot take")
        b = self.b
        _, h_in, w_in, channels = k.operands[plan.x.operand].shape
        h_out, w_out = k.domain[Y], k.domain[X]
        columns = staged_columns(k, plan.stride)
        staged = self._dw_stack(ir.ArrayType(I32, SLOTS * channels * columns), 8,
                                "dw16_staged")
        args = self._dw_stack(_ARGS, 4, "dw16_args")
        flags = (X2_FLAG if plan.depth_multiplier == 2 else 0) | \
            (RELU_FLAG if plan.relu else 0) | (REVERSE_FLAG if self.nest.reverse else 0) | \
            (S2_FLAG if plan.stride == 2 else 0)
        fields = [self.buffers[plan.x.operand], self.buffers[len(k.operands)],
                  self.buffers[k.records], staged]
        fields += [ir.Constant(I32, v) for v in (h_in, w_in, channels, h_out, w_out,
                                                 plan.row, plan.col, flags)]
        for j, v in enumerate(fields):
            at = b.gep(args, [ir.Constant(I32, 0), ir.Constant(I32, j)], inbounds=True)
            b.store(b.bitcast(v, PTR) if j < 4 else v, at)
        b.call(self._dw_function(KERNEL_SYMBOL, [PTR]), [b.bitcast(args, PTR)])
