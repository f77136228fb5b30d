"""Writes the two TOSA example models of this folder (run from the repository root:
`.venv/bin/python examples/tosa/models.py`):

- `cnn.mlir`: the shared JAX cnn (../shared/models/jax/cnn.mlir) in TOSA 1.0 as a TFLite
  or PyTorch lowering would write it: CONV2D with OHWI weights and a zero bias, CLAMP
  as the ReLU, MAX_POOL2D, AVG_POOL2D for JAX's sum-then-divide, RESHAPE with
  CONST_SHAPE and a batched MATMUL for the dense layer. Same weights, so it must give
  JAX's outputs (cnn.npz).
- `int8_cnn.mlir`: an int8 network in the form TOSA's quantized lowerings produce, every
  change of scale an explicit RESCALE: CONV2D with input zero point and per-channel
  DOUBLE_ROUND requantization, CLAMP as the ReLU, AVG_POOL2D with zero points,
  DEPTHWISE_CONV2D, a residual ADD between two RESCALEs to a common i32 domain,
  MAX_POOL2D, MATMUL with zero points and a bias, a TABLE (an int8 sigmoid) and ARGMAX.
  Weights and scales come from a seeded generator.
- `while_loop.mlir`: two WHILE_LOOPs: a recurrent cell run over the time steps of its
  input, h = tanh(h W + x[t] U), x[t] taken by a GATHER at the loop counter and the
  weights read from outside the loop; and Euclid's algorithm on two i32 vectors (INTDIV,
  SELECT), looping while any remainder is non-zero and counting its rounds.
- `cond_if.mlir`: two COND_IFs: a data-dependent one (sum(x) > 0, a tensor<1xi1>) that
  takes x as its input list into a dense layer with a ReLU or a sigmoid, and one on a
  rank-0 flag whose branches read an int8 tensor from outside (a RESCALE by 3/4, or a
  saturating doubling TABLE).

Constants are written as exact hex literals. The tests check that this script still
writes the committed files.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED_CNN = HERE.parents[1].parent / "shared" / "models" / "jax" / "cnn.mlir"

TYPES = {np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
         np.dtype(np.float32): "f32", np.dtype(np.bool_): "i1"}


def ttype(shape, dt) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + TYPES[np.dtype(dt)] + ">"


class Writer:
    """Lines of one function; each value's type is remembered for the op signatures."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.types: dict[str, str] = {}

    def arg(self, name: str, shape, dt) -> str:
        self.types[name] = ttype(shape, dt)
        return f"%{name}: {self.types[name]}"

    def const(self, name: str, value: np.ndarray) -> str:
        a = np.ascontiguousarray(value).reshape(np.shape(value))  # (keeps rank 0)
        ty = ttype(a.shape, a.dtype)
        hexa = a.astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()
        self.lines.append(f'%{name} = "tosa.const"() <{{values = dense<"0x{hexa}"> : {ty}}}> '
                          f": () -> {ty}")
        self.types[name] = ty
        return name

    def shape(self, name: str, values) -> str:
        n = len(values)
        self.lines.append(f"%{name} = tosa.const_shape {{values = dense<"
                          f"[{', '.join(map(str, values))}]> : tensor<{n}xindex>}} : () -> "
                          f"!tosa.shape<{n}>")
        self.types[name] = f"!tosa.shape<{n}>"
        return name

    def op(self, out: str, name: str, args, shape, dt, attrs: str = "") -> str:
        self.types[out] = ttype(shape, dt)
        attrs = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f"%{out} = tosa.{name} {', '.join('%' + a for a in args)}{attrs} : "
                          f"({', '.join(self.types[a] for a in args)}) -> {self.types[out]}")
        return out

    def function(self, args: list[str], results: list[str], comment: str) -> str:
        sig = ", ".join(self.types[r] for r in results)
        body = "\n".join("    " + line for line in self.lines)
        rets = ", ".join("%" + r for r in results)
        return (f"// {comment}\nmodule {{\n  func.func @main({', '.join(args)}) -> ({sig}) {{\n"
                f"{body}\n    return {rets} : {sig}\n  }}\n}}\n")


# ---------------------------------------------------------------------- the float cnn


def cnn_weights(path: Path = SHARED_CNN) -> list[np.ndarray]:
    """The JAX cnn's three weight tensors (HWIO, HWIO, [in, out]), read with minirt's own
    parser."""
    from toolchain.mlir import parse_file

    module = parse_file(path)
    arrays = [op.attr("value").array for op in module.walk()
              if op.name == "stablehlo.constant" and op.attr("value").array.ndim >= 2]
    if [a.shape for a in arrays] != [(3, 3, 1, 8), (3, 3, 8, 16), (16, 10)]:
        raise SystemExit(f"{path}: not the cnn this script knows")
    return arrays


