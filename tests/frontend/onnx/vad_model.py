"""A small voice-activity model of the kind PyTorch exports for silero-vad, built with
onnx's helper API (no PyTorch): per step one audio chunk, the sample rate and the
recurrent state in; a speech probability and the next state out.

    audio [1, 512] f32 -> Unsqueeze -> Pad (reflect, 64 on the right)
      -> Conv1d (the STFT: 130 fixed cos / sin basis rows of 128 taps, stride 64)
      -> real, imag -> Sqrt(Pow(real, 2) + Pow(imag, 2))            [1, 65, 8]
      -> If Equal(sr, 16000): Conv+Relu (16 kHz weights) else Conv+Relu (8 kHz)
      -> Conv+Relu (stride 2) -> ReduceMean over time -> [1, 1, 64]
      -> LSTM (initial_h = state[0], initial_c = state[1]) -> Y_h, Y_c
      -> state_out = Concat(Y_h, Y_c)                               [2, 1, 64]
      -> Relu(Y_h) -> MatMul + Add -> Sigmoid                       [1, 1]

`stream(step, chunks, state)` runs any implementation of one step over consecutive
chunks, feeding each state output back as the next state input, the way a VAD runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from onnx import TensorProto, helper, numpy_helper

CHUNK, N_FFT, HOP, HIDDEN, CHANNELS = 512, 128, 64, 64, 32
BINS = N_FFT // 2 + 1
STATE_SHAPE = (2, 1, HIDDEN)


def _stft_basis() -> np.ndarray:
    """[2 * BINS, 1, N_FFT]: Hann-windowed cos rows (real parts), then -sin rows."""
    n = np.arange(N_FFT)
    k = np.arange(BINS)[:, None]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)
    angle = 2 * np.pi * k * n / N_FFT
    basis = np.concatenate([window * np.cos(angle), -window * np.sin(angle)])
    return basis[:, None, :].astype(np.float32)


def _encoder_branch(name: str, weight: np.ndarray, bias: np.ndarray) -> object:
    """One If branch: Conv1d (kernel 3, padding 1) + Relu on the magnitude."""
    w, b = f"{name}_w", f"{name}_b"
    nodes = [helper.make_node("Conv", ["mag", w, b], [f"{name}_conv"], name=f"{name}_conv",
                              pads=[1, 1]),
             helper.make_node("Relu", [f"{name}_conv"], [f"{name}_out"],
                              name=f"{name}_relu")]
    out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT,
                                        [1, CHANNELS, 8])
    return helper.make_graph(nodes, name, [], [out], [numpy_helper.from_array(weight, w),
                                                      numpy_helper.from_array(bias, b)])


def vad_model(seed: int = 0) -> bytes:
    """The model's bytes (opset 17), its weights drawn from `seed`."""
    rng = np.random.default_rng(seed)

    def uniform(bound: float, *shape: int) -> np.ndarray:
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    consts = {
        "axis1": np.array([1], np.int64), "axis0": np.array([0], np.int64),
        "pads": np.array([0, 0, 0, 0, 0, HOP], np.int64), "basis": _stft_basis(),
        "two": np.float32(2), "rate16k": np.int64(16000),
        "starts_re": np.array([0], np.int64), "ends_re": np.array([BINS], np.int64),
        "ends_im": np.array([2 * BINS], np.int64),
        "enc_w": uniform(0.1, 2 * CHANNELS, CHANNELS, 3), "enc_b": uniform(0.1, 2 * CHANNELS),
        "W": uniform(0.1, 1, 4 * HIDDEN, 2 * CHANNELS),
        "R": uniform(0.1, 1, 4 * HIDDEN, HIDDEN), "B": uniform(0.1, 1, 8 * HIDDEN),
        "out_w": uniform(0.3, HIDDEN, 1), "out_b": uniform(0.1, 1),
    }
    then = _encoder_branch("enc16k", uniform(0.05, CHANNELS, BINS, 3), uniform(0.1, CHANNELS))
    other = _encoder_branch("enc8k", uniform(0.05, CHANNELS, BINS, 3), uniform(0.1, CHANNELS))
    n = helper.make_node
    nodes = [
        n("Unsqueeze", ["audio", "axis1"], ["x3"], name="unsqueeze"),
        n("Pad", ["x3", "pads"], ["padded"], name="pad", mode="reflect"),
        n("Conv", ["padded", "basis"], ["spec"], name="stft", strides=[HOP]),
        n("Slice", ["spec", "starts_re", "ends_re", "axis1"], ["re"], name="real"),
        n("Slice", ["spec", "ends_re", "ends_im", "axis1"], ["im"], name="imag"),
        n("Pow", ["re", "two"], ["re2"], name="re2"),
        n("Pow", ["im", "two"], ["im2"], name="im2"),
        n("Add", ["re2", "im2"], ["power"], name="power"),
        n("Sqrt", ["power"], ["mag"], name="magnitude"),
        n("Equal", ["sr", "rate16k"], ["is16k"], name="is16k"),
        n("If", ["is16k"], ["features"], name="by_rate", then_branch=then,
          else_branch=other),
        n("Conv", ["features", "enc_w", "enc_b"], ["enc"], name="encoder", pads=[1, 1],
          strides=[2]),
        n("Relu", ["enc"], ["enc_relu"], name="encoder_relu"),
        n("ReduceMean", ["enc_relu"], ["pooled"], name="pool", axes=[2], keepdims=0),
        n("Unsqueeze", ["pooled", "axis0"], ["seq"], name="as_sequence"),
        n("Gather", ["state", "axis0"], ["h0"], name="h0", axis=0),
        n("Gather", ["state", "axis1"], ["c0"], name="c0", axis=0),
        n("LSTM", ["seq", "W", "R", "B", "", "h0", "c0"], ["", "h", "c"], name="lstm",
          hidden_size=HIDDEN),
        n("Concat", ["h", "c"], ["state_out"], name="state_out", axis=0),
        n("Squeeze", ["h", "axis0"], ["h2"], name="last"),
        n("Relu", ["h2"], ["h_relu"], name="decoder_relu"),
        n("MatMul", ["h_relu", "out_w"], ["logit0"], name="decoder"),
        n("Add", ["logit0", "out_b"], ["logit"], name="decoder_bias"),
        n("Sigmoid", ["logit"], ["prob"], name="prob"),
    ]
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes, "vad",
        [vi("audio", TensorProto.FLOAT, [1, CHUNK]), vi("sr", TensorProto.INT64, []),
         vi("state", TensorProto.FLOAT, list(STATE_SHAPE))],
        [vi("prob", TensorProto.FLOAT, [1, 1]),
         vi("state_out", TensorProto.FLOAT, list(STATE_SHAPE))],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def audio_chunks(count: int, seed: int = 1) -> list[np.ndarray]:
    """`count` consecutive [1, 512] chunks of a 16 kHz signal: silence-level noise, then
    a voiced tone with harmonics, then noise again."""
    rng = np.random.default_rng(seed)
    t = np.arange(count * CHUNK) / 16000
    voiced = (np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t)
              + 0.25 * np.sin(2 * np.pi * 1100 * t))
    envelope = ((t > 0.2) & (t < 0.45)).astype(np.float64)
    signal = 0.6 * envelope * voiced + 0.02 * rng.standard_normal(t.size)
    return [c.reshape(1, CHUNK).astype(np.float32) for c in np.split(signal, count)]


# One step: (audio chunk, state) -> (probability, next state)
Step = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def stream(step: Step, chunks: Sequence[np.ndarray], state: np.ndarray
           ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each chunk through `step` in order, each step's state output the next one's state
    input; every step's (probability, state out)."""
    results = []
    for chunk in chunks:
        prob, state = step(chunk, state)
        results.append((prob, state))
    return results


__all__ = ["CHUNK", "STATE_SHAPE", "Step", "audio_chunks", "stream", "vad_model"]
