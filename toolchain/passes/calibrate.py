"""Calibration for int8 post-training quantization (`--quantize int8`).

The calibration file is an .npz with one array per model input, `input_0`, `input_1`,
..., each holding S samples along a new leading axis: shape (S, *input shape). The float
graph runs on every sample with the numpy reference executor and each float tensor's
least and greatest finite value is recorded. Those ranges become per-tensor asymmetric
int8 quantization the way TFLite's converter chooses it (`activation_quant`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolchain.graph.ir import Graph, Tensor
from toolchain.loader import (
    UsageError,
    check_input,
    check_member_header,
    open_npz,
    read_member,
)
from toolchain.quant.fixedpoint import round_half_away
from toolchain.reference.kernels import KERNELS
from toolchain.types import F32, QuantParams, TensorType, dtype, to_dtype

__all__ = ["Ranges", "activation_quant", "calibrate", "calibration_sha256",
           "load_calibration"]

I8 = dtype("i8")
QMIN, QMAX = -128, 127

# id(tensor) -> (least, greatest) finite value seen over all calibration samples.
Ranges = dict[int, tuple[float, float]]


def calibration_sha256(path: str | Path) -> str:
    """The file's SHA-256 (it goes into the build stamp); UsageError when unreadable."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:
        raise UsageError(f"{path}: cannot read the calibration file: "
                         f"{e.strerror or e}") from None


def load_calibration(path: str | Path, graph: Graph) -> list[np.ndarray]:
    """The samples of `path` for `graph`'s inputs, one array of shape (S, *input shape)
    per input, each in the input's host dtype. UsageError (one line, naming the file and
    the array) when the file is no .npz, an array is missing, extra or of the wrong
    shape, the inputs disagree on S, S is 0, or a value does not fit the input's type or
    is not finite."""
    if graph.states:
        # A state's range depends on the steps before: one sample per input says nothing
        # of it. An int8 .tflite carries TFLite's own scales for its variables instead.
        raise UsageError(f"{path}: --quantize int8 of a model that keeps state between "
                         "inferences is not supported (quantize it with TFLite: an int8 "
                         ".tflite keeps its variables' scales)")
    what = f"{path}: calibration file"
    data = open_npz(path, "the calibration file",
                    "input_0, input_1, ... of shape (samples, *input shape)")
    n = len(graph.inputs)
    expected = [f"input_{i}" for i in range(n)]
    with data:
        extra = sorted(set(data.files) - set(expected))
        if extra:
            raise UsageError(f"{what} holds {extra[0]!r}, which is no input of the model "
                             f"(it takes {n}: {', '.join(expected) or 'none'})")
        samples: list[np.ndarray] = []
        for key, t in zip(expected, graph.inputs):
            if key not in data.files:
                raise UsageError(f"{what} has no {key!r} (the model takes {n} input"
                                 f"{'s' if n != 1 else ''}: {', '.join(expected)})")
            # The header first: a member that would inflate past 1 GiB (or past what its
            # header says) is refused before it is decompressed.
            check_member_header(data, path, key, t.type, f"{path}: {key!r}", samples=True)
            samples.append(_check_samples(read_member(data, path, key), t.type,
                                          f"{path}: {key!r}"))
    counts = {x.shape[0] for x in samples}
    if len(counts) > 1:
        sizes = ", ".join(f"{k} {x.shape[0]}" for k, x in zip(expected, samples))
        raise UsageError(f"{what}: the inputs hold different numbers of samples ({sizes})")
    return samples


def _check_samples(x: np.ndarray, ty: TensorType, what: str) -> np.ndarray:
    # Its shape, (S, *input shape), was checked from its header (check_member_header).
    if x.shape[0] == 0:
        raise UsageError(f"{what} holds no samples (its leading axis is 0)")
    y = check_input(x, TensorType(tuple(x.shape), ty.dtype), what)
    if ty.dtype.is_float and not np.isfinite(y).all():
        idx = np.unravel_index(int(np.argmin(np.isfinite(y))), y.shape)
        raise UsageError(f"{what}[{', '.join(map(str, idx))}] is {y[idx].item()!r}; "
                         "calibration samples must be finite")
    return y


def calibrate(graph: Graph, samples: Sequence[np.ndarray]) -> Ranges:
    """Runs `graph` (float, as the reference executes it) on each sample and returns the
    range of every float tensor: its inputs and every node's outputs. Non-finite values
    (a -inf reduction start, say) take no part; a tensor with no finite value gets (0, 0)."""
    count = samples[0].shape[0] if samples else 1
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}

    def record(t: Tensor, value: np.ndarray) -> None:
        if not t.type.dtype.is_float:
            return
        finite = value[np.isfinite(value)]
        if finite.size == 0:
            return
        k = id(t)
        lo[k] = min(lo.get(k, np.inf), float(finite.min()))
        hi[k] = max(hi.get(k, -np.inf), float(finite.max()))

    for s in range(count):
        env: dict[int, np.ndarray] = {}
        for t, x in zip(graph.inputs, samples):
            env[id(t)] = to_dtype(x[s], t.type.dtype)
            record(t, env[id(t)])
        for node in graph.nodes:
            result = KERNELS[node.op](node, *[env[id(t)] for t in node.inputs])
            outs = result if isinstance(result, tuple | list) else [result]
            for t, v in zip(node.outputs, outs):
                env[id(t)] = np.asarray(v).reshape(t.type.shape)
                record(t, env[id(t)])
    tensors = list(graph.inputs) + [t for n in graph.nodes for t in n.outputs]
    return {id(t): (lo.get(id(t), 0.0), hi.get(id(t), 0.0)) for t in tensors
            if t.type.dtype.is_float}


def activation_quant(lo: float, hi: float) -> QuantParams:
    """Per-tensor asymmetric int8 for values in [lo, hi], as TFLite's converter picks it:
    the range widened to hold 0 (so 0 is exact: padding, ReLU), scale = (hi - lo) / 255
    in float32, zero point = -128 - lo / scale rounded half away from zero and clamped
    to [-128, 127]. A range of just 0 gets scale 1 (any scale holds it; 1 keeps every
    derived multiplier finite)."""
    lo32 = np.float32(min(float(lo), 0.0))
    hi32 = np.float32(max(float(hi), 0.0))
    scale = np.float32((hi32 - lo32) / np.float32(QMAX - QMIN))
    if not np.isfinite(scale):
        raise ValueError(f"the range [{lo}, {hi}] is too wide for float32 scales")
    if scale == 0:
        return QuantParams(I8, F32, (1.0,), (QMIN,))
    zp_real = np.float32(QMIN) - lo32 / scale
    zp = int(np.clip(round_half_away(zp_real), QMIN, QMAX))
    return QuantParams(I8, F32, (float(scale),), (zp,))
