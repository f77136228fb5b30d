"""The int8 rewrite rules of single float ops (passes/ptq.py's table names each op's
rule): contractions by constant weights with the bias add and clamps that follow,
TFLite's ADD / SUB / MUL, ops that keep or share a quantization, and reductions (sums,
means, average pooling, max / min).
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Node, Tensor
from toolchain.passes.ptq_values import (
    I8,
    I32,
    INT32_MAX,
    QMAX,
    QMIN,
    WEIGHT_MAX,
    _per_tensor,
    _RewriterBase,
    _Unsupported,
    quantize_values,
)
from toolchain.quant import build, tflm
from toolchain.quant.fixedpoint import quantize_multiplier, round_half_away
from toolchain.types import QuantParams

# Reduction kinds that pick an element (int8 start values for them).
_PICKING = {"maximum": QMIN, "minimum": QMAX}


class _OpRules(_RewriterBase):
    """The rules of one float op each (some take the ops that follow it along)."""

    # ------------------------------------------------------------------ contractions

    def _weights(self, w: np.ndarray, axis: int | None, bias: np.ndarray | None,
                 input_scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(int8 weights, float32 scales, int32 bias): weights symmetric per channel
        along `axis` (or per tensor), scale = max|w| / 127 (1 / 127 for an all-zero
        channel); the bias at input scale x weight scale, rounded half away from zero.
        A weight scale grows where the bias would not fit int32 at it."""
        w = np.asarray(w, dtype=np.float32)
        reduce = tuple(d for d in range(w.ndim) if d != axis)
        peak = np.abs(w).max(axis=reduce) if axis is not None else np.abs(w).max(initial=0.0)
        peak = np.atleast_1d(peak).astype(np.float32)
        scales = (np.where(peak > 0, peak, np.float32(1)) / np.float32(WEIGHT_MAX))
        scales = scales.astype(np.float32)
        s_in = np.float32(input_scale)
        if bias is not None:
            b = np.broadcast_to(np.asarray(bias, np.float64), scales.shape)
            need = (np.abs(b) / (float(s_in) * INT32_MAX) * 1.001).astype(np.float32)
            scales = np.maximum(scales, need)
        shape = [-1 if d == axis else 1 for d in range(w.ndim)] if axis is not None else []
        per = scales.reshape(shape) if axis is not None else scales[0]
        q = np.clip(round_half_away(w / per), -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)
        bias_q = None
        if bias is not None:
            bias_scale = (s_in * scales).astype(np.float64)  # float32 products, as TFLite
            bias_q = np.clip(round_half_away(np.asarray(bias, np.float64) / bias_scale),
                             -INT32_MAX, INT32_MAX).astype(np.int32)
        return q, scales, bias_q

    def _convolution(self, node: Node) -> None:
        w_t = node.inputs[1]
        w = self._const(w_t)
        if w is None:
            raise _Unsupported("a convolution of two float tensors has no int8 kernel "
                               "(the weights must be constant)")
        attrs = {k: node.attrs[k] for k in build.CONV_ATTRS}
        if attrs["batch_group_count"] != 1:
            raise _Unsupported("batch_group_count > 1 has no int8 kernel")
        tail, xq, qw, qb, params = self._linear(node, w, attrs["kernel_output"],
                                                attrs["output_feature"], tflm.conv_params)
        self._bind(tail, build.convolution(self.b, xq, qw, qb, attrs=attrs, **params))

    def _dot_general(self, node: Node) -> None:
        x, w_t = node.inputs
        w = self._const(w_t)
        if w is None:
            raise _Unsupported("a dot_general of two float tensors has no int8 kernel (the "
                               "right operand must be constant weights)")
        if node.attrs["lhs_batch"] or node.attrs["rhs_batch"]:
            raise _Unsupported("a dot_general with batch dimensions has no int8 kernel")
        contract = tuple(node.attrs["rhs_contract"])
        free = [d for d in range(w.ndim) if d not in contract]
        # Per output channel when the weights have one free dim; else per tensor.
        w_axis = free[0] if len(free) == 1 else None
        channel = x.type.rank - len(node.attrs["lhs_contract"]) if w_axis is not None else None
        tail, xq, qw, qb, params = self._linear(node, w, w_axis, channel,
                                                tflm.fully_connected_params)
        rank = node.output.type.rank
        if qb is not None and channel is not None:  # trailing-aligned, along the channel
            qb = qb.reshape((-1,) + (1,) * (rank - 1 - channel))
        attrs = {k: node.attrs[k] for k in ("lhs_batch", "rhs_batch", "lhs_contract",
                                            "rhs_contract")}
        self._bind(tail, build.dot_general(self.b, xq, qw, qb, attrs=attrs,
                                           channel_axis=channel, **params))

    def _linear(self, node: Node, w: np.ndarray, w_axis: int | None, channel: int | None,
                rescale) -> tuple[Tensor, Tensor, np.ndarray, np.ndarray | None, dict]:
        """What a convolution and a dot_general share: the bias and activation that follow
        `node` absorbed, its input's quantized value, the int8 weights and int32 bias, and
        the keyword arguments of the int8 op (zero points, the per-channel multipliers and
        shifts that `rescale` derives, the clamp, the output's quantization)."""
        tail, bias = self._absorb_bias(node.output, channel)
        tail, bounds = self._absorb_activation(tail)
        xq = self._value(node.inputs[0])
        s_in, z_in = _per_tensor(xq.type.quant)
        out_q = self._quant(tail)
        s_out, z_out = _per_tensor(out_q)
        qw, w_scales, qb = self._weights(w, w_axis, bias, s_in)
        mults, shifts = rescale(s_in, w_scales, s_out)
        lo, hi = self._act_range(bounds, out_q)
        return tail, xq, qw, qb, dict(input_zp=z_in, multipliers=mults, shifts=shifts,
                                      output_zp=z_out, act_min=lo, act_max=hi, quant=out_q)

    # ------------------------------------------------------------------ arithmetic

    def _operands(self, node: Node) -> tuple[Tensor, Tensor]:
        """Both operands in the new graph; a constant one quantized by its own range
        (a uniform constant never gets here: that op is a table)."""
        a, b = node.inputs
        return self._value(a), self._value(b)

    def _add_sub(self, node: Node) -> None:
        tail, bounds = self._absorb_activation(node.output)
        x1, x2 = self._operands(node)
        (s1, z1), (s2, z2) = _per_tensor(x1.type.quant), _per_tensor(x2.type.quant)
        out_q = self._quant(tail)
        so, zo = _per_tensor(out_q)
        p = tflm.add_params(s1, z1, s2, z2, so, zo)
        lo, hi = self._act_range(bounds, out_q)
        kernel = build.add if node.op == "add" else build.sub
        y = kernel(self.b, x1, x2, left_shift=p.left_shift,
                   input1=(z1, p.input1_multiplier, p.input1_shift),
                   input2=(z2, p.input2_multiplier, p.input2_shift),
                   output=(zo, p.output_multiplier, p.output_shift), act_min=lo, act_max=hi,
                   quant=out_q)
        self._bind(tail, y)

    def _mul(self, node: Node, x1: Tensor, x2: Tensor) -> None:
        tail, bounds = self._absorb_activation(node.output)
        (s1, z1), (s2, z2) = _per_tensor(x1.type.quant), _per_tensor(x2.type.quant)
        out_q = self._quant(tail)
        so, zo = _per_tensor(out_q)
        p = tflm.mul_params(s1, z1, s2, z2, so, zo)
        lo, hi = self._act_range(bounds, out_q)
        y = build.mul(self.b, x1, x2, input1_zp=z1, input2_zp=z2, multiplier=p.multiplier,
                      shift=p.shift, output_zp=zo, act_min=lo, act_max=hi, quant=out_q)
        self._bind(tail, y)

    def _multiply(self, node: Node) -> None:
        self._mul(node, *self._operands(node))

    def _divide(self, node: Node) -> None:
        """x / C for a constant C of several values: x times 1 / C (quantized by its own
        range)."""
        x, d = node.inputs
        c = self._const(d)
        if c is None:
            raise _Unsupported("a divide of two float tensors has no int8 kernel (a softmax "
                               "is recognized over the last axis only)")
        with np.errstate(divide="ignore"):
            recip = (np.float32(1) / c.astype(np.float32)).astype(np.float32)
        if not np.isfinite(recip).all():
            raise _Unsupported("a divide by a constant holding 0 has no int8 form")
        q = self._own_quant(recip)
        inv = self.b.const(quantize_values(recip, q), I8, q)
        self._mul(node, self._value(x), inv)

    def _same_quant(self, node: Node) -> None:
        """maximum / minimum / clamp / select / concatenate: every float operand in the
        result's quantization, then the op on the integers."""
        q = self._quant(node.output)
        inputs = [self._as_quant(t, q) if t.type.dtype.is_float else self._value(t)
                  for t in node.inputs]
        self._bind(node.output, self.b.op(node.op, inputs, quant=q, **node.attrs))

    def _carry(self, node: Node) -> None:
        """Data movement: the same integers, the operand's quantization."""
        x = self._value(node.inputs[0])
        rest = [self._value(t) for t in node.inputs[1:]]
        self._bind(node.output, self.b.op(node.op, [x, *rest], quant=x.type.quant,
                                          **node.attrs))

    def _pad(self, node: Node) -> None:
        x = self._value(node.inputs[0])
        value = self._const(node.inputs[1])
        if value is None:
            raise _Unsupported("a pad by a computed value has no int8 kernel")
        pad = self.b.const(quantize_values(value, x.type.quant), I8, x.type.quant)
        self._bind(node.output, self.b.op("pad", [x, pad], quant=x.type.quant, **node.attrs))

    def _convert(self, node: Node) -> None:
        source, result = node.inputs[0].type.dtype, node.output.type.dtype
        if source.is_float and result.is_integer:
            raise _Unsupported(f"the model converts {source} to {result} itself (a hybrid "
                               "model, quantizing activations at run time?); --quantize "
                               "int8 takes float models")
        if source != result:
            raise _Unsupported(f"a convert from {node.inputs[0].type.dtype} to "
                               f"{node.output.type.dtype} has no int8 kernel")
        self._bind(node.output, self._value(node.inputs[0]))

    # ------------------------------------------------------------------ reductions

    def _scale_after(self, t: Tensor) -> tuple[Tensor, float]:
        """t * c or t / c by a uniform constant that reads t alone: (result, factor)."""
        node = self._single_user(t)
        if node is None or node.op not in ("multiply", "divide"):
            return t, 1.0
        if node.op == "divide" and node.inputs[0] is not t:
            return t, 1.0
        other = node.inputs[1] if node.inputs[0] is t else node.inputs[0]
        c = self._splat(other)
        if c is None or other is t or not np.isfinite(c) or c == 0:
            return t, 1.0
        self.absorbed[id(node)] = node
        return node.output, (c if node.op == "multiply" else 1.0 / c)

    def _picking_start(self, node: Node, xq: Tensor) -> Tensor:
        """The int8 start value of a max / min reduction: the float one quantized
        (-inf and float32's lowest become -128)."""
        init = self._const(node.inputs[1])
        if init is None:
            raise _Unsupported("a reduction whose start value is computed has no int8 kernel")
        return self.b.const(quantize_values(init, xq.type.quant), I8, xq.type.quant)

    def _sum_scaled(self, node: Node, xq: Tensor, factor: float, out_q: QuantParams,
                    window: bool) -> Tensor:
        """sum(x - zp) in int32 over the window / dims, times factor, requantized once:
        one multiplier for factor x input scale / output scale."""
        s_in, z_in = _per_tensor(xq.type.quant)
        s_out, z_out = _per_tensor(out_q)
        shape = tuple(xq.type.shape)
        v = self.b.op("subtract", [self.b.op("convert", [xq], dtype="i32"),
                                   self.b.splat(z_in, I32, shape)])
        zero = self.b.const(0, I32)
        if window:
            acc = self.b.op("reduce_window", [v, zero], **node.attrs)
        else:
            acc = self.b.op("reduce", [v, zero], **node.attrs)
        m, s = quantize_multiplier(factor * float(np.float32(s_in)) / float(np.float32(s_out)))
        return build.requantize(self.b, acc, m, s, axis=None, output_zp=z_out, quant=out_q)

    def _reduce(self, node: Node) -> None:
        kind = node.attrs["kind"]
        xq = self._value(node.inputs[0])
        if kind in _PICKING:
            y = self.b.op("reduce", [xq, self._picking_start(node, xq)], quant=xq.type.quant,
                          **node.attrs)
            self._bind(node.output, y)
            return
        if kind != "add" or self._splat(node.inputs[1]) != 0.0:
            raise _Unsupported(f"a '{kind}' reduction has no int8 kernel (sums from 0, "
                               "maximum and minimum have)")
        tail, factor = self._scale_after(node.output)
        out_q = self._quant(tail)
        dims = tuple(node.attrs["dims"])
        count = int(np.prod([node.inputs[0].type.shape[d] for d in dims], dtype=np.int64))
        if count > 0 and np.float32(factor) == np.float32(1.0 / count):  # a mean: MEAN
            s_in, z_in = _per_tensor(xq.type.quant)
            s_out, z_out = _per_tensor(out_q)
            p = tflm.mean_params(s_in, z_in, s_out, z_out)
            y = build.mean(self.b, xq, dims, keep_dims=False, input_zp=z_in,
                           multiplier=p.multiplier, shift=p.shift, output_zp=z_out,
                           quant=out_q)
        else:
            y = self._sum_scaled(node, xq, factor, out_q, window=False)
        self._bind(tail, y)

    def _reduce_window(self, node: Node) -> None:
        kind = node.attrs["kind"]
        xq = self._value(node.inputs[0])
        if kind in _PICKING:
            y = self.b.op("reduce_window", [xq, self._picking_start(node, xq)],
                          quant=xq.type.quant, **node.attrs)
            self._bind(node.output, y)
            return
        if kind != "add" or self._splat(node.inputs[1]) != 0.0:
            raise _Unsupported(f"a '{kind}' window reduction has no int8 kernel (sums "
                               "from 0, maximum and minimum have)")
        tail, factor = self._scale_after(node.output)
        a = node.attrs
        window = tuple(a["window"])
        plain = (len(window) == 4 and window[0] == window[3] == 1
                 and a["strides"][0] == a["strides"][3] == 1
                 and all(d == 1 for d in a["base_dilations"] + a["window_dilations"])
                 and not any(lo or hi for lo, hi in a["padding"]))
        if plain and np.float32(factor) == np.float32(1.0 / (window[1] * window[2])):
            # NHWC average pooling: TFLite's AVERAGE_POOL_2D keeps the input's quantization.
            tail, bounds = self._absorb_activation(tail)
            lo, hi = self._act_range(bounds, xq.type.quant)
            y = build.average_pool(self.b, xq, window=window[1:3], strides=a["strides"][1:3],
                                   padding=((0, 0), (0, 0)), act_min=lo, act_max=hi)
        else:
            y = self._sum_scaled(node, xq, factor, self._quant(tail), window=True)
        self._bind(tail, y)
