"""One small ONNX model per op and attribute corner (float and integer ops), shared by
the reference and firmware tests. Each case is a function returning (model bytes,
inputs)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from onnx_models import build, node, randn

Case = tuple[bytes, list[np.ndarray]]


def _one(op: str, x: np.ndarray, consts: dict | None = None, extra: list[str] | None = None,
         opset: int = 17, **attrs) -> Case:
    """Op `op` on graph input x and the named constants (in order), output y."""
    consts = consts or {}
    names = ["x", *(extra if extra is not None else list(consts))]
    data = build([node(op, names, ["y"], **attrs)], {"x": x}, ["y"], consts, opset=opset)
    return data, [x]


def conv(shape=(1, 4, 7, 6), w=(6, 4, 3, 3), bias=True, seed=0, **attrs) -> Case:
    consts = {"w": randn(w, seed + 1)}
    if bias:
        consts["b"] = randn((w[0],), seed + 2)
    return _one("Conv", randn(shape, seed), consts, **attrs)


def conv_t(shape=(1, 4, 4, 5), w=(4, 3, 3, 3), bias=True, seed=10, **attrs) -> Case:
    consts = {"w": randn(w, seed + 1)}
    if bias:
        consts["b"] = randn((w[1] * attrs.get("group", 1),), seed + 2)
    return _one("ConvTranspose", randn(shape, seed), consts, **attrs)


def gemm(a=(3, 5), b=(5, 4), c=(3, 4), seed=20, **attrs) -> Case:
    consts = {"b": randn(b, seed + 1)}
    if c is not None:
        consts["c"] = randn(c, seed + 2)
    return _one("Gemm", randn(a, seed), consts, **attrs)


def matmul(a, b, seed=30, const=True) -> Case:
    if const:
        return _one("MatMul", randn(a, seed), {"b": randn(b, seed + 1)})
    xa, xb = randn(a, seed), randn(b, seed + 1)
    data = build([node("MatMul", ["x", "z"], ["y"])], {"x": xa, "z": xb}, ["y"])
    return data, [xa, xb]


def pool(op: str, shape=(1, 2, 7, 8), seed=40, **attrs) -> Case:
    return _one(op, randn(shape, seed), **attrs)


def binary(op: str, a, b, seed=50, dt=np.float32) -> Case:
    if dt == np.float32:
        xa, xb = randn(a, seed), randn(b, seed + 1)
    else:
        rng = np.random.default_rng(seed)
        xa = rng.integers(-50, 50, a).astype(dt)
        xb = rng.integers(1, 9, b).astype(dt) * rng.choice([-1, 1], b).astype(dt)
    data = build([node(op, ["x", "z"], ["y"])], {"x": xa, "z": xb}, ["y"])
    return data, [xa, xb]


def unary(op: str, shape=(2, 3, 8), seed=60, scale=3.0, positive=False, **attrs) -> Case:
    x = randn(shape, seed, scale)
    return _one(op, np.abs(x) + 0.1 if positive else x, **attrs)


def clip(lo, hi) -> Case:
    consts, names = {}, ["x"]
    for key, v in (("lo", lo), ("hi", hi)):
        if v is None:
            names.append("")
        else:
            consts[key] = np.array(v, np.float32)
            names.append(key)
    while names[-1] == "":
        names.pop()
    x = randn((2, 10), 61, 2.0)
    return build([node("Clip", names, ["y"])], {"x": x}, ["y"], consts), [x]


def ints(values) -> np.ndarray:
    return np.asarray(values, np.int64)


def shaped(op: str, shape, consts: dict, opset: int = 17, names=None, **attrs) -> Case:
    return _one(op, randn(shape, 70), consts, extra=names, opset=opset, **attrs)


def reduce(op: str, axes, keepdims=1, opset=17, shape=(2, 3, 4, 5)) -> Case:
    x = randn(shape, 80)
    if opset >= 18 or op == "ReduceSum":
        consts = {} if axes is None else {"axes": ints(axes)}
        return _one(op, x, consts, opset=max(opset, 13), keepdims=keepdims)
    return _one(op, x, axes=axes, keepdims=keepdims)


def gather_runtime() -> Case:
    x = randn((5, 4), 90)
    idx = np.array([[4, -1], [0, 2]], np.int64)
    data = build([node("Gather", ["x", "i"], ["y"], axis=0)], {"x": x, "i": idx}, ["y"])
    return data, [x, idx]


def torch_flatten() -> Case:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as torch.onnx exports x.view(n, -1)."""
    x = randn((2, 3, 4, 2), 91)
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
             node("Unsqueeze", ["n", "ax"], ["n1"]),
             node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             node("Reshape", ["x", "shape"], ["y"])]
    consts = {"zero": np.array(0, np.int64), "ax": ints([0]), "minus1": ints([-1])}
    return build(nodes, {"x": x}, ["y"], consts), [x]


