"""Weights stored pre-extended for the packed int8 steps (toolchain/schedule/paired.py).

Which constants the pass pairs (the int8 weights a packed step reads, on DSP targets
only, within the flash it is given, the most reused first), what it rewrites (the
constant, its type, the buffer's size, the readers' kernels), and the firmware on
Cortex-M4 under QEMU: the packed loop reads the paired layout and the outputs are the
reference's bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR
from window_models import I8, _Builder, _int8_conv, int8_windows

from toolchain import pipeline
from toolchain.emu.run import run_image
from toolchain.graph.verify import verify_graph
from toolchain.kernel.form import Kernel
from toolchain.kernel.paired import from_paired, from_paired_rows, to_paired_rows
from toolchain.loader import load_graph
from toolchain.pipeline import (
    compile_graph,
    decode_outputs,
    module_outputs,
    prepare_graph,
    schedule_for_board,
    schedule_for_target,
)
from toolchain.reference import run_graph
from toolchain.schedule import schedule
from toolchain.schedule.paired import pair_weights
from toolchain.schedule.window_rows import merge_window_rows
from toolchain.target import load_board
from toolchain.types import TensorType


@pytest.fixture(autouse=True)
def _without_first_layer_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests follow the packed steps' pre-extended weights; the first layers'
    records (schedule/first_layer_records.py, counted alike: records_bound) would take
    the models' 3-channel convolutions away from them (tested in
    tests/codegen/test_first_layers_im2col.py)."""
    monkeypatch.setattr(pipeline, "store_first_layer_records", lambda *args: 0)


def _paired_steps(program) -> list:
    return [s for s in program.steps if isinstance(s.kernel, Kernel) and s.kernel.paired]


def test_dsp_targets_pair_the_weights_of_packed_steps() -> None:
    m4 = load_board("cortex-m4")
    paired = schedule_for_board(prepare_graph(int8_windows()), m4)
    no_dsp = schedule_for_board(prepare_graph(int8_windows()), load_board("cortex-m3"))
    assert not _paired_steps(no_dsp)  # no DSP: no packed steps, nothing to pair
    # The same program before pairing (its 3-channel convolutions' rows merged).
    plain = schedule_for_target(prepare_graph(int8_windows()), m4.target_info)
    merge_window_rows(plain, m4.target_info)
    steps = _paired_steps(paired)
    assert steps  # the 3x3 convolution over 16 channels
    for step in steps:
        (j,) = step.kernel.paired
        buf = step.buffers[j]
        stored = paired.constants[buf.index]
        assert buf.kind == "constant" and stored.dtype == np.int16
        assert step.kernel.operands[j].dtype.name == "i16"
        assert paired.constant_types[buf.index].dtype.name == "i16"
        assert buf.size == stored.nbytes == 2 * plain.constants[buf.index].nbytes
        np.testing.assert_array_equal(from_paired(stored), plain.constants[buf.index])
    # Everything else is as without pairing.
    others = [i for i in range(len(plain.constants))
              if i not in {s.buffers[s.kernel.paired[0]].index for s in steps}]
    for i in others:
        np.testing.assert_array_equal(paired.constants[i], plain.constants[i])


def test_no_pairing_without_flash_room() -> None:
    board = load_board("cortex-m4")
    program = schedule(prepare_graph(int8_windows()), target=board.target_info)
    before = [c.copy() for c in program.constants]
    assert pair_weights(program, board.target_info, flash_room=719) == []  # needs 720
    assert not _paired_steps(program)
    for a, b in zip(before, program.constants, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_most_reused_weights_are_paired_first() -> None:
    """kws_ref_model: its first convolution (10x4x64) and its four 64x64 pointwise
    layers read each weight 125 times, its dense layer once; with room for the extra
    2,560 bytes of the first and 4,096 of one pointwise layer, and 767 more (the dense
    layer needs 768), those two are paired and nothing else."""
    model = MODELS_DIR / "mlperf_tiny" / "kws_ref_model.tflite"
    if not model.is_file():
        pytest.skip(f"{model} is absent ({MISSING_REASON})")
    target = load_board("cortex-m4").target_info
    program = schedule(prepare_graph(load_graph(model)), target=target)
    chosen = pair_weights(program, target, flash_room=2560 + 4096 + 767)
    steps = _paired_steps(program)
    assert sorted(s.buffers[s.kernel.paired[0]].index for s in steps) == chosen
    assert sorted(program.constants[c].shape for c in chosen) == [(64, 1, 1, 64),
                                                                  (64, 10, 4, 1)]
    assert sorted(s.kernel.domain for s in steps) == [(1, 25, 5, 64, 1, 1, 64),
                                                      (1, 25, 5, 64, 10, 4, 1)]


def test_paired_weights_are_bit_exact_on_cortex_m4(tmp_path) -> None:
    board = load_board("cortex-m4")
    rng = np.random.default_rng(21)
    inputs = [rng.integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)]
    build = compile_graph(int8_windows(), board, tmp_path / "m4", log=lambda _: None)
    assert _paired_steps(build.program)
    run = run_image(board, build.elf, inputs)
    assert run.exit_code == 0, run.stderr
    got = decode_outputs(module_outputs(build.module), run.outputs)
    want = run_graph(build.graph, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_kws_pointwise_layer_on_cortex_m4(tmp_path) -> None:
    """kws_ref_model's pointwise layer (25x5 pixels, 64 -> 64 channels, requantized) as
    its own model: its weights stored with their rows interleaved for the 2x4
    microkernel (two pixels of a column staged together, 4 channels a tile), bit-exact,
    at 1.02 instructions per MAC with the start-up of the inference (1.17 one pixel at
    a time with the 1x4 staged microkernel; 1.58 with generated 2 x 2 tiles)."""
    b = _Builder("pointwise", 1)
    x = b.g.add_input(TensorType((1, 25, 5, 64), I8))
    b.g.outputs = [_int8_conv(b, x, ("pointwise", (1, 1), 64, (1, 1), ((0, 0), (0, 0)),
                                     (1, 1), (1, 1), False), -3, 5)]
    verify_graph(b.g)
    board = load_board("cortex-m4")
    build = compile_graph(b.g, board, tmp_path / "pw", log=lambda _: None)
    (step,) = build.program.steps
    assert step.kernel.paired == step.kernel.interleaved == (0,)
    assert step.schedule is None or step.schedule.nests[0].stage == 2
    stored = build.program.constants[step.buffers[0].index]
    np.testing.assert_array_equal(stored, to_paired_rows(from_paired_rows(stored)))
    inputs = [np.random.default_rng(5).integers(-128, 128, (1, 25, 5, 64)).astype(np.int8)]
    run = run_image(board, build.elf, inputs)
    assert run.exit_code == 0, run.stderr
    (got,) = decode_outputs(module_outputs(build.module), run.outputs)
    np.testing.assert_array_equal(got, run_graph(build.graph, inputs)[0])
    assert run.instructions / (25 * 5 * 64 * 64) < 1.05, run.instructions
