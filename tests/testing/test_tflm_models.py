"""TFLite Micro's own models against its interpreter, a fast sample of what
bench/tflm_models.py runs over all of them: the int8 and float sine models and the
micro_speech keyword model on cortex-m4 and x86-64 (and the int8 sine on riscv32), exact;
the models minirt refuses, refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.testing.tflm_models import (
    TFLM_MODELS,
    check_model,
    same,
    seeded_inputs,
    tflm_model_paths,
)

needs_models = pytest.mark.skipif(
    not TFLM_MODELS.is_dir(), reason=f"{TFLM_MODELS} is absent (the shared TFLite Micro "
    "models)")
pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

SAMPLE = {
    "examples/hello_world/models/hello_world_int8.tflite": ["cortex-m4", "x86-64", "riscv32"],
    "examples/hello_world/models/hello_world_float.tflite": ["cortex-m4", "x86-64"],
    "examples/micro_speech/models/micro_speech_quantized.tflite": ["cortex-m4", "x86-64"],
}


@needs_models
@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_model_matches_tflite_micro_on_boards(name: str, tmp_path: Path) -> None:
    check = check_model(TFLM_MODELS / name, SAMPLE[name], tmp_path)
    assert check.tflm == "runs" and check.reference == "exact", check
    assert [(b.board, b.status) for b in check.boards] == [(b, "exact") for b in SAMPLE[name]]
    assert check.status == "exact"


@needs_models
def test_a_model_too_large_for_a_board_says_so(tmp_path: Path) -> None:
    """simple_add's 48 KB of I/O buffers overflow cortex-m0plus's 16 KB of RAM: recorded
    with the reason, the model exact where it fits."""
    check = check_model(TFLM_MODELS / "examples/memory_footprint/models/simple_add_model.tflite",
                        ["cortex-m0plus"], tmp_path)
    [run] = check.boards
    assert run.status == "too-large" and "overflows RAM" in run.detail
    assert check.status == "exact where it fits" and check.reference == "exact"


@needs_models
def test_refused_models_say_why_in_one_line(tmp_path: Path) -> None:
    check = check_model(TFLM_MODELS / "models/person_detect_vela.tflite", [], tmp_path)
    assert check.status == "refused" and "compiled by Vela" in check.detail
    assert "\n" not in check.detail


@needs_models
def test_the_seanet_layers_are_left_to_their_own_bench() -> None:
    paths = tflm_model_paths()
    assert paths and not any("seanet" in str(p) for p in paths)


def test_a_difference_is_found_and_named() -> None:
    want = [np.array([[1, 2], [3, 4]], np.int8), np.array([0.5, 1.0], np.float32)]
    assert same(want, [w.copy() for w in want]) == (True, "")
    ok, why = same(want, [np.array([[1, 2], [3, 5]], np.int8), want[1]])
    assert not ok and why == ("output 0: 1 of 4 elements differ; first at [1, 1]: TFLite "
                              "Micro 4, minirt 5")
    assert not same(want, [want[0], want[1] * (1 + 1e-4)])[0]
    assert same(want, [want[0], want[1] * (1 + 1e-7)])[0]


def test_seeded_inputs_cover_each_type_and_repeat() -> None:
    tm = pytest.importorskip("tflite_models")
    from toolchain.frontend.tflite.reader import read_model

    x8, x16 = tm.Tensor((3, 5), "int8", scale=0.1, zero_point=0), tm.Tensor((2,), "float32")
    y8, y16 = tm.Tensor((3, 5), "int8", scale=0.1, zero_point=0), tm.Tensor((2,), "float32")
    model = read_model(tm.build_model([tm.Op("RELU", [x8], [y8]), tm.Op("RELU", [x16], [y16])],
                                      [x8, x16], [y8, y16]))
    a, b = seeded_inputs(model, 3), seeded_inputs(model, 3)
    assert [x.dtype for x in a] == [np.int8, np.float32] and a[0].shape == (3, 5)
    assert all(np.array_equal(p, q) for p, q in zip(a, b, strict=True))
    assert not np.array_equal(a[0], seeded_inputs(model, 4)[0])