def constant_nodes() -> Case:
    """Constant, ConstantOfShape and Expand feeding arithmetic."""
    x = randn((3, 4), 92)
    from onnx import helper

    value = helper.make_tensor("v", 1, [1], [0.5])
    nodes = [node("Constant", [], ["k"], value_floats=[1.0, 2.0, 3.0, 4.0]),
             node("Shape", ["x"], ["s"]),
             node("ConstantOfShape", ["s"], ["half"], value=value),
             node("Add", ["x", "half"], ["a"]), node("Mul", ["a", "k"], ["m"]),
             node("Expand", ["col", "s"], ["e"]), node("Sub", ["m", "e"], ["y"])]
    return build(nodes, {"x": x}, ["y"], {"col": randn((3, 1), 93)}), [x]


def batch_norm(shape=(2, 3, 4, 5)) -> Case:
    c = shape[1]
    rng = np.random.default_rng(94)
    consts = {"s": randn((c,), 95), "b": randn((c,), 96), "m": randn((c,), 97),
              "v": (rng.random(c) + 0.5).astype(np.float32)}
    return _one("BatchNormalization", randn(shape, 98), consts, epsilon=1e-3)


def cast_int() -> Case:
    return _one("Cast", randn((3, 5), 99, 5.0), to=6)


def graph_of(nodes: list, inputs: dict, outputs: list[str], opset: int = 17) -> Case:
    """A model of several nodes on graph inputs (the ops of one family side by side)."""
    data = build(nodes, inputs, outputs, opset=opset)
    return data, list(inputs.values())


def compare_where() -> Case:
    """Each comparison of two broadcast float tensors, and Where choosing by one of them;
    a few equal elements, so Equal and the *OrEqual ops see both outcomes."""
    a = np.round(randn((2, 3, 4), 80) * 2) / 2
    b = np.round(randn((3, 1), 81) * 2) / 2
    cmp = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]
    nodes = [node(op, ["a", "b"], [op.lower()]) for op in cmp]
    nodes.append(node("Where", ["less", "a", "b"], ["where"]))
    return graph_of(nodes, {"a": a, "b": b}, [op.lower() for op in cmp] + ["where"])


def logic_int() -> Case:
    """Comparisons of int32 tensors feeding And, Or, Xor, Not, and Where on integers."""
    rng = np.random.default_rng(82)
    a = rng.integers(-3, 4, (3, 5)).astype(np.int32)
    b = rng.integers(-3, 4, (5,)).astype(np.int32)
    nodes = [node("Equal", ["a", "b"], ["eq"]), node("Greater", ["a", "b"], ["gt"]),
             node("And", ["eq", "gt"], ["and_"]), node("Or", ["eq", "gt"], ["or_"]),
             node("Xor", ["eq", "gt"], ["xor"]), node("Not", ["gt"], ["not_"]),
             node("Equal", ["gt", "eq"], ["eq_bool"]),
             node("Where", ["gt", "a", "b"], ["where"])]
    return graph_of(nodes, {"a": a, "b": b},
                    ["and_", "or_", "xor", "not_", "eq_bool", "where"])


