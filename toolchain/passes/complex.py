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
gets here can be rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.types import DType, TensorType, complex_part, dtype


@dataclass(frozen=True)
class Pair:
    """A complex value as its real and imaginary parts, two real tensors of one shape."""

    re: Tensor
    im: Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.re.type.shape)

    @property
    def part(self) -> DType:
        return self.re.type.dtype


Value = Tensor | Pair


# ------------------------------------------------------------------ complex arithmetic
#
# Written over Pairs with a GraphBuilder, so the FFT (passes/fft.py) and the op rules
# below share them.


def cadd(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    return Pair(b.op("add", [x.re, y.re]), b.op("add", [x.im, y.im]))


def csub(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    return Pair(b.op("subtract", [x.re, y.re]), b.op("subtract", [x.im, y.im]))


def cmul(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    """(a + bi)(c + di) = (ac - bd) + (ad + bc)i, as numpy computes it."""
    re = b.op("subtract", [b.op("multiply", [x.re, y.re]), b.op("multiply", [x.im, y.im])])
    im = b.op("add", [b.op("multiply", [x.re, y.im]), b.op("multiply", [x.im, y.re])])
    return Pair(re, im)


def cdiv(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    """Smith's division, as numpy computes it: the ratio of the divisor's smaller part to
    its larger one keeps the intermediate products in range (the textbook
    (ac + bd) / (c^2 + d^2) overflows for |y| > 2**64 in f32). Both branches are
    computed and one selected; a zero divisor gives inf / NaN like IEEE division."""
    a, c = x, y
    ar, ai = b.op("abs", [c.re]), b.op("abs", [c.im])
    real_big = b.op("compare", [ar, ai], direction="GE")
    # |c.re| >= |c.im|: r = d / c, s = 1 / (c + d r): ((a + b r) s, (b - a r) s).
    r1 = b.op("divide", [c.im, c.re])
    s1 = b.op("divide", [_splat_like(b, 1.0, c.re), b.op("add", [c.re, b.op("multiply",
                                                                               [c.im, r1])])])
    re1 = b.op("multiply", [b.op("add", [a.re, b.op("multiply", [a.im, r1])]), s1])
    im1 = b.op("multiply", [b.op("subtract", [a.im, b.op("multiply", [a.re, r1])]), s1])
    # Both parts zero: numpy divides by |c.re| itself (inf or NaN, never a 0/0 ratio).
    zero = b.op("compare", [ar, _splat_like(b, 0.0, ar)], direction="EQ")
    both_zero = b.op("and", [zero, b.op("compare", [ai, _splat_like(b, 0.0, ai)],
                                        direction="EQ")])
    re1 = b.op("select", [both_zero, b.op("divide", [a.re, ar]), re1])
    im1 = b.op("select", [both_zero, b.op("divide", [a.im, ar]), im1])
    # |c.im| > |c.re|: r = c / d, s = 1 / (d + c r): ((a r + b) s, (b r - a) s).
    r2 = b.op("divide", [c.re, c.im])
    s2 = b.op("divide", [_splat_like(b, 1.0, c.re), b.op("add", [c.im, b.op("multiply",
                                                                               [c.re, r2])])])
    re2 = b.op("multiply", [b.op("add", [b.op("multiply", [a.re, r2]), a.im]), s2])
    im2 = b.op("multiply", [b.op("subtract", [b.op("multiply", [a.im, r2]), a.re]), s2])
    return Pair(b.op("select", [real_big, re1, re2]), b.op("select", [real_big, im1, im2]))


def cabs(b: GraphBuilder, z: Pair) -> Tensor:
    """|z| without overflow or underflow in the squares: big * sqrt(1 + (small/big)^2),
    0 for 0, +inf when a part is infinite (even if the other is NaN, as C's hypot)."""
    ax, ay = b.op("abs", [z.re]), b.op("abs", [z.im])
    big, small = b.op("maximum", [ax, ay]), b.op("minimum", [ax, ay])
    zero = _splat_like(b, 0.0, big)
    ratio = b.op("divide", [small, big])
    one = _splat_like(b, 1.0, big)
    r = b.op("multiply", [big, b.op("sqrt", [b.op("add", [one, b.op("multiply",
                                                                      [ratio, ratio])])])])
    r = b.op("select", [b.op("compare", [big, zero], direction="EQ"), zero, r])
    inf = _splat_like(b, np.inf, big)
    is_inf = b.op("or", [b.op("compare", [ax, inf], direction="EQ"),
                         b.op("compare", [ay, inf], direction="EQ")])
    return b.op("select", [is_inf, inf, r])


def _splat_like(b: GraphBuilder, value: float, like: Tensor) -> Tensor:
    return b.splat(value, like.type.dtype, tuple(like.type.shape))


def _signbit(b: GraphBuilder, x: Tensor) -> Tensor:
    """x's sign bit (true for -0.0 too): its bits as a signed integer, below zero."""
    bits = dtype({"f32": "i32", "f64": "i64"}[x.type.dtype.name])
    ints = b.op("bitcast_convert", [x], dtype=bits.name, shape=tuple(x.type.shape))
    return b.op("compare", [ints, b.splat(0, bits, tuple(x.type.shape))], direction="LT")


def csqrt(b: GraphBuilder, z: Pair) -> Pair:
    """The principal square root (the branch cut on the negative reals, the imaginary
    part's sign kept): t = sqrt((|z| + |re|) / 2); re >= 0: (t, im / 2t); re < 0:
    (|im| / 2t, t with im's sign). sqrt(+-0 + 0i) = (0, the imaginary zero)."""
    half = _splat_like(b, 0.5, z.re)
    t = b.op("sqrt", [b.op("add", [b.op("multiply", [cabs(b, z), half]),
                                   b.op("multiply", [b.op("abs", [z.re]), half])])])
    two_t = b.op("add", [t, t])
    zero = _splat_like(b, 0.0, z.re)
    t_zero = b.op("compare", [t, zero], direction="EQ")
    other = b.op("select", [t_zero, zero, b.op("divide", [b.op("abs", [z.im]), two_t])])
    positive = b.op("not", [_signbit(b, z.re)])
    signed_t = b.op("select", [_signbit(b, z.im), b.op("negate", [t]), t])
    im_pos = b.op("select", [t_zero, z.im, b.op("divide", [z.im, two_t])])
    return Pair(b.op("select", [positive, t, other]),
                b.op("select", [positive, im_pos, signed_t]))


def cexp(b: GraphBuilder, z: Pair) -> Pair:
    """e^re (cos im, sin im); a zero imaginary part stays exactly that zero (so
    exp(inf + 0i) = inf + 0i, not inf * 0 = NaN), as C's cexp."""
    e = b.op("exponential", [z.re])
    im = b.op("multiply", [e, b.op("sine", [z.im])])
    real_axis = b.op("compare", [z.im, _splat_like(b, 0.0, z.im)], direction="EQ")
    re = b.op("multiply", [e, b.op("cosine", [z.im])])
    return Pair(b.op("select", [real_axis, e, re]), b.op("select", [real_axis, z.im, im]))


def clog(b: GraphBuilder, z: Pair) -> Pair:
    """(log |z|, atan2(im, re)): the principal branch."""
    return Pair(b.op("log", [cabs(b, z)]), b.op("atan2", [z.im, z.re]))


def csign(b: GraphBuilder, z: Pair) -> Pair:
    """z / |z|; (0, 0) for zero; NaN parts give (NaN, NaN) (the spec's sign)."""
    m = cabs(b, z)
    zero = _splat_like(b, 0.0, m)
    is_zero = b.op("compare", [m, zero], direction="EQ")
    nan = b.op("or", [b.op("compare", [z.re, z.re], direction="NE"),
                      b.op("compare", [z.im, z.im], direction="NE")])
    nans = _splat_like(b, np.nan, m)
    parts = []
    for p in (z.re, z.im):
        q = b.op("select", [is_zero, zero, b.op("divide", [p, m])])
        parts.append(b.op("select", [nan, nans, q]))
    return Pair(*parts)


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
        return [Pair(re, _splat_like(b, 0.0, re))]
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
    return [x.im if isinstance(x, Pair) else _splat_like(b, 0.0, x)]


def _constant(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    value = np.asarray(node.attrs["value"])
    part = complex_part(node.output.type.dtype)
    shape = tuple(node.output.type.shape)
    return [Pair(b.const(value.real.reshape(shape), part), b.const(value.imag.reshape(shape),
                                                                    part))]


def _fft(b: GraphBuilder, node: Node, args: list[Value]) -> list[Value]:
    from toolchain.passes.fft import fft

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
    "compare": _compare, "select": _select, "convert": _convert,
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
    out = Graph(graph.name, input_names=list(graph.input_names))
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
    from toolchain.passes.fold import fold_constants

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
