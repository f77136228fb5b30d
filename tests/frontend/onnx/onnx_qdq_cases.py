"""Quantized ONNX models, one per op and pattern: QuantizeLinear / DequantizeLinear alone,
DequantizeLinear -> op -> QuantizeLinear patterns as onnxruntime's quantizer writes them
(int8 activations per tensor, int8 weights per channel, int32 biases), QLinearConv and
QLinearMatMul. Most cases output the int8 tensor itself, so tests compare integers.

Each case returns (model bytes, inputs, int8): `int8` says whether the whole pattern
must stay in integers (no dequantize between the input's QuantizeLinear and the output).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx_models import build, node, randn

QCase = tuple[bytes, list[np.ndarray], bool]
X_Q = (0.03, -5)  # the input's int8 scale and zero point: +-3.9 around 0.15


def _q(name: str, scale: float, zp: int, dt=np.int8) -> dict[str, np.ndarray]:
    return {f"{name}_s": np.array(scale, np.float32), f"{name}_z": np.array(zp, dt)}


# onnxruntime's x86-64 int8 convolutions without VNNI (AVX2, plain AVX-512) multiply
# u8 x s8 pairs with VPMADDUBSW, whose 16-bit pair sums saturate: 255 * 127 * 2 does
# not fit, and an oracle on such a CPU was 7 to 60 LSB off the exact result (an AMD
# EPYC with AVX2 only). Weights within +-63 ("reduce_range", as onnxruntime's own
# quantizer offers for this) keep every pair sum exact on every CPU.
REDUCED = 63


def _weights(w: np.ndarray, per_channel: bool, axis: int = 0, limit: int = 127
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric int8 weights within +-limit, scales and zero points (per channel
    along `axis`)."""
    if per_channel:
        red = tuple(a for a in range(w.ndim) if a != axis)
        scale = (np.abs(w).max(axis=red) / limit).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.rint(w / scale.reshape(shape)), -limit, limit).astype(np.int8)
        return q, scale, np.zeros(scale.shape, np.int8)
    scale = np.float32(np.abs(w).max() / limit)
    return (np.clip(np.rint(w / scale), -limit, limit).astype(np.int8), np.array(scale),
            np.array(0, np.int8))