def math_float() -> Case:
    """The float functions and activations of math_ops.py side by side on one input (a
    few exact halves and a zero, for Round, Ceil, Sign and the thresholds), plus the
    variadic ops on three broadcast inputs, Pow and Mod."""
    x = randn((2, 3, 4), 83) * 2
    x.flat[:4] = [0.0, 2.5, -1.5, 0.5]
    b = np.abs(randn((3, 1), 84)) + 0.5
    c = randn((4,), 85)
    slope = randn((3, 1), 86) * 0.3
    unary = ["Erf", "Ceil", "Floor", "Round", "Sign", "Sin", "Cos", "Atan", "Sinh",
             "Reciprocal", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Mish", "Gelu",
             "ThresholdedRelu", "Shrink", "IsNaN", "IsInf"]
    nodes = [node(op, ["x"], [op.lower()]) for op in unary]
    nodes += [node("Gelu", ["x"], ["gelu_tanh"], approximate="tanh"),
              node("Elu", ["x"], ["elu_alpha"], alpha=0.5),
              node("Shrink", ["x"], ["shrink_bias"], lambd=1.0, bias=0.25),
              node("PRelu", ["x", "s"], ["prelu"]),
              node("Max", ["x", "b", "c"], ["max"]), node("Min", ["x", "c"], ["min"]),
              node("Sum", ["x", "b", "c"], ["sum"]), node("Mean", ["x", "b"], ["mean"]),
              node("Pow", ["b", "x"], ["pow"]), node("Mod", ["x", "b"], ["fmod"], fmod=1)]
    outs = [n.output[0] for n in nodes]
    return graph_of(nodes, {"x": x, "b": b, "c": c, "s": slope}, outs, opset=22)


def math_int() -> Case:
    """Integer Mod (Python's sign rule), Pow, bitwise ops and shifts, signed and
    unsigned, shift amounts beyond the width included."""
    rng = np.random.default_rng(87)
    a = rng.integers(-50, 50, (3, 4)).astype(np.int32)
    d = rng.integers(1, 7, (4,)).astype(np.int32) * np.array([1, -1, 1, -1], np.int32)
    u = rng.integers(0, 256, (3, 4)).astype(np.uint8)
    k = np.array([0, 3, 7, 9], np.uint8)
    e = np.array([0, 1, 2, 3], np.int32)
    nodes = [node("Mod", ["a", "d"], ["mod"]), node("Pow", ["a", "e"], ["pow"]),
             node("BitwiseAnd", ["a", "d"], ["band"]), node("BitwiseXor", ["a", "d"], ["bxor"]),
             node("BitwiseNot", ["a"], ["bnot"]), node("Sign", ["a"], ["sign"]),
             node("BitShift", ["u", "k"], ["shl"], direction="LEFT"),
             node("BitShift", ["u", "k"], ["shr"], direction="RIGHT")]
    outs = [n.output[0] for n in nodes]
    return graph_of(nodes, {"a": a, "d": d, "u": u, "k": k, "e": e}, outs, opset=22)


def norms(opset: int = 21) -> Case:
    """The reductions and normalizations of norms.py side by side: Reduce* with constant
    axes, ArgMax / ArgMin on ties (first and last index), Hardmax, LayerNormalization
    with its three outputs, Lp-, Instance- and GroupNormalization."""
    x = np.round(randn((2, 4, 3, 3), 88) * 2) / 2  # halves: ties for the Arg ops
    consts = {"ax": np.array([1, -1], np.int64), "g": randn((3,), 89), "b": randn((3,), 90),
              "cs": randn((4,), 91), "cb": randn((4,), 92)}
    nodes = [node("Mul", ["x", "x"], ["sq"])]  # a positive input for ReduceLogSum
    nodes += [node(op, [src, "ax"], [op.lower()], keepdims=k)
              for op, src, k in (("ReduceProd", "x", 1), ("ReduceL1", "x", 0),
                                 ("ReduceL2", "x", 1), ("ReduceSumSquare", "x", 0),
                                 ("ReduceLogSum", "sq", 1), ("ReduceLogSumExp", "x", 0))]
    nodes += [node("ArgMax", ["x"], ["argmax"], axis=1),
              node("ArgMax", ["x"], ["argmax_last"], axis=-1, keepdims=0,
                   select_last_index=1),
              node("ArgMin", ["x"], ["argmin"], axis=2, select_last_index=1),
              node("Hardmax", ["x"], ["hardmax"], axis=1),
              node("LayerNormalization", ["x", "g", "b"], ["ln", "ln_mean", "ln_inv"],
                   axis=-1),
              node("LayerNormalization", ["x", "g"], ["ln2"], axis=2, epsilon=1e-3),
              node("LpNormalization", ["x"], ["lp1"], axis=1, p=1),
              node("LpNormalization", ["x"], ["lp2"]),
              node("InstanceNormalization", ["x", "cs", "cb"], ["inorm"]),
              node("GroupNormalization", ["x", "cs", "cb"], ["gnorm"], num_groups=2)]
    outs = [o for n in nodes[1:] for o in n.output]
    # onnx's shape inference leaves GroupNormalization's output untyped: written here.
    data = build(nodes, {"x": x}, outs, consts, opset=opset,
                 output_types={"gnorm": (np.float32, list(x.shape))})
    return data, [x]


