"""schedule/im2col_lanes.py: which first layers cortex-m55 gives the DSP im2col kernel
instead of Helium's padded 4-lane steps, and those layers under QEMU, bit for bit
against the numpy reference and TFLite Micro, at most cortex-m4's instructions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.schedule.im2col_lanes import im2col_beats_lanes
from toolchain.target import load_board, load_target

M55 = load_target("cortex-m55")

# (cin, kh, kw, stride, dilation, cout) -> the kernel on cortex-m55: the measured layers
# of the module docstring (3 -> 8 and pretrainedResnet's 32x32 3 -> 16 keep the lanes).
CHOICES = {
    (3, 3, 3, 1, 1, 32): True, (3, 3, 3, 1, 1, 64): True, (3, 3, 3, 2, 1, 8): True,
    (3, 3, 3, 2, 1, 16): True, (3, 3, 3, 1, 2, 16): True, (2, 3, 3, 1, 1, 32): True,
    (1, 3, 3, 1, 1, 32): True, (3, 2, 2, 1, 1, 16): True,
    (3, 3, 3, 1, 1, 8): False, (3, 3, 3, 1, 1, 16): False,
    (4, 3, 3, 1, 1, 32): False,  # no pad needed: the lanes win
    (3, 1, 1, 1, 1, 32): False, (3, 5, 5, 1, 1, 32): False, (3, 1, 7, 1, 1, 32): False,
    (1, 10, 4, 2, 1, 64): False,  # kws's first layer: 4 rows a vector step
    # One channel, never padded: rows that are no whole 4-lane steps, and 1x1's table.
    (1, 5, 5, 1, 1, 32): True, (1, 5, 5, 2, 1, 8): True, (1, 1, 7, 1, 1, 32): True,
    (1, 1, 1, 1, 1, 32): True, (1, 8, 8, 1, 1, 16): False,
}


@pytest.mark.parametrize("layer", sorted(CHOICES))
def test_which_layers_take_the_kernel(layer) -> None:
    cin, kh, kw, stride, dilation, cout = layer
    args = (cin, kh, kw, stride > 1, dilation > 1, cout)
    assert im2col_beats_lanes(M55, *args) == CHOICES[layer]
    # The DSP-only cores take the kernel anyway (their own rule); the others never.
    for name in ("cortex-m4", "cortex-m7", "riscv32", "aarch64"):
        assert not im2col_beats_lanes(load_target(name), *args), name


def _model(path: Path, layers: list[tuple], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, (h, w, cin, cout, k, stride, dilation) in enumerate(layers):
        op, x, y = int8_layer_op(rng, "conv", h, w, cin, cout, k, k, stride, dilation,
                                 name=f"L{i}", in_scale=0.05, in_zp=-3)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path.write_bytes(build_model(ops, xs, ys))
    return [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]


def _run(path: Path, inputs: list[np.ndarray], board: str, out: Path,
         optimize: str = "auto") -> tuple[set[str], list[int]]:
    """The symbols and each layer's instructions of `path` built for `board`, every
    output checked against the reference and TFLite Micro."""
    build = minirt.build(path, board, out_dir=out, optimize=optimize)
    run = build.run(inputs, check=True)
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"{board}: L{i} differs from TFLite Micro"
    rows = [r for r in build.profile(inputs).rows if r.kind == "dispatch"]

    def names(row: object) -> set[str]:
        layer = getattr(row, "layer", None) or {}
        return {s["name"] for s in layer.get("sources", ())} | {str(layer.get("label", ""))}
    counts = [sum(r.instructions for r in rows if f"L{i}" in names(r))
              for i in range(len(inputs))]
    with open(build.elf, "rb") as f:
        symbols = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    return symbols, counts


# (h, w, cin, cout, k, stride, dilation): the sweep's four 3x3 layers over 3 channels
# that cortex-m55 ran at 1.04-1.10x cortex-m4 (bench/results/shapes-cortex-m55.md), and
# 1, 2 channels, an odd map, a 2x2 window; over one channel 5x5 (stride 1 and 2) and
# 1x1 (2.0x, 1.2x and 5.8x cortex-m4 in lanes).
TAKEN = [(19, 6, 3, 32, 3, 1, 1), (10, 10, 3, 32, 3, 1, 1), (10, 10, 3, 16, 3, 2, 1),
         (19, 6, 3, 16, 3, 1, 2), (10, 10, 1, 32, 3, 1, 1), (9, 7, 2, 24, 3, 1, 1),
         (11, 9, 3, 20, 3, 2, 1), (10, 10, 3, 16, 2, 1, 1), (19, 6, 1, 32, 5, 1, 1),
         (10, 10, 1, 16, 5, 2, 1), (19, 6, 1, 32, 1, 1, 1)]


def test_cortex_m55_takes_the_kernel_exact_and_at_most_m4(tmp_path: Path) -> None:
    path = tmp_path / "first.tflite"
    inputs = _model(path, TAKEN, seed=1)
    symbols, m55 = _run(path, inputs, "cortex-m55", tmp_path / "m55")
    assert any(s.startswith("mrt_i2c_") for s in symbols)
    _, m4 = _run(path, inputs, "cortex-m4", tmp_path / "m4")
    for layer, a, b in zip(TAKEN, m55, m4, strict=True):
        assert a <= b, (layer, m55, m4)


def test_cortex_m55_keeps_its_lanes_elsewhere(tmp_path: Path) -> None:
    """3 -> 8 keeps Helium's padded steps (its channels padded to 4, the kernel not
    linked), and so does every layer under --optimize size (no records in flash):
    exact either way."""
    path = tmp_path / "lanes.tflite"
    inputs = _model(path, [(10, 10, 3, 8, 3, 1, 1)], seed=2)
    symbols, _ = _run(path, inputs, "cortex-m55", tmp_path / "a")
    assert not any(s.startswith("mrt_i2c_") for s in symbols)
    path = tmp_path / "size.tflite"
    inputs = _model(path, TAKEN[:3], seed=3)
    symbols, _ = _run(path, inputs, "cortex-m55", tmp_path / "b", optimize="size")
    assert not any(s.startswith("mrt_i2c_") for s in symbols)
    program = schedule_for_board(prepare_graph(load_graph(path)), load_board("cortex-m55"),
                                 "size")
    convs = [s.kernel for s in program.steps
             if isinstance(s.kernel, Kernel) and s.kernel.combine is not None]
    assert convs and all(k.domain[-1] == 4 for k in convs)  # padded to 4 channels