class Q:
    """Writes a QDQ graph: nodes, initializers, and fresh names."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.consts: dict[str, np.ndarray] = {}

    def quantize(self, src: str, name: str, scale: float, zp: int, dt=np.int8) -> str:
        self.consts.update(_q(name, scale, zp, dt))
        self.nodes.append(node("QuantizeLinear", [src, f"{name}_s", f"{name}_z"], [name]))
        return name

    def dequantize(self, src: str, name: str) -> str:
        out = f"{src}_dq"
        self.nodes.append(node("DequantizeLinear", [src, f"{name}_s", f"{name}_z"], [out]))
        return out

    def qdq(self, src: str, name: str, scale: float, zp: int) -> str:
        return self.dequantize(self.quantize(src, name, scale, zp), name)

    def weights(self, name: str, w: np.ndarray, per_channel: bool, axis: int = 0,
                limit: int = 127) -> str:
        q, s, z = _weights(w, per_channel, axis, limit)
        self.consts.update({name: q, f"{name}_s": s, f"{name}_z": z})
        attrs = {"axis": axis} if per_channel else {}
        self.nodes.append(node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"],
                               [f"{name}_dq"], **attrs))
        return f"{name}_dq"

    def bias(self, name: str, b: np.ndarray, scale: np.ndarray) -> str:
        """An int32 bias at scale `scale` (input scale x weight scales), as quantizers
        write it."""
        scale = np.asarray(scale, np.float32)
        self.consts.update({name: np.rint(b / scale).astype(np.int32), f"{name}_s": scale,
                            f"{name}_z": np.zeros(scale.shape, np.int32)})
        self.nodes.append(node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"],
                               [f"{name}_dq"], axis=0))
        return f"{name}_dq"

    def model(self, inputs: dict[str, np.ndarray], outputs: list[str], int8: bool = True
              ) -> QCase:
        return build(self.nodes, inputs, outputs, self.consts), list(inputs.values()), int8


def conv(*, per_channel=True, bias=True, act=None, group=1, cout=6, float_bias=False,
         seed=0, out=(0.05, 3), **attrs) -> QCase:
    g = Q()
    x = randn((1, 4, 6, 5), seed, 1.2)
    xd = g.qdq("x", "xq", *X_Q)
    w = randn((cout, 4 // group, 3, 3), seed + 1, 0.4)
    inputs = [xd, g.weights("w", w, per_channel)]
    if bias:
        b = randn((cout,), seed + 2, 0.3)
        if float_bias:
            g.consts["b"] = b
            inputs.append("b")
        else:
            _, ws, _ = _weights(w, per_channel)
            inputs.append(g.bias("b", b, np.float32(X_Q[0]) * np.broadcast_to(ws, (cout,))))
    g.nodes.append(node("Conv", inputs, ["c"], group=group, **attrs))
    y = "c"
    if act == "Relu":
        g.nodes.append(node("Relu", ["c"], ["a"]))
        y = "a"
    elif act == "Clip":
        g.consts.update({"lo": np.array(0, np.float32), "hi": np.array(2.5, np.float32)})
        g.nodes.append(node("Clip", ["c", "lo", "hi"], ["a"]))
        y = "a"
    g.quantize(y, "yq", *out)
    return g.model({"x": x}, ["yq"])


def gemm(*, trans_b=1, per_channel=True, seed=10) -> QCase:
    g = Q()
    x = randn((3, 8), seed)
    w = randn((5, 8) if trans_b else (8, 5), seed + 1, 0.3)
    b = randn((5,), seed + 2, 0.2)
    _, ws, _ = _weights(w, per_channel, 0 if trans_b else 1)
    ins = [g.qdq("x", "xq", *X_Q), g.weights("w", w, per_channel, 0 if trans_b else 1),
           g.bias("b", b, np.float32(X_Q[0]) * np.broadcast_to(ws, (5,)))]
    g.nodes.append(node("Gemm", ins, ["m"], transB=trans_b))
    g.quantize("m", "yq", 0.04, -2)
    return g.model({"x": x}, ["yq"])


def matmul(seed=20) -> QCase:
    g = Q()
    x = randn((2, 3, 8), seed)
    ins = [g.qdq("x", "xq", *X_Q), g.weights("w", randn((8, 4), seed + 1, 0.3), True, 1)]
    g.nodes.append(node("MatMul", ins, ["m"]))
    g.quantize("m", "yq", 0.05, 4)
    return g.model({"x": x}, ["yq"])


def binary(op: str, const: bool = False, seed=30) -> QCase:
    g = Q()
    x = randn((2, 3, 4), seed)
    a = g.qdq("x", "xq", *X_Q)
    inputs = {"x": x}
    if const:
        zq = np.random.default_rng(seed).integers(-128, 128, (4,)).astype(np.int8)
        g.consts.update({"zq": zq, **_q("zq", 0.02, 7)})
        g.nodes.append(node("DequantizeLinear", ["zq", "zq_s", "zq_z"], ["zq_dq"]))
        b = "zq_dq"
    else:
        inputs["z"] = randn((2, 3, 4), seed + 1, 0.5)
        b = g.qdq("z", "zq", 0.01, 2)
    g.nodes.append(node(op, [a, b], ["o"]))
    g.quantize("o", "yq", 0.06 if op == "Add" else 0.05, -3)
    return g.model(inputs, ["yq"])


def table(op: str, out=(0.02, -10), **attrs) -> QCase:
    g = Q()
    x = randn((2, 40), 40, 1.5)
    ins = [g.qdq("x", "xq", *X_Q)]
    if op == "Clip":
        g.consts.update({"lo": np.array(-0.5, np.float32), "hi": np.array(1.0, np.float32)})
        ins += ["lo", "hi"]
    g.nodes.append(node(op, ins, ["o"], **attrs))
    g.quantize("o", "yq", *out)
    return g.model({"x": x}, ["yq"])


def same_scale(op: str, consts: dict | None = None, names=(), int8=True, **attrs) -> QCase:
    """A data-movement (or max) op between a DQ and a Q of the same parameters, as the
    quantizer writes them."""
    g = Q()
    x = randn((1, 3, 6, 5), 50)
    g.consts.update(consts or {})
    g.nodes.append(node(op, [g.qdq("x", "xq", *X_Q), *names], ["o"], **attrs))
    g.quantize("o", "yq", *X_Q)
    return g.model({"x": x}, ["yq"], int8)


def concat(same: bool) -> QCase:
    g = Q()
    x, z = randn((1, 2, 4), 51), randn((1, 3, 4), 52)
    b = g.qdq("z", "zq", *X_Q) if same else g.qdq("z", "zq", 0.05, 1)
    g.nodes.append(node("Concat", [g.qdq("x", "xq", *X_Q), b], ["o"], axis=1))
    g.quantize("o", "yq", *X_Q)
    return g.model({"x": x, "z": z}, ["yq"], int8=same)


def mean(op: str, **attrs) -> QCase:
    g = Q()
    x = randn((1, 3, 5, 4), 53)
    names = [g.qdq("x", "xq", *X_Q)]
    if op == "ReduceMean":
        g.consts["axes"] = np.array([2, 3], np.int64)
        names.append("axes")
    g.nodes.append(node(op, names, ["o"], **attrs))
    g.quantize("o", "yq", 0.01, 6)
    return build(g.nodes, {"x": x}, ["yq"], g.consts, opset=18), [x], True


def requantize() -> QCase:
    g = Q()
    x = randn((4, 16), 54)
    g.quantize(g.qdq("x", "xq", *X_Q), "yq", 0.045, 9)
    return g.model({"x": x}, ["yq"])


def quantize_linear(per_channel=False, uint8=False, ties=False) -> QCase:
    g = Q()
    if ties:  # k + 0.5 steps exactly: round half to even decides
        x = ((np.arange(-40, 40, dtype=np.float32) + 0.5) * 0.125).reshape(8, 10)
    else:
        x = randn((8, 10), 55, 3.0)
    if per_channel:
        g.consts.update({"s": np.linspace(0.01, 0.05, 10).astype(np.float32),
                         "z": np.arange(-5, 5).astype(np.int8)})
        g.nodes.append(node("QuantizeLinear", ["x", "s", "z"], ["yq"], axis=1))
    elif uint8:
        g.consts["s"] = np.array(0.02, np.float32)
        g.nodes.append(node("QuantizeLinear", ["x", "s"], ["yq"]))
    else:
        g.quantize("x", "yq", 0.125 if ties else 0.03, 0 if ties else -5)
    return g.model({"x": x}, ["yq"], int8=False)


def dequantize_linear(per_channel: bool) -> QCase:
    q = np.random.default_rng(56).integers(-128, 128, (3, 6)).astype(np.int8)
    g = Q()
    if per_channel:
        g.consts.update({"s": np.array([0.1, 0.02, 0.5], np.float32),
                         "z": np.array([3, -1, 0], np.int8)})
        g.nodes.append(node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0))
    else:
        g.consts.update(_q("q", 0.037, -9))
        g.nodes.append(node("DequantizeLinear", ["q", "q_s", "q_z"], ["y"]))
    return g.model({"q": q}, ["y"], int8=False)


def qlinear_conv(uint8: bool = False) -> QCase:
    dt = np.uint8 if uint8 else np.int8
    rng = np.random.default_rng(57)
    lo, hi = (0, 256) if uint8 else (-128, 128)
    x = rng.integers(lo, hi, (1, 3, 5, 5)).astype(dt)
    limit = REDUCED if uint8 else 127  # u8 activations: onnxruntime's pair sums
    w = rng.integers(-limit, limit + 1, (4, 3, 3, 3)).astype(np.int8)
    consts = {"xs": np.array(0.02, np.float32), "xz": np.array(128 if uint8 else -3, dt),
              "w": w, "ws": np.array([0.01, 0.02, 0.015, 0.03], np.float32),
              "wz": np.zeros(4, np.int8), "ys": np.array(0.07, np.float32),
              "yz": np.array(120 if uint8 else 5, dt),
              "b": rng.integers(-2000, 2000, (4,)).astype(np.int32)}
    n = node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
             pads=[1, 1, 1, 1], strides=[2, 1])
    return build([n], {"x": x}, ["y"], consts), [x], not uint8


def qlinear_matmul(uint8: bool = False) -> QCase:
    dt = np.uint8 if uint8 else np.int8
    rng = np.random.default_rng(58)
    lo, hi = (0, 256) if uint8 else (-128, 128)
    a = rng.integers(lo, hi, (2, 4, 6)).astype(dt)
    b = rng.integers(lo, hi, (6, 5)).astype(dt)
    consts = {"as": np.array(0.03, np.float32), "az": np.array(100 if uint8 else 2, dt),
              "b": b, "bs": np.array(0.02, np.float32), "bz": np.array(128 if uint8 else 0, dt),
              "ys": np.array(0.5, np.float32), "yz": np.array(110 if uint8 else -4, dt)}
    n = node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    return build([n], {"a": a}, ["y"], consts), [a], not uint8


def softmax_float_fallback() -> QCase:
    """No int8 Softmax: the float op runs on the dequantized values, then quantized."""
    g = Q()
    x = randn((2, 10), 59, 2.0)
    g.nodes.append(node("Softmax", [g.qdq("x", "xq", *X_Q)], ["o"]))
    g.quantize("o", "yq", 1 / 256, -128)
    return g.model({"x": x}, ["yq"], int8=False)


QDQ_CASES: dict[str, Callable[[], QCase]] = {
    "conv-per-channel": lambda: conv(pads=[1, 1, 1, 1]),
    "conv-per-tensor-stride2-no-bias": lambda: conv(per_channel=False, bias=False,
                                                    strides=[2, 2]),
    "conv-relu": lambda: conv(act="Relu", pads=[1, 0, 1, 0]),
    "conv-clip": lambda: conv(act="Clip", out=(0.012, -128)),
    "conv-depthwise": lambda: conv(group=4, cout=8, out=(0.03, 0)),
    "conv-grouped": lambda: conv(group=2, pads=[1, 1, 1, 1]),
    "conv-float-bias": lambda: conv(float_bias=True, auto_pad="SAME_UPPER"),
    "gemm-transB": lambda: gemm(),
    "gemm-per-tensor": lambda: gemm(trans_b=0, per_channel=False),
    "matmul-3d": matmul,
    "add": lambda: binary("Add"),
    "add-const-broadcast": lambda: binary("Add", const=True),
    "mul": lambda: binary("Mul"),
    "relu": lambda: table("Relu", (0.02, -128)),
    "clip": lambda: table("Clip"),
    "leaky-relu": lambda: table("LeakyRelu", alpha=0.2),
    "sigmoid": lambda: table("Sigmoid", (1 / 256, -128)),
    "tanh": lambda: table("Tanh", (1 / 128, 0)),
    "hard-swish": lambda: table("HardSwish"),
    "maxpool": lambda: same_scale("MaxPool", kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]),
    "avgpool": lambda: same_scale("AveragePool", kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]),
    "avgpool-include-pad-ceil": lambda: same_scale("AveragePool", kernel_shape=[2, 2],
                                                   strides=[2, 2], pads=[1, 1, 0, 0],
                                                   count_include_pad=1, ceil_mode=1),
    "reshape": lambda: same_scale("Reshape", {"shape": np.array([3, -1], np.int64)},
                                  ["shape"]),
    "flatten": lambda: same_scale("Flatten"),
    "transpose": lambda: same_scale("Transpose", perm=[0, 2, 3, 1]),
    "pad": lambda: same_scale("Pad", {"p": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)},
                              ["p"]),
    "concat-same-scale": lambda: concat(True),
    "concat-other-scale-float": lambda: concat(False),
    "global-avgpool": lambda: mean("GlobalAveragePool"),
    "reduce-mean": lambda: mean("ReduceMean", keepdims=0),
    "requantize": requantize,
    "quantize": lambda: quantize_linear(),
    "quantize-ties-half-even": lambda: quantize_linear(ties=True),
    "quantize-per-channel": lambda: quantize_linear(per_channel=True),
    "quantize-uint8-default": lambda: quantize_linear(uint8=True),
    "dequantize": lambda: dequantize_linear(False),
    "dequantize-per-channel": lambda: dequantize_linear(True),
    "qlinear-conv": qlinear_conv,
    "qlinear-conv-uint8-float": lambda: qlinear_conv(uint8=True),
    "qlinear-matmul": qlinear_matmul,
    "qlinear-matmul-uint8-float": lambda: qlinear_matmul(uint8=True),
    "softmax-float-fallback": softmax_float_fallback,
}

__all__ = ["QCase", "QDQ_CASES", "X_Q"]
