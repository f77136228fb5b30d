"""Packed int8 steps with one operand gathered element by element (codegen/dot.py), on
Cortex-M4 under QEMU.

kws_ref_model's first convolution as its own model: a 10x4 window, stride 2, over one
input channel. The weights' 4 taps of a window row are one aligned word (OHWI, one
input channel); the input's are not (they start at odd bytes, and the board builds with
+strict-align), so each input element is loaded on its own, with its own bounds check
at the border, and packed into the 16-bit pairs SXTB16 makes of the weights: in the
packed loop of each tile with 8 outputs (two tiles of 4 channels), and once for two
pixels into the staged buffer the 2x4 microkernel reads with kws's 64 (16 tiles a
pixel). The outputs must be the reference's bit for bit, extreme values included.
"""

from __future__ import annotations

import numpy as np
import pytest
from window_models import I8, _Builder, _int8_conv

from toolchain import pipeline
from toolchain.emu.run import run_image
from toolchain.graph.verify import verify_graph
from toolchain.kernel.form import Kernel
from toolchain.loops import choose_schedule
from toolchain.pipeline import compile_graph, decode_outputs, module_outputs
from toolchain.reference import run_graph
from toolchain.target import load_board
from toolchain.types import TensorType

SHAPE = (1, 49, 10, 1)


def _first_conv(weights: str, outputs: int):
    b = _Builder("first_conv", 3)
    x = b.g.add_input(TensorType(SHAPE, I8))
    b.g.outputs = [_int8_conv(b, x, ("first", (10, 4), outputs, (2, 2), ((4, 5), (1, 1)),
                                     (1, 1), (1, 1), False), 83, -128)]
    (w,) = [n for n in b.g.nodes if n.op == "constant"
            and n.attrs["value"].shape == (outputs, 10, 4, 1)]
    if weights == "extreme":  # -128 and 127 in every position of a packed word
        w.attrs["value"] = np.where(np.arange(outputs * 40).reshape(outputs, 10, 4, 1) % 3
                                    == 0, -128, 127).astype(np.int8)
    verify_graph(b.g)
    return b.g


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    alternating = np.where(np.arange(490).reshape(SHAPE) % 2 == 0, -128, 127)
    return [np.full(SHAPE, -128), np.full(SHAPE, 127), alternating,
            rng.integers(-128, 128, SHAPE)]


# outputs: (the nest's reduced loops, unrolled dims, pixels staged, instructions per
# MAC at most: measured with the start-up of the inference, plus 0.2)
LAYOUTS = {
    # 2 tiles: staged as 64 are (loops/tables.py STAGE_MIN_WINDOW_TILES): 2.71 (2.76
    # with both window dims loops, the row of 4 taps the packed one, not unrolled)
    8: ((5,), (4,), 2, 2.91),
    # the window's rows unrolled, gathered into the staged buffer once for two
    # pixels, one call a tile: 1.35 (2.70 before, gathered in every tile's loop)
    64: ((5,), (4,), 2, 1.55),
}


@pytest.mark.parametrize("outputs", LAYOUTS)
def test_gathered_window_rows_are_bit_exact_on_cortex_m4(outputs: int, tmp_path,
                                                          monkeypatch) -> None:
    # The gathered packed steps, which such a layer keeps where the im2col records
    # (schedule/first_layer_records.py) do not fit the flash room: built without them.
    monkeypatch.setattr(pipeline, "store_first_layer_records", lambda *args: 0)
    board = load_board("cortex-m4")
    loops, unroll, stage, per_mac = LAYOUTS[outputs]
    for weights in ("extreme", "random"):
        build = compile_graph(_first_conv(weights, outputs), board, tmp_path / weights,
                              log=lambda _: None)
        (step,) = [s for s in build.program.steps if isinstance(s.kernel, Kernel)
                   and s.kernel.domain[4:] == (10, 4, 1)]
        (nest,) = choose_schedule(step.kernel, board.target_info).nests
        assert nest.dot == "dsp" and (nest.reduction, nest.unroll, nest.stage) == \
            (loops, unroll, stage)
        counts = []
        for x in _inputs():
            inputs = [x.astype(np.int8)]
            run = run_image(board, build.elf, inputs)
            assert run.exit_code == 0, run.stderr
            (got,) = decode_outputs(module_outputs(build.module), run.outputs)
            np.testing.assert_array_equal(got, run_graph(build.graph, inputs)[0],
                                          err_msg=f"{weights} weights")
            counts.append(run.instructions)
        # The count does not depend on the values.
        macs = 25 * 5 * outputs * 10 * 4
        assert len(set(counts)) == 1 and counts[0] / macs < per_mac, counts[0] / macs
