"""CustomCall dispatches (toolchain/kernel/custom_call.py) as LLVM functions: fill one
mrt_custom_tensor_t per operand and result on the stack, call the user's kernel, and
hand a non-zero status to mrt_custom_op_failed (runtime_c/include/mrt_custom_op.h).

Everything known at build time is a constant in flash: the dims of every tensor and
the operator's options bytes; only the data pointers come from the bindings.
"""

from __future__ import annotations

import struct

from llvmlite import ir

from toolchain.codegen.kinds import register
from toolchain.codegen.slots import I32, Frame
from toolchain.graph.custom_ops import quant_of, type_code
from toolchain.kernel.custom_call import CustomCall
from toolchain.types import TensorType

PTR = ir.PointerType()
F32 = ir.FloatType()
I8 = ir.IntType(8)
# mrt_custom_tensor_t: data, dims, rank, type, count, scale, zero_point. Natural
# alignment on every target, so LLVM's layout of this struct is the C compiler's.
TENSOR = ir.LiteralStructType([PTR, PTR, I32, I32, I32, F32, I32])
KERNEL_TYPE = ir.FunctionType(I32, [PTR, I32, PTR, I32, PTR, I32])
FAILED = "mrt_custom_op_failed"


def _rodata(module: ir.Module, name: str, ty: ir.Type, value: ir.Constant) -> ir.GlobalVariable:
    g = ir.GlobalVariable(module, ty, name)
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = value
    g.section = f".rodata.{name}"
    return g


def _declare(module: ir.Module, name: str, fty: ir.FunctionType) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, fty, name)
    return fn


def _fill(b: ir.IRBuilder, module: ir.Module, array: ir.Value, k: int, t: TensorType,
          data: ir.Value, name: str) -> None:
    """Stores tensor `t`'s descriptor into element k of `array` (`name` says which
    tensor, for errors)."""
    dims = tuple(int(d) for d in t.shape)
    if dims:
        # One array per shape in the whole object: tensors of one shape share it.
        key = "custom_dims." + "x".join(map(str, dims))
        dims_ptr: ir.Value | None = module.globals.get(key)
        if dims_ptr is None:
            dty = ir.ArrayType(I32, len(dims))
            dims_ptr = _rodata(module, key, dty,
                               ir.Constant(dty, [ir.Constant(I32, d) for d in dims]))
    else:
        dims_ptr = ir.Constant(PTR, None)
    scale, zero = quant_of(t) or (0.0, 0)
    # The float the C side reads is the scale rounded to float32, as TFLite stores it.
    scale = struct.unpack("<f", struct.pack("<f", scale))[0]
    fields = [data, dims_ptr, ir.Constant(I32, len(dims)),
              ir.Constant(I32, type_code(t, name)), ir.Constant(I32, t.num_elements),
              ir.Constant(F32, scale), ir.Constant(I32, zero)]
    for j, v in enumerate(fields):
        at = b.gep(array, [ir.Constant(I32, k), ir.Constant(I32, j)], inbounds=True)
        b.store(v, at)


def _tensors(f: Frame, types: tuple[TensorType, ...], first: int, what: str) -> ir.Value:
    """A stack array of descriptors of `types`, bound from binding `first` on."""
    b = f.b
    if not types:
        return ir.Constant(PTR, None)
    here = b.block
    b.position_at_start(f.entry)
    array = b.alloca(TENSOR, size=ir.Constant(I32, len(types)), name=what)
    b.position_at_end(here)
    for k, t in enumerate(types):
        _fill(b, f.module, array, k, t, f.buffers[first + k], f"{f.name} {what}put {k}")
    return array


@register(CustomCall)
def emit_custom_call(module: ir.Module, c: CustomCall) -> ir.Function:
    """Adds the dispatch that calls the user's kernel to `module` and returns it."""
    m, n = len(c.operands), len(c.results)
    f = Frame(module, c.name, m + n)
    b = f.b
    inputs = _tensors(f, c.operands, 0, "in")
    outputs = _tensors(f, c.results, m, "out")
    if c.options:
        oty = ir.ArrayType(I8, len(c.options))
        options: ir.Value = _rodata(module, f"{c.name}.options", oty,
                                    ir.Constant(oty, bytearray(c.options)))
    else:
        options = ir.Constant(PTR, None)
    kernel = _declare(module, c.op.c_function, KERNEL_TYPE)
    status = b.call(kernel, [inputs, ir.Constant(I32, m), outputs, ir.Constant(I32, n),
                             options, ir.Constant(I32, len(c.options))], name="status")
    failed = b.icmp_signed("!=", status, ir.Constant(I32, 0))
    with b.if_then(failed, likely=False):
        hook = _declare(module, FAILED, ir.FunctionType(ir.VoidType(), [I32, I32]))
        b.call(hook, [ir.Constant(I32, c.ordinal), status])
    b.ret_void()
    return f.fn
