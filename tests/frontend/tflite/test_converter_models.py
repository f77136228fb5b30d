"""Models as TFLite's converter writes them (tests/frontend/tflite/data/converter, made by
bench/fixtures/make_converter_models.py with tensorflow-cpu 2.21) against TFLite Micro's
interpreter, on seeded random inputs: minirt's reference and firmware under QEMU on
cortex-m4 and x86-64 (one on riscv32 too), int8 / int16 outputs exact, float ones within
numpy.isclose(rtol=1e-5, atol=1e-6) (toolchain/testing/tflm_models.py: minirt's own exp
and tanh against TFLite Micro's libm).

Issues 19 and 21: the other TFLite tests build their models with the flatbuffers
builder; these are fresh int8 / 16x8 / float models from Keras (a U-Net with nearest and
bilinear resizes, a CNN with 3 / 13 / 61 / 27 channels and a dilated conv, a MobileNetV3
block, a Conv1D keyword model, an LSTM as the converter's WHILE loop and a tf_keras
LSTM as int8 UNIDIRECTIONAL_SEQUENCE_LSTM), and Keras 3's
nearest upsampling, which the converter writes with TILE: TFLite Micro does not run it,
so its oracle is TensorFlow's own TFLite interpreter (outputs stored with the fixture).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minirt
from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import load_tflite
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference.state import StateRunner
from toolchain.testing.tflm_models import check_model, run_tflm, seeded_inputs

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

DATA = Path(__file__).parent / "data" / "converter"
PAIR = ["cortex-m4", "x86-64"]

# fixture -> (boards its firmware runs on, operators it must hold: what it is here to test,
# checked so that a fixture re-made by another TensorFlow still tests it)
FIXTURES: dict[str, tuple[list[str], set[str]]] = {
    "unet_int8": (PAIR, {"RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", "CONCATENATION",
                         "MAX_POOL_2D"}),
    "unet_float": (PAIR, {"RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", "CONCATENATION"}),
    "odd_cnn_int8": ([*PAIR, "riscv32"], {"CONV_2D", "DEPTHWISE_CONV_2D", "MEAN",
                                          "FULLY_CONNECTED", "SOFTMAX"}),
    "odd_cnn_16x8": (PAIR, {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}),
    "mobilenet_block_int8": (PAIR, {"HARD_SWISH", "MEAN", "MUL", "ADD"}),
    "conv1d_kws_int8": (PAIR, {"PAD", "LEAKY_RELU", "AVERAGE_POOL_2D", "LOGISTIC"}),
    "conv1d_kws_16x8": (PAIR, {"PAD", "LEAKY_RELU", "AVERAGE_POOL_2D", "LOGISTIC"}),
    "lstm_float": (PAIR, {"WHILE"}),
    "lstm_tf_keras_int8": (PAIR, {"UNIDIRECTIONAL_SEQUENCE_LSTM"}),
}
# Fixtures whose oracle is TensorFlow's interpreter (TFLite Micro does not run them).
TF_ORACLE = {"tile_upsample_int8": {"TILE", "RESHAPE"}}


def _ops(name: str) -> set[str]:
    model = read_model((DATA / f"{name}.tflite").read_bytes())
    return {op.opcode for sub in (model, *model.others) if not isinstance(sub, str)
            for op in sub.operators}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_holds_the_operators_it_tests(name: str) -> None:
    assert FIXTURES[name][1] <= _ops(name)
    for name, ops in TF_ORACLE.items():
        assert ops <= _ops(name)


def test_dilated_and_odd_channel_layers_are_in_the_cnn() -> None:
    """odd_cnn's conv kept its dilation (the converter did not lower it to
    SPACE_TO_BATCH_ND) and its channel counts are issue 21's."""
    model = read_model((DATA / "odd_cnn_int8.tflite").read_bytes())
    convs = [op for op in model.operators if op.opcode == "CONV_2D"]
    assert [op.options.get("dilation_h_factor") for op in convs] == [1, 2, 1]
    assert [model.tensors[op.inputs[1]].shape[0] for op in convs] == [13, 61, 27]
    assert model.tensors[convs[0].inputs[0]].shape[-1] == 3
    fc = next(op for op in model.operators if op.opcode == "FULLY_CONNECTED")
    assert list(model.tensors[fc.inputs[1]].shape) == [10, 27]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_matches_tflite_micro_on_boards(name: str, tmp_path: Path) -> None:
    boards = FIXTURES[name][0]
    check = check_model(DATA / f"{name}.tflite", boards, tmp_path)
    assert check.tflm == "runs" and check.reference == "exact", check
    assert [(b.board, b.status) for b in check.boards] == [(b, "exact") for b in boards], check
    assert check.status == "exact"


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_reference_matches_tflite_micro_on_more_inputs(name: str, tmp_path: Path) -> None:
    """Two more seeds on the reference alone (other inputs, the same model)."""
    for seed in (1, 2):
        check = check_model(DATA / f"{name}.tflite", [], tmp_path, seed=seed)
        assert check.reference == "exact", (seed, check)


