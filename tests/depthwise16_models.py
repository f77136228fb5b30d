"""16x8 depthwise layers as TFLite's converter writes them, built into one .tflite with
the flatbuffers builder: shared by the 16x8 depthwise kernel tests
(tests/codegen/test_depthwise16.py, tests/loops/test_depthwise16_plan.py)."""

from __future__ import annotations

import numpy as np
from tflite_models import Op, Tensor, build_model

# (h, w, input channels, depth multiplier, stride, padding, fused activation)
Layer = tuple[int, int, int, int, int, str, str]


def dw16_op(rng: np.random.Generator, layer: Layer, name: str, big_bias: bool = False,
            window: int = 3, dilation: int = 1) -> tuple[Op, Tensor, Tensor]:
    """A 16x8 depthwise layer (a `window` x `window` window) as TFLite's converter
    writes it (int16 activations of zero point 0, int8 per-channel weights, int64
    bias). The output scale keeps about 3 standard deviations of the sums in range.
    `big_bias`: every other channel's bias near 2**31, past the kernel's int32 sums
    (the generated tiles take the layer)."""
    h, w, c, mult, stride, padding, act = layer
    reach = dilation * (window - 1) + 1
    outs = c * mult
    in_scale = 1.0 / 4096
    x = Tensor((1, h, w, c), "int16", scale=in_scale, zero_point=0, name=f"{name}_in")
    w_scale = rng.uniform(0.005, 0.02, outs).astype(np.float32)
    wdata = rng.integers(-127, 128, (1, window, window, outs)).astype(np.int8)
    std = 18918.0 * 74.0 * window
    bias = rng.integers(-int(std), int(std) + 1, outs).astype(np.int64)
    if big_bias:
        bias[::2] = np.where(bias[::2] < 0, -1, 1) * ((1 << 31) - 1000)
    b_scale = (in_scale * w_scale).astype(np.float32)
    out_scale = float(3 * std * in_scale * float(w_scale.mean()) / 32768)
    wt = Tensor((1, window, window, outs), "int8", scale=list(w_scale), zero_point=[0] * outs,
                quantized_dimension=3, data=wdata, name=f"{name}_w")
    bt = Tensor((outs,), "int64", scale=list(b_scale), zero_point=[0] * outs, data=bias,
                name=f"{name}_b")
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh, ow = (h - reach) // stride + 1, (w - reach) // stride + 1
    y = Tensor((1, oh, ow, outs), "int16", scale=out_scale, zero_point=0, name=name)
    opts = dict(padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=mult,
                fused_activation_function=act, dilation_w_factor=dilation,
                dilation_h_factor=dilation)
    return Op("DEPTHWISE_CONV_2D", [x, wt, bt], [y], opts), x, y


def dw16_model(layers: list[Layer], seed: int, big_bias: bool = False, chain: bool = False
           ) -> tuple[bytes, list[Tensor]]:
    """The layers as one model: independent, or each reading the previous one's output
    with `chain` (one input, the last layer's output)."""
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = dw16_op(rng, layer, f"L{i}", big_bias)
        if chain and ys:
            op = Op(op.opcode, [ys[-1], *op.inputs[1:]], op.outputs, op.options)
        else:
            xs.append(x)
        ops.append(op)
        ys.append(y)
    return build_model(ops, xs, ys[-1:] if chain else ys), xs
