"""QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul, and QDQ patterns onto
the int8 kernels of toolchain/quant/build.py (docs/int8.md).

ONNX defines its quantized arithmetic in real numbers: DequantizeLinear is
(q - zero_point) * scale, QuantizeLinear is saturate(round_half_even(x / scale) +
zero_point), and QLinearConv / QLinearMatMul (and a DequantizeLinear -> op ->
QuantizeLinear pattern) compute the float op on dequantized values and quantize the
result. onnxruntime computes the requantization of the int32 accumulator with a float32
multiplier. minirt uses an exact integer scheme instead, TFLite's (the same kernels as
.tflite models): the real multiplier in_scale * w_scale / out_scale (in double) as a
31-bit fixed-point multiplier and a shift (QuantizeMultiplier), the accumulator
multiplied with rounding (gemmlowp's SaturatingRoundingDoublingHighMul, then a rounding
right shift, ties away from zero), + zero point, clamp. It differs from onnxruntime's
float rounding by at most 1 LSB, only where the real result lies within float rounding
of a tie; the numpy reference executes the same integer graph, so the firmware matches
it exactly.

The patterns taken in integers (anything else runs in float on dequantized values):
Conv, Gemm, MatMul with constant int8 weights (symmetric, per tensor or per output
channel) and int32 or float biases, each with a Relu or Clip before its
QuantizeLinear; Add and Mul; Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid and
HardSwish as 256-entry tables; GlobalAveragePool and ReduceMean (TFLite's mean);
AveragePool into its input's quantization (the exact average, rounded half to even);
MaxPool and data movement directly on the int8 values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.onnx import elementwise as ew
from toolchain.frontend.onnx import layers, shape_ops
from toolchain.frontend.onnx.context import OpContext, QView, Value, axis_of
from toolchain.frontend.onnx.errors import NotInt8, Unsupported
from toolchain.frontend.onnx.quant_float import (
    dequantize_float,
    float_quantized_type,
    quantize_float,
)
from toolchain.frontend.onnx.reader import NodeInfo
from toolchain.frontend.onnx.sub_byte_quant import dequantize_sub_byte, sub_byte_type
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Tensor
from toolchain.quant import build, tflm
from toolchain.types import QuantParams, TensorType, dtype

F32, I8 = dtype("f32"), dtype("i8")
INT8_MIN, INT8_MAX = -128, 127
# Element types QuantizeLinear writes, by the zero point's numpy type.
_Q_TYPES = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "ui8", np.dtype(np.int16): "i16",
            np.dtype(np.uint16): "ui16", np.dtype(np.int32): "i32"}


@dataclass
class OutputQuant:
    """Where an int8 converter's result goes: the QuantizeLinear after the op (and the
    Relu / Clip between them, `nodes` in order, the QuantizeLinear last), its per-tensor
    int8 scale and zero point, and the clamp the activations make of them."""

    scale: float
    zero_point: int
    act_min: int
    act_max: int
    nodes: list[NodeInfo]

    @property
    def activations(self) -> bool:
        return len(self.nodes) > 1

    @property
    def quant(self) -> QuantParams:
        return QuantParams(I8, F32, (self.scale,), (self.zero_point,), None)


def round_half_even_quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                             lo: int, hi: int) -> np.ndarray:
    """QuantizeLinear in numpy: x / scale in float32, rounded half to even, + zero point,
    saturated to [lo, hi]."""
    v = np.rint(np.asarray(x, np.float32) / np.asarray(scale, np.float32))
    return np.clip(v.astype(np.float64) + zero_point, lo, hi).astype(np.int64)


def _bounds(dt_name: str) -> tuple[int, int]:
    info = np.iinfo(dtype(dt_name).np_dtype)
    return int(info.min), int(info.max)


def _scalar_const(values: dict[str, Value], name: str) -> np.ndarray | None:
    v = values.get(name) if name else None
    return v if isinstance(v, np.ndarray) and v.size == 1 else None


def output_quant(node: NodeInfo, consumers: dict[str, list[NodeInfo]],
                 graph_outputs: set[str], values: dict[str, Value]) -> OutputQuant | None:
    """The QuantizeLinear that alone reads `node`'s result (through at most two Relu /
    Clip nodes with constant bounds, each the only reader of the one before), when it
    quantizes per tensor to int8 with constant parameters; else None."""
    name = node.outputs[0] if node.outputs else ""
    chain: list[NodeInfo] = []
    while True:
        readers = consumers.get(name, [])
        if not name or name in graph_outputs or len(readers) != 1:
            return None
        reader = readers[0]
        if reader.op_type == "QuantizeLinear" and reader.inputs[0] == name:
            break
        if reader.op_type not in ("Relu", "Clip") or len(chain) == 2:
            return None
        chain.append(reader)
        name = reader.outputs[0]
    scale = _scalar_const(values, reader.inputs[1])
    zp = _scalar_const(values, reader.inputs[2] if len(reader.inputs) > 2 else "")
    if scale is None or zp is None or zp.dtype != np.int8 or scale.dtype.kind != "f":
        return None
    if reader.attrs.get("output_dtype", 0) not in (0, 3) or reader.attrs.get("block_size"):
        return None
    s = float(np.float32(scale.reshape(-1)[0]))
    z = int(zp.reshape(-1)[0])
    if not (np.isfinite(s) and s > 0):
        return None
    lo, hi = INT8_MIN, INT8_MAX

    def q(v: float) -> int:
        return int(round_half_even_quantize(np.float32(v), np.float32(s), z, lo, hi))

    for act in chain:  # Q is monotonic: Q(clip(v, a, b)) == clip(Q(v), Q(a), Q(b))
        if act.op_type == "Relu":
            lo = max(lo, z)
            continue
        for i, pick in ((1, max), (2, min)):
            if len(act.inputs) > i and act.inputs[i]:
                bound = _scalar_const(values, act.inputs[i])
                if bound is None:
                    return None
                if pick is max:
                    lo = max(lo, q(float(bound.reshape(-1)[0])))
                else:
                    hi = min(hi, q(float(bound.reshape(-1)[0])))
    if lo > hi:
        return None
    return OutputQuant(s, z, lo, hi, chain + [reader])


def dequantize_view(graph: Graph, view: QView) -> Tensor:
    """The float tensor of a view: a constant for constant views, else
    (q - zero_point) * scale computed in the graph (one f32 rounding, as onnxruntime)."""
    if view.is_const:
        real = view.dequantized()
        return graph.add("constant", [], [TensorType(real.shape, F32)], {"value": real}).output
    b = GraphBuilder(graph)
    if view.axis is None or view.scale.size == 1:
        return build.dequantize(b, view.q, scale=float(view.scale.reshape(-1)[0]),
                                zero_point=int(view.zero_point.reshape(-1)[0]))
    return build.dequantize(b, view.q, scale=view.scale, zero_point=view.zero_point,
                            axis=view.axis)


# ------------------------------------------------------------------ Q / DQ nodes


def quant_params(ctx: OpContext, scale_index: int, what: str, shape: tuple[int, ...] | None,
                 axis: int | None, q_dtype: np.dtype | None = None,
                 broadcast_zp: bool = False) -> tuple[np.ndarray, np.ndarray, int | None, str]:
    """The one check of every scale and zero point a model gives (QuantizeLinear,
    DequantizeLinear, the QLinear ops' inputs and outputs): input `scale_index` the
    scale, the next one the optional zero point, `what` whose they are ("the input's").

    The scale must be a constant float, scalar or 1-D, every value positive and finite
    in float32 (0, a negative, NaN or an infinity divides or multiplies into nonsense,
    and the integer kernels' multipliers cannot be made of them); the zero point an
    integer type minirt quantizes to, the quantized values' own type when that is known
    (`q_dtype`: it then lies in their range), shaped like the scale (or one value when
    `broadcast_zp`); one scale per element of dimension `axis` of `shape` when there are
    several (`shape` None: one scale is required). Returns (float32 scale, int64 zero
    point, the axis or None per tensor, the quantized element type's name)."""
    raw = ctx.const(scale_index, f"{what} scale")
    if raw.dtype.kind != "f":
        raise Unsupported(f"{what} scale is {raw.dtype}; a float tensor is expected")
    with np.errstate(over="ignore"):  # a float64 beyond float32 becomes inf, refused below
        scale = raw.astype(np.float32)
    if ctx.has_input(scale_index + 1):
        zp_raw = ctx.const(scale_index + 1, f"{what} zero point")
    else:  # ONNX's default: 0 of the quantized type (QuantizeLinear: uint8)
        zp_raw = np.zeros(scale.shape, q_dtype if q_dtype is not None else np.uint8)
    name = _Q_TYPES.get(zp_raw.dtype)
    if name is None:
        raise Unsupported(f"{what} zero point is {zp_raw.dtype}; minirt quantizes to "
                          f"{', '.join(str(t) for t in _Q_TYPES)}")
    if q_dtype is not None and zp_raw.dtype != q_dtype:
        raise Unsupported(f"{what} zero point is {zp_raw.dtype}, but the quantized values "
                          f"are {q_dtype}")
    zp = zp_raw.astype(np.int64)
    if broadcast_zp and zp.size == 1 and scale.ndim == 1:
        zp = np.full(scale.shape, zp.reshape(-1)[0])
    if scale.ndim > 1 or zp.shape != scale.shape:
        raise Unsupported(f"{what} scale {list(scale.shape)} and zero point "
                          f"{list(zp.shape)} must be scalars or matching 1-D tensors")
    bad = np.flatnonzero(~(np.isfinite(scale) & (scale > 0)))
    if bad.size:
        where = f" (element {bad[0]})" if scale.ndim else ""
        value = float(raw.reshape(-1)[bad[0]])
        raise Unsupported(f"{what} scale {value:g}{where} is not positive and finite")
    if scale.ndim == 0 or scale.size == 1:
        return scale, zp, None, name
    if shape is None:
        raise Unsupported(f"{what} scale has {scale.size} values; one (per tensor) is "
                          "expected")
    axis = axis_of(axis if axis is not None else 1, len(shape), f"{what} axis")
    if shape[axis] != scale.size:
        raise Unsupported(f"{what} {scale.size} scales do not match dimension {axis} of "
                          f"shape {list(shape)}")
    return scale, zp, axis, name


def _q_params(ctx: OpContext, shape: tuple[int, ...], q_dtype: np.dtype | None = None
              ) -> tuple[np.ndarray, np.ndarray, int | None, str]:
    """A Q or DQ node's constant scale and zero point, its axis (None per tensor) and
    the integer element type."""
    if ctx.attr("block_size"):
        raise Unsupported("blocked quantization (block_size) is not supported")
    return quant_params(ctx, 1, "the", shape, ctx.attr("axis", 1), q_dtype)


def _q_dtype(q: Tensor | np.ndarray) -> np.dtype:
    return q.dtype if isinstance(q, np.ndarray) else q.type.dtype.np_dtype


def dequantize_linear(ctx: OpContext) -> QView | Tensor:
    """DequantizeLinear: a view of the integer input (computed only where float is read);
    of a small float, its product with the scale (quant_float.py)."""
    if float_quantized_type(ctx, output=False):
        return dequantize_float(ctx)
    v = ctx.value(0)
    if isinstance(v, QView):
        raise Unsupported("its input is already dequantized")
    q = v if isinstance(v, np.ndarray) else ctx.input(0)
    sub_byte = sub_byte_type(q)
    if sub_byte is not None:  # never a view: no integer kernel takes 4 or 2 bits
        return dequantize_sub_byte(ctx, sub_byte)
    q_dt = _q_dtype(q)
    if q_dt not in _Q_TYPES:
        raise Unsupported(f"DequantizeLinear of {q_dt} is not supported")
    scale, zp, axis, _ = _q_params(ctx, ctx.shape(0), q_dt)
    return QView(q, scale, zp, axis)


def quantize_tensor(ctx: OpContext, x: Tensor, scale: np.ndarray, zp: np.ndarray,
                    axis: int | None, name: str) -> Tensor:
    """QuantizeLinear of a float tensor: x / scale, rounded half to even, + zero point,
    saturated, all in float (exact: the values are integers far below 2**24 by then),
    then converted."""
    if not x.type.dtype.is_float:
        raise Unsupported(f"QuantizeLinear of {x.type.dtype}")
    shape = tuple(x.type.shape)
    if x.type.dtype != F32:
        x = ctx.node("convert", [x], dtype="f32")

    def per(values: np.ndarray, dt: str) -> Tensor:
        if axis is None:
            return ctx.broadcast(ctx.constant(values.reshape(()), dt), shape, ())
        return ctx.broadcast(ctx.constant(values, dt), shape, (axis,))

    lo, hi = _bounds(name)
    v = ctx.node("round_nearest_even", [ctx.node("divide", [x, per(scale, "f32")])])
    v = ctx.node("add", [v, per(zp.astype(np.float32), "f32")])
    v = ctx.node("clamp", [ctx.constant(lo, F32), v, ctx.constant(hi, F32)])
    quant = None
    if axis is None:
        quant = QuantParams(dtype(name), F32, (float(scale.reshape(-1)[0]),),
                            (int(zp.reshape(-1)[0]),), None)
    return ctx.node("convert", [v], quant=quant, dtype=name)


def requantize_table(src: QView, scale: float, zp: int) -> np.ndarray:
    """The int8 -> int8 table of DequantizeLinear then QuantizeLinear, in float32 as
    ONNX defines them."""
    s_in, z_in = src.per_tensor()  # type: ignore[misc]
    real = (np.arange(-128, 128) - z_in).astype(np.float32) * np.float32(s_in)
    return round_half_even_quantize(real, np.float32(scale), zp, INT8_MIN,
                                    INT8_MAX).astype(np.int8)


def quantize_linear(ctx: OpContext) -> Tensor:
    """QuantizeLinear: of a float tensor, or of a quantized view (then the same integer
    tensor when the parameters agree, else a 256-entry requantization table); to a small
    float, its rounded quotient (quant_float.py)."""
    small = float_quantized_type(ctx, output=True)
    if small is not None:
        return quantize_float(ctx, small)
    scale, zp, axis, name = _q_params(ctx, ctx.shape(0))
    if ctx.attr("output_dtype", 0) not in (0,) and _Q_TYPES.get(
            {3: np.dtype(np.int8), 2: np.dtype(np.uint8)}.get(ctx.attr("output_dtype"))
    ) != name:
        raise Unsupported("output_dtype that differs from the zero point's is not supported")
    view = ctx.qview(0)
    if view is not None and not view.is_const and axis is None:
        target = QView(np.zeros(1, np.int8), scale.reshape(()), zp.reshape(()), None)
        same = view.per_tensor() == target.per_tensor()
        if same and view.dtype.name == name:
            return view.q  # type: ignore[return-value]
        if view.per_tensor() is not None and view.dtype == I8 and name == "i8":
            table = requantize_table(view, float(scale.reshape(-1)[0]),
                                     int(zp.reshape(-1)[0]))
            pt = target.quant_params()
            return build.lookup(GraphBuilder(ctx.graph), view.q, table, quant=pt)
    return quantize_tensor(ctx, ctx.input(0), scale, zp, axis, name)


# ------------------------------------------------------------------ int8 helpers


def _activation(view: QView | None, what: str) -> tuple[Tensor, float, int]:
    """A non-constant per-tensor int8 view: its tensor, scale and zero point."""
    if view is None or view.is_const or view.dtype != I8:
        raise NotInt8(f"the {what} is not an int8 tensor")
    pt = view.per_tensor()
    if pt is None:
        raise NotInt8(f"the {what} is quantized per channel")
    return view.q, pt[0], pt[1]  # type: ignore[return-value]


def _weights(view: QView | None, channel_axis: int, channels: int) -> tuple[np.ndarray,
                                                                             list[float]]:
    """Constant symmetric int8 weights and one scale per output channel."""
    if view is None or not view.is_const or view.dtype != I8:
        raise NotInt8("the weights are not constant int8")
    if np.any(view.zero_point != 0):
        raise NotInt8("the weights are not symmetric")
    scales = view.scale.reshape(-1).astype(np.float32)
    if scales.size > 1 and view.axis != channel_axis:
        raise NotInt8("the weights are quantized along another axis than the channels")
    if scales.size == 1:
        scales = np.repeat(scales, channels)
    return np.asarray(view.q, np.int8), [float(s) for s in scales]


def _bias(ctx: OpContext, i: int, in_scale: float, w_scales: Sequence[float],
          channels: int) -> np.ndarray | None:
    """The bias as int32 at scale in_scale * w_scale per channel: an int32 view at that
    scale (as quantizers write it) is taken as is; any other constant bias is rounded
    to it (exact against the reference, which runs this graph)."""
    if not ctx.has_input(i):
        return None
    v = ctx.value(i)
    want = np.float64(np.float32(in_scale)) * np.asarray(w_scales, np.float64)
    as_is = (isinstance(v, QView) and v.is_const and v.dtype.name == "i32"
             and np.all(v.zero_point == 0) and v.scale.size in (1, channels)
             and np.size(v.q) == channels
             and np.allclose(np.broadcast_to(v.scale.astype(np.float64), want.shape), want,
                             rtol=1e-6, atol=0))
    if as_is:
        return np.asarray(v.q, np.int64).reshape(-1).astype(np.int32)
    if isinstance(v, QView):
        if not v.is_const:
            raise NotInt8("the bias is not constant")
        real = v.dequantized().astype(np.float64)
    elif isinstance(v, np.ndarray) and v.dtype.kind == "f":
        real = v.astype(np.float64)
    else:
        raise NotInt8("the bias is not constant")
    real = real.reshape(-1)
    if real.size == 1:
        real = np.repeat(real, channels)
    if real.size != channels:
        raise NotInt8("the bias is not one value per channel")
    q = np.rint(real / want)
    if np.any(np.abs(q) >= 2**31):
        raise NotInt8("the bias does not fit int32 at the accumulator's scale")
    return q.astype(np.int32)


def _require(out: OutputQuant | None, activations: bool = True) -> OutputQuant:
    if out is None:
        raise NotInt8("the result is not quantized to int8 by one QuantizeLinear")
    if out.activations and not activations:
        raise NotInt8("an activation between the op and its QuantizeLinear")
    return out


def conv_int8_core(ctx: OpContext, x: QView | None, w: QView | None, bias_index: int | None,
                   out: OutputQuant, bias: np.ndarray | None = None) -> Tensor:
    """An int8 Conv: TFLite's per-channel convolution kernel on NCHW / OIHW."""
    xt, in_scale, in_zp = _activation(x, "input")
    if w is None:
        raise NotInt8("no weights")
    channels = w.shape[0]
    wq, w_scales = _weights(w, 0, channels)
    attrs = layers.conv_geometry(ctx, tuple(xt.type.shape), wq.shape)
    if bias_index is not None:
        bias = _bias(ctx, bias_index, in_scale, w_scales, channels)
    try:  # a multiplier out of TFLite's range: conv_params or the kernel refuses it
        mult, shift = tflm.conv_params(in_scale, w_scales, out.scale)
        return build.convolution(GraphBuilder(ctx.graph), xt, wq, bias, attrs=attrs,
                                 input_zp=in_zp, multipliers=mult, shifts=shift,
                                 output_zp=out.zero_point, act_min=out.act_min,
                                 act_max=out.act_max, quant=out.quant)
    except ValueError as e:  # a multiplier out of TFLite's range
        raise NotInt8(str(e)) from None


def conv_int8(ctx: OpContext, out: OutputQuant | None) -> Tensor:
    """DequantizeLinear -> Conv -> [Relu | Clip] -> QuantizeLinear, in int8."""
    return conv_int8_core(ctx, ctx.qview(0), ctx.qview(1), 2, _require(out))


def _dot_int8(ctx: OpContext, x: QView | None, w: QView | None, contract: int,
              bias: np.ndarray | None | int, out: OutputQuant) -> Tensor:
    """x (int8, any rank, contracted on its last dim) by constant 2-D weights contracted
    on `contract`; the result's last dim is the weights' other one."""
    xt, in_scale, in_zp = _activation(x, "input")
    if w is None or len(w.shape) != 2:
        raise NotInt8("the weights are not 2-D")
    channels = w.shape[1 - contract]
    wq, w_scales = _weights(w, 1 - contract, channels)
    if isinstance(bias, int):
        bias = _bias(ctx, bias, in_scale, w_scales, channels)
    rank = xt.type.rank
    attrs = dict(lhs_batch=(), rhs_batch=(), lhs_contract=(rank - 1,),
                 rhs_contract=(contract,))
    try:
        mult, shift = tflm.fully_connected_params(in_scale, w_scales, out.scale)
        return build.dot_general(GraphBuilder(ctx.graph), xt, wq, bias, attrs=attrs,
                                 input_zp=in_zp, multipliers=mult, shifts=shift,
                                 channel_axis=rank - 1, output_zp=out.zero_point,
                                 act_min=out.act_min, act_max=out.act_max, quant=out.quant)
    except ValueError as e:
        raise NotInt8(str(e)) from None


def gemm_int8(ctx: OpContext, out: OutputQuant | None) -> Tensor:
    """DequantizeLinear -> Gemm (alpha = beta = 1, A not transposed) -> QuantizeLinear."""
    out = _require(out)
    if ctx.attr("transA", 0) or ctx.attr("alpha", 1.0) != 1.0 or \
            (ctx.has_input(2) and ctx.attr("beta", 1.0) != 1.0):
        raise NotInt8("alpha, beta or transA")
    contract = 1 if ctx.attr("transB", 0) else 0
    return _dot_int8(ctx, ctx.qview(0), ctx.qview(1), contract, 2, out)


def matmul_int8(ctx: OpContext, out: OutputQuant | None) -> Tensor:
    """DequantizeLinear -> MatMul by constant 2-D weights -> QuantizeLinear."""
    x = ctx.qview(0)
    if x is not None and len(x.shape) < 2:
        raise NotInt8("a 1-D left operand")
    return _dot_int8(ctx, x, ctx.qview(1), 0, None, _require(out))


def _operand(ctx: OpContext, i: int) -> tuple[Tensor, float, int]:
    v = ctx.qview(i)
    if v is not None and v.is_const and v.dtype == I8 and v.per_tensor() is not None:
        s, z = v.per_tensor()  # type: ignore[misc]
        return ctx.constant(v.q, I8), s, z
    return _activation(v, f"operand {i}")


def binary_int8(kind: str) -> Callable[[OpContext, OutputQuant | None], Tensor]:
    """Add / Mul of int8 views with TFLite's integer arithmetic (numpy broadcasting)."""

    def convert(ctx: OpContext, out: OutputQuant | None) -> Tensor:
        out = _require(out)
        (x1, s1, z1), (x2, s2, z2) = _operand(ctx, 0), _operand(ctx, 1)
        b = GraphBuilder(ctx.graph)
        try:
            if kind == "mul":
                p = tflm.mul_params(s1, z1, s2, z2, out.scale, out.zero_point)
                return build.mul(b, x1, x2, input1_zp=p.input1_zp, input2_zp=p.input2_zp,
                                 multiplier=p.multiplier, shift=p.shift,
                                 output_zp=p.output_zp, act_min=out.act_min,
                                 act_max=out.act_max, quant=out.quant)
            p = tflm.add_params(s1, z1, s2, z2, out.scale, out.zero_point)
        except ValueError as e:  # TFLite's kernels refuse these scales
            raise NotInt8(str(e)) from None
        return getattr(build, kind)(
            b, x1, x2, left_shift=p.left_shift,
            input1=(-p.input1_offset, p.input1_multiplier, p.input1_shift),
            input2=(-p.input2_offset, p.input2_multiplier, p.input2_shift),
            output=(p.output_offset, p.output_multiplier, p.output_shift),
            act_min=out.act_min, act_max=out.act_max, quant=out.quant)

    convert.__doc__ = f"{kind.capitalize()} of int8 views: TFLite's integer arithmetic."
    return convert


def _sigmoid(r: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + np.exp(-r))).astype(np.float32)


def _hard_sigmoid(r: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.clip(r * np.float32(alpha) + np.float32(beta), 0, 1).astype(np.float32)


# The float functions of the table ops, on float32 numpy values, as the float
# converters compute them.
TABLE_FUNCTIONS: dict[str, Callable[[np.ndarray, OpContext], np.ndarray]] = {
    "Relu": lambda r, ctx: np.maximum(r, np.float32(0)),
    "LeakyRelu": lambda r, ctx: np.where(r < 0, r * np.float32(ctx.attr("alpha", 0.01)), r),
    "Sigmoid": lambda r, ctx: _sigmoid(r),
    "Tanh": lambda r, ctx: np.tanh(r),
    "HardSigmoid": lambda r, ctx: _hard_sigmoid(r, ctx.attr("alpha", 0.2),
                                                ctx.attr("beta", 0.5)),
    "HardSwish": lambda r, ctx: r * _hard_sigmoid(r, 1 / 6, 0.5),
    "Clip": lambda r, ctx: _clip(r, ctx),
}


def _clip(r: np.ndarray, ctx: OpContext) -> np.ndarray:
    for i, pick in ((1, np.maximum), (2, np.minimum)):
        if ctx.has_input(i):
            v = ctx.value(i)
            if not isinstance(v, np.ndarray):
                raise NotInt8("Clip's bounds are not constant")
            r = pick(r, np.float32(v.reshape(-1)[0]))
    return r


def table_int8(ctx: OpContext, out: OutputQuant | None) -> Tensor:
    """DequantizeLinear -> one float function -> QuantizeLinear as table[q + 128]: the
    function evaluated in float32 on all 256 dequantized inputs and quantized as ONNX
    says."""
    out = _require(out, activations=False)
    xt, s, z = _activation(ctx.qview(0), "input")
    real = (np.arange(-128, 128) - z).astype(np.float32) * np.float32(s)
    with np.errstate(all="ignore"):
        y = TABLE_FUNCTIONS[ctx.info.op_type](real, ctx).astype(np.float32)
    table = round_half_even_quantize(y, np.float32(out.scale), out.zero_point, INT8_MIN,
                                     INT8_MAX)
    table = np.clip(table, out.act_min, out.act_max).astype(np.int8)
    return build.lookup(GraphBuilder(ctx.graph), xt, table, quant=out.quant)


def mean_int8(ctx: OpContext, out: OutputQuant | None) -> Tensor:
    """GlobalAveragePool / ReduceMean (keepdims) of an int8 view: TFLite's mean."""
    out = _require(out, activations=False)
    xt, s, z = _activation(ctx.qview(0), "input")
    rank = xt.type.rank
    if ctx.info.op_type == "GlobalAveragePool":
        axes, keep = tuple(range(2, rank)), True
    else:
        axes = ew.reduce_axes(ctx, rank)
        keep = bool(ctx.attr("keepdims", 1))
        if axes is None:
            raise NotInt8("no axes")
    p = tflm.mean_params(s, z, out.scale, out.zero_point)
    try:
        return build.mean(GraphBuilder(ctx.graph), xt, list(axes), keep_dims=keep,
                          input_zp=p.input_zp, multiplier=p.multiplier, shift=p.shift,
                          output_zp=p.output_zp, quant=out.quant)
    except ValueError as e:
        raise NotInt8(str(e)) from None


def divide_round_half_even(ctx: OpContext, total: Tensor, counts: np.ndarray) -> Tensor:
    """total / counts (i32, counts > 0 constants) rounded to nearest, ties to even, in
    integers: the floor quotient and remainder, then one up where the remainder is over
    half the divisor, or exactly half and the quotient odd."""
    shape = tuple(total.type.shape)
    n = ctx.broadcast(ctx.constant(counts, "i32"), shape)
    q = ctx.node("divide", [total, n])  # truncates toward zero
    r = ctx.node("subtract", [total, ctx.node("multiply", [q, n])])
    negative = ctx.node("compare", [r, ctx.filled(0, r)], direction="LT")
    q = ctx.node("select", [negative, ctx.node("subtract", [q, ctx.filled(1, q)]), q])
    r = ctx.node("select", [negative, ctx.node("add", [r, n]), r])
    twice = ctx.node("add", [r, r])
    over = ctx.node("compare", [twice, n], direction="GT")
    half = ctx.node("compare", [twice, n], direction="EQ")
    odd = ctx.node("compare", [ctx.node("and", [q, ctx.filled(1, q)]), ctx.filled(1, q)],
                   direction="EQ")
    up = ctx.node("or", [over, ctx.node("and", [half, odd])])
    return ctx.node("add", [q, ctx.node("convert", [up], dtype="i32")])


def average_pool_int8(ctx: OpContext, out: OutputQuant | None) -> Tensor:
    """AveragePool of an int8 view into the same quantization, exactly as ONNX defines it
    in real numbers: the window's sum of (q - zero point) (padding is a real 0), divided
    by its count (every attribute of the float op: count_include_pad, ceil_mode, pads,
    dilations) with rounding half to even, + zero point."""
    out = _require(out, activations=False)
    xt, s, z = _activation(ctx.qview(0), "input")
    if z != out.zero_point or abs(s - out.scale) > 1e-6 * s:
        raise NotInt8("the output is quantized otherwise than the input")
    window = layers.pool_window(ctx, xt)
    wide = ctx.node("convert", [xt], dtype="i32")
    shifted = ctx.node("subtract", [wide, ctx.filled(z, wide)])
    total = layers.window_sum(ctx, shifted, *window)
    counts = layers.average_counts(ctx, xt, *window)
    v = divide_round_half_even(ctx, total, counts)
    v = ctx.node("add", [v, ctx.filled(z, v)])
    v = ctx.node("clamp", [ctx.constant(INT8_MIN, "i32"), v, ctx.constant(INT8_MAX, "i32")])
    return ctx.node("convert", [v], quant=out.quant, dtype="i8")


def passthrough(convert: Callable[[OpContext], Tensor], data: Sequence[int] = (0,),
                all_inputs: bool = False
                ) -> Callable[[OpContext, OutputQuant | None], QView]:
    """An op that only moves values (or takes a maximum), run on the int8 values of its
    data inputs: the result is a view with the same scale and zero point. `all_inputs`:
    every input is data (Concat), and all must share their quantization."""

    def int8(ctx: OpContext, out: OutputQuant | None) -> QView:
        indices = [i for i in range(len(ctx.info.inputs)) if ctx.has_input(i)] \
            if all_inputs else [i for i in data if ctx.has_input(i)]
        views = [ctx.qview(i) for i in indices]
        first = views[0]
        if first is None or any(v is None or v.is_const or not v.same_as(first)
                                for v in views):
            raise NotInt8("inputs of differing quantization")
        names = {ctx.info.inputs[i]: v.q for i, v in zip(indices, views)}
        sub = ctx.reading(names)
        try:
            y = convert(sub)
        except Unsupported as e:
            raise NotInt8(str(e)) from None
        quant = first.quant_params()
        if y.producer is not None and y.type.quant != quant and y not in names.values():
            y.type = type(y.type)(y.type.shape, y.type.dtype, quant)
        return QView(y, first.scale, first.zero_point, None)

    int8.__doc__ = f"{convert.__name__} on int8 values."
    return int8


def pad_int8(ctx: OpContext, out: OutputQuant | None) -> QView:
    """Pad of an int8 view: constant padding by 0.0 pads with the zero point."""
    mode = ctx.attr("mode", "constant")
    if mode == "constant" and ctx.has_input(2):
        v = ctx.value(2)
        if not isinstance(v, np.ndarray) or float(v.reshape(-1)[0]) != 0.0:
            raise NotInt8("a constant other than 0")
    view = ctx.qview(0)
    if view is None or view.is_const or view.per_tensor() is None:
        raise NotInt8("not a per-tensor view")
    fill = ctx.constant(int(view.per_tensor()[1]), view.dtype)  # type: ignore[index]
    names = {ctx.info.inputs[0]: view.q}
    sub = ctx.reading(names)
    try:
        y = shape_ops.pad_tensor(sub, view.q, fill)  # type: ignore[arg-type]
    except Unsupported as e:
        raise NotInt8(str(e)) from None
    return QView(y, view.scale, view.zero_point, None)


# ------------------------------------------------------------------ QLinear ops


# Whose the scale and zero point after each QLinear data input are, for messages.
_QLINEAR_ROLES = {0: "the input's", 3: "the weights'"}


def _qlinear_view(ctx: OpContext, i: int, axis: int | None = None) -> QView:
    """Input i with its scale (i + 1) and zero point (i + 2) as a view."""
    v = ctx.value(i)
    if isinstance(v, QView):
        raise Unsupported(f"input {i} is a DequantizeLinear's output, not quantized values")
    q = v if isinstance(v, np.ndarray) else ctx.input(i)
    what = _QLINEAR_ROLES.get(i, f"input {i}'s")
    if _q_dtype(q) not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise Unsupported(f"{what} values are {_q_dtype(q)}; int8 or uint8 is expected")
    scale, zp, axis, _ = quant_params(ctx, i + 1, what, ctx.shape(i), axis, _q_dtype(q),
                                      broadcast_zp=True)
    if axis is None:
        return QView(q, scale.reshape(()), zp.reshape(()), None)
    return QView(q, scale, zp, axis)


def _output(ctx: OpContext, i: int) -> tuple[OutputQuant | None, np.ndarray, np.ndarray, str]:
    scale, zp, axis, name = quant_params(ctx, i, "the output's", None, None)
    if name not in ("i8", "ui8"):
        raise Unsupported("the output must be quantized to 8 bits")
    scale, zp = scale.reshape(()), zp.reshape(())
    out = None
    if name == "i8":
        out = OutputQuant(float(scale), int(zp), INT8_MIN, INT8_MAX, [])
    return out, scale, zp, name


def _float_view(ctx: OpContext, view: QView) -> Tensor:
    return dequantize_view(ctx.graph, view)


def qlinear_conv(ctx: OpContext) -> Tensor:
    """QLinearConv: int8 by the integer scheme above; other types (uint8) in float on
    the dequantized values, then quantized."""
    x, w = _qlinear_view(ctx, 0), _qlinear_view(ctx, 3, axis=0)
    out, y_scale, y_zp, name = _output(ctx, 6)
    if out is not None:
        try:
            bias = None
            if ctx.has_input(8):
                b = ctx.const(8, "bias")
                if b.dtype != np.int32:
                    raise Unsupported("the bias must be int32")
                bias = b.reshape(-1).astype(np.int32)
            return conv_int8_core(ctx, x, w, None, out, bias)
        except NotInt8:
            pass
    xf, wf = _float_view(ctx, x), _float_view(ctx, w)
    bf = None
    if ctx.has_input(8):
        real = ctx.const(8, "bias").astype(np.float64) * \
            (np.float64(x.scale.reshape(-1)[0]) * w.scale.astype(np.float64).reshape(-1))
        bf = ctx.constant(real.astype(np.float32), F32)
    return quantize_tensor(ctx, layers.conv_float(ctx, xf, wf, bf), y_scale, y_zp, None, name)


def qlinear_matmul(ctx: OpContext) -> Tensor:
    """QLinearMatMul: int8 with constant 2-D int8 weights by the integer scheme; other
    cases in float on the dequantized values, then quantized."""
    ra = len(ctx.shape(0))
    a, b = _qlinear_view(ctx, 0), _qlinear_view(ctx, 3, axis=-1)
    out, y_scale, y_zp, name = _output(ctx, 6)
    if out is not None and ra >= 2:
        try:
            return _dot_int8(ctx, a, b, 0, None, out)
        except NotInt8:
            pass
    y = layers.matmul_tensors(ctx, _float_view(ctx, a), _float_view(ctx, b))
    return quantize_tensor(ctx, y, y_scale, y_zp, None, name)


__all__ = ["OutputQuant", "TABLE_FUNCTIONS", "average_pool_int8", "binary_int8", "conv_int8",
           "dequantize_linear", "dequantize_view", "divide_round_half_even", "gemm_int8",
           "matmul_int8", "mean_int8", "output_quant", "pad_int8", "passthrough",
           "qlinear_conv", "qlinear_matmul", "quantize_linear", "quantize_tensor",
           "round_half_even_quantize", "table_int8"]
