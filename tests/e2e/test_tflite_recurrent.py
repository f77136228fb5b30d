"""TFLite Micro's LSTM and SVDF models as cortex-m4 firmware under QEMU, bit for bit (or
numpy.isclose for the float model: float32 in another order, another libm) against
TFLite Micro's interpreter on seeded random inputs: three inferences on one state,
reset before the third.

mnist_lstm unrolls 28 time steps of an int8 LSTM (20 units), keyword_scrambled chains
seven SVDFs with int16 or int8 state; dtln is two int8 LSTMs of 128 units, one step.
The small op-level models of every type (tests/recurrent_models.py) run as one image
from their boot state (first inference), on cortex-m4 and riscv32.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from model_zoo import MODELS_DIR
from recurrent_models import LstmCase, SvdfCase, lstm_model, svdf_model, tflm_first_inference

from toolchain.emu.run import run_image
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.graph.ir import Graph
from toolchain.graph.pinned_inputs import pin_graph_inputs
from toolchain.module import read_module
from toolchain.pipeline import build_model, compile_graph, decode_outputs, encode_inputs
from toolchain.stream import run_firmware_stream
from toolchain.target import load_board
from toolchain.testing.difftest import merge_graphs

runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                              reason="tflite-micro is not installed")

TFLM = MODELS_DIR / "tflm"
MODELS = [
    "examples/mnist_lstm/trained_lstm_int8.tflite",
    "examples/mnist_lstm/trained_lstm.tflite",
    "models/keyword_scrambled_8bit.tflite",
    "models/keyword_scrambled.tflite",
    "examples/dtln/dtln_noise_suppression.tflite",
]


def _input(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max + 1, size=shape).astype(dt)
    return rng.random(shape).astype(dt)


STEPS, RESET_AT = 3, 2


@pytest.mark.parametrize("name", MODELS, ids=[Path(m).stem for m in MODELS])
def test_cortex_m4_firmware_matches_tflite_micro(name: str, tmp_path: Path) -> None:
    """Inference after inference in one emulator run, the LSTM / SVDF state carried in
    the firmware's state region, with a reset before the last step: each step equal to
    TFLite Micro's interpreter invoked (and reset) the same way."""
    path = TFLM / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared TFLite Micro models)")
    interp = runtime.Interpreter.from_file(str(path), arena_size=8 << 20)
    detail = interp.get_input_details(0)
    rng = np.random.default_rng(3)
    steps = [[_input(rng, tuple(detail["shape"]), np.dtype(detail["dtype"]))]
             for _ in range(STEPS)]
    result = build_model(path, "cortex-m4", tmp_path / "fw", log=lambda *_: None)
    assert result.graph.states, "the recurrent state is not kept between inferences"
    run = run_firmware_stream(result.board, result.out_dir, steps, result.graph,
                              resets=(RESET_AT,), log=lambda *_: None)
    for k, (x, outputs) in enumerate(zip(steps, run.outputs, strict=True)):
        if k == RESET_AT:
            interp.reset()
        interp.set_input(x[0], 0)
        interp.invoke()
        want, got = interp.get_output(0), outputs[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        if np.issubdtype(got.dtype, np.integer):
            assert np.array_equal(got, want), (k, got, want)
        else:
            assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (k, got, want)


def _from_boot_state(graph: Graph) -> Graph:
    """`graph` computing one inference from its boot state, with no state: its state
    inputs made constants of their boot values and its state outputs dropped (so that
    several models merge into one image, which has one signature)."""
    names = [f"in{k}" for k in range(len(graph.inputs))]
    boot = {names[len(graph.user_inputs) + k]: s.initial for k, s in enumerate(graph.states)}
    graph.outputs = graph.user_outputs
    graph.states = []
    pin_graph_inputs(graph, boot, names)
    return graph


@pytest.mark.parametrize("board", ["cortex-m4", "riscv32"])
def test_small_lstms_and_svdfs_of_every_type_as_one_image(board: str, tmp_path: Path) -> None:
    """The op-level models of every type (tests/recurrent_models.py: float, int8 and 16x8
    LSTMs in both time layouts, SVDFs with int16 and int8 state) merged into one image,
    equal to TFLite Micro's first inference."""
    built = [lstm_model(LstmCase("int8", 2, 4, 3, 6, time_major=True, hidden_zp=-3)),
             lstm_model(LstmCase("int16", 2, 3, 3, 5, cell_scale=2.0 ** -12, cell_clip=0.4)),
             lstm_model(LstmCase("float", 2, 3, 4, 3, cell_clip=0.1)),
             svdf_model(SvdfCase("int8", "int16", 2, 6, 3, 2, 5, state_scale=0.001)),
             svdf_model(SvdfCase("int8", "int8", 2, 7, 3, 2, 4, state_scale=0.05)),
             svdf_model(SvdfCase("float", "float32", 2, 5, 3, 2, 4))]
    graphs = [_from_boot_state(import_model(read_model(model))) for model, _ in built]
    result = compile_graph(merge_graphs(graphs), load_board(board), tmp_path / "fw",
                           log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf,
                    encode_inputs(module.inputs, [x for _, x in built]),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    for (model, x), got in zip(built, decode_outputs(module.outputs, run.outputs),
                               strict=True):
        want = tflm_first_inference(model, x)
        if np.issubdtype(want.dtype, np.integer):
            assert np.array_equal(got, want), (got, want)
        else:
            assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)