def test_unet_with_transpose_conv_matches_tflite_micro(tmp_path: Path) -> None:
    check = check_model(DATA / "unet_transpose_int8.tflite", PAIR, tmp_path)
    assert check.tflm == "runs" and check.reference == "exact", check
    assert [(b.board, b.status) for b in check.boards] == [(b, "exact") for b in PAIR], check


def test_tflite_micro_does_not_run_keras3_nearest_upsampling(
        capfd: pytest.CaptureFixture[str]) -> None:
    """Keras 3's UpSampling2D(nearest) converts to RESHAPE / TILE, and TFLite Micro
    registers no TILE: why this fixture's oracle is TensorFlow's interpreter instead."""
    data = (DATA / "tile_upsample_int8.tflite").read_bytes()
    info = read_model(data)
    with pytest.raises(RuntimeError, match="allocate"):
        run_tflm(data, seeded_inputs(info, 0), len(info.outputs))
    assert "opcode 'TILE'" in capfd.readouterr().err  # the interpreter says why there


@pytest.mark.parametrize("board", [None, *PAIR])
def test_keras3_nearest_upsampling_matches_tensorflow(board: str | None,
                                                       tmp_path: Path) -> None:
    """tile_upsample_int8 against the outputs TensorFlow 2.21's TFLite interpreter gave
    for the seeded inputs stored beside it (make_converter_models.py), exactly: on the
    reference (board None) and as firmware."""
    path = DATA / "tile_upsample_int8.tflite"
    with np.load(DATA / "tile_upsample_int8.expected.npz") as f:
        runs = [(f[f"input_{k}"], f[f"output_{k}"]) for k in range(len(f.files) // 2)]
    assert runs
    if board is None:
        runner = StateRunner(load_tflite(path))
        for x, want in runs:
            [got] = runner.step([x])
            assert got.dtype == want.dtype and np.array_equal(got, want)
        return
    build = minirt.build(path, board, out_dir=tmp_path / "fw")
    for x, want in runs:
        [got] = build.run([x], check=True).outputs
        assert got.dtype == want.dtype and np.array_equal(got.reshape(want.shape), want)


def test_keras3_sequence_output_recurrence_is_refused_in_one_line() -> None:
    """Keras 3's GRU(return_sequences=True): the converter's WHILE body stores each step
    with SLICEs whose begin / size are computed from the loop counter. minirt refuses it
    naming the body, the operators and why (TFLite Micro is not asked: its interpreter
    did not finish this model in minutes)."""
    with pytest.raises(TFLiteError) as e:
        load_tflite(DATA / "gru_sequences_float.tflite")
    text = e.value.render()
    assert "WHILE" in text and "SLICE" in text and "must be a constant" in text
    assert "\n" not in text
