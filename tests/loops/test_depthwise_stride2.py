"""Which stride-2 depthwise 3x3 layers the stride-2 kernel takes (loops/depthwise.py's
`RowPairPlan.stride` and `band`, codegen/depthwise_s2.py), and their nests: multiplier 1
only; the row whole where its 2 x columns + 1 staged input columns in 3 slots (and a
pad row as long) fit STACK_BYTES, else the fewest equal bands of at least MIN_BAND output
columns that do, the nest's order then (N, X, Y, C) (each band over all its rows before the
next; `banded_row_order` gives (N, Y, X, C), every band of two rows before the next two
rows, for a result placed over its operand); no band of 3 columns fitting: the generated
tiles. The results are
checked under QEMU in tests/codegen/test_depthwise_s2.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from tflite_models import Op, build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.loops.depthwise import (
    ASM_CHANNELS,
    ASM_S2_CALL_BYTES,
    ASM_S2_COLUMN_BYTES,
    ASM_S2_ONE_ROW_BYTES,
    ASM_S2_ROOM_BYTES,
    ASM_S2_TILE_BYTES,
    ASM_UNROLL_TILES,
    MIN_BAND,
    STACK_BYTES,
    asm_s2_bands,
    asm_s2_code_bytes,
    asm_s2_folds,
    asm_s2_period,
    asm_s2_tiles,
    band_major,
    banded_row_order,
    quad_rows,
    row_pair_plan,
)
from toolchain.pipeline import prepare_graph
from toolchain.schedule import schedule
from toolchain.target import load_target

M4 = load_target("cortex-m4")

# (name, h, w, channels, multiplier, padding, output columns a band (0: not taken))
LAYERS = [
    ("even_same", 20, 20, 16, 1, "SAME", 10),
    ("odd_same", 19, 7, 13, 1, "SAME", 4),
    ("valid", 20, 20, 13, 1, "VALID", 9),
    ("vww_48", 48, 48, 16, 1, "SAME", 24),  # 49 staged columns: 10,192 bytes
    ("vww_24", 24, 24, 32, 1, "SAME", 6),  # 25 columns: 10,400 bytes; 2 bands
    ("vww_12", 12, 12, 64, 1, "SAME", 3),
    ("bands_of_2", 6, 6, 128, 1, "SAME", 0),  # 3 columns do not fit, 2 are too few
    ("multiplier2", 10, 10, 8, 2, "SAME", 0),
]


def _kernels(tmp_path: Path) -> dict[str, Kernel]:
    """The reduction kernel of each layer (a model of independent layers), by name."""
    rng = np.random.default_rng(5)
    ops, xs, ys = [], [], []
    for name, h, w, c, m, pad, _ in LAYERS:
        op, x, y = int8_layer_op(rng, "depthwise", h, w, c, c * m, 3, 3, 2, 1, padding=pad,
                                 name=name)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "dw.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    program = schedule(prepare_graph(load_graph(path)), target=M4)
    kernels = [s.kernel for s in program.steps
               if isinstance(s.kernel, Kernel) and s.kernel.combine is not None]
    assert len(kernels) == len(LAYERS)
    return {layer[0]: k for layer, k in zip(LAYERS, kernels, strict=True)}


def test_stride2_plans_and_bands(tmp_path: Path) -> None:
    kernels = _kernels(tmp_path)
    for name, h, w, _c, _m, pad, band in LAYERS:
        k = kernels[name]
        plan = row_pair_plan(k)
        nest = next(iter(choose_schedule(k, M4).nests))
        assert (plan is not None) == (band > 0) == nest.row_pairs, name
        if plan is None:
            continue
        assert plan.stride == 2 and plan.slots == 3 and plan.band(k) == band, name
        assert plan.stack_bytes(k) <= STACK_BYTES, name
        assert band == k.domain[2] or band >= MIN_BAND
        # SAME of even size pads below and right only; of odd size one each side.
        top = -1 if pad == "SAME" and h % 2 else 0
        assert (plan.row, plan.col) == (top, -1 if pad == "SAME" and w % 2 else 0), name
        assert not quad_rows(nest) and nest.block(1) == 2 and nest.block(2) == band
        assert nest.order == ((0, 1, 3, 2) if band == k.domain[2] else (0, 2, 1, 3)), name
        rows = banded_row_order(nest)
        assert (rows is None) == (band == k.domain[2]), name
        assert band_major(nest) == (band < k.domain[2]), name
        if rows is not None:
            assert rows.order == (0, 1, 2, 3) and not band_major(rows), name
            assert rows.blocks == nest.blocks and rows.row_pairs, name


def test_a_result_over_its_operand_takes_the_row_order(tmp_path: Path) -> None:
    """A chain of vww_96-like layers (48x48x32 -> 24x24x32 -> 12x12x32 -> 6x6x32): the
    arena starts the second layer's result over its operand, which the bands each over
    all their rows cannot allow (a band's last rows are stored before the next band reads
    the input above them), so that step takes the same bands in row order
    (schedule/program.py `_looser`, `banded_row_order`), not the tiles one column wide;
    the first layer's result is placed apart and keeps the bands each over all their rows.
    Run under QEMU in tests/codegen/test_depthwise_s2.py (test_a_chain_of_banded_layers)."""
    rng = np.random.default_rng(5)
    ops, xs, ys = [], [], []
    for i, (h, w, c) in enumerate([(48, 48, 32), (24, 24, 32), (12, 12, 32)]):
        op, x, y = int8_layer_op(rng, "depthwise", h, w, c, c, 3, 3, 2, 1, padding="SAME",
                                 name=f"L{i}")
        if ys:
            op = Op(op.opcode, [ys[-1], *op.inputs[1:]], op.outputs, op.options)
        else:
            xs.append(x)
        ops.append(op)
        ys.append(y)
    path = tmp_path / "chain.tflite"
    path.write_bytes(build_model(ops, xs, ys[-1:]))
    program = schedule(prepare_graph(load_graph(path)), target=M4)
    steps = [s for s in program.steps if isinstance(s.kernel, Kernel) and
             s.kernel.combine is not None]
    assert len(steps) == 3
    nests = [next(iter(choose_schedule(s.kernel, M4).nests)) for s in steps]
    assert [band_major(n) for n in nests] == [True, True, False]  # 6x6: one band
    assert steps[0].schedule is None
    assert steps[1].schedule is not None
    (taken,) = steps[1].schedule.nests
    assert taken == banded_row_order(nests[1]) or \
        taken == dataclasses.replace(banded_row_order(nests[1]), reverse=True)


def _calls(calls: int, columns: int) -> int:
    """The bytes besides the tiles of one call kind's `calls` calls writing out
    `columns` columns in all (asm_s2_code_bytes)."""
    return calls * ASM_S2_CALL_BYTES + columns * ASM_S2_COLUMN_BYTES


def test_the_own_calls_bands_edges_and_code(tmp_path: Path) -> None:
    """The layers' own assembly calls (codegen/depthwise_s2_asm.py): each band's edge
    columns (SAME of even width: a pad column right of the last band's last column; of
    odd width one left of the first band's first too), their code's estimate, and the
    rule: shifts of 1-31, the code within the room and ASM_S2_ROOM_BYTES past
    ASM_CHANNELS channels, the edges unfolded where folded they would pass it."""
    kernels = _kernels(tmp_path)
    plans = {name: row_pair_plan(k) for name, k in kernels.items()}
    assert asm_s2_bands(kernels["even_same"], plans["even_same"]) == [(0, 10, False, True)]
    assert asm_s2_bands(kernels["odd_same"], plans["odd_same"]) == [(0, 4, True, True)]
    assert asm_s2_bands(kernels["valid"], plans["valid"]) == [(0, 9, False, False)]
    assert asm_s2_bands(kernels["vww_24"], plans["vww_24"]) == [(0, 6, False, False),
                                                                (6, 6, False, True)]
    # bands keep their edges unfolded, so that they share one call
    assert not asm_s2_folds(kernels["vww_24"], plans["vww_24"])
    # 20x20x16: 10 columns, the last an edge; 9 inner ones in a loop of one column
    # (16 channels); 10 output rows: both slot orders, no row alone
    k, plan = kernels["even_same"], plans["even_same"]
    need = asm_s2_code_bytes(k, plan)
    assert need == 2 * (ASM_S2_TILE_BYTES * (1 + 1) * 16 + _calls(1, 1 + 1))
    # 19x7x13: 10 output rows of 4 columns, both edges, the 2 inner ones in a loop of
    # one (26 tiles, past ASM_UNROLL_TILES)
    odd = asm_s2_code_bytes(kernels["odd_same"], plans["odd_same"])
    assert odd == 2 * (ASM_S2_TILE_BYTES * (2 + 1) * 13 + _calls(1, 2 + 1))
    # 20x20x13 VALID: 9 output rows (row y alone too) of 9 inner columns, a loop of one
    valid = asm_s2_code_bytes(kernels["valid"], plans["valid"])
    assert valid == (2 * ASM_S2_TILE_BYTES + ASM_S2_ONE_ROW_BYTES) * 1 * 13 + \
        3 * _calls(1, 1)
    shifts = (5,) * 16
    assert asm_s2_tiles(k, plan, shifts, need)
    assert not asm_s2_tiles(k, plan, shifts, need - 1)
    assert not asm_s2_tiles(k, plan, (5,) * 15 + (0,), need)  # not an SSAT shift
    assert not asm_s2_tiles(k, plan, (5,) * 15 + (32,), need)
    assert asm_s2_folds(k, plan)
    # 12x12x64 in bands of 3 (the last with a right edge), 6 output rows: past
    # ASM_S2_ROOM_BYTES with the edge folded (two calls of their own), within it
    # unfolded (one call both bands share)
    big, big_plan = kernels["vww_12"], plans["vww_12"]
    assert asm_s2_code_bytes(big, big_plan, True) > ASM_S2_ROOM_BYTES
    assert not asm_s2_folds(big, big_plan)
    assert asm_s2_bands(big, big_plan, False) == [(0, 3, False, False), (3, 3, False, False)]
    unfolded = asm_s2_code_bytes(big, big_plan, False)
    assert unfolded == 2 * (ASM_S2_TILE_BYTES * 64 + _calls(1, 1))
    assert asm_s2_tiles(big, big_plan, (5,) * 64, unfolded)
    assert not asm_s2_tiles(big, big_plan, (5,) * 64, unfolded - 1)
    assert ASM_CHANNELS == 3


def test_the_own_calls_column_loops() -> None:
    """Every column written out up to ASM_UNROLL_TILES tiles (and up to 4 channels under
    6 columns), else loops of 3 columns (the pointers rotating) up to 4 channels, of one
    past them."""
    assert asm_s2_period(4, ASM_UNROLL_TILES // 4) == 0
    assert asm_s2_period(5, 4) == 0
    assert asm_s2_period(1, 67) == 0
    assert asm_s2_period(6, 4) == 3
    assert asm_s2_period(9, 2) == 3
    assert asm_s2_period(5, 5) == 1
    assert asm_s2_period(24, 16) == 1
