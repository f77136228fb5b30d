"""The end most int8 kernel tests share: a TFLite model built for a board, run on
seeded random inputs under QEMU and compared, bit-exact, with minirt's reference and
with TFLite Micro's interpreter (the int8 oracle); the image's symbols returned, so a
test can also say which kernels the build took."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from elftools.elf.elffile import ELFFile
from tflite_models import Tensor, run_tflm

import minirt


def build_and_check(model: bytes, xs: Sequence[Tensor], board: str, tmp_path: Path,
                    rng: np.random.Generator, name: str = "model",
                    edit_inputs: Callable[[list[np.ndarray]], None] | None = None,
                    labels: Sequence[Any] | None = None, **options: Any) -> set[str]:
    """Builds `model` (whose inputs are `xs`) for `board` in `tmp_path` with the build
    `options`, runs it on int8 inputs drawn from `rng` (then changed in place by
    `edit_inputs`), asserts every output equals the reference's (Build.run's check) and
    TFLite Micro's, naming the output by `labels` where given, and returns the linked
    image's symbol names."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model)
    build = minirt.build(path, board, out_dir=tmp_path / "b", **options)
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    if edit_inputs is not None:
        edit_inputs(inputs)
    run = build.run(inputs, check=True)  # raises minirt.Mismatch on any difference
    want, _ = run_tflm(model, inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        label = f" {labels[i]}" if labels is not None else ""
        assert np.array_equal(a, b), f"output {i}{label} differs from TFLite Micro's"
    with open(build.elf, "rb") as f:
        return {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
