"""The same inputs give byte-identical artifacts, whatever the output directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain.pipeline import build_model

ARTIFACTS = ["firmware.elf", "firmware.bin", "firmware.hex", "model.mrt"]


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("board", ["cortex-m4", "riscv32"])
def test_builds_are_byte_identical(board: str, tmp_path: Path) -> None:
    model = MODELS_DIR / "jax" / "cnn.mlir"
    a = build_model(model, board, tmp_path / "a", log=lambda _: None)
    b = build_model(model, board, tmp_path / "nested" / "b", log=lambda _: None)
    for name in ARTIFACTS:
        assert (a.out_dir / name).read_bytes() == (b.out_dir / name).read_bytes(), name
