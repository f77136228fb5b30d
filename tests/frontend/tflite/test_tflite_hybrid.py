"""Hybrid CONV_2D (float input, int8 filter) against TFLite's default interpreter.

The oracle is LiteRT (`ai_edge_litert`, the full TFLite interpreter) with its default
XNNPACK delegate, the interpreter users run and the one that wrote the float MLPerf Tiny
fixtures; minirt promises its results (toolchain/frontend/tflite/hybrid.py says why).
Single-op models built in memory cover per-image and per-pixel quantization, strides,
SAME and VALID, dilation, groups, per-tensor and per-channel scales, batches, every
fused activation XNNPACK takes, inputs of one sign or all zero, and inputs placed on the
rounding ties of the activation quantization and of its zero point, and on the ranges
where the zero point's side matters; a few of them run as firmware on cortex-m4 and
x86-64. Without LiteRT, the reference is still held exactly to the module docstring's
steps written out in numpy.

Tolerance: numpy.isclose(rtol=1e-4, atol=1e-5), the issue's bound for float models
against TFLite. The integer part is exact; XNNPACK's last float multiply-add rounds in
another order (the differences seen are a few float32 ulps), while one quantized value
off by one moves an output by about its quantization step times a filter value, which
these cases keep far above the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from tflite_models import Tensor, single_op_model

from toolchain.emu.run import run_image
from toolchain.frontend.tflite import TFLiteError, import_model, read_model
from toolchain.module import read_module
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs
from toolchain.reference import run_graph
from toolchain.target import load_board

RTOL, ATOL = 1e-4, 1e-5


@dataclass(frozen=True)
class Conv:
    """One hybrid CONV_2D: input shape, filter shape (OHWI), options, filter scale(s)."""

    x: tuple[int, int, int, int]
    w: tuple[int, int, int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: str = "SAME"
    activation: str = "NONE"
    scale: float | tuple[float, ...] = 0.02
    bias: bool = True

    def out_shape(self) -> tuple[int, int, int, int]:
        dims = []
        for size, k, s, d in zip(self.x[1:3], self.w[1:3], self.stride, self.dilation):
            effective = (k - 1) * d + 1
            dims.append(-(-size // s) if self.padding == "SAME" else
                        (size - effective) // s + 1)
        return (self.x[0], dims[0], dims[1], self.w[0])

    def model(self, seed: int = 0) -> bytes:
        rng = np.random.default_rng(seed)
        w = rng.integers(-127, 128, self.w).astype(np.int8)
        if isinstance(self.scale, tuple):
            filt = Tensor(self.w, "int8", scale=list(self.scale), zero_point=[0] * self.w[0],
                          quantized_dimension=0, data=w)
        else:
            filt = Tensor(self.w, "int8", scale=self.scale, zero_point=0, data=w)
        bias = (Tensor((self.w[0],), "float32",
                       data=rng.standard_normal(self.w[0]).astype(np.float32))
                if self.bias else None)
        return single_op_model(
            "CONV_2D", [Tensor(self.x, "float32"), filt, bias],
            [Tensor(self.out_shape(), "float32")], padding=self.padding,
            stride_h=self.stride[0], stride_w=self.stride[1],
            dilation_h_factor=self.dilation[0], dilation_w_factor=self.dilation[1],
            fused_activation_function=self.activation)


CASES: dict[str, Conv] = {
    # Per image: every convolution but a 1x1, stride-1, ungrouped one.
    "3x3-same": Conv((1, 9, 7, 3), (5, 3, 3, 3)),
    "3x2-valid-stride-2x1": Conv((2, 9, 7, 3), (5, 3, 2, 3), stride=(2, 1), padding="VALID"),
    "5x5-same-stride-2-batch-3": Conv((3, 11, 10, 2), (4, 5, 5, 2), stride=(2, 2)),
    "kws-first-layer": Conv((1, 49, 10, 1), (8, 10, 4, 1), stride=(2, 2), activation="RELU"),
    "dilation-2": Conv((1, 9, 9, 2), (4, 3, 3, 2), dilation=(2, 2)),
    "dilation-valid": Conv((2, 10, 8, 3), (3, 2, 3, 3), dilation=(3, 2), padding="VALID"),
    "groups-2": Conv((1, 7, 7, 4), (6, 3, 3, 2)),
    "1x1-stride-2": Conv((1, 6, 5, 8), (6, 1, 1, 8), stride=(2, 2)),
    "1x1-groups-3": Conv((2, 6, 5, 6), (6, 1, 1, 2)),
    "1x1-one-channel-in-and-out": Conv((1, 5, 5, 1), (1, 1, 1, 1)),
    # Per pixel: the 1x1 stride-1 convolutions XNNPACK runs as a fully connected layer.
    "1x1-per-pixel": Conv((2, 6, 5, 8), (6, 1, 1, 8)),
    "1x1-per-pixel-valid": Conv((1, 4, 6, 16), (12, 1, 1, 16), padding="VALID"),
    "1x1-two-in-one-out": Conv((1, 5, 5, 2), (1, 1, 1, 2)),
    "1x1-one-in-two-out": Conv((1, 5, 5, 1), (2, 1, 1, 1)),
    # Scales and activations.
    "per-channel": Conv((2, 7, 7, 3), (4, 3, 3, 3), scale=(0.01, 0.02, 0.03, 0.04)),
    "per-channel-1x1": Conv((1, 5, 4, 6), (4, 1, 1, 6), scale=(0.3, 0.002, 0.05, 0.7)),
    "relu": Conv((1, 7, 7, 3), (4, 3, 3, 3), activation="RELU"),
    "relu6": Conv((1, 7, 7, 3), (4, 3, 3, 3), activation="RELU6"),
    "relu-n1-to-1": Conv((1, 7, 7, 3), (4, 3, 3, 3), activation="RELU_N1_TO_1", scale=0.002),
}

# Inputs: name -> input of a shape (the same generator for every case).
INPUTS = {
    "normal": lambda rng, shape: rng.standard_normal(shape) * 2 + 0.5,
    "positive": lambda rng, shape: np.abs(rng.standard_normal(shape)) * 3,
    "negative": lambda rng, shape: -np.abs(rng.standard_normal(shape)) * 3,
    "zeros": lambda rng, shape: np.zeros(shape),
    "constant": lambda rng, shape: np.full(shape, 5.0),
    "sparse": lambda rng, shape: rng.standard_normal(shape) * (rng.random(shape) < 0.3),
}


def litert():
    """LiteRT's interpreter module, or a skip when the wheel is absent."""
    return pytest.importorskip(
        "ai_edge_litert.interpreter",
        reason="ai-edge-litert (dev extra: TFLite's full interpreter) is not installed")