def cnn_text(path: Path = SHARED_CNN) -> str:
    w1, w2, dense = cnn_weights(path)
    f32 = np.float32
    w = Writer()
    args = [w.arg("input", (1, 16, 16, 1), f32)]
    w.const("w1", w1.transpose(3, 0, 1, 2))  # HWIO -> OHWI
    w.const("w2", w2.transpose(3, 0, 1, 2))
    w.const("dense", dense.reshape(1, 16, 10))
    w.const("zero", np.zeros(1, f32))
    conv = ("acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, "
            "stride = array<i64: 1, 1>")
    relu = "min_val = 0.0 : f32, max_val = 3.40282347e+38 : f32"
    w.op("c1", "conv2d", ["input", "w1", "zero", "zero", "zero"], (1, 16, 16, 8), f32, conv)
    w.op("r1", "clamp", ["c1"], (1, 16, 16, 8), f32, relu)
    w.op("p1", "max_pool2d", ["r1"], (1, 8, 8, 8), f32,
         "kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>")
    w.op("c2", "conv2d", ["p1", "w2", "zero", "zero", "zero"], (1, 8, 8, 16), f32, conv)
    w.op("r2", "clamp", ["c2"], (1, 8, 8, 16), f32, relu)
    w.op("p2", "avg_pool2d", ["r2", "zero", "zero"], (1, 1, 1, 16), f32,
         "acc_type = f32, kernel = array<i64: 8, 8>, pad = array<i64: 0, 0, 0, 0>, "
         "stride = array<i64: 8, 8>")
    w.shape("s3", [1, 1, 16])
    w.op("flat", "reshape", ["p2", "s3"], (1, 1, 16), f32)
    w.op("logits3", "matmul", ["flat", "dense", "zero", "zero"], (1, 1, 10), f32)
    w.shape("s2", [1, 10])
    w.op("logits", "reshape", ["logits3", "s2"], (1, 10), f32)
    return w.function(args, ["logits"], "The shared JAX cnn in TOSA 1.0 "
                      "(written by examples/tosa/models.py).")


# ---------------------------------------------------------------------- the int8 cnn


def multiplier(scale: float) -> tuple[int, int]:
    """TOSA's 32-bit scale: multiplier in [2**30, 2**31) and shift with
    multiplier * 2**-shift = scale (rounded)."""
    m, e = math.frexp(scale)  # scale = m * 2**e, 0.5 <= m < 1
    mult = round(m * (1 << 31))
    if mult == 1 << 31:
        mult, e = mult // 2, e + 1
    return mult, 31 - e


def int8_params(seed: int = 7) -> dict:
    """The int8 cnn's weights, biases, zero points and scales (seeded)."""
    rng = np.random.default_rng(seed)
    p: dict = {"in_zp": -5, "in_scale": 0.02}
    p["w1"] = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    p["w1_scale"] = rng.uniform(0.004, 0.01, 8)
    p["b1"] = rng.integers(-3000, 3000, 8).astype(np.int32)
    p["c1_scale"], p["c1_zp"] = 0.06, -128  # after the ReLU: [0, 15.3]
    p["w2"] = rng.integers(-127, 128, (3, 3, 8, 1)).astype(np.int8)
    p["w2_scale"] = rng.uniform(0.005, 0.012, 8)
    p["b2"] = rng.integers(-2000, 2000, 8).astype(np.int32)
    p["c2_scale"], p["c2_zp"] = 0.08, 3
    p["sum_scale"], p["sum_zp"] = 0.1, -20
    p["w3"] = rng.integers(-127, 128, (1, 32, 10)).astype(np.int8)
    p["w3_scale"] = 0.006
    p["b3"] = rng.integers(-5000, 5000, (1, 1, 10)).astype(np.int32)
    p["out_scale"], p["out_zp"] = 0.3, 10
    # An int8 sigmoid of the logits: table[q + 128] = round(sigmoid(real) * 256) - 128.
    q = np.arange(-128, 128)
    real = (q - p["out_zp"]) * p["out_scale"]
    p["sigmoid"] = np.clip(np.round(256 / (1 + np.exp(-real))) - 128, -128, 127).astype(np.int8)
    # Requantization multipliers: real scale of the input times the weights' over the
    # output's (per channel where the weights are).
    p["r1"] = [multiplier(p["in_scale"] * s / p["c1_scale"]) for s in p["w1_scale"]]
    p["r2"] = [multiplier(p["c1_scale"] * s / p["c2_scale"]) for s in p["w2_scale"]]
    # The residual ADD as TFLite lowers it: both sides to i32 at 2**20 / the larger scale
    # (left shift 20 folded into the multipliers), add, back to int8.
    twice = 2 * max(p["c1_scale"], p["c2_scale"])
    p["ra"] = multiplier(p["c1_scale"] / twice * (1 << 20))
    p["rb"] = multiplier(p["c2_scale"] / twice * (1 << 20))
    p["rs"] = multiplier(twice / (1 << 20) / p["sum_scale"])
    p["r3"] = multiplier(p["sum_scale"] * p["w3_scale"] / p["out_scale"])
    return p


