"""The per-layer assembly kernels' code estimates against their assembled bytes: the
flash room (schedule/row_pair_records.py, schedule/first_layer_records.py) is charged
the estimate before the code exists (loops/depthwise.py asm_code_bytes and
asm_s2_code_bytes, schedule/pointwise_asm_records.py code_bytes), so an estimate below
the code would let an image pass its board's flash budget at link time instead of
leaving the layer on the shared kernel. Each layer here is one whose code is charged
(past ASM_CHANNELS channels for depthwise; every 1x1 over 2-3 channels), built for
cortex-m4 alone; its kernels' symbol sizes in the ELF are summed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from tflite_models import build_model, int8_layer_op

import minirt
from toolchain.codegen import depthwise_asm, depthwise_s2_asm, pointwise_asm
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise import (
    ASM_CHANNELS,
    asm_code_bytes,
    asm_s2_code_bytes,
    asm_s2_folds,
    row_pair_plan,
)
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.schedule import pointwise_asm_records as pointwise
from toolchain.schedule.first_layer_plan import first_layer_plan
from toolchain.target.descriptors import load_board

BOARD = "cortex-m4"
STEMS = (depthwise_asm.STEM, depthwise_s2_asm.STEM, pointwise_asm.STEM)

# (kind, h, w, input channels, outputs, kernel size, stride, padding): stride-2
# depthwise in one band (both edges, odd and even heights, VALID) and in bands, past
# ASM_S2_ROOM_BYTES folded (10x10x64); stride-1 depthwise over 4-13 channels; 1x1 over
# 2-3 channels, staged by the kernel or (stride 2) by the dispatch, to one output.
LAYERS = [
    ("depthwise", 20, 20, 16, 16, 3, 2, "SAME"),
    ("depthwise", 19, 7, 13, 13, 3, 2, "SAME"),
    ("depthwise", 20, 20, 13, 13, 3, 2, "VALID"),
    ("depthwise", 24, 24, 32, 32, 3, 2, "SAME"),
    ("depthwise", 10, 10, 64, 64, 3, 2, "SAME"),
    ("depthwise", 20, 20, 64, 64, 3, 2, "SAME"),
    ("depthwise", 19, 6, 4, 4, 3, 1, "SAME"),
    ("depthwise", 10, 10, 7, 7, 3, 1, "SAME"),
    ("depthwise", 19, 6, 13, 13, 3, 1, "SAME"),
    ("conv", 19, 6, 2, 32, 1, 1, "SAME"),
    ("conv", 10, 10, 2, 1, 1, 1, "SAME"),
    ("conv", 60, 50, 3, 17, 1, 2, "SAME"),
]


def _estimate(kind: str, k: Kernel) -> int:
    """The bytes the flash room is charged for the own code of kernel `k` (of a layer
    of `kind`)."""
    if kind == "conv":  # a 1x1 over 2-3 channels
        plan = first_layer_plan(dataclasses.replace(k, records=-1), offered=True)
        assert plan is not None
        return pointwise.code_bytes(plan.cin, k.record_shifts,
                                    pointwise.blocks(k, plan.cin), pointwise.dense(k, plan))
    plan = row_pair_plan(k)
    if plan.stride == 2:
        return asm_s2_code_bytes(k, plan, asm_s2_folds(k, plan))
    return asm_code_bytes(k, plan)


@pytest.mark.parametrize("layer", LAYERS, ids=lambda a: "{}-{}x{}x{}-{}-s{}-{}".format(
    a[0], *a[1:5], a[6], a[7]))
def test_estimate_holds_the_assembled_code(layer: tuple, tmp_path: Path) -> None:
    kind, h, w, cin, cout, size, stride, padding = layer
    op, x, y = int8_layer_op(np.random.default_rng(3), kind, h, w, cin, cout, size, size,
                             stride, 1, padding=padding, name="L0")
    path = tmp_path / "layer.tflite"
    path.write_bytes(build_model([op], [x], [y]))
    program = schedule_for_board(prepare_graph(load_graph(path)), load_board(BOARD))
    own = [s.kernel for s in program.steps
           if isinstance(s.kernel, Kernel) and s.kernel.record_shifts]
    assert len(own) == 1, "the layer takes its own assembly kernel"
    if kind == "depthwise":
        assert cin > ASM_CHANNELS  # its code is charged to the room
    build = minirt.build(path, BOARD, out_dir=tmp_path / "b")
    with open(build.elf, "rb") as f:
        symbols = ELFFile(f).get_section_by_name(".symtab").iter_symbols()
        code = sum(s["st_size"] for s in symbols if s.name.startswith(STEMS))
    assert code > 0
    estimate = _estimate(kind, own[0])
    assert code <= estimate, f"{code} bytes assembled, {estimate} charged to the room"
