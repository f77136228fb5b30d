"""TFLite Micro's 16x8 integration tests (../shared/models/tflm/integration_tests/seanet):
each model with its input and golden CSVs, as the tests and bench/tflm_int16.py read them.

`NAME_inputK_int16.csv` holds the K-th model input flattened, `NAME_golden_int16.csv`
TFLite Micro's output. TRANSPOSE_CONV's input 0 is its output shape as an int32 model
input whose CSV is not in ../shared: it gets the output tensor's declared shape, the
only value TFLite Micro's kernel accepts (it reads the output tensor's dimensions).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolchain.graph.ir import Graph

REPO = Path(__file__).resolve().parents[2]
SEANET = REPO.parent / "shared" / "models" / "tflm" / "integration_tests" / "seanet"


def _csv(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=1).reshape(-1)


@dataclass(frozen=True)
class SeanetCase:
    """One integration test: its model, int16 input CSVs (by input index) and golden."""

    op: str
    model: Path
    input_csvs: dict[int, Path]
    golden_csv: Path

    @property
    def name(self) -> str:
        return self.model.stem

    def inputs(self, graph: Graph) -> list[np.ndarray]:
        """The model's inputs for `graph` (its import), in order."""
        values = []
        for k, t in enumerate(graph.inputs):
            shape = tuple(t.type.shape)
            if k in self.input_csvs:
                data = _csv(self.input_csvs[k])
                if data.size != t.type.num_elements:
                    raise ValueError(f"{self.input_csvs[k].name} has {data.size} values, the "
                                     f"input {list(shape)}")
                values.append(data.astype(t.type.dtype.np_dtype).reshape(shape))
            elif self.op == "transpose_conv" and k == 0:
                values.append(np.asarray(graph.outputs[0].type.shape, np.int32).reshape(shape))
            else:
                raise ValueError(f"{self.name}: no CSV for input {k}")
        return values

    def golden(self) -> np.ndarray:
        return _csv(self.golden_csv).astype(np.int16)


def seanet_cases(root: Path = SEANET) -> list[SeanetCase]:
    """Every model with an int16 golden and all its non-shape inputs as int16 CSVs."""
    cases = []
    for model in sorted(root.glob("*/*.tflite"), key=lambda p: (p.parent.name, _index(p))):
        golden = model.with_name(f"{model.stem}_golden_int16.csv")
        inputs = {int(p.stem[len(model.stem) + 6:].split("_")[0]): p
                  for p in model.parent.glob(f"{model.stem}_input*_int16.csv")}
        if not golden.is_file() or not inputs:
            continue
        if model.parent.name != "transpose_conv" and sorted(inputs) != list(range(len(inputs))):
            continue
        cases.append(SeanetCase(model.parent.name, model, inputs, golden))
    return cases


def _index(model: Path) -> int:
    digits = "".join(ch for ch in model.stem if ch.isdigit())
    return int(digits) if digits else -1


__all__ = ["SEANET", "SeanetCase", "seanet_cases"]
