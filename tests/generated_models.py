"""Models built for tests: MLIR text of models whose size is a parameter (long chains
and wide ops, for the tests that no walk, recursion or format limit depends on the
model's size), and graphs no frontend writes yet."""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_graph
from toolchain.types import TensorType, dtype


def elementwise_chain(n: int, shape: str = "4") -> str:
    """`n` adds in a row, each of the previous result and the argument."""
    t = f"tensor<{shape}xf32>"
    lines = [f"func.func @main(%a: {t}) -> {t} {{"]
    prev = "%a"
    for i in range(n):
        lines.append(f"  %{i} = stablehlo.add {prev}, %a : {t}")
        prev = f"%{i}"
    lines.append(f"  return {prev} : {t}\n}}\n")
    return "\n".join(lines)


def reshape_chain(n: int) -> str:
    """`n` reshapes of a 4x6 tensor in a row (6x4, 2x12, 24, 4x6, ...), then back."""
    shapes = ["6x4", "2x12", "24", "4x6"]
    lines = ["func.func @main(%a: tensor<4x6xf32>) -> tensor<4x6xf32> {"]
    prev, cur = "%a", "4x6"
    for i in range(n):
        new = shapes[i % len(shapes)]
        lines.append(f"  %{i} = stablehlo.reshape {prev} : (tensor<{cur}xf32>) -> "
                     f"tensor<{new}xf32>")
        prev, cur = f"%{i}", new
    lines.append(f"  %r = stablehlo.reshape {prev} : (tensor<{cur}xf32>) -> tensor<4x6xf32>")
    lines.append("  return %r : tensor<4x6xf32>\n}\n")
    return "\n".join(lines)


def wide_sum(n: int) -> str:
    """The sum of `n` arguments, added one after the other."""
    args = ", ".join(f"%a{i}: tensor<4xf32>" for i in range(n))
    lines = [f"func.func @main({args}) -> tensor<4xf32> {{"]
    prev = "%a0"
    for i in range(1, n):
        lines.append(f"  %{i} = stablehlo.add {prev}, %a{i} : tensor<4xf32>")
        prev = f"%{i}"
    lines.append(f"  return {prev} : tensor<4xf32>\n}}\n")
    return "\n".join(lines)


def wide_concatenate(n: int) -> str:
    """One concatenate of `n` tensors: the argument and its negation, alternately."""
    names = ", ".join("%a" if i % 2 == 0 else "%m" for i in range(n))
    types = ", ".join("tensor<2xf32>" for _ in range(n))
    return (f"func.func @main(%a: tensor<2xf32>) -> tensor<{2 * n}xf32> {{\n"
            f"  %m = stablehlo.negate %a : tensor<2xf32>\n"
            f"  %0 = stablehlo.concatenate {names}, dim = 0 : ({types}) -> "
            f"tensor<{2 * n}xf32>\n"
            f"  return %0 : tensor<{2 * n}xf32>\n}}\n")


def nested_calls(depth: int) -> str:
    """@main calls @f1, which calls @f2, ... `depth` functions in all."""
    out = []
    for i in range(depth):
        name = "main" if i == 0 else f"f{i}"
        body = (f"  %0 = func.call @f{i + 1}(%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
                if i < depth - 1 else "  %0 = stablehlo.add %x, %x : tensor<4xf32>\n")
        out.append(f"func.func @{name}(%x: tensor<4xf32>) -> tensor<4xf32> {{\n{body}"
                   "  return %0 : tensor<4xf32>\n}\n")
    return "".join(out)


def quantized_conv(zp_in: int = -3, zp_out: int = 5) -> Graph:
    """An int8 convolution as the quantized frontends build it: the input padded with
    its zero point, an i8 x i8 -> i32 convolution, the bias (with the zero point's share
    folded in), the fixed-point requantization per channel, the output zero point, the
    activation clamp and the narrowing."""
    i8, i32 = dtype("i8"), dtype("i32")
    rng = np.random.default_rng(4)
    g = Graph("qconv")
    x = g.add_input(TensorType((1, 5, 5, 3), i8))

    def const(value: np.ndarray, dt) -> Tensor:
        value = np.asarray(value, dt.np_dtype)
        return g.add("constant", [], [TensorType(value.shape, dt)], {"value": value}).output

    def op(name: str, args: list[Tensor], t: TensorType, **attrs) -> Tensor:
        return g.add(name, args, [t], attrs).output

    def per_channel(v: Tensor, shape: tuple[int, ...]) -> Tensor:
        return op("broadcast_in_dim", [v], TensorType(shape, i32), dims=(3,), shape=shape)

    w = const(rng.integers(-127, 128, (4, 3, 3, 3)), i8)  # OHWI
    padded = op("pad", [x, const(zp_in, i8)], TensorType((1, 7, 7, 3), i8),
                low=(0, 1, 1, 0), high=(0, 1, 1, 0), interior=(0, 0, 0, 0))
    acc = op("convolution", [padded, w], TensorType((1, 5, 5, 4), i32),
             strides=(1, 1), padding=((0, 0), (0, 0)), lhs_dilation=(1, 1),
             rhs_dilation=(1, 1), input_batch=0, input_feature=3, input_spatial=(1, 2),
             kernel_input=3, kernel_output=0, kernel_spatial=(1, 2), output_batch=0,
             output_feature=3, output_spatial=(1, 2), feature_group_count=1,
             batch_group_count=1, dtype="i32")
    out = (1, 5, 5, 4)
    t32 = TensorType(out, i32)
    bias = const(rng.integers(-5000, 5000, 4), i32)
    mult = const([1 << 30, 1 << 29, 1518500250, 2000000000], i32)
    shift = const([7, 8, 9, 10], i32)
    v = op("add", [acc, per_channel(bias, out)], t32)
    v = op("saturating_rounding_doubling_high_mul", [v, per_channel(mult, out)], t32)
    v = op("rounding_divide_by_pot", [v, per_channel(shift, out)], t32)
    zp = op("broadcast_in_dim", [const(zp_out, i32)], t32, dims=(), shape=out)
    v = op("add", [v, zp], t32)
    lo, hi = const(-128, i32), const(127, i32)
    v = op("clamp", [lo, v, hi], t32)
    g.outputs = [op("convert", [v], TensorType(out, i8), dtype="i8")]
    verify_graph(g)
    return g
