"""Channel pads to whole words as runtime calls (toolchain/codegen/pad_rows.py,
runtime_c/ukernel/dsp/mrt_pad_dsp.c).

Which kernels take the calls, and the firmware under QEMU on the DSP boards: odd input
channel counts from 5 to 67 through 1x1 and 3x3 layers, each layer reading a graph input
and each reading the output of a layer before it (a chain of two), every row of the
padded copy starting at another byte alignment, bit for bit against the numpy reference
and TFLite Micro; and a SAME border alone around 13 channels (rows merged instead),
copied by unaligned words.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model, int8_layer_op, run_tflm

import minirt
from toolchain.codegen.pad_rows import PadRows, pad_rows_shape
from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.loops.schedule import LoopSchedule, Nest
from toolchain.types import TensorType, dtype


def _pad_kernel(shape: tuple[int, ...], out: tuple[int, ...], low: tuple[int, ...],
                element: str = "i8", value: int = 0) -> Kernel:
    ty = TensorType(shape, dtype(element))
    res = TensorType(out, dtype(element))
    i32 = dtype("i32")
    index = tuple(Index(d) if lo == 0 else
                  Apply("add", (Index(d), Const(-lo, i32)), i32)
                  for d, lo in enumerate(low))
    body = Load(0, index, pad=Const(value, ty.dtype))
    return Kernel("pad", out, len(out), (ty,), res, body)


def test_takes_a_channel_pad_and_a_bordered_one() -> None:
    assert pad_rows_shape(_pad_kernel((1, 19, 6, 61), (1, 19, 6, 64), (0, 0, 0, 0)),
                          None) == PadRows((1, 19, 6, 61), (0, 0, 0, 0), (1, 19, 6, 64), 0)
    found = pad_rows_shape(_pad_kernel((1, 19, 6, 13), (1, 21, 8, 16), (0, 1, 1, 0),
                                       value=-3), None)
    assert found is not None and found.bordered and found.value == -3


def test_takes_a_border_alone() -> None:
    """A SAME border whose 13 channels stay 13 (schedule/pad_channels.py keeps it so for
    a window whose rows merge): the byte calls, mrt_fill_bytes_s8 and
    mrt_copy_bytes_s8; an identity pad is no pad."""
    found = pad_rows_shape(_pad_kernel((1, 19, 6, 13), (1, 21, 8, 13), (0, 1, 1, 0)), None)
    assert found == PadRows((1, 19, 6, 13), (0, 1, 1, 0), (1, 21, 8, 13), 0)
    assert pad_rows_shape(_pad_kernel((1, 5, 5, 13), (1, 5, 5, 13), (0, 0, 0, 0)),
                          None) is None
    # And around whole words (a window's SAME border kept in RAM: pad_channels.py
    # _keeps_word_border).
    assert pad_rows_shape(_pad_kernel((1, 5, 5, 16), (1, 7, 7, 16), (0, 1, 1, 0)),
                          None) is not None
def test_takes_an_int16_pair_pad_as_bytes() -> None:
    """A 16x8 layer's odd channels padded to a pair (schedule/pad_channels16.py): 13
    int16 channels to 14 are 26 bytes to 28, with the SAME border in the same pad; a
    pad value whose two bytes differ has no byte form."""
    assert pad_rows_shape(_pad_kernel((1, 12, 12, 13), (1, 16, 16, 14), (0, 2, 2, 0),
                                      "i16"), None) == \
        PadRows((1, 12, 12, 26), (0, 2, 2, 0), (1, 16, 16, 28), 0)
    assert pad_rows_shape(_pad_kernel((1, 4, 4, 3), (1, 4, 4, 4), (0, 0, 0, 0), "i16",
                                      value=-1), None) == \
        PadRows((1, 4, 4, 6), (0, 0, 0, 0), (1, 4, 4, 8), -1)
    assert pad_rows_shape(_pad_kernel((1, 4, 4, 3), (1, 4, 4, 4), (0, 0, 0, 0), "i16",
                                      value=5), None) is None


@pytest.mark.parametrize("shape,out,low,element", [
    ((1, 5, 5, 16), (1, 5, 5, 20), (0, 0, 0, 0), "i8"),  # whole words already
    ((1, 5, 5, 3), (1, 5, 5, 4), (0, 0, 0, 0), "i8"),  # a row shorter than a word
    ((1, 5, 5, 13), (1, 5, 5, 20), (0, 0, 0, 0), "i8"),  # past the next word
    ((1, 5, 5, 13), (1, 5, 5, 16), (0, 0, 0, 1), "i8"),  # low padding of the channels
    ((1, 5, 5, 13), (1, 5, 5, 16), (0, 0, 0, 0), "i16"),  # int16 past its pair
    ((1, 5, 5, 13), (1, 5, 5, 16), (0, 0, 0, 0), "i32"),  # not int8 or int16
], ids=["words", "short", "wide", "low", "i16", "i32"])
def test_leaves_other_pads(shape, out, low, element) -> None:
    assert pad_rows_shape(_pad_kernel(shape, out, low, element), None) is None


@pytest.mark.parametrize("how", [dict(reverse=True), dict(blocks=((2, 2),))],
                         ids=["reversed", "tiled"])
def test_leaves_a_pad_not_run_forward_one_by_one(how: dict) -> None:
    # The arena plan may overlap a result with its operand for the nest's own order.
    k = _pad_kernel((1, 5, 5, 13), (1, 5, 5, 16), (0, 0, 0, 0))
    forward = Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), ())
    assert pad_rows_shape(k, LoopSchedule(k.name, (forward,))) is not None
    nest = Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), (), **how)
    assert pad_rows_shape(k, LoopSchedule(k.name, (nest,))) is None


def _chains(rng: np.random.Generator, channels: tuple[int, ...], k: int
            ) -> tuple[list[Op], list[Tensor], list[Tensor]]:
    """Per channel count c: a layer over a graph input of c channels (its pad reads the
    input), and a chain 16 -> c -> 16 (the second layer's pad reads the first's
    output); kernel k x k."""
    ops, xs, ys = [], [], []
    for c in channels:
        op, x, y = int8_layer_op(rng, "conv", 5, 7, c, 12, k, k, name=f"in{k}_{c}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
        first, x1, y1 = int8_layer_op(rng, "conv", 5, 7, 16, c, 1, 1, name=f"a{k}_{c}")
        second, x2, y2 = int8_layer_op(rng, "conv", 5, 7, c, 16, k, k, name=f"b{k}_{c}",
                                       in_scale=y1.scale, in_zp=y1.zero_point)
        second.inputs[0] = y1
        ops += [first, second]
        xs.append(x1)
        ys.append(y2)
    return ops, xs, ys


CHANNELS = (5, 7, 13, 31, 61, 67)


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m7", "cortex-m33"])
def test_odd_channels_bit_exact(tmp_path: Path, board: str) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    rng = np.random.default_rng(11)
    ops, xs, ys = [], [], []
    for k in (1, 3):
        o, x, y = _chains(rng, CHANNELS, k)
        ops += o
        xs += x
        ys += y
    path = tmp_path / "chains.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(path, board, out_dir=tmp_path / "build")
    # The pads are the calls (a pad the calls do not take would still be exact).
    assert "mrt_pad_rows_s8" in (tmp_path / "build" / "firmware.map").read_text()
    assert "mrt_fill_words" in (tmp_path / "build" / "firmware.map").read_text()
    # 3x3 over 13 channels: its rows merged, its border alone copied by bytes' words.
    assert "mrt_copy_bytes_s8" in (tmp_path / "build" / "firmware.map").read_text()
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    run = build.run(inputs, check=True)  # raises minirt.Mismatch against the reference
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"output {i} ({ys[i].name}) differs from TFLite Micro"
