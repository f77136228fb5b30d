"""Small UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF models for tests, with seeded random
weights, built with tests/tflite_models.py. Their state tensors are variable tensors
(is_variable) and not model inputs, as in the models TFLite's converter writes.

`lstm_model(...)` and `svdf_model(...)` return the model's bytes and a seeded random
input for it; `first_inference(model, x)` compares minirt's reference with TFLite
Micro's interpreter on the first invocation (the state at its initial value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tflite_models import Op, Tensor, build_model, run_tflm

from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference.state import StateRunner

# The gate order of TFLite's LSTM inputs: input, forget, cell, output.
GATES = 4


@dataclass(frozen=True)
class LstmCase:
    """One LSTM: element types ("float", "int8", "int16" = 16x8), sizes, layout."""

    kind: str
    batch: int
    steps: int
    features: int
    units: int
    time_major: bool = False
    cell_scale: float = 2.0 ** -11  # the int16 cell state's (a power of two, as TFLite's)
    cell_clip: float = 0.0
    hidden_zp: int = 0
    seed: int = 0

    @property
    def name(self) -> str:
        return (f"{self.kind}-b{self.batch}t{self.steps}i{self.features}u{self.units}"
                f"{'-tm' if self.time_major else ''}-c{int(-np.log2(self.cell_scale))}"
                f"{'-clip' if self.cell_clip else ''}-z{self.hidden_zp}")


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
            limit: int | None = None) -> np.ndarray:
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if limit is None else (-limit, limit)
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def _weight(rng: np.random.Generator, case: LstmCase, shape: tuple[int, int]) -> Tensor:
    if case.kind == "float":
        return Tensor(shape, "float32", data=rng.normal(0, 0.4, shape).astype(np.float32))
    return Tensor(shape, "int8", scale=float(rng.uniform(0.004, 0.02)), zero_point=0,
                  data=_random(rng, shape, "int8"))


def _bias(rng: np.random.Generator, case: LstmCase, input_scale: float, w: Tensor
          ) -> Tensor:
    shape = (case.units,)
    if case.kind == "float":
        return Tensor(shape, "float32", data=rng.normal(0, 0.3, shape).astype(np.float32))
    dtype = "int32" if case.kind == "int8" else "int64"
    scale = input_scale * float(w.scale)  # type: ignore[arg-type]
    values = np.round(rng.normal(0, 0.3, shape) / scale).astype(dtype)
    return Tensor(shape, dtype, scale=scale, zero_point=0, data=values)


def lstm_model(case: LstmCase, *, peephole: bool = False, projection: bool = False,
               layer_norm: bool = False, variable_state: bool = True,
               replace: dict[int, Tensor | None] | None = None
               ) -> tuple[bytes, np.ndarray]:
    """The model of `case` (optionally with inputs TFLite Micro refuses, or inputs
    `replace`d by index: a broken model) and an input."""
    rng = np.random.default_rng(case.seed)
    b, t, i, u = case.batch, case.steps, case.features, case.units
    shape_in = (t, b, i) if case.time_major else (b, t, i)
    shape_out = (t, b, u) if case.time_major else (b, t, u)
    act = {"float": "float32", "int8": "int8", "int16": "int16"}[case.kind]
    if case.kind == "float":
        x = Tensor(shape_in, act)
        x_value = rng.normal(0, 1, shape_in).astype(np.float32)
        hidden = Tensor((b, u), act, is_variable=variable_state)
        cell = Tensor((b, u), act, is_variable=variable_state)
        out = Tensor(shape_out, act)
        x_scale = 1.0
    else:
        x_zp = int(rng.integers(-20, 20)) if case.kind == "int8" else 0
        x_scale = 0.03 if case.kind == "int8" else 1e-4
        x = Tensor(shape_in, act, scale=x_scale, zero_point=x_zp)
        x_value = _random(rng, shape_in, act)
        h_scale = 1 / 128 if case.kind == "int8" else 1 / 32768
        hidden = Tensor((b, u), act, scale=h_scale, zero_point=case.hidden_zp,
                        is_variable=variable_state)
        cell = Tensor((b, u), "int16", scale=case.cell_scale, zero_point=0,
                      is_variable=variable_state)
        out = Tensor(shape_out, act, scale=h_scale, zero_point=case.hidden_zp)
    inputs: list[Tensor | None] = [x]
    input_weights = [_weight(rng, case, (u, i)) for _ in range(GATES)]
    inputs += input_weights
    inputs += [_weight(rng, case, (u, u)) for _ in range(GATES)]
    inputs += [Tensor((u,), "float32", data=np.ones(u, np.float32)) if peephole else None
               for _ in range(3)]
    inputs += [_bias(rng, case, x_scale, w) for w in input_weights]
    inputs += [Tensor((u, u), "float32", data=np.eye(u, dtype=np.float32))
               if projection else None, None]
    inputs += [hidden, cell]
    inputs += [Tensor((u,), "float32", data=np.ones(u, np.float32)) if layer_norm else None
               for _ in range(4)]
    for index, tensor in (replace or {}).items():
        inputs[index] = tensor
    options = dict(fused_activation_function="TANH", cell_clip=case.cell_clip,
                   proj_clip=0.0, time_major=case.time_major)
    model = build_model([Op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [out], options)], [x],
                        [out])
    return model, x_value


@dataclass(frozen=True)
class SvdfCase:
    """One SVDF: "float" or "int8" with an int16 or int8 state; sizes; rank."""

    kind: str
    state: str  # "float32", "int16" or "int8"
    batch: int
    features: int
    units: int
    rank: int
    memory: int
    bias: bool = True
    activation: str = "RELU"
    state_scale: float = 0.01
    seed: int = 0

    @property
    def name(self) -> str:
        return (f"{self.kind}-{self.state}-b{self.batch}i{self.features}u{self.units}"
                f"r{self.rank}m{self.memory}{'' if self.bias else '-nobias'}-{self.activation}"
                f"-s{self.state_scale:g}")


def svdf_model(case: SvdfCase, replace: dict[int, Tensor | None] | None = None
               ) -> tuple[bytes, np.ndarray]:
    """The model of `case` (inputs `replace`d by index: a broken model) and a seeded
    random input."""
    rng = np.random.default_rng(case.seed)
    b, i, f, m = case.batch, case.features, case.units * case.rank, case.memory
    if case.kind == "float":
        x = Tensor((b, i), "float32")
        x_value = rng.normal(0, 1, (b, i)).astype(np.float32)
        wf = Tensor((f, i), "float32", data=rng.normal(0, 0.5, (f, i)).astype(np.float32))
        wt = Tensor((f, m), "float32", data=rng.normal(0, 0.5, (f, m)).astype(np.float32))
        bias = Tensor((case.units,), "float32",
                      data=rng.normal(0, 0.5, case.units).astype(np.float32))
        state = Tensor((b, f * m), "float32", is_variable=True)
        out = Tensor((b, case.units), "float32")
    else:
        x = Tensor((b, i), "int8", scale=0.05, zero_point=int(rng.integers(-20, 20)))
        x_value = _random(rng, (b, i), "int8")
        wf = Tensor((f, i), "int8", scale=0.01, zero_point=0,
                    data=_random(rng, (f, i), "int8"))
        wt_scale = 0.002 if case.state == "int16" else 0.01
        wt = Tensor((f, m), case.state, scale=wt_scale, zero_point=0,
                    data=_random(rng, (f, m), case.state, 300 if case.state == "int16" else None))
        state_zp = 0 if case.state == "int16" else int(rng.integers(-60, 60))
        state = Tensor((b, f * m), case.state, scale=case.state_scale, zero_point=state_zp,
                       is_variable=True)
        bias_scale = float(np.float32(np.float32(case.state_scale) * np.float32(wt_scale)))
        bias = Tensor((case.units,), "int32", scale=bias_scale, zero_point=0,
                      data=_random(rng, (case.units,), "int32", 2000))
        out = Tensor((b, case.units), "int8", scale=0.02, zero_point=int(rng.integers(-30, 30)))
    inputs = [x, wf, wt, bias if case.bias else None, state]
    for index, tensor in (replace or {}).items():
        inputs[index] = tensor
    model = build_model([Op("SVDF", inputs, [out], dict(rank=case.rank,
                                                        fused_activation_function=case.activation))],
                        [x], [out])
    return model, x_value


def tflm_first_inference(model: bytes, x: np.ndarray) -> np.ndarray:
    """TFLite Micro's output of the first invocation (AllocateTensors resets the state:
    int8 variable tensors to their zero point, others to zero)."""
    outputs, _ = run_tflm(model, [x])
    return outputs[0]


def minirt_first_inference(model: bytes, x: np.ndarray) -> np.ndarray:
    """minirt's reference output of the first inference, from the boot state."""
    return StateRunner(import_model(read_model(model))).step([x])[0]


__all__ = ["LstmCase", "SvdfCase", "lstm_model", "minirt_first_inference", "svdf_model",
           "tflm_first_inference"]
