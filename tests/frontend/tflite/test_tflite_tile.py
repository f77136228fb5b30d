"""TFLite TILE (toolchain/frontend/tflite/tile.py) against numpy.tile, which is what
TFLite's reference kernel computes (TFLite Micro registers no TILE, so it cannot be the
oracle here): every element type the copy takes, ranks 1 to 4, on minirt's reference and
as one cortex-m4 / x86-64 image under QEMU, exactly. Converter-made TILE (Keras 3's
nearest upsampling) is tested in test_converter_models.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from quant.tflm_oracle import const
from tflite_models import OPTIONS_TABLE, Tensor, single_op_model

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference.state import StateRunner
from toolchain.testing.difftest import run_side_by_side

OPTIONS_TABLE["TILE"] = "TileOptions"  # an empty table, as the converter writes it

# (input shape, multiples, TFLite type, numpy type)
CASES = [
    ((2, 3), (2, 3), "float32", np.float32),
    ((1, 4, 4, 3), (1, 2, 2, 1), "int8", np.int8),  # Keras 3's nearest upsampling's form
    ((1, 4, 1, 3), (3, 1, 2, 1), "int16", np.int16),
    ((5,), (4,), "int32", np.int32),
    ((2, 1, 3), (1, 4, 2), "bool", np.bool_),
]


def _model(shape: tuple[int, ...], multiples: tuple[int, ...], ty: str) -> bytes:
    quant = {"scale": 0.05, "zero_point": -3} if ty in ("int8", "int16") else {}
    if ty == "int16":
        quant["zero_point"] = 0
    out = tuple(s * m for s, m in zip(shape, multiples, strict=True))
    return single_op_model("TILE", [Tensor(shape, ty, **quant), const(list(multiples))],
                           [Tensor(out, ty, **quant)])


def _input(shape: tuple[int, ...], dt: type, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt is np.float32:
        return rng.standard_normal(shape).astype(dt)
    if dt is np.bool_:
        return rng.integers(0, 2, shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dt)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_tile_reference_is_numpy_tile(case: int) -> None:
    shape, multiples, ty, dt = CASES[case]
    x = _input(shape, dt, case)
    [got] = StateRunner(import_model(read_model(_model(shape, multiples, ty)))).step([x])
    want = np.tile(x, multiples)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_tile_firmware_is_numpy_tile(board: str, tmp_path: Path) -> None:
    graphs = [import_model(read_model(_model(s, m, ty))) for s, m, ty, _ in CASES]
    inputs = [_input(s, dt, k) for k, (s, _, _, dt) in enumerate(CASES)]
    outputs = run_side_by_side(graphs, inputs, board, tmp_path / "fw")
    for k, (x, got) in enumerate(zip(inputs, outputs, strict=True)):
        want = np.tile(x, CASES[k][1])
        assert got.dtype == want.dtype and np.array_equal(got, want), k


@pytest.mark.parametrize(("multiples", "why"), [
    ((2, 2, 1), "do not fit the rank-2 input"),
    ((2, 0), "must be at least 1"),
])
def test_bad_multiples_are_refused_in_one_line(multiples: tuple[int, ...], why: str) -> None:
    model = single_op_model("TILE", [Tensor((2, 3), "float32"), const(list(multiples))],
                            [Tensor((4, 3), "float32")])
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model))
    text = e.value.render()
    assert why in text and "TILE" in text and "\n" not in text


def test_keras_upsampling_chain_is_one_copy() -> None:
    """Keras 3's nearest upsampling as the converter writes it (RESHAPE / TILE / RESHAPE /
    TILE / RESHAPE after a conv, test_converter_models.py's fixture, exact there): TILE is
    a broadcast and a reshape, index remaps, so the whole chain is the one dispatch that
    writes the output (it ran as 5 copies, 70K instructions on cortex-m4 for 1,280 bytes)."""
    from toolchain.kernel.form import Kernel
    from toolchain.loader import load_graph
    from toolchain.pipeline import prepare_graph, schedule_for_board
    from toolchain.target import load_board

    path = Path(__file__).parent / "data" / "converter" / "tile_upsample_int8.tflite"
    program = schedule_for_board(prepare_graph(load_graph(path)), load_board("cortex-m4"))
    kernels = [s.kernel for s in program.steps if isinstance(s.kernel, Kernel)]
    assert len(kernels) == 2 and kernels[0].combine == "add", [k.name for k in kernels]
    assert "concatenate" not in kernels[1].name