def run_litert(model: bytes, x: np.ndarray, resolver: str = "AUTO") -> np.ndarray:
    """The model's output in LiteRT; AUTO is the default (the XNNPACK delegate on)."""
    lite = litert()
    interp = lite.Interpreter(model_content=model,
                              experimental_op_resolver_type=getattr(lite.OpResolverType,
                                                                    resolver))
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


def reference(model: bytes, x: np.ndarray) -> np.ndarray:
    return run_graph(import_model(read_model(model)), [x])[0]


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    err = float(np.abs(got.astype(np.float64) - want).max())
    assert np.isclose(got, want, rtol=RTOL, atol=ATOL).all(), f"{what}: max abs error {err:.3g}"


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("name", CASES)
def test_reference_matches_litert(name: str, inputs: str) -> None:
    case = CASES[name]
    model = case.model()
    rng = np.random.default_rng(1)
    for trial in range(3 if inputs in ("normal", "sparse") else 1):
        x = INPUTS[inputs](rng, case.x).astype(np.float32)
        assert_close(reference(model, x), run_litert(model, x), f"{name}, {inputs} #{trial}")


# ------------------------------------------------------------------ the steps, in numpy

f32 = np.float32


def _parameters(values: np.ndarray) -> tuple[np.float32, int, np.float32]:
    """Steps 2 to 4 of hybrid.py's docstring for one group of values, scalar by scalar
    in float32: (scale, zero point, 1 / scale)."""
    rmin, rmax = min(f32(0), f32(values.min())), max(f32(0), f32(values.max()))
    scale = f32(1) if rmin == rmax else f32(255) / f32(rmax - rmin)
    low, high = f32(rmin * scale), f32(rmax * scale)
    from_low = f32(f32(-128) - low) if f32(f32(-128) + low) + f32(f32(127) + high) > 0 \
        else f32(f32(127) - high)
    zp = int(np.rint(min(max(from_low, f32(-128)), f32(127))))  # rint: ties to even
    return scale, zp, f32(f32(1) / scale)