def movement() -> Case:
    """The data movement of movement.py side by side: Split by sizes and in parts, Tile, Trilu
    both triangles, GatherElements with computed (and negative) indices, SpaceToDepth,
    DepthToSpace in both modes, CumSum forward / reverse / exclusive, OneHot with
    computed indices (negative and out of range ones too), EyeLike."""
    x = randn((2, 8, 4, 6), 95)
    idx = np.random.default_rng(96).integers(-4, 4, (2, 3, 4, 6)).astype(np.int64)
    hot = np.array([[0, 3, -1], [5, -6, 2]], np.int64)
    consts = {"parts": np.array([1, 5, 2], np.int64), "reps": np.array([1, 2, 1, 2], np.int64),
              "k": np.array(1, np.int64), "km": np.array(-2, np.int64),
              "axis": np.array(-1, np.int64), "axis1": np.array(1, np.int64),
              "depth": np.array(5, np.int64), "onoff": np.array([-1.0, 2.0], np.float32)}
    nodes = [node("Split", ["x", "parts"], ["s0", "s1", "s2"], axis=1),
             node("Split", ["x"], ["h0", "h1"], axis=-1, num_outputs=2),
             node("Split", ["x"], ["n0", "n1", "n2"], axis=3, num_outputs=3),
             node("Tile", ["x", "reps"], ["tile"]),
             node("Trilu", ["x", "k"], ["triu"]),
             node("Trilu", ["x", "km"], ["tril"], upper=0),
             node("GatherElements", ["x", "i"], ["gel"], axis=2),
             node("SpaceToDepth", ["x"], ["s2d"], blocksize=2),
             node("DepthToSpace", ["x"], ["d2s"], blocksize=2),
             node("DepthToSpace", ["x"], ["d2s_crd"], blocksize=2, mode="CRD"),
             node("CumSum", ["x", "axis"], ["cum"]),
             node("CumSum", ["x", "axis1"], ["cum_rev_ex"], reverse=1, exclusive=1),
             node("CumSum", ["x", "axis"], ["cum_ex"], exclusive=1),
             node("OneHot", ["hot", "depth", "onoff"], ["onehot"], axis=1),
             node("EyeLike", ["hot"], ["eye"], k=1, dtype=1)]
    outs = [o for n in nodes for o in n.output]
    data = build(nodes, {"x": x, "i": idx, "hot": hot}, outs, consts, opset=18)
    return data, [x, idx, hot]


def functions() -> Case:
    """Ops minirt imports through their ONNX function bodies: causal Attention of 4-D
    Q, K, V (two heads, a float mask too), SoftmaxCrossEntropyLoss with its
    log-probabilities, NegativeLogLikelihoodLoss with an ignored index,
    MeanVarianceNormalization."""
    q, k, v = randn((1, 2, 3, 4), 97), randn((1, 2, 5, 4), 98), randn((1, 2, 5, 4), 99)
    mask = randn((3, 5), 100)
    scores = randn((3, 4, 2), 101)
    labels = np.array([[0, 3], [2, 1], [3, 3]], np.int64)
    nodes = [node("Attention", ["q", "k", "v"], ["att"], is_causal=1),
             node("Attention", ["q", "k", "v", "mask"], ["att_mask"], scale=0.3),
             node("SoftmaxCrossEntropyLoss", ["s", "lab"], ["sce", "logp"]),
             node("NegativeLogLikelihoodLoss", ["s", "lab"], ["nll"], reduction="sum",
                  ignore_index=3),
             node("MeanVarianceNormalization", ["q"], ["mvn"], axes=[0, 2, 3])]
    outs = [o for n in nodes for o in n.output]
    data = build(nodes, {"q": q, "k": k, "v": v, "mask": mask, "s": scores, "lab": labels},
                 outs, opset=23)
    return data, [q, k, v, mask, scores, labels]


