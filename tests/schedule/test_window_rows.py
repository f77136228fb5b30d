"""Window rows of a convolution over few channels read as one reduced dim
(schedule/window_rows.py): which kernels are rewritten, the rewritten kernel computes
the same integers (the kernel interpreter), and on the DSP boards under QEMU the
firmware gives the reference's outputs bit for bit, padding and strides included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Tensor, single_op_model

from toolchain.emu.run import run_image
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.kernel.form import Kernel
from toolchain.kernel.interpret import run_kernel
from toolchain.module import read_module
from toolchain.pipeline import (
    compile_graph,
    decode_outputs,
    encode_inputs,
    lower_for_backends,
    prepare_graph,
)
from toolchain.reference import run_graph
from toolchain.schedule import schedule
from toolchain.schedule.window_rows import merge_window_rows
from toolchain.target import load_board, load_target


def _conv(cin: int, cout: int, hw: tuple[int, int], stride: int, padding: str,
          window: tuple[int, int] = (3, 3), *, seed: int):
    rng = np.random.default_rng(seed)
    scales = list(rng.uniform(0.002, 0.01, cout))
    w = Tensor((cout, *window, cin), "int8", scale=scales, zero_point=[0] * cout,
               quantized_dimension=0, data=rng.integers(-127, 128, (cout, *window, cin)))
    bias = Tensor((cout,), "int32", scale=[0.05 * s for s in scales],
                  zero_point=[0] * cout, data=rng.integers(-3000, 3000, cout))
    out_hw = tuple(-(-n // stride) if padding == "SAME" else (n - k) // stride + 1
                   for n, k in zip(hw, window))
    model = single_op_model(
        "CONV_2D", [Tensor((1, *hw, cin), "int8", scale=0.05, zero_point=9), w, bias],
        [Tensor((1, *out_hw, cout), "int8", scale=0.3, zero_point=-2)], padding=padding,
        stride_h=stride, stride_w=stride, dilation_h_factor=1, dilation_w_factor=1,
        fused_activation_function="RELU")
    return model, rng.integers(-128, 128, (1, *hw, cin)).astype(np.int8)


# (input channels, output channels, input HxW, stride, padding[, window])
CASES = {
    "rgb-same": (3, 8, (7, 9), 1, "SAME"),  # pretrainedResnet's first layer, smaller
    "rgb-stride2": (3, 4, (9, 10), 2, "SAME"),  # vww_96's (padding on one side)
    "two-valid": (2, 5, (6, 7), 1, "VALID"),  # 6 elements a row: padded to 8
    "one-5x5": (1, 9, (8, 7), 1, "SAME", (5, 5)),  # 5 taps a row: padded to 8
    "one-5x5-stride2": (1, 8, (9, 8), 2, "VALID", (5, 5)),
    "two-1x7": (2, 6, (5, 9), 1, "SAME", (1, 7)),  # one row: 14 elements, not padded
}


def _merged_extent(name: str) -> int:
    """The merged dim's extent: the row padded to whole words where the window has
    more than one row and its reads are bounds-tested (SAME; window_rows._rewritten),
    else the row as it is."""
    cin, _, _, _, padding, (kh, kw) = (*CASES[name], (3, 3))[:6]
    return -(-kw * cin // 4) * 4 if kh > 1 and padding == "SAME" else kw * cin


def _program(name: str):
    model, x = _conv(*CASES[name], seed=len(name))
    graph = prepare_graph(import_model(read_model(model)))
    return schedule(lower_for_backends(graph)), x


def test_which_convolutions_merge() -> None:
    m4, aarch64 = load_target("cortex-m4"), load_target("aarch64")
    for name in CASES:
        program, _ = _program(name)
        assert merge_window_rows(program, aarch64) == 0  # vector kinds read any address
        assert merge_window_rows(program, m4) == 1, name
    # 4 channels are read a word at a time already
    model, _ = _conv(4, 4, (5, 5), 1, "SAME", seed=1)
    program = schedule(lower_for_backends(prepare_graph(import_model(read_model(model)))))
    assert merge_window_rows(program, m4) == 0
    # a 3-tap row of 1 channel (padded, it ran slower) and 1x1 windows are left alone,
    # as is a row of 4 taps over 1 channel (kws's 10x4: whole words as it is)
    for cin, window in ((1, (3, 3)), (3, (1, 1)), (1, (10, 4))):
        model, _ = _conv(cin, 4, (12, 6), 1, "VALID", seed=2, window=window)
        program = schedule(lower_for_backends(prepare_graph(import_model(read_model(model)))))
        assert merge_window_rows(program, m4) == 0, (cin, window)


@pytest.mark.parametrize("name", CASES)
def test_the_merged_kernel_computes_the_same(name: str) -> None:
    program, x = _program(name)
    before = [s.kernel for s in program.steps]
    constants = list(program.constants)
    merge_window_rows(program, load_target("cortex-m4"))
    (i, step), = [(i, s) for i, s in enumerate(program.steps) if s.kernel is not before[i]]
    k, k0 = step.kernel, before[i]
    assert isinstance(k, Kernel)
    assert k.domain[-1] == _merged_extent(name) and len(k.domain) == len(k0.domain) - 1
    (w,) = [b for b in step.buffers if b.kind == "constant"
            and np.asarray(program.constants[b.index]).dtype == np.int8]
    assert np.asarray(program.constants[w.index]).shape[-1] % 4 == 0  # rows on a word

    def args(kernel: Kernel, consts) -> list[np.ndarray]:
        # Each operand as the kernel views it (the input's rows merged: (1, H, W*C)).
        return [(x if b.kind == "input" else np.asarray(consts[b.index])).reshape(t.shape)
                for b, t in zip(step.buffers, kernel.operands)]

    # The weights keep their constant index (rewritten in place): the old array is the
    # saved list's.
    np.testing.assert_array_equal(run_kernel(k, args(k, program.constants)),
                                  run_kernel(k0, args(k0, constants)))


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m33"])
@pytest.mark.parametrize("name", CASES)
def test_merged_rows_on_the_board(name: str, board: str, tmp_path: Path) -> None:
    model, x = _conv(*CASES[name], seed=len(name))
    result = compile_graph(import_model(read_model(model)), load_board(board),
                           tmp_path / "fw", log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, [x]),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    got = decode_outputs(module.outputs, run.outputs)[0]
    want = run_graph(import_model(read_model(model)), [x])[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)