def _rescale(w: Writer, out: str, x: str, mults, shifts, in_zp, out_zp, out_shape, out_dt,
             mode: str, per_channel: bool, in_dt=np.int8) -> str:
    w.const(out + "_m", np.array(mults, np.int32))
    w.const(out + "_s", np.array(shifts, np.int8))
    w.const(out + "_izp", np.array([in_zp], in_dt))
    w.const(out + "_ozp", np.array([out_zp], out_dt))
    return w.op(out, "rescale", [x, out + "_m", out + "_s", out + "_izp", out + "_ozp"],
                out_shape, out_dt,
                f"rounding_mode = {mode}, scale32 = true, per_channel = "
                f"{str(per_channel).lower()}, input_unsigned = false, output_unsigned = false")


def int8_text(p: dict | None = None) -> str:
    p = p or int8_params()
    i8, i32 = np.int8, np.int32
    w = Writer()
    args = [w.arg("input", (1, 8, 8, 3), i8)]
    w.const("w1", p["w1"])
    w.const("b1", p["b1"])
    w.const("izp1", np.array([p["in_zp"]], i8))
    w.const("wzp", np.array([0], i8))
    w.op("acc1", "conv2d", ["input", "w1", "b1", "izp1", "wzp"], (1, 8, 8, 8), i32,
         "acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, "
         "stride = array<i64: 1, 1>")
    _rescale(w, "q1", "acc1", *zip(*p["r1"]), 0, p["c1_zp"], (1, 8, 8, 8), i8,
             "DOUBLE_ROUND", True, i32)
    w.op("relu1", "clamp", ["q1"], (1, 8, 8, 8), i8,
         f"min_val = {p['c1_zp']} : i8, max_val = 127 : i8")
    w.const("pzp", np.array([p["c1_zp"]], i8))
    w.op("pool1", "avg_pool2d", ["relu1", "pzp", "pzp"], (1, 4, 4, 8), i8,
         "acc_type = i32, kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, "
         "stride = array<i64: 2, 2>")
    w.const("w2", p["w2"])
    w.const("b2", p["b2"])
    w.op("acc2", "depthwise_conv2d", ["pool1", "w2", "b2", "pzp", "wzp"], (1, 4, 4, 8), i32,
         "acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, "
         "stride = array<i64: 1, 1>")
    _rescale(w, "q2", "acc2", *zip(*p["r2"]), 0, p["c2_zp"], (1, 4, 4, 8), i8,
             "SINGLE_ROUND", True, i32)
    _rescale(w, "sa", "pool1", [p["ra"][0]], [p["ra"][1]], p["c1_zp"], 0, (1, 4, 4, 8), i32,
             "SINGLE_ROUND", False)
    _rescale(w, "sb", "q2", [p["rb"][0]], [p["rb"][1]], p["c2_zp"], 0, (1, 4, 4, 8), i32,
             "SINGLE_ROUND", False)
    w.op("sum", "add", ["sa", "sb"], (1, 4, 4, 8), i32)
    _rescale(w, "res", "sum", [p["rs"][0]], [p["rs"][1]], 0, p["sum_zp"], (1, 4, 4, 8), i8,
             "DOUBLE_ROUND", False, i32)
    w.op("pool2", "max_pool2d", ["res"], (1, 2, 2, 8), i8,
         "kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>")
    w.shape("s3", [1, 1, 32])
    w.op("flat", "reshape", ["pool2", "s3"], (1, 1, 32), i8)
    w.const("w3", p["w3"])
    w.const("azp", np.array([p["sum_zp"]], i8))
    w.op("acc3", "matmul", ["flat", "w3", "azp", "wzp"], (1, 1, 10), i32)
    w.const("b3", p["b3"])
    w.op("acc3b", "add", ["acc3", "b3"], (1, 1, 10), i32)
    _rescale(w, "q3", "acc3b", [p["r3"][0]], [p["r3"][1]], 0, p["out_zp"], (1, 1, 10), i8,
             "DOUBLE_ROUND", False, i32)
    w.shape("s2", [1, 10])
    w.op("logits", "reshape", ["q3", "s2"], (1, 10), i8)
    w.const("sigmoid", p["sigmoid"])
    w.op("probs", "table", ["logits", "sigmoid"], (1, 10), i8)
    w.op("best", "argmax", ["logits"], (1,), i32, "axis = 1 : i32")
    return w.function(args, ["logits", "probs", "best"], "An int8 cnn in TOSA 1.0, every "
                      "requantization a RESCALE (written by examples/tosa/models.py).")


