"""Reference kernels against naive loop implementations written from the StableHLO spec."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_node
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype

NP_TO_MLIR = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
              np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
              np.dtype(np.int64): "i64", np.dtype(np.uint8): "ui8", np.dtype(np.uint64): "ui64",
              np.dtype(np.bool_): "i1"}


def ttype(shape, np_dtype) -> TensorType:
    return TensorType(tuple(shape), dtype(NP_TO_MLIR[np.dtype(np_dtype)]))


def run(op: str, inputs: list[np.ndarray], out_shape, attrs: dict, out_dtype=None) -> np.ndarray:
    """Runs one verified node; the verifier's shape rule must agree with `out_shape`."""
    g = Graph("k")
    ins = [g.add_input(ttype(x.shape, x.dtype)) for x in inputs]
    node = g.add(op, ins, [ttype(out_shape, out_dtype or inputs[0].dtype)], attrs)
    err = verify_node(node)
    assert err is None, err.message
    g.outputs = node.outputs
    (out,) = run_graph(g, inputs)
    assert out.shape == tuple(out_shape)
    return out


RNG = np.random.default_rng(1234)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------------ convolution


def naive_conv(x, w, *, strides, padding, lhs_dil, rhs_dil, fg=1, bg=1,
               lhs=(0, 1, (2, 3)), rhs=(0, 1, (2, 3)), out=(0, 1, (2, 3))):
    """Loops over every output element and kernel tap. Layouts are (batch|out-feature,
    feature|in-feature, spatial dims) positions; returns (result, StableHLO attrs)."""
    ib, if_, isp = lhs
    ko, ki, ksp = rhs
    ob, of, osp = out
    xc = x.transpose([ib, if_, *isp]).astype(np.float64)  # [N, C, *S]
    wc = w.transpose([ko, ki, *ksp]).astype(np.float64)  # [O, I, *K]
    n_in, c = xc.shape[:2]
    o, i_per = wc.shape[:2]
    sizes = xc.shape[2:]
    ks = wc.shape[2:]
    nsp = len(sizes)
    out_sp = []
    for d in range(nsp):
        padded = (sizes[d] - 1) * lhs_dil[d] + 1 + padding[d][0] + padding[d][1]
        win = (ks[d] - 1) * rhs_dil[d] + 1
        out_sp.append(max(0, (padded - win) // strides[d] + 1) if padded >= win else 0)
    n_out = n_in // bg
    res = np.zeros([n_out, o, *out_sp])
    o_per_fg, o_per_bg = o // fg, o // bg
    for b, oc in itertools.product(range(n_out), range(o)):
        g = oc // o_per_fg
        bb = (oc // o_per_bg) * n_out + b
        for pos in itertools.product(*[range(s) for s in out_sp]):
            acc = 0.0
            for ic, tap in itertools.product(range(i_per), itertools.product(*map(range, ks))):
                src = []
                for d in range(nsp):
                    p = pos[d] * strides[d] + tap[d] * rhs_dil[d] - padding[d][0]
                    if p < 0 or p % lhs_dil[d]:
                        break
                    q = p // lhs_dil[d]
                    if q >= sizes[d]:
                        break
                    src.append(q)
                else:
                    acc += xc[(bb, g * i_per + ic, *src)] * wc[(oc, ic, *tap)]
            res[(b, oc, *pos)] = acc
    perm = [0] * (nsp + 2)
    perm[ob], perm[of] = 0, 1
    for d, od in enumerate(osp):
        perm[od] = 2 + d
    attrs = dict(strides=tuple(strides), padding=tuple(map(tuple, padding)),
                 lhs_dilation=tuple(lhs_dil), rhs_dilation=tuple(rhs_dil), input_batch=ib,
                 input_feature=if_, input_spatial=tuple(isp), kernel_input=ki,
                 kernel_output=ko, kernel_spatial=tuple(ksp), output_batch=ob,
                 output_feature=of, output_spatial=tuple(osp), feature_group_count=fg,
                 batch_group_count=bg, dtype="f32")
    return res.transpose(perm).astype(np.float32), attrs


NHWC = dict(lhs=(0, 3, (1, 2)), rhs=(3, 2, (0, 1)), out=(0, 3, (1, 2)))  # kernel HWIO
NCHW = dict(lhs=(0, 1, (2, 3)), rhs=(0, 1, (2, 3)), out=(0, 1, (2, 3)))  # kernel OIHW

CONV_CASES = {
    "nhwc-plain": (rand(2, 5, 5, 3), rand(3, 3, 3, 4), dict(NHWC, strides=(1, 1),
                   padding=((0, 0), (0, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1))),
    "nhwc-stride-pad": (rand(1, 7, 6, 2), rand(3, 2, 2, 3), dict(NHWC, strides=(2, 3),
                        padding=((1, 2), (0, 1)), lhs_dil=(1, 1), rhs_dil=(1, 1))),
    "negative-padding": (rand(1, 6, 6, 2), rand(2, 2, 2, 2), dict(NHWC, strides=(1, 1),
                         padding=((-1, 0), (1, -2)), lhs_dil=(1, 1), rhs_dil=(1, 1))),
    "lhs-rhs-dilation": (rand(1, 4, 5, 2), rand(2, 3, 2, 3), dict(NHWC, strides=(1, 2),
                         padding=((1, 1), (2, 0)), lhs_dil=(2, 1), rhs_dil=(1, 2))),
    "feature-groups": (rand(2, 5, 5, 4), rand(3, 3, 2, 6), dict(NHWC, strides=(1, 1),
                       padding=((1, 1), (1, 1)), lhs_dil=(1, 1), rhs_dil=(1, 1), fg=2)),
    "depthwise": (rand(1, 6, 6, 3), rand(3, 3, 1, 6), dict(NHWC, strides=(2, 2),
                  padding=((1, 1), (1, 1)), lhs_dil=(1, 1), rhs_dil=(1, 1), fg=3)),
    "batch-groups": (rand(4, 4, 4, 2), rand(2, 2, 2, 6), dict(NHWC, strides=(1, 1),
                     padding=((0, 0), (0, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1), bg=2)),
    "nchw-oihw": (rand(2, 3, 5, 4), rand(4, 3, 2, 3), dict(NCHW, strides=(1, 2),
                  padding=((1, 0), (0, 2)), lhs_dil=(1, 1), rhs_dil=(2, 1))),
    "mixed-layouts": (rand(3, 5, 2, 4), rand(2, 4, 3, 4), dict(
        lhs=(2, 3, (0, 1)), rhs=(1, 3, (0, 2)), out=(1, 0, (3, 2)), strides=(1, 1),
        padding=((0, 1), (1, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1))),
    "conv1d": (rand(2, 9, 3), rand(3, 3, 2), dict(lhs=(0, 2, (1,)), rhs=(2, 1, (0,)),
               out=(0, 2, (1,)), strides=(2,), padding=((1, 1),), lhs_dil=(1,), rhs_dil=(1,))),
}


@pytest.mark.parametrize("name", list(CONV_CASES))
def test_convolution(name: str) -> None:
    x, w, kw = CONV_CASES[name]
    want, attrs = naive_conv(x, w, **kw)
    got = run("convolution", [x, w], want.shape, attrs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------ reduce_window


def naive_reduce_window(x, init, kind, window, strides, base_dil, win_dil, padding):
    f = {"add": lambda a, b: a + b, "maximum": max, "minimum": min}[kind]
    out_shape = []
    for d in range(x.ndim):
        base = (x.shape[d] - 1) * base_dil[d] + 1 + padding[d][0] + padding[d][1]
        win = (window[d] - 1) * win_dil[d] + 1
        out_shape.append((base - win) // strides[d] + 1 if base >= win else 0)
    out = np.empty(out_shape, dtype=x.dtype)
    for pos in np.ndindex(*out_shape):
        acc = init
        for w in np.ndindex(*window):
            src = []
            for d in range(x.ndim):
                p = pos[d] * strides[d] + w[d] * win_dil[d] - padding[d][0]
                if p < 0 or p % base_dil[d] or p // base_dil[d] >= x.shape[d]:
                    break
                src.append(p // base_dil[d])
            else:
                acc = f(acc, x[tuple(src)])
        out[pos] = acc
    return out


RW_CASES = {
    "max-pool-2x2": (rand(1, 4, 4, 2), "maximum", -np.inf, (1, 2, 2, 1), (1, 2, 2, 1),
                     (1,) * 4, (1,) * 4, ((0, 0),) * 4),
    "avg-pool-padded": (rand(1, 5, 5, 1), "add", 0.0, (1, 3, 3, 1), (1, 2, 2, 1), (1,) * 4,
                        (1,) * 4, ((0, 0), (1, 1), (1, 1), (0, 0))),
    "negative-padding": (rand(6, 5), "add", 0.0, (2, 2), (1, 1), (1, 1), (1, 1),
                         ((-1, 1), (0, -2))),
    "window-dilation": (rand(7, 6), "maximum", -np.inf, (2, 3), (2, 1), (1, 1), (3, 2),
                        ((0, 0), (1, 0))),
    "base-dilation": (rand(4, 3), "minimum", np.inf, (3, 2), (1, 2), (2, 3), (1, 1),
                      ((1, 0), (0, 1))),
}


@pytest.mark.parametrize("name", list(RW_CASES))
def test_reduce_window(name: str) -> None:
    x, kind, init, window, strides, bd, wd, padding = RW_CASES[name]
    want = naive_reduce_window(x, np.float32(init), kind, window, strides, bd, wd, padding)
    attrs = dict(kind=kind, window=window, strides=strides, base_dilations=bd,
                 window_dilations=wd, padding=padding)
    got = run("reduce_window", [x, np.array(init, np.float32)], want.shape, attrs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------ gather


def gather(operand, indices, out_shape, **dn) -> np.ndarray:
    attrs = dict(offset_dims=(), collapsed_slice_dims=(), operand_batching_dims=(),
                 start_indices_batching_dims=(), start_index_map=(), index_vector_dim=0)
    attrs.update(dn)
    return run("gather", [operand, indices], out_shape, attrs)


def test_gather_embedding_lookup() -> None:
    # jnp.take(table, ids, axis=0) / table[ids] as JAX lowers it.
    table = rand(10, 4)
    ids = np.array([[3, 0, 9], [9, 1, 3]], np.int32)
    got = gather(table, ids[..., None], (2, 3, 4), offset_dims=(2,), collapsed_slice_dims=(0,),
                 start_index_map=(0,), index_vector_dim=2, slice_sizes=(1, 4))
    np.testing.assert_array_equal(got, table[ids])


def test_gather_row_by_scalar_index() -> None:
    # x[i] with a traced i: index vector of one element, the row collapsed.
    x = rand(5, 6)
    for i in (0, 3, 4):
        got = gather(x, np.array([i], np.int32), (6,), offset_dims=(0,),
                     collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=0,
                     slice_sizes=(1, 6))
        np.testing.assert_array_equal(got, x[i])


def test_gather_dynamic_slice_clamps_starts() -> None:
    # lax.dynamic_slice(x, (i, j), (2, 3)): starts are clamped to keep the slice inside.
    x = rand(5, 6)
    for i, j in ((1, 2), (4, 5), (-3, 0)):
        got = gather(x, np.array([i, j], np.int64), (2, 3), offset_dims=(0, 1),
                     start_index_map=(0, 1), index_vector_dim=0, slice_sizes=(2, 3))
        ci, cj = min(max(i, 0), 3), min(max(j, 0), 3)
        np.testing.assert_array_equal(got, x[ci:ci + 2, cj:cj + 3])


def test_gather_with_batching_dims() -> None:
    # Per-batch row lookup: out[b, k] = x[b, idx[b, k]].
    x = rand(3, 7)
    idx = np.array([[0, 6], [2, 2], [5, 1]], np.int32)
    got = gather(x, idx[..., None], (3, 2), offset_dims=(), collapsed_slice_dims=(1,),
                 operand_batching_dims=(0,), start_indices_batching_dims=(0,),
                 start_index_map=(1,), index_vector_dim=2, slice_sizes=(1, 1))
    np.testing.assert_array_equal(got, np.take_along_axis(x, idx, axis=1))


# ------------------------------------------------------------------------ pad


def naive_pad(x, value, low, high, interior):
    out_shape = [lo + hi + d + max(d - 1, 0) * it for d, lo, hi, it in
                 zip(x.shape, low, high, interior, strict=True)]
    out = np.full(out_shape, value, dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        pos = [lo + i * (it + 1) for i, lo, it in zip(idx, low, interior, strict=True)]
        if all(0 <= p < s for p, s in zip(pos, out_shape, strict=True)):
            out[tuple(pos)] = x[idx]
    return out


@pytest.mark.parametrize("low, high, interior", [
    ((1, 0), (2, 1), (0, 0)),
    ((0, 1), (0, 0), (1, 2)),
    ((-1, 2), (1, -2), (1, 1)),
    ((-2, -1), (-1, 0), (2, 0)),
])
def test_pad(low, high, interior) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    want = naive_pad(x, np.float32(-5), low, high, interior)
    got = run("pad", [x, np.array(-5, np.float32)], want.shape,
              dict(low=low, high=high, interior=interior))
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------ dot_general


def test_dot_general_with_batch_dims() -> None:
    # lhs [k, b, m, c] . rhs [c, b, n]: batch b, contract c and k against nothing else.
    a = rand(2, 3, 4, 5)
    b = rand(5, 3, 6)
    attrs = dict(lhs_batch=(1,), rhs_batch=(1,), lhs_contract=(3,), rhs_contract=(0,),
                 dtype="f32")
    got = run("dot_general", [a, b], (3, 2, 4, 6), attrs)
    want = np.zeros((3, 2, 4, 6))
    for bi, k, m, n in itertools.product(range(3), range(2), range(4), range(6)):
        want[bi, k, m, n] = sum(float(a[k, bi, m, c]) * float(b[c, bi, n]) for c in range(5))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dot_general_integer_accumulates_wide() -> None:
    a = np.full((1, 64), 100, np.int32)
    b = np.full((64, 1), 100, np.int32)
    attrs = dict(lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,), dtype="i32")
    assert run("dot_general", [a, b], (1, 1), attrs)[0, 0] == 640000


# ------------------------------------------------------------------------ integer division


@pytest.mark.parametrize("np_dtype", [np.int8, np.int32, np.int64])
def test_integer_divide_and_remainder_truncate_toward_zero(np_dtype) -> None:
    a = np.array([7, -7, 7, -7, 0, 5, -128 if np_dtype == np.int8 else -1000, 3], np_dtype)
    b = np.array([2, 2, -2, -2, 3, 7, 3, -5], np_dtype)
    q = run("divide", [a, b], a.shape, {})
    r = run("remainder", [a, b], a.shape, {})
    want_q = [int(x / y) if abs(x) < 2**52 else None for x, y in zip(a.tolist(), b.tolist(),
                                                                    strict=True)]
    assert q.tolist() == want_q
    assert r.tolist() == [x - y * qq for x, y, qq in zip(a.tolist(), b.tolist(), want_q,
                                                         strict=True)]
    assert q.dtype == r.dtype == np_dtype


def test_float_remainder_keeps_the_dividend_sign() -> None:
    a = np.array([5.5, -5.5, 5.5, -5.5], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0], np.float32)
    np.testing.assert_array_equal(run("remainder", [a, b], a.shape, {}), [1.5, -1.5, 1.5, -1.5])


# ------------------------------------------------------- found by the random graph fuzzer


@pytest.mark.parametrize("kind,ufunc", [("and", np.bitwise_and), ("or", np.bitwise_or)])
def test_integer_and_or_reductions_are_bitwise(kind: str, ufunc) -> None:
    x = np.array([[12, 10, 14, -1], [7, 3, 1, 5]], np.int32)
    init = np.array(-1 if kind == "and" else 0, np.int32)
    got = run("reduce", [x, init], (2,), dict(kind=kind, dims=(1,)))
    np.testing.assert_array_equal(got, ufunc.reduce(x, axis=1))
    assert got.tolist() == ([8, 1] if kind == "and" else [-1, 7])
    attrs = dict(kind=kind, window=(1, 2), strides=(1, 2), base_dilations=(1, 1),
                 window_dilations=(1, 1), padding=((0, 0), (0, 0)))
    got = run("reduce_window", [x, init], (2, 2), attrs)
    np.testing.assert_array_equal(got, ufunc(x[:, 0::2], x[:, 1::2]))
    b = np.array([[True, False], [True, True]])
    got = run("reduce", [b, np.array(kind == "and")], (2,), dict(kind=kind, dims=(1,)))
    assert got.tolist() == ([False, True] if kind == "and" else [True, True])


def test_broadcast_in_dim_with_unsorted_dims() -> None:
    # Operand dims 0, 1, 2 go to result dims 2, 0, 1 (the spec allows any order).
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    got = run("broadcast_in_dim", [x], (3, 4, 2, 5), dict(dims=(2, 0, 1), shape=(3, 4, 2, 5)))
    for a, b, c, e in itertools.product(range(3), range(4), range(2), range(5)):
        assert got[a, b, c, e] == x[c, a, b]


@pytest.mark.parametrize("op", ["erf", "erfc", "lgamma", "digamma", "bessel_i1e"])
def test_special_functions_of_a_scalar(op: str) -> None:
    """A rank-0 operand of the element-by-element special functions raised (frompyfunc
    gives a Python float there; found by the random graph fuzzer)."""
    x = np.array(0.75, np.float32)
    got = run(op, [x], (), {})
    assert got.shape == () and np.isfinite(got)
    np.testing.assert_array_equal(got.reshape(1), run(op, [x.reshape(1)], (1,), {}))


def test_ui64_sum_wraps_exactly() -> None:
    """A ui64 reduce added its init as float64 (numpy's int64 + uint64), so the sum lost
    its low bits (found by the random graph fuzzer)."""
    x = np.array([[2**63 + 1, 2**62 + 3], [5, 2**64 - 1]], np.uint64)
    init = np.array(7, np.uint64)
    got = run("reduce", [x, init], (2,), dict(dims=(1,), kind="add"))
    want = [(2**63 + 1 + 2**62 + 3 + 7) % 2**64, (5 + 2**64 - 1 + 7) % 2**64]
    assert got.dtype == np.uint64 and [int(v) for v in got] == want


@pytest.mark.parametrize("op", ["sign", "round_nearest_afz"])
def test_negative_zero_stays_negative(op: str) -> None:
    """sign(-0.0) and round_nearest_afz(-0.0) are -0.0 (the spec, and the firmware); the
    reference gave +0.0, which atan2 or a divide turns into a different number (found
    by the random graph fuzzer)."""
    x = np.array([-0.0, 0.0, -0.25, 2.5, np.nan], np.float32)
    got = run(op, [x], (5,), {})
    assert list(np.signbit(got[:3])) == [True, False, True]
    assert got[3] == (1.0 if op == "sign" else 3.0) and np.isnan(got[4])
    if op == "sign":
        ints = run(op, [np.array([-3, 0, 4], np.int32)], (3,), {})
        assert ints.dtype == np.int32 and list(ints) == [-1, 0, 1]