def einsum_lppool() -> Case:
    """Einsum as attention scores, a batched diagonal through the ellipsis, a chain of
    three operands, an implicit output and a broadcast ellipsis; LpPool with p 1, 2, 3."""
    q, k = randn((2, 2, 3, 4), 102), randn((2, 2, 5, 4), 103)
    sq = randn((2, 3, 3), 104)
    a, b, c = randn((3, 4), 105), randn((4, 5), 106), randn((5, 2), 107)
    img = randn((1, 2, 6, 7), 108)
    nodes = [node("Einsum", ["q", "k"], ["scores"], equation="bhid,bhjd->bhij"),
             node("Einsum", ["sq"], ["diag"], equation="...ii->...i"),
             node("Einsum", ["a", "b", "c"], ["chain"], equation="ij,jk,kl->il"),
             node("Einsum", ["a", "b"], ["implicit"], equation="ij,jk"),
             node("Einsum", ["sq", "a"], ["ell"], equation="...ij,jk->...ik"),
             node("Einsum", ["q"], ["total"], equation="bhid->d"),
             node("LpPool", ["img"], ["lp1"], kernel_shape=[2, 3], p=1),
             node("LpPool", ["img"], ["lp2"], kernel_shape=[3, 3], strides=[2, 2],
                  pads=[1, 1, 1, 1]),
             node("LpPool", ["img"], ["lp3"], kernel_shape=[2, 2], p=3)]
    outs = [n.output[0] for n in nodes]
    ins = {"q": q, "k": k, "sq": sq, "a": a, "b": b, "c": c, "img": img}
    return graph_of(nodes, ins, outs, opset=18)


def resizes() -> Case:
    """Resize as PyTorch exports Upsample / F.interpolate: nearest by scales (every
    nearest_mode), linear by sizes under each coordinate transformation, down and up."""
    x = randn((1, 2, 4, 5), 109)
    up = np.array([1, 1, 2, 1.5], np.float32)
    nodes = [node("Resize", ["x", "", "up"], ["near"], mode="nearest"),
             *[node("Resize", ["x", "", "up"], [f"near_{m}"], mode="nearest",
                    nearest_mode=m, coordinate_transformation_mode="asymmetric")
               for m in ("round_prefer_ceil", "floor", "ceil")],
             *[node("Resize", ["x", "", "", sz], [f"lin_{ct}_{sz}"], mode="linear",
                    coordinate_transformation_mode=ct)
               for ct in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
               for sz in ("big", "small")],
             node("Resize", ["x", "", "s2"], ["lin_axes"], mode="linear", axes=[3])]
    consts = {"up": up, "big": np.array([1, 2, 7, 9], np.int64),
              "small": np.array([1, 2, 3, 1], np.int64), "s2": np.array([0.6], np.float32)}
    outs = [n.output[0] for n in nodes]
    return build(nodes, {"x": x}, outs, consts, opset=18), [x]


def top_k() -> Case:
    """TopK with a constant K: largest and smallest, along the last and a middle axis,
    on halves (ties: the lower index first), and on integers."""
    x = np.round(randn((2, 5, 6), 110) * 2) / 2
    n = np.random.default_rng(111).integers(-3, 3, (3, 7)).astype(np.int32)
    consts = {"k3": np.array([3], np.int64), "k2": np.array([2], np.int64),
              "k1": np.array([1], np.int64)}
    nodes = [node("TopK", ["x", "k3"], ["v_large", "i_large"]),
             node("TopK", ["x", "k2"], ["v_small", "i_small"], axis=1, largest=0),
             node("TopK", ["x", "k1"], ["v_one", "i_one"], axis=-2),
             node("TopK", ["n", "k3"], ["v_int", "i_int"], axis=1)]
    outs = [o for nd in nodes for o in nd.output]
    return build(nodes, {"x": x, "n": n}, outs, consts, opset=18), [x, n]


def scatters() -> Case:
    """ScatterND (rows and single elements, negative indices, add) and ScatterElements
    (an axis, repeated indices under add and max) with computed indices and updates."""
    data = randn((4, 3, 5), 112)
    rows = np.array([[1], [-1]], np.int64)
    cells = np.array([[0, 2], [3, -1], [0, 2]], np.int64)
    up_rows, up_cells = randn((2, 3, 5), 113), randn((3, 5), 114)
    el = np.array([[[0, 2, 1, 0, 2]], [[1, 1, 0, -1, 2]]], np.int64)
    up_el = randn((2, 1, 5), 115)
    ins = {"d": data, "r": rows, "c": cells, "ur": up_rows, "uc": up_cells, "e": el,
           "ue": up_el}
    nodes = [node("ScatterND", ["d", "r", "ur"], ["nd_rows"]),
             node("ScatterND", ["d", "c", "uc"], ["nd_add"], reduction="add"),
             node("ScatterElements", ["d", "e", "ue"], ["el_add"], axis=1, reduction="add"),
             node("ScatterElements", ["d", "e", "ue"], ["el_max"], axis=-2, reduction="max")]
    outs = [n.output[0] for n in nodes]
    return build(nodes, ins, outs, opset=18), list(ins.values())


