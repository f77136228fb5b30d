"""MLIR text of models whose size is a parameter: long chains and wide ops, for the
tests that no walk, recursion or format limit depends on the model's size."""

from __future__ import annotations


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
