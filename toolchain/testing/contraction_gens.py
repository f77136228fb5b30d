"""The random generator's builders for contractions: dot_general and convolution.

Dimensions take any place in the operands (the layouts are shuffled), convolutions
draw dilations, padding (negative too), feature and batch groups, and the result type
may widen (an int8 model's accumulator, say).
"""

from __future__ import annotations

import numpy as np

from toolchain.testing.gen_context import DTYPE_WEIGHTS, Gen
from toolchain.types import DType, TensorType

__all__ = ["dot_general", "convolution"]


# Result types a contraction may widen to (the accumulator of an int8 model, say).
WIDER = {"f16": ("f32",), "bf16": ("f32",), "f32": ("f64",), "i8": ("i16", "i32"),
         "i16": ("i32",), "i32": ("i64",), "ui8": ("ui16", "ui32", "i32"), "ui16": ("ui32",)}
NUMERIC = tuple(n for n in DTYPE_WEIGHTS if n != "i1")


def _result_type(g: Gen, dt: DType) -> str:
    if dt.name in WIDER and g.chance(0.3):
        return g.rng.choice(WIDER[dt.name])
    return dt.name


def dot_general(g: Gen) -> bool:
    dt = g.dtype(names=NUMERIC)
    r = g.rng
    batch = [r.randint(1, 3) for _ in range(r.choice([0, 0, 1]))]
    contract = [r.randint(1, 5) for _ in range(r.choice([0, 1, 1, 1, 2]))]
    free_a = [r.randint(1, 4) for _ in range(r.choice([0, 1, 1, 2]))]
    free_b = [r.randint(1, 4) for _ in range(r.choice([0, 1, 1, 2]))]
    out = int(np.prod(batch + free_a + free_b, dtype=np.int64))
    size_a = int(np.prod(batch + free_a + contract, dtype=np.int64))
    size_b = int(np.prod(batch + free_b + contract, dtype=np.int64))
    if max(out, size_a, size_b) > g.max_elements:
        return False

    def layout(free: list[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        roles = [("b", i) for i in range(len(batch))] + [("f", i) for i in range(len(free))] \
            + [("c", i) for i in range(len(contract))]
        r.shuffle(roles)
        sizes = {"b": batch, "f": free, "c": contract}
        shape = tuple(sizes[k][i] for k, i in roles)
        pos = {role: p for p, role in enumerate(roles)}
        # Batch and contracting dims pair up by their order in the attribute lists.
        return (shape, tuple(pos[("b", i)] for i in range(len(batch))),
                tuple(pos[("c", i)] for i in range(len(contract))))

    sa, lb, lc = layout(free_a)
    sb, rb, rc = layout(free_b)
    a = g.operand(TensorType(sa, dt))
    b = g.operand(TensorType(sb, dt))
    g.op("dot_general", [a, b], lhs_batch=lb, rhs_batch=rb, lhs_contract=lc, rhs_contract=rc,
         dtype=_result_type(g, dt))
    return True


def convolution(g: Gen) -> bool:
    r = g.rng
    dt = g.dtype(names=NUMERIC)
    nsp = r.choice([1, 2, 2])
    fg = r.choice([1, 1, 1, 2, 3])
    bg = r.choice([1, 1, 2]) if fg == 1 else 1
    batch = bg * r.randint(1, 2)
    cin_group = r.randint(1, 3)
    cin = cin_group * fg
    cout = fg * bg * r.randint(1, 2)
    spatial, ksize, strides, pads, lhs_dil, rhs_dil, out_sp = [], [], [], [], [], [], []
    for _ in range(nsp):
        s = r.randint(1, 5)
        k = r.randint(1, 3)
        st = r.choice([1, 1, 2])
        ld = r.choice([1, 1, 1, 2])
        rd = r.choice([1, 1, 1, 2])
        lo, hi = r.choice([0, 0, 1, 2, -1]), r.choice([0, 0, 1, 2, -1])
        size = (s - 1) * ld + 1 + lo + hi
        win = (k - 1) * rd + 1
        if size < win:
            return False
        spatial.append(s)
        ksize.append(k)
        strides.append(st)
        pads.append((lo, hi))
        lhs_dil.append(ld)
        rhs_dil.append(rd)
        out_sp.append((size - win) // st + 1)
    x_elems = batch * cin * int(np.prod(spatial))
    w_elems = cout * cin_group * int(np.prod(ksize))
    o_elems = batch // bg * cout * int(np.prod(out_sp))
    if max(x_elems, w_elems, o_elems) > g.max_elements:
        return False

    def layout(first: int, second: int, sp: list[int]) -> tuple[tuple[int, ...], list[int]]:
        perm = list(range(nsp + 2))
        r.shuffle(perm)  # perm[i]: where logical dim i (first, second, spatial...) sits
        shape = [0] * (nsp + 2)
        for logical, size in enumerate([first, second, *sp]):
            shape[perm[logical]] = size
        return tuple(shape), perm

    xs, xp = layout(batch, cin, spatial)
    ws, wp = layout(cin_group, cout, ksize)
    _, op_ = layout(batch // bg, cout, out_sp)
    x = g.operand(TensorType(xs, dt))
    # Any kernel, infinite and NaN weights included: the spec multiplies the zeros
    # between lhs-dilated input elements by the kernel (0 * inf is NaN there), and so
    # must the firmware (tests/e2e/data/random_graphs/lhs_dilation_inf_*.mlir).
    w = g.operand(TensorType(ws, dt))
    g.op("convolution", [x, w], strides=tuple(strides), padding=tuple(pads),
         lhs_dilation=tuple(lhs_dil), rhs_dilation=tuple(rhs_dil),
         input_batch=xp[0], input_feature=xp[1], input_spatial=tuple(xp[2:]),
         kernel_input=wp[0], kernel_output=wp[1], kernel_spatial=tuple(wp[2:]),
         output_batch=op_[0], output_feature=op_[1], output_spatial=tuple(op_[2:]),
         feature_group_count=fg, batch_group_count=bg, dtype=_result_type(g, dt))
    return True
