"""StableHLO (+ func, arith, and the dialects it hands on) op tree -> Graph: the importer.

The importer walks the entry function, inlines calls and converts each op: through the
converter table (frontend/stablehlo_ops.py) when it becomes one graph op, else through
the expanders of CHLO (chlo.py), TOSA (tosa/) and the rest (stablehlo_misc.py,
stablehlo_quant.py). Problems are collected over the whole module, so a model with
several unsupported ops or dynamic shapes is reported in one go.

This file is the top of the frontend: the region and block importers (regions.py,
cfg.py) and the converters it calls never import it back, they work through the
importer object they are handed (its `graph`, `lookup`, `convert` and `error`).
"""

from __future__ import annotations

from typing import Any

from toolchain.diagnostics import CompileError, ErrorCollector, raise_all
from toolchain.frontend import tosa
from toolchain.frontend.cfg import import_cfg
from toolchain.frontend.chlo import CHLO_EXPANDERS, ChloError, expand_chlo
from toolchain.frontend.chlo import UNSUPPORTED as CHLO_UNSUPPORTED
from toolchain.frontend.dominance import dominance_errors
from toolchain.frontend.regions import RegionScope, capture, import_regions
from toolchain.frontend.stablehlo_complex_bitcast import expand_complex_bitcast
from toolchain.frontend.stablehlo_complex_solve import expand_complex_triangular_solve
from toolchain.frontend.stablehlo_dynamic import DYNAMIC_FORMS, DynamicError
from toolchain.frontend.stablehlo_misc import MISC_EXPANDERS, expand_misc
from toolchain.frontend.stablehlo_ops import CONVERTERS, EXPANSIONS, KEPT_OPERANDS, Unsupported
from toolchain.frontend.stablehlo_quant import (
    LAYOUT_OPS,
    QUANT_CONVERTERS,
    QuantError,
    is_quantized,
)
from toolchain.frontend.stablehlo_scan import SCAN_EXPANDERS
from toolchain.frontend.stablehlo_tuples import flatten_tuples
from toolchain.frontend.types import UNKNOWN, as_tensor_type, func_type, known_or_unknown, sym
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import COMPLEX_OPS, OPS, ShapeError
from toolchain.graph.sources import Source, tag_new
from toolchain.graph.verify import tensor_type_error, verify_node
from toolchain.mlir.ir import Operation, SymbolRefAttr
from toolchain.types import TensorType

# Ops that only change how a value is typed, tensor<T> <-> T: a branch condition is an
# i1, a StableHLO value a tensor<i1>, and the graph holds scalars as rank-0 tensors.
SCALAR_VIEWS = ("builtin.unrealized_conversion_cast", "tensor.extract", "tensor.from_elements")


# ------------------------------------------------------------------ the importer


# Element types the parser reads but the backends cannot hold, with the reason. Every
# other type of toolchain.types.DTYPES runs end to end (tests/e2e/test_dtypes.py checks
# that each has a module type and an I/O layout).
UNSUPPORTED_DTYPES: dict[str, str] = {}


def _dtype_problem(t: TensorType | None) -> str | None:
    """Why tensors of t's element type cannot be compiled, or None."""
    reason = None if t is None else UNSUPPORTED_DTYPES.get(t.dtype.name)
    if reason is None:
        return None
    return f"has element type '{t.dtype}', which is not supported ({reason})"



# Calls are inlined by recursion, one level per nested call: deeper chains are refused
# with an error rather than left to Python's recursion limit (exported models nest a few).
MAX_CALL_DEPTH = 100

# Graph ops whose complex form the importer writes as real ops on the parts.
COMPLEX_EXPANSIONS = {"bitcast_convert": expand_complex_bitcast,
                      "triangular_solve": expand_complex_triangular_solve}