# ---------------------------------------------------------------------- control flow


def control_params(seed: int = 11) -> dict:
    """The control-flow examples' weights (seeded, multiples of 1/64: exact in f32)."""
    rng = np.random.default_rng(seed)
    p: dict = {"steps": 6}
    p["W"] = (rng.integers(-32, 33, (1, 4, 4)) / 64).astype(np.float32)
    p["U"] = (rng.integers(-48, 49, (1, 4, 4)) / 64).astype(np.float32)
    p["W1"] = (rng.integers(-40, 41, (1, 8, 4)) / 64).astype(np.float32)
    p["W2"] = (rng.integers(-40, 41, (1, 8, 4)) / 64).astype(np.float32)
    p["r"] = multiplier(0.75)
    q = np.arange(-128, 128)
    p["double"] = np.clip(2 * q, -128, 127).astype(np.int8)
    return p


def _region(w: Writer, header: str, build, yields: list[str], close: str) -> None:
    """A region: `header` (its block arguments, if any), the ops `build(w)` writes
    (indented), `tosa.yield`, then `close`."""
    if header:
        w.lines.append(header)
    start = len(w.lines)
    build(w)
    w.lines[start:] = ["  " + line for line in w.lines[start:]]
    w.lines.append(f"  tosa.yield {', '.join('%' + y for y in yields)} : "
                   f"{', '.join(w.types[y] for y in yields)}")
    w.lines.append(close)


def while_text(p: dict | None = None) -> str:
    p = p or control_params()
    f32, i32 = np.float32, np.int32
    w = Writer()
    steps = p["steps"]
    args = [w.arg("xs", (1, steps, 4), f32), w.arg("h0", (1, 1, 4), f32),
            w.arg("a", (8,), i32), w.arg("b", (8,), i32)]
    w.const("W", p["W"])
    w.const("U", p["U"])
    w.const("fzero", np.zeros(1, f32))
    w.const("t0", np.array(0, i32))
    w.const("one", np.array(1, i32))
    w.const("steps", np.array(steps, i32))
    hty, vty = w.types["h0"], ttype((8,), i32)
    w.types.update(h=hty, t="tensor<i32>", x=vty, y=vty, n="tensor<i32>")

    def cond_rnn(w: Writer) -> None:
        w.op("more", "greater", ["steps", "t"], (), np.bool_)

    def body_rnn(w: Writer) -> None:
        w.shape("ts", [1, 1])
        w.op("ti", "reshape", ["t", "ts"], (1, 1), i32)
        w.op("xt", "gather", ["xs", "ti"], (1, 1, 4), f32)
        w.op("hw", "matmul", ["h", "W", "fzero", "fzero"], (1, 1, 4), f32)
        w.op("xu", "matmul", ["xt", "U", "fzero", "fzero"], (1, 1, 4), f32)
        w.op("pre", "add", ["hw", "xu"], (1, 1, 4), f32)
        w.op("hn", "tanh", ["pre"], (1, 1, 4), f32)
        w.op("tn", "add", ["t", "one"], (), i32)

    loop = f"({hty}, tensor<i32>)"
    head = f"^bb0(%h: {hty}, %t: tensor<i32>):"
    w.lines.append(f"%rnn:2 = tosa.while_loop (%h = %h0, %t = %t0) : {loop} -> {loop} {{")
    _region(w, head, cond_rnn, ["more"], "} do {")
    _region(w, head, body_rnn, ["hn", "tn"], "}")
    w.types["rnn#0"] = hty

    w.const("zeros", np.zeros(8, i32))
    w.const("ones", np.ones(8, i32))
    w.const("nozp", np.zeros(1, np.int8))

    def cond_gcd(w: Writer) -> None:
        w.op("done", "equal", ["y", "zeros"], (8,), np.bool_)
        w.op("all", "reduce_all", ["done"], (1,), np.bool_, "axis = 0 : i32")
        w.op("go", "logical_not", ["all"], (1,), np.bool_)

    def body_gcd(w: Writer) -> None:
        w.op("z", "equal", ["y", "zeros"], (8,), np.bool_)
        w.op("safe", "select", ["z", "ones", "y"], (8,), i32)
        w.op("quo", "intdiv", ["x", "safe"], (8,), i32)
        w.op("prod", "mul", ["quo", "safe", "nozp"], (8,), i32)
        w.op("rem", "sub", ["x", "prod"], (8,), i32)
        w.op("x2", "select", ["z", "x", "y"], (8,), i32)
        w.op("y2", "select", ["z", "y", "rem"], (8,), i32)
        w.op("n2", "add", ["n", "one"], (), i32)

    loop = f"({vty}, {vty}, tensor<i32>)"
    head = f"^bb0(%x: {vty}, %y: {vty}, %n: tensor<i32>):"
    w.lines.append(f"%gcd:3 = tosa.while_loop (%x = %a, %y = %b, %n = %t0) : {loop} -> "
                   f"{loop} {{")
    _region(w, head, cond_gcd, ["go"], "} do {")
    _region(w, head, body_gcd, ["x2", "y2", "n2"], "}")
    w.types["gcd#0"], w.types["gcd#2"] = vty, "tensor<i32>"
    return w.function(args, ["rnn#0", "gcd#0", "gcd#2"], "Two TOSA WHILE_LOOPs: a recurrent "
                      "cell over time steps and Euclid's algorithm (written by "
                      "examples/tosa/models.py).")


