"""Which float values of a generated graph the firmware must reproduce bit for bit.

A random graph's float tensors are *exact* (inputs, constants, data movement, max /
min, one correctly rounded operation of exact values) or not (math functions, sums,
products by constants that affine folding may regroup). The generator reads only
exact values where a last bit could flip a result (floor, compare, ...), and the
tolerance (tolerance.py) budgets the rest; both ask this module, which decides from
the graph alone, so it sits below the generator and the tolerance alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolchain.graph.ir import Graph, Node, Tensor

__all__ = ["EXACT_FLOAT_OPS", "AFFINE_OPS", "EXACT_KINDS", "NAN_SIGN_OPS", "Info",
           "node_info", "floaty", "exactness"]

# Float ops that give the reference's bits when their float operands are exact: they
# move values, pick one, or are one IEEE operation rounded once (add, ..., and
# conversions; narrow types compute in f32 and round once more, which is innocuous
# for these). Sums, products and math functions are not: their order and
# polynomials differ.
EXACT_FLOAT_OPS = frozenset({
    "abs", "negate", "maximum", "minimum", "select", "clamp", "convert", "floor", "ceil",
    "round_nearest_afz", "round_nearest_even", "sign", "add", "subtract", "multiply",
    "divide", "remainder", "broadcast_in_dim", "reshape", "transpose", "reverse",
    "concatenate", "slice", "pad", "gather", "dynamic_slice", "dynamic_update_slice",
    "iota", "constant", "dequantize",
    # Ops with regions are generated over exact operands with exact bodies only, and
    # their bodies fold in the order the kernels use (reference/regions.py).
    "while", "if", "case", "sort", "map", "scatter", "select_and_scatter", "reduce_region",
    "reduce_window_region", "cfg",
    # Complex numbers built from and taken apart into their parts; bits seen as another
    # type, and the bits of the rng algorithms (integer arithmetic, bit for bit).
    "complex", "real", "imag", "bitcast_convert", "rng_bit_generator",
})
# Arithmetic by a constant: affine folding (passes/affine.py) may regroup a chain of
# these into x * scale + shift, which rounds differently; so they are inexact.
AFFINE_OPS = frozenset({"add", "subtract", "multiply", "divide"})
# Reductions that pick an element rather than sum: exact.
EXACT_KINDS = frozenset({"maximum", "minimum", "and", "or"})
# Ops whose NaNs have a defined sign when their operands' have: they move values or
# convert them. An arithmetic op that makes a NaN (0 / 0, inf - inf, sqrt(-1)) gives it
# whatever sign the hardware's default NaN has (negative on x86, positive on Arm and
# RISC-V), and TOTALORDER compares (sort and argmax comparators) order -NaN below
# -inf: such values are never compared in total order. abs clears the sign, so its
# NaNs are always positive.
NAN_SIGN_OPS = frozenset({
    "abs", "negate", "select", "convert", "broadcast_in_dim", "reshape", "transpose",
    "reverse", "concatenate", "slice", "pad", "gather", "dynamic_slice",
    "dynamic_update_slice", "iota", "constant", "complex", "real", "imag",
    "bitcast_convert", "rng_bit_generator",
})


@dataclass
class Info:
    """What the generator knows of a tensor: exact (its float value is bit-for-bit the
    reference's in the firmware), const (computed from constants alone) and signed
    (its NaNs' signs are the reference's too)."""

    exact: bool = True
    const: bool = False
    signed: bool = True  # every NaN it holds has a defined sign (NAN_SIGN_OPS)


def node_info(node: Node, info: dict[int, Info]) -> list[Info]:
    """The Info of each result of `node`, from its op, attributes and operands' Info."""
    ins = [info.get(id(t), Info()) for t in node.inputs]
    const = all(i.const for i in ins) and not node.regions
    out = []
    for t in node.outputs:
        if not floaty(t):
            # Integers and booleans only ever come from exact values (the generator's
            # rule for every op that leaves the floats).
            out.append(Info(True, const))
            continue
        float_ins = [i for i, x in zip(ins, node.inputs) if floaty(x)]
        exact = node.op in EXACT_FLOAT_OPS and all(i.exact for i in float_ins)
        signed = node.op == "abs" or (node.op in NAN_SIGN_OPS
                                      and all(i.signed for i in float_ins))
        if node.op in ("reduce", "reduce_window"):
            exact = node.attrs["kind"] in EXACT_KINDS and all(i.exact for i in float_ins)
        if node.op in AFFINE_OPS and any(i.const for i in ins) and not const:
            exact = False
        out.append(Info(exact, const, signed))
    return out


def floaty(t: Tensor) -> bool:
    """Float or complex (a pair of floats, judged like one)."""
    return t.type.dtype.is_float or t.type.dtype.is_complex


def exactness(graph: Graph) -> dict[int, Info]:
    """Info of every tensor of `graph` (inputs exact, not const), regions excluded."""
    info: dict[int, Info] = {id(t): Info(True, False) for t in graph.inputs}
    for node in graph.nodes:
        for t, i in zip(node.outputs, node_info(node, info)):
            info[id(t)] = i
    return info