class _Importer:
    def __init__(self, funcs: dict[str, Operation]):
        self.funcs = funcs
        # Errors inside an inlined call remember its call site: one error per op, in
        # source order, however many places call its function (raise_all merges).
        self.errors = ErrorCollector()
        self.graph: Graph | None = None
        # The regions being imported, by id of their env (frontend/regions.py).
        self.region_scopes: dict[int, RegionScope] = {}
        # Ops expanded so far (EXPANSIONS): each rng op draws from its own key.
        self.expanded = 0

    def error(self, message: str, op: Operation) -> None:
        self.errors.append(CompileError(message, op.loc))

    def inline(self, func: Operation, args: list[Tensor], stack: list[str]) -> list[Tensor]:
        assert self.graph is not None
        body = func.regions[0].blocks[0] if func.regions and func.regions[0].blocks else None
        if body is None:
            self.error(f"function '@{sym(func)}' has no body", func)
            return []
        if len(func.regions[0].blocks) > 1:  # cf.br / cf.cond_br: frontend/cfg.py
            return import_cfg(self, func, args, stack, sym(func))
        env: dict[int, Tensor] = {id(a): t for a, t in zip(body.args, args)}
        for op in body.ops:
            if op.name in ("func.return", "stablehlo.return"):
                got = tuple(v.type for v in op.operands)
                want = func_type(func).results
                if got != want:
                    self.error(f"'@{sym(func)}' returns {_types(got)} but its signature "
                               f"declares {_types(want)}", op)
                return [self.lookup(env, v) for v in op.operands]
            graph, start = self.graph, len(self.graph.nodes)
            outs = self.convert(op, [self.lookup(env, v) for v in op.operands], stack, env)
            if op.loc_name:  # the model's own name for the nodes the op became
                tag_new(graph, start, Source(op.loc_name, f"mlir {op.name} at {op.loc}"))
            for r, t in zip(op.results, outs):
                env[id(r)] = t
        self.error(f"function '@{sym(func)}' does not end in a return", func)
        return []

    def lookup(self, env: dict[int, Tensor], v: Any) -> Tensor:
        t = env.get(id(v))
        if t is None:  # a region's capture (frontend/regions.py)
            t = capture(self.region_scopes, env, v)
        if t is None:  # a value from an op that failed to convert, or from an outer scope
            t = env[id(v)] = Tensor(known_or_unknown(v.type))
        return t

    def convert(self, op: Operation, inputs: list[Tensor], stack: list[str],
                env: dict[int, Tensor] | None = None) -> list[Tensor]:
        """The graph tensors of `op`'s results; `env` is the scope it sits in (its
        regions may capture values from there)."""
        assert self.graph is not None
        dummies = [Tensor(known_or_unknown(r.type)) for r in op.results]
        if op.name in ("func.call", "call"):
            return self.call(op, inputs, stack) or dummies
        if op.name in DYNAMIC_FORMS:  # constant shape operands: the static op instead
            try:
                static, kept = DYNAMIC_FORMS[op.name](op, inputs)
            except DynamicError as e:
                self.error(f"'{op.name}' {e}", op)
                return dummies
            return self.convert(static, kept, stack, env)
        if op.name in SCAN_EXPANDERS:  # chlo.scan, unrolled: frontend/stablehlo_scan.py
            return SCAN_EXPANDERS[op.name](self, op, inputs, stack, env) or dummies
        if op.name in tosa.CONVERTERS:  # a TOSA op may expand into several graph nodes
            return self.expand_tosa(op, inputs, env or {}, stack) or dummies
        types = [as_tensor_type(v.type) for v in list(op.operands) + list(op.results)]
        if op.name in SCALAR_VIEWS and len(types) == 2 and types[0] == types[1] is not None:
            return inputs  # a rank-0 tensor seen as its scalar or back: the same value
        bad = [t for t in types if t is None or not t.is_static]
        converter = CONVERTERS.get(op.name)
        expander = op.name in CHLO_EXPANDERS or op.name in MISC_EXPANDERS
        if converter is None and not expander:
            why = CHLO_UNSUPPORTED.get(op.name)
            self.error(f"unsupported op '{op.name}'" + (f" ({why})" if why else ""), op)
            return dummies
        if bad:
            what = "a non-tensor type" if bad[0] is None else f"a dynamic shape ({bad[0]})"
            self.error(f"'{op.name}' has {what}; minirt needs static shapes", op)
            return dummies
        # Operands are results of earlier ops or arguments, which are checked there.
        problem = next(filter(None, map(_dtype_problem, types[len(op.operands):])), None)
        if problem is not None:
            self.error(f"'{op.name}' result {problem}", op)
            return dummies
        if op.name in MISC_EXPANDERS:  # stablehlo_misc.py: graph ops, a constant, a call
            return expand_misc(self, op, inputs, stack) or dummies
        if converter is None:  # a CHLO op: frontend/chlo.py adds its nodes
            try:
                return expand_chlo(GraphBuilder(self.graph, op.loc), op, inputs)
            except ChloError as e:
                self.error(f"'{op.name}' {e}", op)
                return dummies
        try:
            gop, attrs = converter(op)
        except Unsupported as e:
            self.error(f"'{op.name}': {e}", op)
            return dummies
        results = [t for t in types[len(op.operands):]]
        if gop in COMPLEX_EXPANSIONS and any(t.dtype.is_complex for t in types):
            try:  # real graph ops (stablehlo_complex_bitcast.py, _complex_solve.py)
                return COMPLEX_EXPANSIONS[gop](GraphBuilder(self.graph, op.loc), inputs,
                                               attrs)
            except ShapeError as e:
                self.error(f"'{op.name}': {e}", op)
                return dummies
        if gop not in COMPLEX_OPS and any(t.dtype.is_complex for t in types):
            self.error(f"'{op.name}' does not take complex values in minirt (the ops that "
                       "do: docs/ops.md)", op)
            return dummies
        inputs = inputs[:KEPT_OPERANDS.get(gop, len(inputs))]
        if gop in EXPANSIONS:
            try:  # checked as one node first: the expansion assumes a well-typed op
                OPS[gop].infer(Node(gop, inputs, [], attrs, op.loc))
            except ShapeError as e:
                self.error(f"'{op.name}': {e}", op)
                return dummies
            self.expanded += 1
            return EXPANSIONS[gop](GraphBuilder(self.graph, op.loc), inputs, attrs,
                                   self.expanded)
        regions: list[Graph] = []
        if gop in OPS and OPS[gop].regions != 0:
            regions, captures = import_regions(self, op, env or {}, stack)
            inputs = inputs + captures
        if is_quantized(types) or gop.startswith("uniform_"):
            quantized = self.quantized(op, gop, attrs, inputs, types)
            if quantized is not None:
                return quantized
            if gop not in LAYOUT_OPS:
                return dummies
        node = self.graph.add(gop, inputs, results, attrs, op.loc, regions)
        err = verify_node(node)
        if err is not None:
            self.errors.append(err)
        return node.outputs

    def expand_tosa(self, op: Operation, inputs: list[Tensor], env: dict[int, Tensor],
                    stack: list[str]) -> list[Tensor] | None:
        """A TOSA op's result tensors (toolchain/frontend/tosa), or None after an error;
        `env` is the scope it sits in (cond_if / while_loop regions capture from it)."""
        assert self.graph is not None
        try:
            return tosa.expand(GraphBuilder(self.graph, op.loc), op, inputs,
                               tosa.Scope(self, env, stack))
        except tosa.TosaError as e:
            self.error(f"'{op.name}': {e}", op)
            return None

    def quantized(self, op: Operation, gop: str, attrs: dict, inputs: list[Tensor],
                  types: list[TensorType]) -> list[Tensor] | None:
        """An op on `!quant.uniform` types (stablehlo_quant.py): its int8 graph, or None
        when the plain op applies to the stored integers (or an error was recorded)."""
        assert self.graph is not None
        results = types[len(op.operands):]
        if gop in QUANT_CONVERTERS:
            try:
                out = QUANT_CONVERTERS[gop](GraphBuilder(self.graph, op.loc), inputs,
                                            results[0], attrs)
            # The builder raises ShapeError when the op's own operands are ill-typed
            # (a uniform_quantize of booleans): an error in the model, at the op.
            except (QuantError, ValueError, ShapeError) as e:
                self.error(f"'{op.name}': {e}", op)
                return None
            if out.type != results[0]:
                self.error(f"'{op.name}' computes {out.type}, not the declared {results[0]}",
                           op)
            return [out]
        if gop not in LAYOUT_OPS:
            self.error(f"'{op.name}' on quantized types is not supported", op)
            return None
        quants = {t.quant for t in types if t.quant is not None}
        if len(quants) > 1 or any(t.quant is None and t.dtype.is_float for t in types):
            self.error(f"'{op.name}' on quantized types needs one quantization for every "
                       "operand and result", op)
        return None

    def call(self, op: Operation, inputs: list[Tensor], stack: list[str]) -> list[Tensor] | None:
        callee = op.attr("callee")
        name = callee.name if isinstance(callee, SymbolRefAttr) else ""
        func = self.funcs.get(name)
        if func is None:
            self.error(f"call to unknown function '@{name}'", op)
            return None
        if name in stack:
            self.error(f"recursive call to '@{name}' cannot be inlined", op)
            return None
        if len(stack) > MAX_CALL_DEPTH:  # inlining recurses once per level
            self.error(f"calls nested more than {MAX_CALL_DEPTH} deep cannot be inlined", op)
            return None
        fty = func_type(func)
        if tuple(v.type for v in op.operands) != fty.inputs:
            self.error(f"call arguments do not match the signature of '@{name}'", op)
            return None
        if tuple(r.type for r in op.results) != fty.results:
            self.error(f"call results {_types(r.type for r in op.results)} do not match the "
                       f"signature of '@{name}' ({_types(fty.results)})", op)
            return None
        with self.errors.called_from(f"'@{name}' is called here", op.loc):
            outs = self.inline(func, inputs, stack + [name])
        return outs if len(outs) == len(op.results) else None


