"""Graph -> StableHLO MLIR, and graph comparison: the random graphs' way through the
parser and the importer.

`graph_to_mlir` writes a graph as the op tree the MLIR importer reads
(toolchain/mlir/ir.py: `func.func @main` of `stablehlo.*` ops, regions with their block
arguments, captured values used from the enclosing scope as StableHLO allows) and prints
it with the generic-form printer (toolchain/mlir/printer.py). Where the spec gives an
attribute a default (strides and dilations of 1, no padding, a compare_type), a seeded
coin decides whether it is written, so both spellings reach the importer. A function of
several blocks (a `cfg` node) becomes a private function with `cf.br` / `cf.cond_br`,
called from @main.

`graph_diff` compares two graphs node by node (ops, attributes bit for bit, types,
wiring; captures matched by the value they capture, whatever their order) and says
where they first differ: the random graph tests import what graph_to_mlir printed and
expect no difference.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.mlir.ir import (
    Block,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    Region,
    StringAttr,
    StructAttr,
    SymbolRefAttr,
    TypeAttr,
    Value,
)
from toolchain.mlir.printer import print_generic
from toolchain.types import DTYPES, FunctionType, TensorType

__all__ = ["graph_to_mlir", "graph_diff", "NotExpressible", "operand_split"]

I64 = DTYPES["i64"]
I32 = DTYPES["i32"]
F32 = DTYPES["f32"]


class NotExpressible(Exception):
    """The graph holds an op StableHLO has no spelling for (minirt's own ops)."""


def _ints(values: tuple[int, ...]) -> DenseArrayAttr:
    return DenseArrayAttr(I64, tuple(int(v) for v in values))


def _int(v: int) -> IntAttr:
    return IntAttr(int(v), I64)


def _padding(pads: tuple[tuple[int, int], ...]) -> DenseAttr:
    array = np.array(pads, dtype=np.int64).reshape(len(pads), 2)
    return DenseAttr(TensorType(array.shape, I64), array)


def _struct(name: str, fields: list[tuple[str, Any]]) -> StructAttr:
    # Empty lists are left out, as MLIR prints them.
    return StructAttr(name, tuple((k, tuple(v) if isinstance(v, tuple) else v)
                                  for k, v in fields if v != ()))


def _enum(kind: str, value: str) -> OpaqueAttr:
    return OpaqueAttr("stablehlo", f"{kind} {value}")


def operand_split(node: Node) -> int:
    """How many of `node`'s operands are the op's own (the rest are captured values its
    regions read)."""
    op, regions = node.op, node.regions
    if op == "while":
        return len(regions[1].outputs)
    if op in ("if", "case"):
        return 1
    if op in ("reduce_region", "reduce_window_region"):
        return 2 * len(regions[0].outputs)
    if op == "sort":
        return len(regions[0].inputs) - len(node.inputs)
    if op == "map":
        return node.attrs["operands"]
    if op == "scatter":
        return 2 * len(regions[0].outputs) + 1
    if op == "select_and_scatter":
        return 3
    return len(node.inputs)


class _Exporter:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.funcs: list[Operation] = []

    def maybe(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def function(self, name: str, graph: Graph, private: bool = False) -> Operation:
        block = Block([Value(t.type) for t in graph.inputs])
        env = {id(t): v for t, v in zip(graph.inputs, block.args)}
        self.body(graph, env, block, "func.return")
        fty = FunctionType(tuple(t.type for t in graph.inputs),
                           tuple(t.type for t in graph.outputs))
        attrs = {"sym_name": StringAttr(name), "function_type": TypeAttr(fty)}
        if private:
            attrs["sym_visibility"] = StringAttr("private")
        return Operation("func.func", [], [], properties=attrs, regions=[Region([block])])

    def body(self, graph: Graph, env: dict[int, Value], block: Block, ret: str) -> None:
        for node in graph.nodes:
            ops = self.node(node, env)
            block.ops += ops
            for t, v in zip(node.outputs, ops[-1].results):
                env[id(t)] = v
        block.ops.append(Operation(ret, [env[id(t)] for t in graph.outputs], []))

    def region(self, graph: Graph, n_args: int, captures: list[Value]) -> Region:
        """A region of the graph's region `graph`: its first n_args inputs are block
        arguments, the others the outer `captures`."""
        block = Block([Value(t.type) for t in graph.inputs[:n_args]])
        env = {id(t): v for t, v in zip(graph.inputs, list(block.args) + captures)}
        self.body(graph, env, block, "stablehlo.return")
        return Region([block])

    def node(self, node: Node, env: dict[int, Value]) -> list[Operation]:
        operands = [env[id(t)] for t in node.inputs]
        results = [Value(t.type) for t in node.outputs]
        if node.op == "cfg":
            return [self.cfg(node, operands, results)]
        if node.op == "rng":
            return self.rng_op(node, operands, results)
        rule = _RULES.get(node.op)
        if rule is None:
            raise NotExpressible(f"'{node.op}' has no StableHLO spelling")
        k = operand_split(node)
        name, props = rule(self, node)
        regions = [self.region(r, len(r.inputs) - (len(operands) - k), operands[k:])
                   for r in node.regions]
        if node.op == "reduce" or node.op == "reduce_window":
            regions = [self.kind_body(node)]
        full = name if "." in name else f"stablehlo.{name}"  # CHLO's carry their dialect
        return [Operation(full, operands[:k], results, properties=props, regions=regions)]

    def kind_body(self, node: Node) -> Region:
        """reduce / reduce_window's body: one `kind` op of its two scalar arguments."""
        scalar = TensorType((), node.inputs[0].type.dtype)
        block = Block([Value(scalar), Value(scalar)])
        r = Value(scalar)
        block.ops = [Operation(f"stablehlo.{node.attrs['kind']}", list(block.args), [r]),
                     Operation("stablehlo.return", [r], [])]
        return Region([block])

    def cfg(self, node: Node, operands: list[Value], results: list[Value]) -> Operation:
        """A cfg node as a private function with one block per region, and its call."""
        name = f"blocks{len(self.funcs)}"
        blocks_attr = node.attrs["blocks"]
        n_shared = 1 + max([len(node.inputs) - 1] + [i for b in blocks_attr
                                                     for i in b[1] + b[2]])
        shared_types = [None] * n_shared
        for i, t in enumerate(node.inputs):
            shared_types[i] = t.type
        for (_, reads, _, _), region in zip(blocks_attr, node.regions):
            for i, t in zip(reads, region.inputs):
                shared_types[i] = t.type
        mlir_blocks = []
        shared_values: dict[int, Value] = {}
        for k, ((n_args, reads, _, _), region) in enumerate(zip(blocks_attr, node.regions)):
            args = [Value(region.inputs[i].type) for i in range(n_args)]
            if k == 0:
                args = [Value(t.type) for t in node.inputs]
            mlir_blocks.append(Block(args))
            for i, v in zip(reads[:n_args] if k else range(len(node.inputs)), args):
                shared_values[i] = v
        # Values a block defines for others are its extra results: bind them first.
        pending = []
        for k, ((_, reads, writes, term), region) in enumerate(zip(blocks_attr,
                                                                         node.regions)):
            block = mlir_blocks[k]
            env = {}
            for i, t in zip(reads, region.inputs):
                if i in shared_values:
                    env[id(t)] = shared_values[i]
                else:
                    pending.append((env, t, i))
            for n in region.nodes:
                ops = self.node(n, env)
                block.ops += ops
                for t, v in zip(n.outputs, ops[-1].results):
                    env[id(t)] = v
            n_term = len(region.outputs) - len(writes)
            for i, t in zip(writes, region.outputs[n_term:]):
                shared_values[i] = env[id(t)]
            block.ops.append(self.terminator(term, [env[id(t)] for t in
                                                    region.outputs[:n_term]], mlir_blocks))
        for env, t, i in pending:
            env[id(t)] = shared_values[i]
        fty = FunctionType(tuple(t.type for t in node.inputs),
                           tuple(t.type for t in node.outputs))
        func = Operation("func.func", [], [], properties={
            "sym_name": StringAttr(name), "function_type": TypeAttr(fty),
            "sym_visibility": StringAttr("private")}, regions=[Region(mlir_blocks)])
        self.funcs.append(func)
        return Operation("func.call", operands, results,
                         properties={"callee": SymbolRefAttr(name)})

    @staticmethod
    def rng_op(node: Node, operands: list[Value], results: list[Value]) -> list[Operation]:
        """stablehlo.rng(a, b, shape): its third operand, the result's shape, is a
        constant written just before it (as JAX does)."""
        shape = np.array(node.attrs["shape"], np.int64)
        sv = Value(TensorType(shape.shape, I64))
        const = Operation("stablehlo.constant", [], [sv],
                          properties={"value": DenseAttr(sv.type, shape)})
        dist = _enum("rng_distribution", node.attrs["distribution"])
        return [const, Operation("stablehlo.rng", [*operands, sv], results,
                                 properties={"rng_distribution": dist})]

    @staticmethod
    def terminator(term: tuple, values: list[Value], blocks: list[Block]) -> Operation:
        if term[0] == "return":
            return Operation("func.return", values, [])
        if term[0] == "br":
            return Operation("cf.br", values, [], successors=[blocks[term[1]]])
        _, t, n_t, f, n_f = term
        return Operation("cf.cond_br", values, [], successors=[blocks[t], blocks[f]],
                         properties={"operandSegmentSizes": DenseArrayAttr(
                             I32, (1, n_t, n_f))})


# ---------------------------------------------------------------------------- op spellings

Rule = Any  # (exporter, node) -> (stablehlo op name, properties)


def _plain(ex: _Exporter, node: Node) -> tuple[str, dict]:
    return node.op, {}


def _compare(ex: _Exporter, node: Node) -> tuple[str, dict]:
    props: dict[str, Any] = {"comparison_direction": _enum("comparison_direction",
                                                           node.attrs["direction"])}
    dt = node.inputs[0].type.dtype
    kind = "FLOAT" if dt.is_float else "SIGNED" if dt.kind == "i" else "UNSIGNED"
    if node.attrs.get("total_order"):
        kind = "TOTALORDER"
    if kind == "TOTALORDER" or ex.maybe():
        props["compare_type"] = _enum("comparison_type", kind)
    return "compare", props


def _maybe_ones(ex: _Exporter, props: dict, key: str, values: tuple[int, ...]) -> None:
    """Writes `values` unless they are the default all-ones and a coin says leave out."""
    if any(v != 1 for v in values) or ex.maybe():
        props[key] = _ints(values)


def _maybe_padding(ex: _Exporter, props: dict, pads: tuple) -> None:
    if any(p != (0, 0) for p in pads) or ex.maybe():
        props["padding"] = _padding(pads)


def _slice(ex: _Exporter, node: Node) -> tuple[str, dict]:
    at = node.attrs
    props = {"start_indices": _ints(at["start"]), "limit_indices": _ints(at["limit"])}
    _maybe_ones(ex, props, "strides", at["strides"])
    return "slice", props


def _gather(ex: _Exporter, node: Node) -> tuple[str, dict]:
    at = node.attrs
    dn = _struct("stablehlo.gather", [
        (k, at[k]) for k in ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                             "start_indices_batching_dims", "start_index_map")]
        + [("index_vector_dim", at["index_vector_dim"])])
    props = {"dimension_numbers": dn, "slice_sizes": _ints(at["slice_sizes"])}
    if ex.maybe():
        props["indices_are_sorted"] = BoolAttr(False)
    return "gather", props


def _dot_general(ex: _Exporter, node: Node) -> tuple[str, dict]:
    at = node.attrs
    return "dot_general", {"dot_dimension_numbers": _struct("stablehlo.dot", [
        ("lhs_batching_dimensions", at["lhs_batch"]),
        ("rhs_batching_dimensions", at["rhs_batch"]),
        ("lhs_contracting_dimensions", at["lhs_contract"]),
        ("rhs_contracting_dimensions", at["rhs_contract"])])}


def _convolution(ex: _Exporter, node: Node) -> tuple[str, dict]:
    at = node.attrs
    dn = _struct("stablehlo.conv", [
        ("input_batch_dimension", at["input_batch"]),
        ("input_feature_dimension", at["input_feature"]),
        ("input_spatial_dimensions", at["input_spatial"]),
        ("kernel_input_feature_dimension", at["kernel_input"]),
        ("kernel_output_feature_dimension", at["kernel_output"]),
        ("kernel_spatial_dimensions", at["kernel_spatial"]),
        ("output_batch_dimension", at["output_batch"]),
        ("output_feature_dimension", at["output_feature"]),
        ("output_spatial_dimensions", at["output_spatial"])])
    props: dict[str, Any] = {"dimension_numbers": dn,
                             "feature_group_count": _int(at["feature_group_count"]),
                             "batch_group_count": _int(at["batch_group_count"])}
    _maybe_ones(ex, props, "window_strides", at["strides"])
    _maybe_padding(ex, props, at["padding"])
    _maybe_ones(ex, props, "lhs_dilation", at["lhs_dilation"])
    _maybe_ones(ex, props, "rhs_dilation", at["rhs_dilation"])
    return "convolution", props


def _window(ex: _Exporter, node: Node) -> dict:
    at = node.attrs
    props = {"window_dimensions": _ints(at["window"])}
    _maybe_ones(ex, props, "window_strides", at["strides"])
    if "base_dilations" in at:
        _maybe_ones(ex, props, "base_dilations", at["base_dilations"])
        _maybe_ones(ex, props, "window_dilations", at["window_dilations"])
    _maybe_padding(ex, props, at["padding"])
    return props


def _norm_attrs(node: Node) -> dict:
    return {"epsilon": FloatAttr(float(node.attrs["epsilon"]), F32),
            "feature_index": _int(node.attrs["feature_index"])}


def _cholesky(ex: _Exporter, node: Node) -> tuple[str, dict]:
    # `lower` is optional and false when absent: both spellings of false are written.
    lower = bool(node.attrs["lower"])
    return "cholesky", {} if not lower and ex.maybe() else {"lower": BoolAttr(lower)}


def _scatter(ex: _Exporter, node: Node) -> tuple[str, dict]:
    at = node.attrs
    dn = _struct("stablehlo.scatter", [
        (k, at[k]) for k in ("update_window_dims", "inserted_window_dims", "input_batching_dims",
                             "scatter_indices_batching_dims", "scatter_dims_to_operand_dims")]
        + [("index_vector_dim", at["index_vector_dim"])])
    props: dict[str, Any] = {"scatter_dimension_numbers": dn}
    for k in ("indices_are_sorted", "unique_indices"):
        if at[k] or ex.maybe():
            props[k] = BoolAttr(at[k])
    return "scatter", props


_RULES: dict[str, Rule] = {
    **{op: _plain for op in (
        "abs", "negate", "sign", "exponential", "exponential_minus_one", "log", "log_plus_one",
        "logistic", "sqrt", "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan", "floor", "ceil",
        "round_nearest_afz", "round_nearest_even", "not", "popcnt", "count_leading_zeros",
        "is_finite", "add", "subtract", "multiply", "divide", "remainder", "maximum",
        "minimum", "power", "atan2", "and", "or", "xor", "shift_left",
        "shift_right_arithmetic", "shift_right_logical", "select", "clamp", "convert",
        "reshape", "dynamic_update_slice", "while", "if", "case", "complex", "real", "imag",
        "bitcast_convert")},
    # CHLO's functions, which the importer makes the graph ops of the same name.
    **{op: (lambda ex, n: (f"chlo.{n.op}", {})) for op in (
        "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin", "acos", "atan",
        "sinh", "cosh", "asinh", "acosh", "atanh", "next_after", "zeta", "polygamma")},
    "compare": _compare,
    "broadcast_in_dim": lambda ex, n: ("broadcast_in_dim",
                                       {"broadcast_dimensions": _ints(n.attrs["dims"])}),
    "transpose": lambda ex, n: ("transpose", {"permutation": _ints(n.attrs["permutation"])}),
    "reverse": lambda ex, n: ("reverse", {"dimensions": _ints(n.attrs["dims"])}),
    "concatenate": lambda ex, n: ("concatenate", {"dimension": _int(n.attrs["dimension"])}),
    "slice": _slice,
    "pad": lambda ex, n: ("pad", {"edge_padding_low": _ints(n.attrs["low"]),
                                  "edge_padding_high": _ints(n.attrs["high"]),
                                  "interior_padding": _ints(n.attrs["interior"])}),
    "iota": lambda ex, n: ("iota", {"iota_dimension": _int(n.attrs["dimension"])}),
    "constant": lambda ex, n: ("constant", {"value": DenseAttr(n.output.type,
                                                               np.asarray(n.attrs["value"]))}),
    "gather": _gather,
    "dynamic_slice": lambda ex, n: ("dynamic_slice", {"slice_sizes": _ints(
        n.attrs["slice_sizes"])}),
    "dot_general": _dot_general,
    "convolution": _convolution,
    "reduce": lambda ex, n: ("reduce", {"dimensions": _ints(n.attrs["dims"])}),
    "reduce_region": lambda ex, n: ("reduce", {"dimensions": _ints(n.attrs["dims"])}),
    "reduce_window": lambda ex, n: ("reduce_window", _window(ex, n)),
    "reduce_window_region": lambda ex, n: ("reduce_window", _window(ex, n)),
    "select_and_scatter": lambda ex, n: ("select_and_scatter", _window(ex, n)),
    "batch_norm_inference": lambda ex, n: ("batch_norm_inference", {
        "epsilon": FloatAttr(float(n.attrs["epsilon"]), F32),
        "feature_index": _int(n.attrs["feature_index"])}),
    "batch_norm_training": lambda ex, n: ("batch_norm_training", _norm_attrs(n)),
    "batch_norm_grad": lambda ex, n: ("batch_norm_grad", _norm_attrs(n)),
    "cholesky": _cholesky,
    "triangular_solve": lambda ex, n: ("triangular_solve", {
        **{key: BoolAttr(bool(n.attrs[key])) for key in ("left_side", "lower",
                                                          "unit_diagonal")},
        "transpose_a": _enum("transpose", n.attrs["transpose_a"])}),
    "sort": lambda ex, n: ("sort", {"dimension": _int(n.attrs["dimension"]),
                                    "is_stable": BoolAttr(bool(n.attrs["is_stable"]))}),
    "map": lambda ex, n: ("map", {"dimensions": _ints(n.attrs["dimensions"])}),
    "scatter": _scatter,
    "fft": lambda ex, n: ("fft", {"fft_type": _enum("fft_type", n.attrs["fft_type"]),
                                  "fft_length": _ints(n.attrs["fft_length"])}),
    "rng_bit_generator": lambda ex, n: ("rng_bit_generator", {
        "rng_algorithm": _enum("rng_algorithm", n.attrs["algorithm"])}),
}


def graph_to_mlir(graph: Graph, seed: int = 0) -> str:
    """`graph` as a StableHLO module (function @main) in generic form. Raises
    NotExpressible when an op has no StableHLO spelling."""
    ex = _Exporter(random.Random(seed))
    main = ex.function("main", graph)
    module = Operation("builtin.module", [], [], regions=[Region([Block([], [main,
                                                                              *ex.funcs])])])
    return print_generic(module)


# ---------------------------------------------------------------------------- comparison


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":  # bit for bit: -0.0 and NaN payloads too
            return a.tobytes() == b.tobytes()
        return bool(np.array_equal(a, b))
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b or (isinstance(a, int | float) and
                                            isinstance(b, int | float) and a == b)


def graph_diff(a: Graph, b: Graph, bound: dict[int, Tensor] | None = None,
               where: str = "") -> str | None:
    """Where `b` first differs from `a`, or None. `bound` maps tensors of `a` already
    matched (a region's captures) to tensors of `b`."""
    m: dict[int, Tensor] = dict(bound or {})
    if len(a.inputs) != len(b.inputs):
        return f"{where}{len(a.inputs)} inputs, imported {len(b.inputs)}"
    for i, (x, y) in enumerate(zip(a.inputs, b.inputs)):
        if x.type != y.type:
            return f"{where}input {i}: {x.type}, imported {y.type}"
        m.setdefault(id(x), y)
    if len(a.nodes) != len(b.nodes):
        ops_a = [n.op for n in a.nodes]
        ops_b = [n.op for n in b.nodes]
        return f"{where}nodes {ops_a}, imported {ops_b}"
    for k, (na, nb) in enumerate(zip(a.nodes, b.nodes)):
        at = f"{where}node {k} ({na.op})"
        if na.op != nb.op:
            return f"{at}: imported as {nb.op}"
        if set(na.attrs) != set(nb.attrs) or not all(
                _same_value(na.attrs[key], nb.attrs[key]) for key in na.attrs):
            return f"{at}: attributes {na.attrs}, imported {nb.attrs}"
        if [t.type for t in na.outputs] != [t.type for t in nb.outputs]:
            return f"{at}: result types differ"
        split = operand_split(na)
        if len(na.inputs) != len(nb.inputs):
            return f"{at}: {len(na.inputs)} operands, imported {len(nb.inputs)}"
        for i, (x, y) in enumerate(zip(na.inputs[:split], nb.inputs[:split])):
            if m.get(id(x)) is not y:
                return f"{at}: operand {i} is not the same value"
        caps_b = list(nb.inputs[split:])
        order = []
        for x in na.inputs[split:]:
            hits = [j for j, y in enumerate(caps_b) if m.get(id(x)) is y]
            if not hits:
                return f"{at}: a captured value is not captured by the import"
            order.append(hits[0])
        n_caps = len(caps_b)
        for r, (ra, rb) in enumerate(zip(na.regions, nb.regions)):
            n_args = len(ra.inputs) - n_caps
            if na.op == "cfg":
                bound_r = {}  # cfg blocks: inputs compared in order
            else:
                bound_r = {id(ra.inputs[n_args + i]): rb.inputs[n_args + j]
                           for i, j in enumerate(order)}
                ra = Graph(ra.name, ra.inputs[:n_args], ra.outputs, ra.nodes)
                rb = Graph(rb.name, rb.inputs[:n_args], rb.outputs, rb.nodes)
            diff = graph_diff(ra, rb, bound_r, f"{at} region {r}: ")
            if diff is not None:
                return diff
        for x, y in zip(na.outputs, nb.outputs):
            m[id(x)] = y
    for i, (x, y) in enumerate(zip(a.outputs, b.outputs)):
        if m.get(id(x)) is not y:
            return f"{where}output {i} is not the same value"
    if len(a.outputs) != len(b.outputs):
        return f"{where}{len(a.outputs)} outputs, imported {len(b.outputs)}"
    return None