def cond_if_text(p: dict | None = None) -> str:
    p = p or control_params()
    f32, i8 = np.float32, np.int8
    w = Writer()
    args = [w.arg("x", (1, 1, 8), f32), w.arg("flag", (), np.bool_), w.arg("q", (1, 8), i8)]
    w.const("W1", p["W1"])
    w.const("W2", p["W2"])
    w.const("fzero", np.zeros(1, f32))
    w.op("sum", "reduce_sum", ["x"], (1, 1, 1), f32, "axis = 2 : i32")
    w.shape("s1", [1])
    w.op("sum1", "reshape", ["sum", "s1"], (1,), f32)
    w.op("positive", "greater", ["sum1", "fzero"], (1,), np.bool_)
    xty, yty = w.types["x"], ttype((1, 1, 4), f32)
    w.types["v"] = xty

    def dense(weights: str, activation: str, attrs: str = ""):
        def build(w: Writer) -> None:
            w.op("m", "matmul", ["v", weights, "fzero", "fzero"], (1, 1, 4), f32)
            w.op("act", activation, ["m"], (1, 1, 4), f32, attrs)
        return build

    relu = "min_val = 0.0 : f32, max_val = 3.40282347e+38 : f32"
    w.lines.append(f"%dense = tosa.cond_if %positive (%v = %x) : tensor<1xi1> ({xty}) -> "
                   f"{yty} {{")
    _region(w, f"^bb0(%v: {xty}):", dense("W1", "clamp", relu), ["act"], "} else {")
    _region(w, f"^bb0(%v: {xty}):", dense("W2", "sigmoid"), ["act"], "}")
    w.types["dense"] = yty

    w.const("rm", np.array([p["r"][0]], np.int32))
    w.const("rs", np.array([p["r"][1]], np.int8))
    w.const("zp", np.zeros(1, i8))
    w.const("double", p["double"])
    qty = w.types["q"]

    def scale(w: Writer) -> None:
        w.op("scaled", "rescale", ["q", "rm", "rs", "zp", "zp"], (1, 8), i8,
             "rounding_mode = SINGLE_ROUND, scale32 = true, per_channel = false, "
             "input_unsigned = false, output_unsigned = false")

    def double(w: Writer) -> None:
        w.op("doubled", "table", ["q", "double"], (1, 8), i8)

    w.lines.append(f"%requant = tosa.cond_if %flag : tensor<i1> -> {qty} {{")
    _region(w, "", scale, ["scaled"], "} else {")
    _region(w, "", double, ["doubled"], "}")
    w.types["requant"] = qty
    return w.function(args, ["dense", "requant"], "Two TOSA COND_IFs: a data-dependent "
                      "choice of dense layer, and a flag choosing between two int8 "
                      "requantizations (written by examples/tosa/models.py).")


def main() -> int:
    if not SHARED_CNN.exists():
        print(f"{SHARED_CNN}: missing (the shared models folder sits beside the checkout)",
              file=sys.stderr)
        return 2
    (HERE / "cnn.mlir").write_text(cnn_text())
    (HERE / "int8_cnn.mlir").write_text(int8_text())
    (HERE / "while_loop.mlir").write_text(while_text())
    (HERE / "cond_if.mlir").write_text(cond_if_text())
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    sys.exit(main())
