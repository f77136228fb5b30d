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
         np.dtype(np.float32): "f32"}


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
        a = np.ascontiguousarray(value)
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


def main() -> int:
    if not SHARED_CNN.exists():
        print(f"{SHARED_CNN}: missing (the shared models folder sits beside the checkout)",
              file=sys.stderr)
        return 2
    (HERE / "cnn.mlir").write_text(cnn_text())
    (HERE / "int8_cnn.mlir").write_text(int8_text())
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    sys.exit(main())
