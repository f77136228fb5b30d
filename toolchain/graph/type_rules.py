"""The type rules of the graph ops without regions (graph/ops.py holds the table that
names each op's rule): element-wise ops, complex numbers and FFTs, bit casts and random
numbers, shape ops, contractions, reductions by kind, gathers and slices, batch norms,
linear algebra and minirt's fixed-point and dequantize ops.

Each rule takes the node and returns its output types; it raises ShapeError when the
node is ill-formed. The checks every rule shares live here too, for the rules of ops
with regions (graph/region_rules.py) to use them the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral

from toolchain.graph.ir import Node
from toolchain.types import I1, TensorType, complex_of, complex_part, dtype

__all__ = ["FFT_TYPES", "REDUCE_KINDS", "RNG_ALGORITHMS", "ShapeError", "conv_output_shape"]


class ShapeError(Exception):
    """A node whose operands or attributes break its op's rules."""


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
    """Dimension numbers of one tensor of rank `rank`: each in [0, rank), none twice. The
    one check every dimension-number attribute goes through, so that the reference and
    the kernels never index with a negative dimension or one past the rank."""
    _require(all(isinstance(d, Integral) for d in dims), f"{what} {list(dims)} must be integers")
    _require(len(set(dims)) == len(dims), f"{what} {list(dims)} repeat a dimension")
    _require(all(0 <= d < rank for d in dims), f"{what} {list(dims)} out of range for rank {rank}")


def _check_window(at: dict, fields: tuple[str, ...], n: int) -> None:
    """Window attributes (sizes, strides, dilations): `n` positive integers each."""
    for f in fields:
        _require(len(at[f]) == n, f"{f} has {len(at[f])} entries for {n} dimensions")
        _require(all(isinstance(v, Integral) and v > 0 for v in at[f]),
                 f"{f} {list(at[f])} must be positive")


def window_output_shape(node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
    """reduce_window's result shape for an operand of `shape` (attrs window, strides,
    base_dilations, window_dilations, padding; dilations default to 1)."""
    ones = (1,) * len(shape)
    at = {"base_dilations": ones, "window_dilations": ones, **node.attrs}
    _check_window(at, ("window", "strides", "base_dilations", "window_dilations"),
                  len(shape))
    _require(len(at["padding"]) == len(shape) and all(len(p) == 2 for p in at["padding"]),
             f"padding must be {len(shape)} [low, high] pairs")
    out = []
    for i, d in enumerate(shape):
        base = (d - 1) * at["base_dilations"][i] + 1 + at["padding"][i][0] + at["padding"][i][1]
        win = (at["window"][i] - 1) * at["window_dilations"][i] + 1
        out.append(0 if base < win else (base - win) // at["strides"][i] + 1)
    return tuple(out)


# Element kinds a rule accepts (DType.kind): float, signed or unsigned integer, bool,
# complex.
F, I, B, C = "f", "iu", "b", "c"


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
    # i1 is one bit here (the spec's), not its byte; sub-byte integers are refused.
    _require(x.dtype.kind != "c" and dt.kind != "c" and (x.dtype.bits >= 8 or
             x.dtype.kind == "b") and (dt.bits >= 8 or dt.kind == "b"),
             f"bitcast_convert from {x.dtype} to {dt} is not supported")
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
    _require(dt.kind in "iuf" and dt.bits >= 8, f"rng cannot fill {dt}")
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
    # Dimension numbers name each dimension of their tensor once; the window lists give
    # one entry per spatial dimension (mutated models break both, issue 24).
    for role, dims in (("input", (at["input_batch"], at["input_feature"],
                                  *at["input_spatial"])),
                       ("kernel", (at["kernel_input"], at["kernel_output"],
                                   *at["kernel_spatial"])),
                       ("output", (at["output_batch"], at["output_feature"],
                                   *at["output_spatial"]))):
        _require(len(dims) == nsp + 2, f"{role} dimension numbers name {len(dims)} "
                 f"dimensions for rank {nsp + 2}")
        _check_dims(dims, nsp + 2, f"{role} dimensions")
    _check_window(at, ("strides", "lhs_dilation", "rhs_dilation"), nsp)
    _require(len(at["padding"]) == nsp and all(len(p) == 2 for p in at["padding"]),
             f"padding must be {nsp} [low, high] pairs")
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
    return [x.with_shape(window_output_shape(node, tuple(x.shape)))]


def _gather(node: Node) -> list[TensorType]:
    operand, idx = _shape(node, 0), _shape(node, 1)
    at = node.attrs
    _require(node.inputs[1].type.dtype.is_integer, "gather indices must be integers")
    sizes = at["slice_sizes"]
    _require(len(sizes) == len(operand), "slice_sizes does not match the operand rank")
    _require(all(0 <= s <= d for s, d in zip(sizes, operand)), "slice_sizes exceed the operand")
    obatch, ibatch = tuple(at["operand_batching_dims"]), tuple(at["start_indices_batching_dims"])
    _check_dims(tuple(at["collapsed_slice_dims"]) + obatch, len(operand),
                "collapsed_slice_dims + operand_batching_dims")
    _check_dims(tuple(at["start_index_map"]), len(operand), "start_index_map")
    _require(not set(obatch) & set(at["start_index_map"]),
             "start_index_map names an operand batching dim")
    ivd = at["index_vector_dim"]
    _require(isinstance(ivd, Integral) and 0 <= ivd <= len(idx),
             f"index_vector_dim {ivd} out of range for indices of rank {len(idx)}")
    _check_dims(ibatch, len(idx), "start_indices_batching_dims")
    _require(ivd not in ibatch and len(ibatch) == len(obatch) and all(
        operand[o] == idx[i] for o, i in zip(obatch, ibatch)),
        "gather batching dims do not pair up")
    collapsed = set(at["collapsed_slice_dims"]) | set(obatch)
    _require(all(sizes[d] <= 1 for d in collapsed), "collapsed dims must have slice size 1")
    batch = [d for i, d in enumerate(idx) if i != ivd]
    nidx = idx[ivd] if ivd < len(idx) else 1
    _require(len(at["start_index_map"]) == nidx, "start_index_map does not match the index vector")
    offsets = [s for i, s in enumerate(sizes) if i not in collapsed]
    _require(len(offsets) == len(at["offset_dims"]), "offset_dims does not match slice_sizes")
    rank = len(batch) + len(offsets)
    _check_dims(tuple(at["offset_dims"]), rank, "offset_dims")
    _require(list(at["offset_dims"]) == sorted(at["offset_dims"]), "offset_dims must be sorted")
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
