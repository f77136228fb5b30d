"""Small float StableHLO models for the int8 post-training quantization tests, written
as MLIR text the way JAX writes them (weights as hex constants, ReLU as a maximum with a
broadcast 0, average pooling as a window sum divided by its size, softmax decomposed)."""

from __future__ import annotations

import numpy as np

from toolchain.frontend import import_module
from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_graph
from toolchain.mlir import parse_text

Shape = tuple[int, ...]


def tensor(shape: Shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


class Model:
    """Builds one `func.func @main` line by line; each method returns (value, shape)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.lines: list[str] = []
        self.args: list[Shape] = []
        self.n = 0

    def _new(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def arg(self, shape: Shape) -> tuple[str, Shape]:
        self.args.append(shape)
        return f"%arg{len(self.args) - 1}", shape

    def const(self, value: np.ndarray) -> tuple[str, Shape]:
        v = self._new()
        value = np.asarray(value, np.float32)
        if value.size == 1 and np.isfinite(value).all():
            body = f"dense<{float(value.reshape(-1)[0])!r}>"
        elif value.size == 1:  # infinities: MLIR spells them by their bits
            body = f"dense<0x{int(value.reshape(-1).view(np.uint32)[0]):08X}>"
        else:
            body = f'dense<"0x{value.astype("<f4").tobytes().hex().upper()}">'
        self.lines.append(f"{v} = stablehlo.constant {body} : {tensor(value.shape)}")
        return v, value.shape

    def weights(self, shape: Shape, scale: float = 0.5) -> tuple[str, Shape]:
        return self.const(self.rng.standard_normal(shape) * scale)

    def broadcast(self, x: tuple[str, Shape], dims: tuple[int, ...],
                  shape: Shape) -> tuple[str, Shape]:
        v = self._new()
        self.lines.append(f"{v} = stablehlo.broadcast_in_dim {x[0]}, dims = {list(dims)} : "
                          f"({tensor(x[1])}) -> {tensor(shape)}")
        return v, shape

    def splat(self, value: float, shape: Shape) -> tuple[str, Shape]:
        return self.broadcast(self.const(np.float32(value)), (), shape)

    def binary(self, op: str, a: tuple[str, Shape], b: tuple[str, Shape]) -> tuple[str, Shape]:
        v = self._new()
        self.lines.append(f"{v} = stablehlo.{op} {a[0]}, {b[0]} : {tensor(a[1])}")
        return v, a[1]

    def unary(self, op: str, x: tuple[str, Shape]) -> tuple[str, Shape]:
        v = self._new()
        self.lines.append(f"{v} = stablehlo.{op} {x[0]} : {tensor(x[1])}")
        return v, x[1]

    def relu(self, x: tuple[str, Shape]) -> tuple[str, Shape]:
        return self.binary("maximum", x, self.splat(0.0, x[1]))

    def relu6(self, x: tuple[str, Shape]) -> tuple[str, Shape]:
        return self.binary("minimum", self.relu(x), self.splat(6.0, x[1]))

    def bias(self, x: tuple[str, Shape], axis: int) -> tuple[str, Shape]:
        b = self.weights((x[1][axis],), 0.3)
        return self.binary("add", x, self.broadcast(b, (axis,), x[1]))

    def conv(self, x: tuple[str, Shape], cout: int, k: int = 3, stride: int = 1,
             pad: int = 1, depthwise: bool = False) -> tuple[str, Shape]:
        n, h, w, cin = x[1]
        groups = cin if depthwise else 1
        wt = self.weights((k, k, cin // groups, cout), 0.6)
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        out = (n, oh, ow, cout)
        v = self._new()
        self.lines.append(
            f"{v} = stablehlo.convolution({x[0]}, {wt[0]}) dim_numbers = [b, 0, 1, f]x"
            f"[0, 1, i, o]->[b, 0, 1, f], window = {{stride = [{stride}, {stride}], pad = "
            f"[[{pad}, {pad}], [{pad}, {pad}]]}} {{batch_group_count = 1 : i64, "
            f"feature_group_count = {groups} : i64}} : ({tensor(x[1])}, {tensor(wt[1])}) -> "
            f"{tensor(out)}")
        return v, out

    def dense(self, x: tuple[str, Shape], units: int) -> tuple[str, Shape]:
        wt = self.weights((x[1][-1], units), 0.4)
        out = (*x[1][:-1], units)
        v = self._new()
        self.lines.append(f"{v} = stablehlo.dot_general {x[0]}, {wt[0]}, contracting_dims = "
                          f"[{len(x[1]) - 1}] x [0] : ({tensor(x[1])}, {tensor(wt[1])}) -> "
                          f"{tensor(out)}")
        return v, out

    def window_sum(self, x: tuple[str, Shape], window: Shape, strides: Shape,
                   padding: tuple[tuple[int, int], ...] | None = None) -> tuple[str, Shape]:
        rank = len(x[1])
        padding = padding or ((0, 0),) * rank
        out = tuple((d + lo + hi - k) // s + 1
                    for d, k, s, (lo, hi) in zip(x[1], window, strides, padding))
        z = self.const(np.float32(0.0))
        v = self._new()
        pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
        ones = ", ".join("1" for _ in range(rank))
        self.lines.append(
            f'{v} = "stablehlo.reduce_window"({x[0]}, {z[0]}) <{{base_dilations = array<i64: '
            f"{ones}>, padding = dense<[{pads}]> : tensor<{rank}x2xi64>, window_dilations = "
            f"array<i64: {ones}>, window_dimensions = array<i64: "
            f"{', '.join(map(str, window))}>, window_strides = array<i64: "
            f"{', '.join(map(str, strides))}>}}> ({{\n"
            f"  ^bb0(%a{self.n}: tensor<f32>, %b{self.n}: tensor<f32>):\n"
            f"    %s{self.n} = stablehlo.add %a{self.n}, %b{self.n} : tensor<f32>\n"
            f"    stablehlo.return %s{self.n} : tensor<f32>\n"
            f"  }}) : ({tensor(x[1])}, tensor<f32>) -> {tensor(out)}")
        return v, out

    def avg_pool(self, x: tuple[str, Shape], k: int) -> tuple[str, Shape]:
        s = self.window_sum(x, (1, k, k, 1), (1, k, k, 1))
        return self.binary("divide", s, self.splat(float(k * k), s[1]))

    def reduce(self, x: tuple[str, Shape], kind: str, dims: tuple[int, ...],
               init: float) -> tuple[str, Shape]:
        z = self.const(np.float32(init))
        out = tuple(d for i, d in enumerate(x[1]) if i not in dims)
        v = self._new()
        self.lines.append(f"{v} = stablehlo.reduce({x[0]} init: {z[0]}) applies "
                          f"stablehlo.{kind} across dimensions = {list(dims)} : "
                          f"({tensor(x[1])}, tensor<f32>) -> {tensor(out)}")
        return v, out

    def mean(self, x: tuple[str, Shape], dims: tuple[int, ...]) -> tuple[str, Shape]:
        total = self.reduce(x, "add", dims, 0.0)
        count = int(np.prod([x[1][d] for d in dims]))
        return self.binary("divide", total, self.splat(float(count), total[1]))

    def softmax(self, x: tuple[str, Shape]) -> tuple[str, Shape]:
        """JAX's softmax over the last axis."""
        last = len(x[1]) - 1
        keep = tuple(range(last))
        top = self.reduce(x, "maximum", (last,), float("-inf"))
        top = self.binary("maximum", self.splat(float("-inf"), top[1]), top)
        e = self.unary("exponential", self.binary("subtract", x,
                                                   self.broadcast(top, keep, x[1])))
        total = self.reduce(e, "add", (last,), 0.0)
        return self.binary("divide", e, self.broadcast(total, keep, e[1]))

    def concat(self, a: tuple[str, Shape], b: tuple[str, Shape], dim: int) -> tuple[str, Shape]:
        out = tuple(x + y if i == dim else x for i, (x, y) in enumerate(zip(a[1], b[1])))
        v = self._new()
        self.lines.append(f"{v} = stablehlo.concatenate {a[0]}, {b[0]}, dim = {dim} : "
                          f"({tensor(a[1])}, {tensor(b[1])}) -> {tensor(out)}")
        return v, out

    def reshape(self, x: tuple[str, Shape], shape: Shape) -> tuple[str, Shape]:
        v = self._new()
        self.lines.append(f"{v} = stablehlo.reshape {x[0]} : ({tensor(x[1])}) -> "
                          f"{tensor(shape)}")
        return v, shape

    def text(self, *results: tuple[str, Shape]) -> str:
        args = ", ".join(f"%arg{i}: {tensor(s)}" for i, s in enumerate(self.args))
        outs = ", ".join(tensor(r[1]) for r in results)
        body = "\n  ".join(self.lines)
        names = ", ".join(r[0] for r in results)
        return (f"func.func @main({args}) -> ({outs}) {{\n  {body}\n  return {names} : "
                f"{outs}\n}}\n")


def graph_of(text: str, name: str = "model.mlir") -> Graph:
    graph = import_module(parse_text(text, name))
    verify_graph(graph)
    return graph