CASES: dict[str, Callable[[], Case]] = {
    # Conv
    "conv-pads": lambda: conv(pads=[1, 1, 1, 1]),
    "conv-asym-pads-stride2": lambda: conv(pads=[0, 1, 2, 0], strides=[2, 2]),
    "conv-dilation2-no-bias": lambda: conv(bias=False, dilations=[2, 2], pads=[2, 2, 2, 2]),
    "conv-group2": lambda: conv(w=(6, 2, 3, 3), group=2, pads=[1, 1, 1, 1]),
    "conv-depthwise": lambda: conv(w=(8, 1, 3, 3), group=4, strides=[2, 1]),
    "conv-same-upper": lambda: conv(auto_pad="SAME_UPPER", strides=[2, 2]),
    "conv-same-lower": lambda: conv(w=(6, 4, 2, 2), auto_pad="SAME_LOWER", strides=[2, 2]),
    "conv-valid": lambda: conv(auto_pad="VALID", strides=[1, 2]),
    "conv-1d": lambda: conv(shape=(2, 3, 9), w=(4, 3, 3), pads=[1, 0], strides=[2]),
    # ConvTranspose
    "convt-stride2": lambda: conv_t(strides=[2, 2]),
    "convt-pads-output-padding": lambda: conv_t(strides=[2, 2], pads=[1, 0, 1, 2],
                                                output_padding=[1, 0]),
    "convt-group2-no-bias": lambda: conv_t(w=(4, 2, 3, 2), group=2, bias=False,
                                           strides=[1, 2]),
    "convt-dilation2": lambda: conv_t(dilations=[2, 2], pads=[1, 1, 1, 1]),
    "convt-same-upper": lambda: conv_t(w=(4, 3, 4, 4), strides=[2, 2], auto_pad="SAME_UPPER"),
    "convt-same-lower": lambda: conv_t(w=(4, 3, 3, 3), strides=[2, 2], auto_pad="SAME_LOWER"),
    "convt-output-shape": lambda: conv_t(strides=[2, 2], output_shape=[9, 10]),
    "convt-large-pads": lambda: conv_t(w=(4, 3, 2, 2), pads=[2, 1, 1, 2]),
    "convt-1d": lambda: conv_t(shape=(1, 2, 5), w=(2, 3, 3), strides=[3]),
    # Gemm, MatMul
    "gemm": lambda: gemm(),
    "gemm-transA-no-c": lambda: gemm(a=(5, 3), c=None, transA=1),
    "gemm-transB-alpha-beta": lambda: gemm(b=(4, 5), transB=1, alpha=0.5, beta=2.0),
    "gemm-c-row": lambda: gemm(c=(4,)),
    "gemm-c-scalar": lambda: gemm(c=(1,), transA=1, transB=1, a=(5, 3), b=(4, 5)),
    "matmul-2d": lambda: matmul((3, 5), (5, 4)),
    "matmul-3d-by-2d": lambda: matmul((2, 3, 5), (5, 4)),
    "matmul-batched": lambda: matmul((2, 3, 5), (2, 5, 4), const=False),
    "matmul-broadcast": lambda: matmul((2, 1, 3, 4), (5, 4, 2), const=False),
    "matmul-1d-left": lambda: matmul((5,), (2, 5, 3)),
    "matmul-1d-right": lambda: matmul((2, 3, 5), (5,)),
    "batchnorm": lambda: batch_norm(),
    "batchnorm-2d": lambda: batch_norm((4, 6)),
    # activations
    "relu": lambda: unary("Relu"),
    "clip-both": lambda: clip(-1.0, 1.5),
    "clip-min": lambda: clip(0.0, None),
    "clip-max": lambda: clip(None, 6.0),
    "clip-none": lambda: clip(None, None),
    "leaky-relu": lambda: unary("LeakyRelu", alpha=0.1),
    "leaky-relu-default": lambda: unary("LeakyRelu"),
    "sigmoid": lambda: unary("Sigmoid"),
    "tanh": lambda: unary("Tanh"),
    "hard-swish": lambda: unary("HardSwish", scale=4.0),
    "hard-sigmoid": lambda: unary("HardSigmoid", alpha=0.3, beta=0.4),
    "softmax": lambda: unary("Softmax"),
    "softmax-axis1": lambda: unary("Softmax", axis=1),
    "log-softmax": lambda: unary("LogSoftmax", axis=-2),
    "exp": lambda: unary("Exp", scale=1.0),
    "log": lambda: unary("Log", positive=True),
    "sqrt": lambda: unary("Sqrt", positive=True),
    "neg": lambda: unary("Neg"),
    "abs": lambda: unary("Abs"),
    "cast-to-int32": cast_int,
    "identity": lambda: unary("Identity"),
    "dropout": lambda: unary("Dropout"),
    # binary (numpy broadcasting)
    "add": lambda: binary("Add", (2, 3, 4), (2, 3, 4)),
    "add-broadcast": lambda: binary("Add", (2, 1, 4), (3, 1)),
    "sub-broadcast": lambda: binary("Sub", (4,), (2, 3, 4)),
    "mul-broadcast": lambda: binary("Mul", (2, 3, 1), (1, 4)),
    "div-broadcast": lambda: binary("Div", (2, 3, 4), (3, 1)),
    "div-int32-truncates": lambda: binary("Div", (3, 7), (3, 7), dt=np.int32),
    "add-int64": lambda: binary("Add", (2, 5), (5,), dt=np.int64),
    # pooling
    "maxpool-pads-strides": lambda: pool("MaxPool", kernel_shape=[3, 3], strides=[2, 2],
                                         pads=[1, 1, 1, 1]),
    "maxpool-ceil": lambda: pool("MaxPool", kernel_shape=[2, 2], strides=[2, 2],
                                 ceil_mode=1),
    "maxpool-ceil-pads": lambda: pool("MaxPool", shape=(1, 2, 6, 6), kernel_shape=[3, 3],
                                      strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    "maxpool-dilations": lambda: pool("MaxPool", kernel_shape=[2, 3], dilations=[2, 1]),
    "maxpool-same-upper": lambda: pool("MaxPool", kernel_shape=[3, 2], strides=[2, 3],
                                       auto_pad="SAME_UPPER"),
    "maxpool-1d": lambda: pool("MaxPool", shape=(2, 3, 9), kernel_shape=[3], strides=[2]),
    "avgpool-exclude-pad": lambda: pool("AveragePool", kernel_shape=[3, 3], strides=[2, 2],
                                        pads=[1, 1, 1, 1]),
    "avgpool-include-pad": lambda: pool("AveragePool", kernel_shape=[3, 3], strides=[2, 2],
                                        pads=[1, 1, 1, 1], count_include_pad=1),
    "avgpool-ceil": lambda: pool("AveragePool", kernel_shape=[2, 3], strides=[2, 2],
                                 ceil_mode=1),
    "avgpool-ceil-include-pad": lambda: pool("AveragePool", kernel_shape=[3, 3],
                                             strides=[2, 2], pads=[1, 0, 1, 0], ceil_mode=1,
                                             count_include_pad=1),
    "avgpool-same-lower": lambda: pool("AveragePool", kernel_shape=[2, 2], strides=[1, 1],
                                       auto_pad="SAME_LOWER"),
    "avgpool-valid": lambda: pool("AveragePool", kernel_shape=[3, 2], auto_pad="VALID"),
    "global-avgpool": lambda: pool("GlobalAveragePool"),
    "global-maxpool": lambda: pool("GlobalMaxPool"),
    # data movement
    "reshape-zero-minus-one": lambda: shaped("Reshape", (2, 3, 4), {"s": ints([0, -1, 2])}),
    "reshape-allowzero": lambda: shaped("Reshape", (2, 3, 4), {"s": ints([4, 6])},
                                        opset=14, allowzero=1),
    "flatten-axis0": lambda: shaped("Flatten", (2, 3, 4), {}, axis=0),
    "flatten-axis2": lambda: shaped("Flatten", (2, 3, 4), {}, axis=2),
    "flatten-axis-neg": lambda: shaped("Flatten", (2, 3, 4), {}, axis=-1),
    "transpose-perm": lambda: shaped("Transpose", (2, 3, 4), {}, perm=[1, 2, 0]),
    "transpose-default": lambda: shaped("Transpose", (2, 3, 4), {}),
    "concat": lambda: shaped("Concat", (2, 3, 4), {"c1": randn((2, 1, 4), 71),
                                                   "c2": randn((2, 2, 4), 72)}, axis=1),
    "concat-neg-axis": lambda: shaped("Concat", (2, 3, 4), {"c1": randn((2, 3, 2), 73)},
                                      axis=-1),
    "pad-constant": lambda: shaped("Pad", (2, 3, 4), {"p": ints([0, 1, 2, 1, 0, 1]),
                                                      "v": np.array(1.5, np.float32)}),
    "pad-negative": lambda: shaped("Pad", (2, 3, 4), {"p": ints([0, -1, 2, 0, 1, -2])}),
    "pad-reflect": lambda: shaped("Pad", (2, 3, 4), {"p": ints([0, 2, 1, 0, 1, 3])},
                                  mode="reflect"),
    "pad-edge": lambda: shaped("Pad", (2, 3, 4), {"p": ints([1, 0, 2, 0, 3, 1])},
                               mode="edge"),
    "pad-wrap": lambda: shaped("Pad", (2, 3, 4), {"p": ints([0, 1, 3, 0, 2, 1])},
                               mode="wrap", opset=19),
    "pad-axes": lambda: shaped("Pad", (2, 3, 4), {"p": ints([1, 2, 0, 1]),
                                                  "a": ints([-1, 0])},
                               names=["p", "", "a"], opset=18),
    "slice": lambda: shaped("Slice", (6, 5, 4), {"s": ints([1, 0]), "e": ints([5, 3])}),
    "slice-neg-clamped": lambda: shaped("Slice", (6, 5, 4), {"s": ints([-4, -100]),
                                                             "e": ints([1000, -1]),
                                                             "a": ints([0, 2])}),
    "slice-steps": lambda: shaped("Slice", (6, 5, 4), {"s": ints([0, 1]), "e": ints([6, 5]),
                                                       "a": ints([0, 1]), "t": ints([2, 3])}),
    "slice-neg-step": lambda: shaped("Slice", (6, 5, 4), {"s": ints([-1, 3]),
                                                          "e": ints([-1000, 0]),
                                                          "a": ints([-1, 1]),
                                                          "t": ints([-1, -2])}),
    "squeeze-axes": lambda: shaped("Squeeze", (1, 3, 1, 4), {"a": ints([0, -2])}),
    "squeeze-all": lambda: shaped("Squeeze", (1, 3, 1, 4), {}),
    "unsqueeze": lambda: shaped("Unsqueeze", (3, 4), {"a": ints([0, -1])}),
    "gather-axis0-neg": lambda: shaped("Gather", (5, 4), {"i": ints([4, -1, 0])}, axis=0),
    "gather-axis1-2d": lambda: shaped("Gather", (2, 5, 3), {"i": ints([[1, 2], [-5, 4]])},
                                      axis=1),
    "gather-scalar": lambda: shaped("Gather", (2, 5, 3), {"i": np.array(-2, np.int64)},
                                    axis=-1),
    "gather-runtime-indices": gather_runtime,
    "reduce-mean-keepdims": lambda: reduce("ReduceMean", [1, -1]),
    "reduce-mean-no-keepdims": lambda: reduce("ReduceMean", [2], keepdims=0),
    "reduce-mean-all": lambda: reduce("ReduceMean", None, keepdims=0, opset=18),
    "reduce-mean-axes-input": lambda: reduce("ReduceMean", [0, 2], opset=18),
    "reduce-sum": lambda: reduce("ReduceSum", [3], keepdims=0),
    "reduce-max": lambda: reduce("ReduceMax", [1, 2], opset=18),
    # comparisons, logical ops, Where
    "compare-where": compare_where,
    "logic-int": logic_int,
    # arithmetic and activations
    "math-float": math_float,
    "math-int": math_int,
    # reductions and normalizations
    "norms": norms,
    "rms-norm": lambda: _one("RMSNormalization", randn((2, 3, 4), 93),
                             {"s": randn((3, 4), 94)}, opset=23, axis=1),
    # more data movement
    "movement": movement,
    "einsum-lppool": einsum_lppool,
    "resize": resizes,
    "top-k": top_k,
    "scatter": scatters,
    # ops imported through their ONNX function bodies
    "functions": functions,
    "torch-flatten": torch_flatten,
    "constant-nodes": constant_nodes,
}

__all__ = ["CASES", "Case"]
