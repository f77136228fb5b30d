"""The graph op set: one table row per op with its arity, attributes and type rule.

Op names and semantics follow StableHLO (https://openxla.org/stablehlo/spec). The
common reductions carry a `kind` instead of a body (`reduce`, `reduce_window`: the fast
path); ops with regions (`while`, `if`, `case`, `sort`, `scatter`, `map`,
`select_and_scatter`, `reduce_region`, `reduce_window_region`, `cfg`) hold closed sub-graphs in
`Node.regions` (toolchain/graph/ir.py), whose inputs are the block arguments and then
the captured values, which are also the node's last operands; a function with several
blocks is one `cfg` node, a region per block (toolchain/frontend/cfg.py). Each rule takes the node
and returns its output types; it raises ShapeError when the node is ill-formed. The
verifier compares these with the types the node was built with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolchain.graph.ir import Node
from toolchain.types import I1, DType, TensorType, complex_of, complex_part, dtype


class ShapeError(Exception):
    """A node whose operands or attributes break its op's rules."""


@dataclass(frozen=True)
class OpSpec:
    name: str
    group: str  # elementwise / shape / contraction / reduction / source / control / misc
    arity: int | None  # None: variadic
    attrs: tuple[str, ...]
    infer: Callable[[Node], list[TensorType]]
    regions: int | None = 0  # how many regions the node holds; None: one or more


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise ShapeError(message)


def _shape(node: Node, i: int) -> tuple[int, ...]:
    return node.inputs[i].type.shape  # type: ignore[return-value]


def _same_types(node: Node) -> TensorType:
    first = node.inputs[0].type
    for i, t in enumerate(node.inputs[1:], 1):
        _require(t.type.shape == first.shape,
                 f"operand {i} has shape {_fmt(t.type.shape)} but operand 0 has "
                 f"{_fmt(first.shape)}")
        _require(t.type.dtype == first.dtype,
                 f"operand {i} has element type {t.type.dtype} but operand 0 has {first.dtype}")
    return first


def _fmt(shape: tuple | None) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def _check_dims(dims: tuple[int, ...], rank: int, what: str) -> None:
    _require(len(set(dims)) == len(dims), f"{what} {list(dims)} repeat a dimension")
    _require(all(0 <= d < rank for d in dims), f"{what} {list(dims)} out of range for rank {rank}")


# ---------------------------------------------------------------- rules


def _unary(kinds: str) -> Callable[[Node], list[TensorType]]:
    def rule(node: Node) -> list[TensorType]:
        t = node.inputs[0].type
        _require(t.dtype.kind in kinds, f"element type {t.dtype} is not supported by {node.op}")
        return [t]

    return rule


def _binary(kinds: str) -> Callable[[Node], list[TensorType]]:
    def rule(node: Node) -> list[TensorType]:
        t = _same_types(node)
        _require(t.dtype.kind in kinds, f"element type {t.dtype} is not supported by {node.op}")
        return [t]

    return rule


def _is_finite(node: Node) -> list[TensorType]:
    t = node.inputs[0].type
    _require(t.dtype.is_float, "is_finite needs a float operand")
    return [t.with_dtype(I1)]


def _compare(node: Node) -> list[TensorType]:
    t = _same_types(node)
    _require(node.attrs["direction"] in ("EQ", "NE", "GE", "GT", "LE", "LT"),
             f"unknown comparison direction {node.attrs['direction']}")
    # Complex numbers have no order: only EQ and NE (both parts compared).
    _require(not t.dtype.is_complex or node.attrs["direction"] in ("EQ", "NE"),
             f"complex values compare EQ or NE only, not {node.attrs['direction']}")
    return [t.with_dtype(I1)]


def _select(node: Node) -> list[TensorType]:
    pred, a, b = (t.type for t in node.inputs)
    _require(pred.dtype == I1, "select's predicate must be i1")
    _require(a.shape == b.shape and a.dtype == b.dtype, "select's branches differ in type")
    _require(pred.shape in ((), a.shape), "select's predicate must be scalar or match the branches")
    return [a]


def _clamp(node: Node) -> list[TensorType]:
    lo, x, hi = (t.type for t in node.inputs)
    for name, b in (("min", lo), ("max", hi)):
        _require(b.shape in ((), x.shape), f"clamp's {name} must be scalar or match the operand")
        _require(b.dtype == x.dtype, f"clamp's {name} element type differs from the operand's")
    return [x]


def _convert(node: Node) -> list[TensorType]:
    return [node.inputs[0].type.with_dtype(dtype(node.attrs["dtype"]))]


# ------------------------------------------------------ complex numbers, FFT, bits, rng


def _abs(node: Node) -> list[TensorType]:
    """abs: the operand's type; the modulus of a complex number is real."""
    t = node.inputs[0].type
    _require(t.dtype.kind in "fiuc", f"element type {t.dtype} is not supported by abs")
    return [t.with_dtype(complex_part(t.dtype))]


def _complex(node: Node) -> list[TensorType]:
    """complex(re, im): two float tensors of one type and shape -> their complex type."""
    t = _same_types(node)
    _require(t.dtype.name in ("f32", "f64"), f"complex takes f32 or f64 parts, not {t.dtype}")
    return [t.with_dtype(complex_of(t.dtype))]


def _part(node: Node) -> list[TensorType]:
    """real / imag: a complex tensor's parts (of a float tensor: itself, or zeros)."""
    t = node.inputs[0].type
    _require(t.dtype.is_float or t.dtype.is_complex,
             f"{node.op} takes a float or complex tensor, not {t.dtype}")
    return [t.with_dtype(complex_part(t.dtype))]


FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def _fft(node: Node) -> list[TensorType]:
    """fft over the last len(fft_length) dims (1 to 3): FFT / IFFT complex -> complex,
    RFFT real -> complex (last dim n // 2 + 1), IRFFT complex -> real (last dim n)."""
    x = node.inputs[0].type
    kind, lengths = node.attrs["fft_type"], tuple(node.attrs["fft_length"])
    _require(kind in FFT_TYPES, f"unknown fft_type {kind}")
    _require(1 <= len(lengths) <= min(3, x.rank),
             f"fft_length {list(lengths)} must name 1 to 3 of the operand's {x.rank} dims")
    _require(all(n >= 1 for n in lengths), "fft lengths must be positive")
    shape = list(x.shape)
    if kind == "RFFT":
        _require(x.dtype.name in ("f32", "f64"), f"RFFT takes f32 or f64, not {x.dtype}")
        _require(tuple(shape[-len(lengths):]) == lengths,
                 f"RFFT of lengths {list(lengths)} needs an operand ending in them, not {x}")
        shape[-1] = lengths[-1] // 2 + 1
        return [TensorType(tuple(shape), complex_of(x.dtype))]
    _require(x.dtype.is_complex, f"{kind} takes a complex tensor, not {x.dtype}")
    if kind == "IRFFT":
        want = lengths[:-1] + (lengths[-1] // 2 + 1,)
        _require(tuple(shape[-len(lengths):]) == want,
                 f"IRFFT of lengths {list(lengths)} needs an operand ending in {list(want)}")
        shape[-1] = lengths[-1]
        return [TensorType(tuple(shape), complex_part(x.dtype))]
    _require(tuple(shape[-len(lengths):]) == lengths,
             f"{kind} of lengths {list(lengths)} needs an operand ending in them, not {x}")
    return [x]


def _bitcast_convert(node: Node) -> list[TensorType]:
    """The operand's bits seen as another type: same width, same shape; narrower: one more
    trailing dim of width ratio; wider: the trailing dim (of that ratio) consumed."""
    x = node.inputs[0].type
    dt = dtype(node.attrs["dtype"])
    _require(x.dtype.kind not in "bc" and dt.kind not in "bc" and x.dtype.name != "i4"
             and dt.name != "i4", f"bitcast_convert from {x.dtype} to {dt} is not supported")
    shape = tuple(node.attrs["shape"])
    a, b = x.dtype.bits, dt.bits
    if a == b:
        want = x.shape
    elif a > b:
        want = tuple(x.shape) + (a // b,)
    else:
        _require(x.rank >= 1 and x.shape[-1] * a == b,
                 f"bitcast_convert to {dt} needs a last dim of {b // a} {x.dtype} values")
        want = tuple(x.shape[:-1])
    _require(shape == want, f"bitcast_convert of {x} to {dt} gives shape {_fmt(want)}, "
             f"not {_fmt(shape)}")
    return [TensorType(shape, dt)]


RNG_ALGORITHMS = ("DEFAULT", "THREE_FRY", "PHILOX")


def _rng_bit_generator(node: Node) -> list[TensorType]:
    """(state, bits): the state is ui64[2] (THREE_FRY), ui64[2] or ui64[3] (PHILOX,
    DEFAULT, which is PHILOX as in XLA); bits is any integer or float tensor of 8, 16, 32
    or 64-bit elements."""
    state = node.inputs[0].type
    algo = node.attrs["algorithm"]
    _require(algo in RNG_ALGORITHMS, f"unknown rng_algorithm {algo}")
    sizes = (2,) if algo == "THREE_FRY" else (2, 3)
    _require(state.dtype.name in ("ui64", "i64") and state.rank == 1
             and state.shape[0] in sizes,
             f"{algo}'s state must be a ui64 tensor of {' or '.join(map(str, sizes))} values, "
             f"not {state}")
    dt = dtype(node.attrs["dtype"])
    _require(dt.kind in "iuf" and dt.bits in (8, 16, 32, 64) and dt.name != "bf16",
             f"rng_bit_generator cannot fill {dt}")
    return [state, TensorType(tuple(node.attrs["shape"]), dt)]


def _rng(node: Node) -> list[TensorType]:
    """rng(a, b): scalar bounds (UNIFORM: [a, b); NORMAL: mean a, deviation b) of the
    result's element type, filled per reference/rng.py."""
    a, b = node.inputs[0].type, node.inputs[1].type
    dt = dtype(node.attrs["dtype"])
    _require(a.shape == () and b.shape == () and a.dtype == b.dtype == dt,
             f"rng's bounds must be scalars of the result's type {dt}")
    dist = node.attrs["distribution"]
    _require(dist in ("UNIFORM", "NORMAL"), f"unknown rng_distribution {dist}")
    _require(dist == "UNIFORM" or dt.is_float, "a NORMAL rng needs a float type")
    _require(dt.kind in "iuf" and dt.name != "i4", f"rng cannot fill {dt}")
    return [TensorType(tuple(node.attrs["shape"]), dt)]


def _broadcast_in_dim(node: Node) -> list[TensorType]:
    src = _shape(node, 0)
    out = tuple(node.attrs["shape"])
    dims = tuple(node.attrs["dims"])
    _require(len(dims) == len(src),
             f"broadcast dims {list(dims)} do not match operand rank {len(src)}")
    _check_dims(dims, len(out), "broadcast dims")
    for i, d in enumerate(dims):
        _require(src[i] in (1, out[d]),
                 f"operand dim {i} (size {src[i]}) cannot broadcast to result dim {d} "
                 f"(size {out[d]})")
    return [node.inputs[0].type.with_shape(out)]


def _reshape(node: Node) -> list[TensorType]:
    t = node.inputs[0].type
    out = tuple(node.attrs["shape"])
    new = t.with_shape(out)
    _require(new.num_elements == t.num_elements,
             f"reshape from {_fmt(t.shape)} to {_fmt(out)} changes the element count")
    return [new]


def _transpose(node: Node) -> list[TensorType]:
    src = _shape(node, 0)
    perm = tuple(node.attrs["permutation"])
    _require(len(perm) == len(src), "transpose permutation length differs from the rank")
    _check_dims(perm, len(src), "permutation")
    return [node.inputs[0].type.with_shape(tuple(src[p] for p in perm))]


def _reverse(node: Node) -> list[TensorType]:
    _check_dims(tuple(node.attrs["dims"]), len(_shape(node, 0)), "reverse dims")
    return [node.inputs[0].type]


def _concatenate(node: Node) -> list[TensorType]:
    first = node.inputs[0].type
    dim = node.attrs["dimension"]
    _require(0 <= dim < first.rank, f"concatenate dimension {dim} out of range")
    total = 0
    for i, t in enumerate(node.inputs):
        s = t.type.shape
        _require(t.type.dtype == first.dtype, f"operand {i} element type differs")
        _require(len(s) == first.rank and all(a == b for k, (a, b) in
                                               enumerate(zip(s, first.shape)) if k != dim),
                 f"operand {i} shape {_fmt(s)} does not fit concatenation along {dim}")
        total += s[dim]
    out = list(first.shape)
    out[dim] = total
    return [first.with_shape(tuple(out))]


def _slice(node: Node) -> list[TensorType]:
    src = _shape(node, 0)
    starts, limits, strides = (node.attrs[k] for k in ("start", "limit", "strides"))
    _require(len(starts) == len(limits) == len(strides) == len(src),
             "slice bounds do not match the operand rank")
    out = []
    for i, (s, lim, st) in enumerate(zip(starts, limits, strides)):
        _require(0 <= s <= lim <= src[i] and st > 0,
                 f"slice [{s}:{lim}:{st}] out of bounds for dim {i} of size {src[i]}")
        out.append(-(-(lim - s) // st))
    return [node.inputs[0].type.with_shape(tuple(out))]


def _pad(node: Node) -> list[TensorType]:
    src = _shape(node, 0)
    _require(_shape(node, 1) == (), "pad's padding value must be a scalar")
    low, high, interior = (node.attrs[k] for k in ("low", "high", "interior"))
    _require(len(low) == len(high) == len(interior) == len(src), "pad widths do not match rank")
    out = []
    for d, lo, hi, it in zip(src, low, high, interior):
        _require(it >= 0, "interior padding must be >= 0")
        size = lo + hi + d + max(d - 1, 0) * it
        _require(size >= 0, "padding removes more than the dimension holds")
        out.append(size)
    return [node.inputs[0].type.with_shape(tuple(out))]


def _iota(node: Node) -> list[TensorType]:
    shape = tuple(node.attrs["shape"])
    _require(0 <= node.attrs["dimension"] < len(shape), "iota dimension out of range")
    return [TensorType(shape, dtype(node.attrs["dtype"]))]


def _constant(node: Node) -> list[TensorType]:
    return [node.outputs[0].type]


def _dot_general(node: Node) -> list[TensorType]:
    a, b = _shape(node, 0), _shape(node, 1)
    lb, rb, lc, rc = (tuple(node.attrs[k]) for k in
                      ("lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract"))
    _require(len(lb) == len(rb) and len(lc) == len(rc),
             "dot_general needs as many lhs as rhs batching / contracting dims")
    _check_dims(lb + lc, len(a), "lhs batching+contracting dims")
    _check_dims(rb + rc, len(b), "rhs batching+contracting dims")
    for x, y in list(zip(lb, rb)) + list(zip(lc, rc)):
        _require(a[x] == b[y],
                 f"lhs dim {x} (size {a[x]}) does not match rhs dim {y} (size {b[y]})")
    free_a = [a[i] for i in range(len(a)) if i not in lb + lc]
    free_b = [b[i] for i in range(len(b)) if i not in rb + rc]
    out = tuple([a[i] for i in lb] + free_a + free_b)
    _require(node.inputs[0].type.dtype.kind == node.inputs[1].type.dtype.kind,
             "dot_general operands mix float and integer types")
    return [TensorType(out, dtype(node.attrs["dtype"]))]


def conv_output_shape(node: Node) -> tuple[int, ...]:
    """StableHLO convolution's result shape from operand shapes and attributes."""
    x, k = _shape(node, 0), _shape(node, 1)
    at = node.attrs
    nsp = len(at["input_spatial"])
    _require(len(x) == len(k) == nsp + 2, "convolution operands have inconsistent ranks")
    fg, bg = at["feature_group_count"], at["batch_group_count"]
    _require(fg >= 1 and bg >= 1 and (fg == 1 or bg == 1), "bad group counts")
    batch, feat = x[at["input_batch"]], x[at["input_feature"]]
    kin, kout = k[at["kernel_input"]], k[at["kernel_output"]]
    _require(feat == kin * fg, f"input features ({feat}) != kernel input features ({kin}) "
             f"x feature_group_count ({fg})")
    _require(kout % fg == 0 and kout % bg == 0 and batch % bg == 0,
             "output features are not divisible by the group count")
    out = [0] * (nsp + 2)
    out[at["output_batch"]] = batch // bg
    out[at["output_feature"]] = kout
    for i in range(nsp):
        size = (x[at["input_spatial"][i]] - 1) * at["lhs_dilation"][i] + 1
        size += at["padding"][i][0] + at["padding"][i][1]
        win = (k[at["kernel_spatial"][i]] - 1) * at["rhs_dilation"][i] + 1
        _require(at["strides"][i] > 0, "window strides must be positive")
        out[at["output_spatial"][i]] = 0 if size < win else (size - win) // at["strides"][i] + 1
    return tuple(out)


def _convolution(node: Node) -> list[TensorType]:
    return [TensorType(conv_output_shape(node), dtype(node.attrs["dtype"]))]


REDUCE_KINDS = ("add", "multiply", "maximum", "minimum", "and", "or")


def _reduce(node: Node) -> list[TensorType]:
    x, init = node.inputs[0].type, node.inputs[1].type
    _require(init.shape == (), "reduce's init value must be a scalar")
    _require(init.dtype == x.dtype, "reduce's init value type differs from the operand's")
    _require(node.attrs["kind"] in REDUCE_KINDS, f"unsupported reduction {node.attrs['kind']}")
    dims = tuple(node.attrs["dims"])
    _check_dims(dims, x.rank, "reduce dimensions")
    return [x.with_shape(tuple(d for i, d in enumerate(x.shape) if i not in dims))]


def _reduce_window(node: Node) -> list[TensorType]:
    x, init = node.inputs[0].type, node.inputs[1].type
    _require(init.shape == () and init.dtype == x.dtype,
             "reduce_window's init must be a scalar of the operand type")
    _require(node.attrs["kind"] in REDUCE_KINDS, f"unsupported reduction {node.attrs['kind']}")
    at = node.attrs
    fields = ("window", "strides", "base_dilations", "window_dilations", "padding")
    _require(all(len(at[f]) == x.rank for f in fields),
             "reduce_window attributes do not match rank")
    out = []
    for i, d in enumerate(x.shape):
        base = (d - 1) * at["base_dilations"][i] + 1 + at["padding"][i][0] + at["padding"][i][1]
        win = (at["window"][i] - 1) * at["window_dilations"][i] + 1
        _require(at["strides"][i] > 0 and at["window"][i] > 0,
                 "window sizes and strides must be positive")
        out.append(0 if base < win else (base - win) // at["strides"][i] + 1)
    return [x.with_shape(tuple(out))]


def _gather(node: Node) -> list[TensorType]:
    operand, idx = _shape(node, 0), _shape(node, 1)
    at = node.attrs
    _require(node.inputs[1].type.dtype.is_integer, "gather indices must be integers")
    sizes = at["slice_sizes"]
    _require(len(sizes) == len(operand), "slice_sizes does not match the operand rank")
    _require(all(0 <= s <= d for s, d in zip(sizes, operand)), "slice_sizes exceed the operand")
    collapsed = set(at["collapsed_slice_dims"]) | set(at["operand_batching_dims"])
    _require(all(sizes[d] <= 1 for d in collapsed), "collapsed dims must have slice size 1")
    ivd = at["index_vector_dim"]
    batch = [d for i, d in enumerate(idx) if i != ivd]
    nidx = idx[ivd] if ivd < len(idx) else 1
    _require(len(at["start_index_map"]) == nidx, "start_index_map does not match the index vector")
    offsets = [s for i, s in enumerate(sizes) if i not in collapsed]
    _require(len(offsets) == len(at["offset_dims"]), "offset_dims does not match slice_sizes")
    rank = len(batch) + len(offsets)
    _check_dims(tuple(at["offset_dims"]), rank, "offset_dims")
    out, bi, oi = [], 0, 0
    for d in range(rank):
        if d in at["offset_dims"]:
            out.append(offsets[oi])
            oi += 1
        else:
            out.append(batch[bi])
            bi += 1
    return [node.inputs[0].type.with_shape(tuple(out))]


def _start_indices(node: Node, first: int, rank: int) -> None:
    """dynamic_slice / dynamic_update_slice: one integer scalar per dimension."""
    starts = node.inputs[first:]
    _require(len(starts) == rank, f"{node.op} takes {rank} start indices, got {len(starts)}")
    for i, t in enumerate(starts):
        _require(t.type.shape == () and t.type.dtype.is_integer,
                 f"start index {i} must be an integer scalar")


def _dynamic_slice(node: Node) -> list[TensorType]:
    x = node.inputs[0].type
    sizes = tuple(node.attrs["slice_sizes"])
    _start_indices(node, 1, x.rank)
    _require(len(sizes) == x.rank and all(0 <= s <= d for s, d in zip(sizes, x.shape)),
             f"slice_sizes {list(sizes)} do not fit the operand {x}")
    return [x.with_shape(sizes)]


def _dynamic_update_slice(node: Node) -> list[TensorType]:
    x, update = node.inputs[0].type, node.inputs[1].type
    _start_indices(node, 2, x.rank)
    _require(update.dtype == x.dtype and update.rank == x.rank and all(
        u <= d for u, d in zip(update.shape, x.shape)),
        f"the update {update} does not fit in the operand {x}")
    return [x]


def _batch_norm_inference(node: Node) -> list[TensorType]:
    x = node.inputs[0].type
    fi = node.attrs["feature_index"]
    _require(0 <= fi < x.rank, "feature_index out of range")
    for i, t in enumerate(node.inputs[1:], 1):
        _require(t.type.shape == (x.shape[fi],) and t.type.dtype == x.dtype,
                 f"operand {i} must be a 1-D {x.dtype} tensor of {x.shape[fi]} features")
    return [x]


def _batch_norm_stats(node: Node, per_feature: tuple[int, ...]) -> list[TensorType]:
    """batch_norm_training / batch_norm_grad: a float operand and the 1-D per-feature
    operands at `per_feature`; results: one like the operand, two per feature."""
    x = node.inputs[0].type
    fi = node.attrs["feature_index"]
    _require(x.dtype.kind == F, f"{node.op} takes float tensors, not {x.dtype}")
    _require(0 <= fi < x.rank, "feature_index out of range")
    feature = x.with_shape((x.shape[fi],))
    for i, t in enumerate(node.inputs[1:], 1):
        want = feature if i in per_feature else x
        _require(t.type == want, f"operand {i} must be {want}, not {t.type}")
    return [x, feature, feature]


def _batch_norm_training(node: Node) -> list[TensorType]:
    return _batch_norm_stats(node, (1, 2))  # operand, scale, offset


def _batch_norm_grad(node: Node) -> list[TensorType]:
    return _batch_norm_stats(node, (1, 2, 3))  # operand, scale, mean, variance, grad_output


def _square_batch(t: TensorType, op: str, what: str) -> int:
    _require(t.dtype.kind == F, f"{op} takes float tensors, not {t.dtype}")
    _require(t.rank >= 2 and t.shape[-1] == t.shape[-2],
             f"{op}'s {what} must be a batch of square matrices, not {t}")
    return t.shape[-1]


def _cholesky(node: Node) -> list[TensorType]:
    a = node.inputs[0].type
    _square_batch(a, "cholesky", "operand")
    return [a]


TRANSPOSE_A = ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")


def _triangular_solve(node: Node) -> list[TensorType]:
    a, b = node.inputs[0].type, node.inputs[1].type
    n = _square_batch(a, "triangular_solve", "a")
    _require(node.attrs["transpose_a"] in TRANSPOSE_A,
             f"unknown transpose_a {node.attrs['transpose_a']}")
    _require(b.dtype == a.dtype and b.rank == a.rank and b.shape[:-2] == a.shape[:-2],
             f"b ({b}) must have a's ({a}) element type and batch dims")
    side = -2 if node.attrs["left_side"] else -1
    _require(b.shape[side] == n, f"b's dim {b.rank + side} must be {n} (a's size) when "
             f"left_side is {str(bool(node.attrs['left_side'])).lower()}, not {b.shape[side]}")
    return [b]


def _fixed_point(node: Node) -> list[TensorType]:
    t = _same_types(node)
    _require(t.dtype.name == "i32", f"{node.op} takes i32 operands, not {t.dtype}")
    return [t]


def _dequantize(node: Node) -> list[TensorType]:
    q, scale = node.inputs[0].type, node.inputs[1].type
    _require(q.dtype.is_integer, "dequantize's operand must be an integer tensor")
    _require(scale.dtype.is_float, "dequantize's scale must be a float tensor")
    axis = node.attrs["axis"]
    if axis is None:
        _require(scale.shape == (), "per-tensor dequantize takes a scalar scale")
    else:
        _require(0 <= axis < q.rank and scale.shape == (q.shape[axis],),
                 f"per-channel dequantize along {axis} takes one scale per channel")
    return [TensorType(q.shape, scale.dtype)]


# ---------------------------------------------------------------- ops with regions
#
# A region's inputs are its block arguments, then the captured values; the node's last
# operands are those captured values, in the same order (toolchain/graph/ir.py).


def _types(tensors: list) -> list[TensorType]:
    return [t.type for t in tensors]


def _fmt_types(types: list[TensorType]) -> str:
    return "(" + ", ".join(map(str, types)) + ")"


def _region_sig(node: Node, r: int, args: list[TensorType], captures: list[TensorType],
                results: list[TensorType] | None, what: str) -> list[TensorType]:
    """Checks region r takes `args` then `captures` (and yields `results` when given);
    returns what it yields."""
    region = node.regions[r]
    want = args + captures
    got = _types(region.inputs)
    _require(got == want, f"{what} takes {_fmt_types(got)}, expected {_fmt_types(want)}")
    out = _types(region.outputs)
    if results is not None:
        _require(out == results, f"{what} yields {_fmt_types(out)}, expected "
                 f"{_fmt_types(results)}")
    return out


def _scalar(t: TensorType) -> TensorType:
    return TensorType((), t.dtype, t.quant)


def _while(node: Node) -> list[TensorType]:
    n = len(node.regions[1].outputs)
    _require(len(node.inputs) >= n, f"while carries {n} values but has {len(node.inputs)} "
             "operands")
    carried, captures = _types(node.inputs[:n]), _types(node.inputs[n:])
    _region_sig(node, 0, carried, captures, [TensorType((), I1)], "while's cond region")
    _region_sig(node, 1, carried, captures, carried, "while's body region")
    return carried


def _branches(node: Node, selector: str, dtypes: tuple[str, ...]) -> list[TensorType]:
    """if / case: operand 0 picks the branch; every branch takes the captured values and
    yields the same types."""
    sel = node.inputs[0].type
    _require(sel.shape == () and sel.dtype.name in dtypes,
             f"{node.op}'s {selector} must be a scalar {' or '.join(dtypes)}, not {sel}")
    captures = _types(node.inputs[1:])
    results = _region_sig(node, 0, [], captures, None, f"{node.op}'s branch 0")
    for r in range(1, len(node.regions)):
        _region_sig(node, r, [], captures, results, f"{node.op}'s branch {r}")
    return results


def _if(node: Node) -> list[TensorType]:
    return _branches(node, "predicate", ("i1",))


def _case(node: Node) -> list[TensorType]:
    return _branches(node, "index", ("i32",))


def _reducer_operands(node: Node) -> tuple[list[TensorType], list[TensorType],
                                           list[TensorType]]:
    """reduce_region / reduce_window_region: N inputs, N scalar inits, captures."""
    n = len(node.regions[0].outputs)
    _require(n >= 1 and len(node.inputs) >= 2 * n,
             f"{node.op} with {n} results needs {n} operands and {n} init values")
    xs, inits = _types(node.inputs[:n]), _types(node.inputs[n:2 * n])
    for i, (x, init) in enumerate(zip(xs, inits)):
        _require(x.shape == xs[0].shape, f"operand {i} has shape {_fmt(x.shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
        _require(init.shape == () and init.dtype == x.dtype,
                 f"init value {i} must be a scalar of operand {i}'s element type")
    _region_sig(node, 0, inits + [_scalar(x) for x in xs], _types(node.inputs[2 * n:]),
                inits, f"{node.op}'s body")
    return xs, inits, _types(node.inputs[2 * n:])


def _reduce_region(node: Node) -> list[TensorType]:
    xs, inits, _ = _reducer_operands(node)
    dims = tuple(node.attrs["dims"])
    _check_dims(dims, xs[0].rank, "reduce dimensions")
    shape = tuple(d for i, d in enumerate(xs[0].shape) if i not in dims)
    return [TensorType(shape, t.dtype, t.quant) for t in inits]


def window_output_shape(node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
    """reduce_window's result shape for an operand of `shape` (attrs window, strides,
    base_dilations, window_dilations, padding; dilations default to 1)."""
    ones = (1,) * len(shape)
    at = {"base_dilations": ones, "window_dilations": ones, **node.attrs}
    fields = ("window", "strides", "base_dilations", "window_dilations", "padding")
    _require(all(len(at[f]) == len(shape) for f in fields),
             f"{node.op} attributes do not match rank")
    out = []
    for i, d in enumerate(shape):
        _require(at["strides"][i] > 0 and at["window"][i] > 0 and at["base_dilations"][i] > 0
                 and at["window_dilations"][i] > 0,
                 "window sizes, strides and dilations must be positive")
        base = (d - 1) * at["base_dilations"][i] + 1 + at["padding"][i][0] + at["padding"][i][1]
        win = (at["window"][i] - 1) * at["window_dilations"][i] + 1
        out.append(0 if base < win else (base - win) // at["strides"][i] + 1)
    return tuple(out)


def _reduce_window_region(node: Node) -> list[TensorType]:
    xs, inits, _ = _reducer_operands(node)
    shape = window_output_shape(node, tuple(xs[0].shape))
    return [TensorType(shape, t.dtype, t.quant) for t in inits]


def _map(node: Node) -> list[TensorType]:
    """map: the first `operands` operands (one shape), then captures; the region maps one
    element of each to one result element."""
    n = node.attrs["operands"]
    _require(1 <= n <= len(node.inputs), f"map over {n} of {len(node.inputs)} operands")
    xs, captures = _types(node.inputs[:n]), _types(node.inputs[n:])
    for i, x in enumerate(xs):
        _require(x.shape == xs[0].shape, f"operand {i} has shape {_fmt(x.shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
    _require(tuple(node.attrs["dimensions"]) == tuple(range(xs[0].rank)),
             "map's dimensions must be every dimension in order")
    outs = _region_sig(node, 0, [_scalar(x) for x in xs], captures, None, "map's computation")
    _require(len(outs) == 1 and outs[0].shape == (), "map's computation must yield one scalar")
    return [TensorType(xs[0].shape, outs[0].dtype, outs[0].quant)]


def _sort(node: Node) -> list[TensorType]:
    # The comparator takes two scalars per operand and the captures, the node one
    # tensor per operand and the captures: the difference is the operand count.
    n = len(node.regions[0].inputs) - len(node.inputs)
    _require(1 <= n <= len(node.inputs), "sort's comparator must take two scalars per operand")
    xs, captures = _types(node.inputs[:n]), _types(node.inputs[n:])
    for i, x in enumerate(xs):
        _require(x.shape == xs[0].shape, f"operand {i} has shape {_fmt(x.shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
    dim = node.attrs["dimension"]
    _require(-xs[0].rank <= dim < max(xs[0].rank, 1), f"sort dimension {dim} out of range")
    pairs = [s for x in xs for s in (_scalar(x), _scalar(x))]
    _region_sig(node, 0, pairs, captures, [TensorType((), I1)], "sort's comparator")
    return xs


def _scatter(node: Node) -> list[TensorType]:
    at = node.attrs
    n = len(node.regions[0].outputs)
    _require(n >= 1 and len(node.inputs) >= 2 * n + 1,
             f"scatter with {n} results needs {n} operands, indices and {n} updates")
    xs, idx = _types(node.inputs[:n]), node.inputs[n].type
    ups, captures = _types(node.inputs[n + 1:2 * n + 1]), _types(node.inputs[2 * n + 1:])
    _require(idx.dtype.is_integer, "scatter indices must be integers")
    for i in range(n):
        _require(xs[i].shape == xs[0].shape, f"operand {i} has shape {_fmt(xs[i].shape)} but "
                 f"operand 0 has {_fmt(xs[0].shape)}")
        _require(ups[i].shape == ups[0].shape, f"update {i} has shape {_fmt(ups[i].shape)} "
                 f"but update 0 has {_fmt(ups[0].shape)}")
        _require(ups[i].dtype == xs[i].dtype, f"update {i} element type {ups[i].dtype} "
                 f"differs from operand {i}'s {xs[i].dtype}")
    rank, urank = xs[0].rank, ups[0].rank
    window, inserted = tuple(at["update_window_dims"]), tuple(at["inserted_window_dims"])
    obatch, ibatch = tuple(at["input_batching_dims"]), tuple(at["scatter_indices_batching_dims"])
    to_operand, ivd = tuple(at["scatter_dims_to_operand_dims"]), at["index_vector_dim"]
    _check_dims(window, urank, "update_window_dims")
    _require(list(window) == sorted(window), "update_window_dims must be sorted")
    _check_dims(inserted + obatch, rank, "inserted_window_dims + input_batching_dims")
    _check_dims(to_operand, rank, "scatter_dims_to_operand_dims")
    _require(0 <= ivd <= idx.rank, f"index_vector_dim {ivd} out of range")
    _check_dims(ibatch, idx.rank, "scatter_indices_batching_dims")
    _require(ivd not in ibatch and len(ibatch) == len(obatch),
             "scatter batching dims do not pair up")
    nidx = idx.shape[ivd] if ivd < idx.rank else 1
    _require(len(to_operand) == nidx, f"scatter_dims_to_operand_dims has {len(to_operand)} "
             f"entries for index vectors of {nidx}")
    scatter_sizes = [d for i, d in enumerate(idx.shape) if i != ivd]
    _require(urank == len(window) + len(scatter_sizes),
             f"updates of rank {urank} do not fit {len(window)} window dims and "
             f"{len(scatter_sizes)} scatter dims")
    _require(len(window) + len(inserted) + len(obatch) == rank,
             "update_window_dims, inserted_window_dims and input_batching_dims do not "
             f"cover the {rank} operand dims")
    sizes = [d for i, d in enumerate(xs[0].shape) if i not in inserted + obatch]
    for k, d in enumerate(window):
        _require(ups[0].shape[d] <= sizes[k], f"update window dim {d} (size "
                 f"{ups[0].shape[d]}) is larger than the operand's dim ({sizes[k]})")
    rest = [d for d in range(urank) if d not in window]
    for u, s in zip(rest, scatter_sizes):
        _require(ups[0].shape[u] == s, f"update scatter dim {u} has size {ups[0].shape[u]}, "
                 f"the indices give {s}")
    scalars = [_scalar(x) for x in xs]
    _region_sig(node, 0, scalars + scalars, captures, scalars, "scatter's update region")
    return xs


def _cfg(node: Node) -> list[TensorType]:
    """A function's blocks (frontend/cfg.py): per block (n_args, reads, writes,
    terminator); shared value i < len(inputs) is operand i."""
    blocks = node.attrs["blocks"]
    _require(len(blocks) == len(node.regions) >= 1, "cfg needs one region per block")
    shared: dict[int, TensorType] = dict(enumerate(_types(node.inputs)))

    def bind(i: int, t: TensorType, what: str) -> None:
        _require(shared.setdefault(i, t) == t, f"{what}: shared value {i} is {t}, "
                 f"elsewhere {shared[i]}")

    results: list[TensorType] | None = None
    for k, ((n_args, reads, writes, term), region) in enumerate(zip(blocks, node.regions)):
        _require(len(reads) == len(region.inputs) and n_args <= len(reads),
                 f"block {k} reads {len(reads)} values but takes {len(region.inputs)}")
        for i, t in zip(reads, region.inputs):
            bind(i, t.type, f"block {k}")
        outs = _types(region.outputs)
        n_term = len(outs) - len(writes)
        _require(n_term >= 0, f"block {k} defines fewer values than it shares")
        for i, t in zip(writes, outs[n_term:]):
            bind(i, t, f"block {k}")
        if term[0] == "return":
            _require(term[1] == n_term, f"block {k} returns {n_term} values, not {term[1]}")
            _require(results is None or results == outs[:n_term],
                     f"block {k} returns {_fmt_types(outs[:n_term])}, another block "
                     f"{_fmt_types(results or [])}")
            results = outs[:n_term]
    for k, ((_, _, _, term), region) in enumerate(zip(blocks, node.regions)):
        outs = _types(region.outputs)
        if term[0] == "br":
            edges = [(term[1], outs[:term[2]])]
        elif term[0] == "cond_br":
            _require(outs and outs[0] == TensorType((), I1),
                     f"block {k}'s branch condition must be an i1")
            edges = [(term[1], outs[1:1 + term[2]]),
                     (term[3], outs[1 + term[2]:1 + term[2] + term[4]])]
        else:
            continue
        for dest, args in edges:
            _require(0 < dest < len(blocks), f"block {k} branches to block {dest}")
            n_args, reads = blocks[dest][0], blocks[dest][1]
            want = [shared[i] for i in reads[:n_args]]
            _require(args == want, f"block {k} passes {_fmt_types(args)} to block {dest}, "
                     f"which takes {_fmt_types(want)}")
    _require(results is not None, "no block returns")
    return list(results or [])


def _select_and_scatter(node: Node) -> list[TensorType]:
    x, source, init = _types(node.inputs[:3])
    captures = _types(node.inputs[3:])
    _require(init.shape == () and init.dtype == source.dtype,
             "select_and_scatter's init value must be a scalar of the source's type")
    _require(source.dtype == x.dtype, "select_and_scatter's source type differs from the "
             "operand's")
    want = window_output_shape(node, tuple(x.shape))
    _require(source.shape == want, f"select_and_scatter's source has shape "
             f"{_fmt(source.shape)}, the windows give {_fmt(want)}")
    s = _scalar(x)
    _region_sig(node, 0, [s, s], captures, [TensorType((), I1)], "select_and_scatter's select")
    _region_sig(node, 1, [s, s], captures, [s], "select_and_scatter's scatter")
    return [x]


# ---------------------------------------------------------------- the table

F, I, B, C = "f", "iu", "b", "c"
_UNARY = {
    "negate": F + I + C, "sign": F + I + C, "exponential": F + C, "exponential_minus_one": F,
    "log": F + C, "log_plus_one": F, "logistic": F, "sqrt": F + C, "rsqrt": F, "cbrt": F,
    "tanh": F,
    "sine": F, "cosine": F, "tan": F, "floor": F, "ceil": F, "round_nearest_afz": F,
    "round_nearest_even": F, "not": I + B, "popcnt": I, "count_leading_zeros": I,
}
_BINARY = {
    "add": F + I + B + C, "subtract": F + I + C, "multiply": F + I + B + C,
    "divide": F + I + C,
    "remainder": F + I, "maximum": F + I + B, "minimum": F + I + B, "power": F + I,
    "atan2": F, "and": I + B, "or": I + B, "xor": I + B, "shift_left": I,
    "shift_right_arithmetic": I, "shift_right_logical": I,
}

OPS: dict[str, OpSpec] = {}


def _add(name: str, group: str, arity: int | None, attrs: tuple[str, ...],
         infer: Callable[[Node], list[TensorType]], regions: int | None = 0) -> None:
    OPS[name] = OpSpec(name, group, arity, attrs, infer, regions)


for _n, _k in _UNARY.items():
    _add(_n, "elementwise", 1, (), _unary(_k))
for _n, _k in _BINARY.items():
    _add(_n, "elementwise", 2, (), _binary(_k))
_add("abs", "elementwise", 1, (), _abs)
_add("is_finite", "elementwise", 1, (), _is_finite)
_add("compare", "elementwise", 2, ("direction",), _compare)
_add("select", "elementwise", 3, (), _select)
_add("clamp", "elementwise", 3, (), _clamp)
_add("convert", "elementwise", 1, ("dtype",), _convert)
_add("broadcast_in_dim", "shape", 1, ("dims", "shape"), _broadcast_in_dim)
_add("reshape", "shape", 1, ("shape",), _reshape)
_add("transpose", "shape", 1, ("permutation",), _transpose)
_add("reverse", "shape", 1, ("dims",), _reverse)
_add("concatenate", "shape", None, ("dimension",), _concatenate)
_add("slice", "shape", 1, ("start", "limit", "strides"), _slice)
_add("pad", "shape", 2, ("low", "high", "interior"), _pad)
_add("gather", "shape", 2, ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                            "start_indices_batching_dims", "start_index_map",
                            "index_vector_dim", "slice_sizes"), _gather)
_add("dynamic_slice", "shape", None, ("slice_sizes",), _dynamic_slice)
_add("dynamic_update_slice", "shape", None, (), _dynamic_update_slice)
_add("complex", "elementwise", 2, (), _complex)
_add("real", "elementwise", 1, (), _part)
_add("imag", "elementwise", 1, (), _part)
_add("fft", "misc", 1, ("fft_type", "fft_length"), _fft)
_add("bitcast_convert", "shape", 1, ("dtype", "shape"), _bitcast_convert)
_add("rng_bit_generator", "source", 1, ("algorithm", "dtype", "shape"), _rng_bit_generator)
_add("rng", "source", 2, ("distribution", "dtype", "shape"), _rng)
_add("iota", "source", 0, ("dimension", "shape", "dtype"), _iota)
_add("constant", "source", 0, ("value",), _constant)
_add("dot_general", "contraction", 2,
     ("lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract", "dtype"), _dot_general)
_add("convolution", "contraction", 2,
     ("strides", "padding", "lhs_dilation", "rhs_dilation", "input_batch", "input_feature",
      "input_spatial", "kernel_input", "kernel_output", "kernel_spatial", "output_batch",
      "output_feature", "output_spatial", "feature_group_count", "batch_group_count",
      "dtype"), _convolution)
_add("reduce", "reduction", 2, ("kind", "dims"), _reduce)
_add("reduce_window", "reduction", 2,
     ("kind", "window", "strides", "base_dilations", "window_dilations", "padding"),
     _reduce_window)
_add("batch_norm_inference", "misc", 5, ("epsilon", "feature_index"), _batch_norm_inference)
# Linear algebra with StableHLO's semantics; passes/linalg.py rewrites them into loops
# of dynamic slices and dot_generals before scheduling, reference/linalg.py computes
# them independently with numpy.
_add("batch_norm_training", "misc", 3, ("epsilon", "feature_index"), _batch_norm_training)
_add("batch_norm_grad", "misc", 5, ("epsilon", "feature_index"), _batch_norm_grad)
_add("cholesky", "misc", 1, ("lower",), _cholesky)
_add("triangular_solve", "misc", 2, ("left_side", "lower", "unit_diagonal", "transpose_a"),
     _triangular_solve)
# The two fixed-point primitives of integer (TFLite / gemmlowp) requantization, minirt's
# own elementwise ops (docs/int8.md): a * b / 2**31 rounded to nearest, ties toward
# +infinity, saturated; and x / 2**e rounded to nearest, ties away from zero, e clamped
# to [0, 31].
_add("saturating_rounding_doubling_high_mul", "elementwise", 2, (), _fixed_point)
_add("rounding_divide_by_pot", "elementwise", 2, (), _fixed_point)
# real = scale * stored (symmetric: zero point 0); minirt's own op for quantized weights.
_add("dequantize", "misc", 2, ("axis",), _dequantize)
# Ops with regions (operand counts depend on the regions: captures come last).
_add("while", "control", None, (), _while, 2)
_add("if", "control", None, (), _if, 2)
_add("case", "control", None, (), _case, None)
_add("reduce_region", "reduction", None, ("dims",), _reduce_region, 1)
_add("reduce_window_region", "reduction", None,
     ("window", "strides", "base_dilations", "window_dilations", "padding"),
     _reduce_window_region, 1)
_add("sort", "misc", None, ("dimension", "is_stable"), _sort, 1)
_add("map", "misc", None, ("dimensions", "operands"), _map, 1)
_add("scatter", "misc", None,
     ("update_window_dims", "inserted_window_dims", "input_batching_dims",
      "scatter_indices_batching_dims", "scatter_dims_to_operand_dims", "index_vector_dim",
      "indices_are_sorted", "unique_indices"), _scatter, 1)
_add("select_and_scatter", "misc", None, ("window", "strides", "padding"),
     _select_and_scatter, 2)
_add("cfg", "control", None, ("blocks",), _cfg, None)

# CHLO's math functions (toolchain/frontend/chlo.py), float only; codegen in
# toolchain/codegen/mathlib_special.py, reference in toolchain/reference/special.py.
# next_after steps to the neighbouring value of the element type; zeta(s, q) is Hurwitz's,
# polygamma(n, x) the n-th derivative of digamma.
for _n in ("erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin", "acos",
           "atan", "sinh", "cosh", "asinh", "acosh", "atanh"):
    _add(_n, "elementwise", 1, (), _unary(F))
for _n in ("next_after", "zeta", "polygamma"):
    _add(_n, "elementwise", 2, (), _binary(F))

# The ops that take or give complex values. passes/complex.py rewrites each into real
# ops (a test keeps its rules and this set equal); the importer refuses complex tensors
# in any other op, so nothing downstream of that pass ever meets a complex value.
COMPLEX_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "negate", "abs", "exponential", "log", "sqrt",
    "sign", "compare", "select", "convert", "complex", "real", "imag", "constant", "fft",
    "pad", "reshape", "transpose", "slice", "reverse", "broadcast_in_dim", "concatenate",
    "dynamic_slice", "dynamic_update_slice", "gather"})

__all__ = ["COMPLEX_OPS", "OPS", "OpSpec", "ShapeError", "REDUCE_KINDS", "conv_output_shape",
           "DType", "window_output_shape"]