def _types(types: Any) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"




def import_module(module: Operation, entry: str = "main") -> Graph:
    """Builds the Graph of function `entry`, inlining every call. Raises CompileError
    listing every unsupported op, dynamic shape and ill-formed op in what it reaches."""
    funcs: dict[str, Operation] = {}
    for region in module.regions:
        for block in region.blocks:
            for op in block.ops:
                if op.name == "func.func":
                    if sym(op) in funcs:
                        raise CompileError(f"redefinition of function '@{sym(op)}'", op.loc)
                    funcs[sym(op)] = op
    func = funcs.get(entry)
    if func is None:
        have = ", ".join(f"@{n}" for n in funcs) or "none"
        raise CompileError(f"no function '@{entry}' in the module (functions: {have})",
                           module.loc)
    # A use no definition dominates would read memory nobody wrote: refused before
    # anything is imported (frontend/dominance.py).
    raise_all(dominance_errors(module))
    # Tuples are resolved into their elements first (frontend/stablehlo_tuples.py).
    funcs, tuple_errors = flatten_tuples(funcs, entry)
    func = funcs[entry]
    importer = _Importer(funcs)
    importer.errors.extend(tuple_errors)
    graph = importer.graph = Graph(entry)
    fty = func_type(func)
    for i, t in enumerate(fty.inputs):
        tt = as_tensor_type(t)
        if tt is None or not tt.is_static:
            importer.error(f"argument {i} of '@{entry}' has type '{t}'; minirt needs static "
                           "tensor shapes", func)
            tt = UNKNOWN
        elif (problem := tensor_type_error(tt)) is not None:
            importer.error(f"argument {i} of '@{entry}': {problem}", func)
        if (unsupported := _dtype_problem(tt)) is not None:
            importer.error(f"argument {i} of '@{entry}' {unsupported}", func)
        graph.add_input(tt)
    graph.outputs = importer.inline(func, list(graph.inputs), [entry])
    raise_all(importer.errors)
    return graph