def _xnnpack_conv(case: Conv, model: bytes, x: np.ndarray) -> np.ndarray:
    """The documented steps, written out with numpy on the model's own tensors."""
    op = read_model(model)
    w = op.tensors[op.operators[0].inputs[1]].data.astype(np.int64)
    bias = op.tensors[op.operators[0].inputs[2]].data.astype(np.float32)
    scales = np.broadcast_to(np.asarray(case.scale, np.float32), (case.w[0],))
    groups = case.x[3] // case.w[3]
    per_pixel = (case.w[1:3] == (1, 1) and case.stride == (1, 1) and groups == 1
                 and case.x[3] + case.w[0] > 2)
    oh, ow = case.out_shape()[1:3]
    pads = []
    for size, k, s, d, o in zip(case.x[1:3], case.w[1:3], case.stride, case.dilation, (oh, ow)):
        total = max((o - 1) * s + (k - 1) * d + 1 - size, 0) if case.padding == "SAME" else 0
        pads.append((total // 2, total - total // 2))
    out = np.zeros(case.out_shape(), np.float32)
    low, high = {"NONE": (-np.inf, np.inf), "RELU": (0, np.inf), "RELU6": (0, 6),
                 "RELU_N1_TO_1": (-1, 1)}[case.activation]
    for n in range(case.x[0]):
        groups_of_x = ([(i, j) for i in range(case.x[1]) for j in range(case.x[2])]
                       if per_pixel else [(slice(None), slice(None))])
        centred = np.zeros(case.x[1:], np.int64)
        inverse = np.zeros(case.x[1:3], np.float32)
        for at in groups_of_x:
            scale, zp, inv = _parameters(x[n][at])
            q = np.clip(np.rint(x[n][at] * scale) + zp, -128, 127)
            centred[at], inverse[at] = q - zp, inv
        padded = np.pad(centred, (*pads, (0, 0)))
        per_group = case.w[0] // groups
        for i in range(oh):
            for j in range(ow):
                rows = slice(i * case.stride[0], i * case.stride[0]
                             + (case.w[1] - 1) * case.dilation[0] + 1, case.dilation[0])
                cols = slice(j * case.stride[1], j * case.stride[1]
                             + (case.w[2] - 1) * case.dilation[1] + 1, case.dilation[1])
                window = padded[rows, cols]
                for o in range(case.w[0]):
                    g = o // per_group
                    acc = int((window[..., g * case.w[3]:(g + 1) * case.w[3]] * w[o]).sum())
                    inv = inverse[i, j] if per_pixel else inverse[0, 0]
                    y = f32(f32(f32(acc) * inv) * scales[o]) + bias[o]
                    out[n, i, j, o] = min(max(y, low), high)
    return out


@pytest.mark.parametrize("inputs", ["normal", "zeros", "sparse"])
@pytest.mark.parametrize("name", CASES)
def test_reference_follows_the_documented_steps(name: str, inputs: str) -> None:
    """The graph against the module docstring's steps written out in numpy, float32
    operation by operation: equal, not close (no LiteRT needed)."""
    case = CASES[name]
    model = case.model()
    x = INPUTS[inputs](np.random.default_rng(2), case.x).astype(np.float32)
    np.testing.assert_array_equal(reference(model, x), _xnnpack_conv(case, model, x))


# ------------------------------------------------------------------ rounding ties

def test_activation_ties_round_to_even() -> None:
    """Range [0, 255]: scale 1 and zero point -128, so x = k + 0.5 lands on a tie of
    round(x * scale). XNNPACK rounds ties to even (2.5 -> 2, 3.5 -> 4); rounding half
    away from zero, as TFLite's own hybrid kernel does, would be one step off."""
    case = Conv((1, 4, 4, 1), (3, 3, 3, 1), scale=0.5)  # 3x3: one range per image
    model = case.model()
    x = np.array([0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, -0.0, 100.5,
                  254.5, 255.0], np.float32).reshape(case.x)
    assert_close(reference(model, x), run_litert(model, x), "ties")


def test_zero_point_ties_round_to_even() -> None:
    """Range [-1, 1]: scale 127.5, the zero point is 127 - 127.5 = -0.5, a tie that
    lrintf rounds to 0 (half away from zero would give -1 and shift every value)."""
    case = Conv((1, 5, 5, 2), (3, 2, 2, 2), scale=0.5)
    model = case.model(seed=3)
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, case.x).astype(np.float32)
    x[0, 0, 0, 0], x[0, 4, 4, 1] = -1.0, 1.0
    assert_close(reference(model, x), run_litert(model, x), "zero point tie")


@pytest.mark.parametrize("low, high", [(-0.3016565144062042, 0.5980208516120911),
                                       (-0.2406899631023407, 1.274765133857727)])
def test_zero_point_from_the_low_end(low: float, high: float) -> None:
    """Ranges (found by search) where the two candidate zero points, -128 - low * scale
    and 127 - high * scale, round to different integers (-42.500008 -> -43 against
    -42.5 -> -42; -87.5 -> -88 against -87.49998 -> -87). XNNPACK takes the low end's
    here; the other would move the clamping of the extreme values by one step."""
    case = Conv((1, 6, 6, 1), (2, 3, 3, 1), scale=0.5)
    model = case.model(seed=8)
    x = np.random.default_rng(9).uniform(low, high, case.x).astype(np.float32)
    x.flat[7], x.flat[20] = low, high
    assert_close(reference(model, x), run_litert(model, x), f"range [{low}, {high}]")


def test_the_fixture_interpreter_is_not_evalhybrid() -> None:
    """What the oracle choice rests on: with its XNNPACK delegate off, TFLite's own
    hybrid kernel gives visibly other results, and minirt follows the delegate."""
    case = CASES["3x3-same"]
    model = case.model()
    x = INPUTS["normal"](np.random.default_rng(5), case.x).astype(np.float32)
    default, builtin = run_litert(model, x), run_litert(model, x, "BUILTIN_REF")
    assert not np.isclose(builtin, default, rtol=RTOL, atol=ATOL).all()
    assert_close(reference(model, x), default, "default interpreter")


# ------------------------------------------------------------------ refusals

def _error(model: bytes) -> str:
    with pytest.raises(TFLiteError) as info:
        import_model(read_model(model), "m.tflite")
    [line] = info.value.render().splitlines()
    return line


def test_without_bias_is_refused_as_tflite_refuses_it() -> None:
    model = Conv((1, 5, 5, 2), (3, 3, 3, 2), bias=False).model()
    assert _error(model) == ("m.tflite: operator 0 (CONV_2D): a hybrid CONV_2D without a bias "
                             "is not supported (TFLite's interpreter refuses it too)")
    lite = litert()
    interp = lite.Interpreter(model_content=model,
                              experimental_op_resolver_type=lite.OpResolverType.AUTO)
    with pytest.raises(RuntimeError, match="Tensor at index 2 was optional but was expected"):
        interp.allocate_tensors()


def _filter_model(zero_point: list[int], scale: list[float], axis: int = 0) -> bytes:
    w = np.ones((2, 1, 1, 2), np.int8)
    filt = Tensor(w.shape, "int8", scale=scale, zero_point=zero_point,
                  quantized_dimension=axis, data=w)
    return single_op_model("CONV_2D", [Tensor((1, 2, 2, 2), "float32"), filt,
                                       Tensor((2,), "float32", data=np.zeros(2))],
                           [Tensor((1, 2, 2, 2), "float32")], padding="SAME", stride_w=1,
                           stride_h=1)


@pytest.mark.parametrize("zero_point, scale, axis, message", [
    ([3], [0.1], 0, "filter must have zero point 0, not [3]: TFLite ignores it"),
    ([0, 0], [0.1, 0.2], 3, "filter is quantized along dimension 3; per-channel scales must "
                            "run along the output channels (dimension 0)"),
    ([0], [1e-40], 0, "is subnormal; TFLite's XNNPACK path takes normal scales only"),
])
def test_filters_tflite_would_not_run_this_way_are_refused(zero_point: list[int],
                                                            scale: list[float], axis: int,
                                                            message: str) -> None:
    line = _error(_filter_model(zero_point, scale, axis))
    assert line.startswith("m.tflite: operator 0 (CONV_2D): a hybrid CONV_2D's ")
    assert message in line


def test_tanh_activation_is_refused() -> None:
    """XNNPACK declines a fused TANH and TFLite's fallback computes it as NONE."""
    line = _error(Conv((1, 5, 5, 2), (3, 3, 3, 2), activation="TANH").model())
    assert "fused activation TANH is not supported" in line


# ------------------------------------------------------------------ firmware

FIRMWARE = ["5x5-same-stride-2-batch-3", "1x1-per-pixel", "per-channel", "groups-2",
            "dilation-valid"]


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
@pytest.mark.parametrize("name", FIRMWARE)
def test_firmware_matches_litert(name: str, board: str, tmp_path: Path) -> None:
    case = CASES[name]
    model = case.model()
    x = INPUTS["normal"](np.random.default_rng(6), case.x).astype(np.float32)
    x[:, ::2, ::3, :] = 0.0  # pixels whose range is empty
    want = run_litert(model, x)
    result = compile_graph(import_model(read_model(model)), load_board(board),
                           tmp_path / "fw", log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, [x]),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    got = decode_outputs(module.outputs, run.outputs)[0]
    assert_close(got, want, f"{name} on {board}")
    assert_close(got, reference(model, x), f"{name} on {board} against the reference")
