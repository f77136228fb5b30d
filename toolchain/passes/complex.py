"""Complex tensors -> pairs of real tensors, the last graph rewrite before scheduling.

The graph carries complex<f32> / complex<f64> tensors from import to here, so the
verifier, constant folding and the reference executor (numpy's complex arithmetic, the
oracle) see the model's own ops. The backends never see a complex value: this pass gives
each complex tensor two real tensors of its shape (its real and imaginary parts, a
*planar* pair) and each op on complex values the real ops that compute it (a multiply
becomes four multiplies and two adds; docs/architecture.md, "Complex numbers and FFT",
argues the choice). Fusion then merges those real ops like any others.

At the model's boundary a complex tensor of shape S is a real tensor of shape S + (2,)
(numpy's interleaved layout: real part first): `complex_io` converts arrays between the
two views on the host.

Which ops take complex values is the table RULES, the same set as graph/ops.py's
COMPLEX_OPS: the importer refuses complex tensors in any other op, so every graph that
gets here can be rewritten. The arithmetic on pairs the rules use is
passes/complex_arith.py (shared with passes/fft.py; its names are importable from here
too), and the transcendental functions, power, atan2 and the lexicographic maximum /
minimum are passes/complex_math.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.passes import complex_math
from toolchain.passes.complex_arith import (
    Pair,
    Value,
    cabs,
    cadd,
    cdiv,
    cexp,
    clog,
    cmul,
    csign,
    csqrt,
    csub,
    splat_like,
)
from toolchain.passes.fft import fft
from toolchain.passes.fold import fold_constants
from toolchain.types import TensorType, complex_part

# ------------------------------------------------------------------ the op rules

Rule = Callable[[GraphBuilder, Node, list[Value]], list[Value]]


def _each_part(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    """An op that moves elements (reshape, slice, gather, ...) applied to each part,
    with its real operands (indices) unchanged."""
    outs: list[Value] = []
    parts = []
    for which in ("re", "im"):
        inputs = [getattr(a, which) if isinstance(a, Pair) else a for a in args]
        types = [TensorType(t.type.shape, complex_part(t.type.dtype)) for t in node.outputs]
        parts.append(b.graph.add(node.op, inputs, types, dict(node.attrs), node.loc).outputs)
    for re, im, t in zip(*parts, node.outputs):
        outs.append(Pair(re, im) if t.type.dtype.is_complex else re)
    return outs


def _pad(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    x, value = args
    assert isinstance(x, Pair) and isinstance(value, Pair)
    return [Pair(b.op("pad", [x.re, value.re], **node.attrs),
                 b.op("pad", [x.im, value.im], **node.attrs))]


def _select(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    p, x, y = args
    assert isinstance(x, Pair) and isinstance(y, Pair) and isinstance(p, Tensor)
    return [Pair(b.op("select", [p, x.re, y.re]), b.op("select", [p, x.im, y.im]))]


def _compare(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    x, y = args
    assert isinstance(x, Pair) and isinstance(y, Pair)
    d = node.attrs["direction"]
    re = b.op("compare", [x.re, y.re], direction=d)
    im = b.op("compare", [x.im, y.im], direction=d)
    return [b.op("and" if d == "EQ" else "or", [re, im])]


def _convert(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    """Complex -> complex converts both parts; real -> complex gives a zero imaginary
    part; complex -> anything else converts the real part (the spec: the imaginary part
    is ignored, so 0 + 1i is false)."""
    (x,) = args
    out = node.output.type.dtype
    if out.is_complex:
        part = complex_part(out)
        if isinstance(x, Pair):
            return [Pair(b.op("convert", [x.re], dtype=part.name),
                         b.op("convert", [x.im], dtype=part.name))]
        re = b.op("convert", [x], dtype=part.name)
        return [Pair(re, splat_like(b, 0.0, re))]
    assert isinstance(x, Pair)
    return [b.op("convert", [x.re], dtype=out.name)]


def _complex(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    re, im = args
    assert isinstance(re, Tensor) and isinstance(im, Tensor)
    return [Pair(re, im)]


def _real(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    (x,) = args
    return [x.re if isinstance(x, Pair) else x]


def _imag(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    (x,) = args
    return [x.im if isinstance(x, Pair) else splat_like(b, 0.0, x)]


def _constant(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    value = np.asarray(node.attrs["value"])
    part = complex_part(node.output.type.dtype)
    shape = tuple(node.output.type.shape)
    return [Pair(b.const(value.real.reshape(shape), part), b.const(value.imag.reshape(shape),
                                                                    part))]


def _iota(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    """A complex iota: the real iota of the part type, with a zero imaginary part."""
    part = complex_part(node.output.type.dtype)
    re = b.op("iota", [], dimension=node.attrs["dimension"], shape=tuple(node.attrs["shape"]),
              dtype=part.name)
    return [Pair(re, splat_like(b, 0.0, re))]


def _fft(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    return [fft(b, args[0], node.attrs["fft_type"], tuple(node.attrs["fft_length"]))]


def _unary(f: Callable[[GraphBuilder, Pair], Value]) -> Rule:
    def rule(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
        (x,) = args
        assert isinstance(x, Pair)
        return [f(b, x)]

    return rule


def _binary(f: Callable[[GraphBuilder, Pair, Pair], Pair]) -> Rule:
    def rule(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
        x, y = args
        assert isinstance(x, Pair) and isinstance(y, Pair)
        return [f(b, x, y)]

    return rule


RULES: dict[str, Rule] = {
    "add": _binary(cadd), "subtract": _binary(csub), "multiply": _binary(cmul),
    "divide": _binary(cdiv),
    "negate": _unary(lambda b, z: Pair(b.op("negate", [z.re]), b.op("negate", [z.im]))),
    "abs": _unary(cabs), "exponential": _unary(cexp), "log": _unary(clog),
    "sqrt": _unary(csqrt), "sign": _unary(csign),
    **{op: _unary(f) for op, f in complex_math.UNARY.items()},
    **{op: _binary(f) for op, f in complex_math.BINARY.items()},
    "compare": _compare, "select": _select, "convert": _convert, "iota": _iota,
    "complex": _complex, "real": _real, "imag": _imag, "constant": _constant, "fft": _fft,
    "pad": _pad,
    **{op: _each_part for op in ("reshape", "transpose", "slice", "reverse",
                                 "broadcast_in_dim", "concatenate", "dynamic_slice",
                                 "dynamic_update_slice", "gather")},
}


def _involves_complex(node: Node) -> bool:
    return any(t.type.dtype.is_complex for t in (*node.inputs, *node.outputs)) or \
        node.op in ("real", "imag", "fft")


def has_complex(graph: Graph) -> bool:
    """Whether any tensor of graph (regions excluded: they never hold complex values)
    or the fft op appears."""
    return any(t.type.dtype.is_complex for t in graph.inputs) or any(
        _involves_complex(n) for n in graph.nodes)


# ------------------------------------------------------------------ the pass


def lower_complex(graph: Graph) -> Graph:
    """A graph computing the same outputs with real tensors only (graph itself when it
    has no complex tensor): each complex input or output of shape S becomes a real
    tensor of shape S + (2,), the real part first. Raises ValueError on a node whose op
    has no rule, which the importer's check makes a compiler bug."""
    if not has_complex(graph):
        return graph
    out = Graph(graph.name, input_names=list(graph.input_names), states=list(graph.states))
    b = GraphBuilder(out)
    env: dict[int, Value] = {}
    for t in graph.inputs:
        dt = t.type.dtype
        if not dt.is_complex:
            env[id(t)] = out.add_input(t.type, t.name)
            continue
        shape = tuple(t.type.shape)
        x = out.add_input(TensorType(shape + (2,), complex_part(dt)), t.name)
        env[id(t)] = Pair(*(b.op("reshape", [b.op("slice", [x], start=(0,) * len(shape) + (k,),
                                                  limit=shape + (k + 1,),
                                                  strides=(1,) * (len(shape) + 1))],
                                 shape=shape) for k in (0, 1)))
    for node in graph.nodes:
        args = [env[id(t)] for t in node.inputs]
        b.loc = node.loc
        if not _involves_complex(node):
            copy = out.add(node.op, args, [t.type for t in node.outputs],  # type: ignore
                           dict(node.attrs), node.loc, node.regions)
            results: Sequence[Value] = copy.outputs
        else:
            rule = RULES.get(node.op)
            if rule is None:
                raise ValueError(f"'{node.op}' on complex values has no lowering")
            results = rule(b, node, args)
        for t, v in zip(node.outputs, results, strict=True):
            env[id(t)] = v
    outputs = []
    for t in graph.outputs:
        v = env[id(t)]
        if isinstance(v, Pair):
            shape = v.shape
            halves = [b.op("reshape", [p], shape=shape + (1,)) for p in (v.re, v.im)]
            v = b.op("concatenate", halves, dimension=len(shape))
        outputs.append(v)
    out.outputs = outputs
    return fold_constants(out)  # the parts nobody reads (an IFFT's imaginary part) go


# ------------------------------------------------------------------ host arrays


def complex_io(arrays: Sequence[np.ndarray], tensors: Sequence[Tensor]) -> list[np.ndarray]:
    """The model's view of arrays a firmware wrote for `tensors` (a graph's outputs): a
    complex tensor of shape S comes as the real array of shape S + (2,) holding its
    parts interleaved, and becomes the complex array again."""
    out = []
    for x, t in zip(arrays, tensors):
        x = np.asarray(x)
        if t.type.dtype.is_complex and not np.iscomplexobj(x) and x.shape[-1:] == (2,):
            z = np.empty(x.shape[:-1], t.type.dtype.np_dtype)
            z.real, z.imag = x[..., 0], x[..., 1]
            x = z
        out.append(x)
    return out


__all__ = ["Pair", "RULES", "cabs", "cadd", "cdiv", "cexp", "clog", "cmul",
           "complex_io", "csign", "csqrt", "csub", "has_complex", "lower_complex"]
