"""TFLite Micro's own models (../shared/models/tflm, the seanet layers aside) against its
own interpreter: seeded random inputs, TFLite Micro's outputs, minirt's numpy reference
and firmware under QEMU, compared (integers exactly, floats like numpy.isclose).

bench/tflm_models.py runs every model on every board it is asked for; the tests run a
sample. The `tflite-micro` wheel (a dev extra) is imported only when a model is run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import load_tflite
from toolchain.frontend.tflite.reader import NUMPY_TYPES, ModelInfo, read_model
from toolchain.pipeline import DoesNotFit, FirmwareFailed, compile_graph, run_firmware
from toolchain.reference.state import StateRunner
from toolchain.target import load_board

REPO = Path(__file__).resolve().parents[2]
TFLM_MODELS = REPO.parent / "shared" / "models" / "tflm"
# bench/tflm_int16.py covers these, with TFLite Micro's golden outputs.
SEANET_DIR = "integration_tests"
# Floats compare as README.md says `--check` does.
RTOL, ATOL = 1e-5, 1e-6
# The range of seeded float inputs: the examples' inputs (a sine's angle, audio features)
# are of this order.
FLOAT_RANGE = (-3.0, 3.0)


def tflm_model_paths(root: Path = TFLM_MODELS) -> list[Path]:
    """Every .tflite under `root` but the seanet integration tests, sorted."""
    return sorted(p for p in root.rglob("*.tflite")
                  if SEANET_DIR not in p.relative_to(root).parts)


def seeded_inputs(model: ModelInfo, seed: int) -> list[np.ndarray]:
    """One array per model input: integers over their type's whole range, floats uniform
    in FLOAT_RANGE; the same for a seed on every run. Read from the flatbuffer, so that
    a model minirt refuses gets the inputs TFLite Micro would."""
    rng = np.random.default_rng(seed)
    out = []
    for index in model.inputs:
        t = model.tensors[index]
        dt = np.dtype(NUMPY_TYPES[t.type])
        shape = tuple(int(d) for d in t.shape)
        if dt.kind == "f":
            out.append(rng.uniform(*FLOAT_RANGE, shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:
            info = np.iinfo(dt)
            out.append(rng.integers(info.min, int(info.max) + 1, shape).astype(dt))
    return out


def run_tflm(data: bytes, inputs: list[np.ndarray], outputs: int) -> list[np.ndarray]:
    """The `outputs` outputs of one TFLite Micro interpreter run of the model `data`
    (raises what the interpreter raises when it cannot run the model)."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(data, arena_size=max(len(data) * 4, 16 << 20))
    for i, x in enumerate(inputs):
        interp.set_input(x, i)
    interp.invoke()
    return [np.array(interp.get_output(i)) for i in range(outputs)]


def same(want: list[np.ndarray], got: list[np.ndarray]) -> tuple[bool, str]:
    """Whether `got` equals `want` (integers exactly, floats within RTOL / ATOL) and, when
    not, the first difference in words."""
    if len(want) != len(got):
        return False, f"{len(got)} outputs, TFLite Micro has {len(want)}"
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        g = np.asarray(g).reshape(w.shape) if np.asarray(g).size == w.size else np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype:
            return False, f"output {k} is {g.dtype}{list(g.shape)}, not {w.dtype}{list(w.shape)}"
        ok = (np.isclose(g, w, rtol=RTOL, atol=ATOL) if w.dtype.kind == "f"
              else g == w)
        if not ok.all():
            bad = np.argwhere(~ok)
            at = tuple(int(i) for i in bad[0])
            return False, (f"output {k}: {len(bad)} of {w.size} elements differ; first at "
                           f"{list(at)}: TFLite Micro {w[at]}, minirt {g[at]}")
    return True, ""


@dataclass
class BoardRun:
    """One model on one board: `status` is exact, differs, too-large or failed."""

    board: str
    status: str
    detail: str = ""
    instructions: int | None = None


@dataclass
class ModelCheck:
    """One model: whether minirt and TFLite Micro take it, and each comparison."""

    model: str
    # exact, exact where it fits (some board too small), differs, refused (by minirt),
    # tflm-fails (its interpreter does not run the model)
    status: str
    detail: str = ""
    tflm: str = ""  # "runs", or why TFLite Micro's interpreter does not
    reference: str = ""  # exact / differs, for an imported model
    boards: list[BoardRun] = field(default_factory=list)


def run_on_board(path: Path, inputs: list[np.ndarray], want: list[np.ndarray], board: str,
                 work: Path) -> BoardRun:
    """Builds `path` for `board` and runs it under QEMU on `inputs`, against `want`."""
    try:
        result = compile_graph(load_tflite(path), load_board(board), work, log=lambda _: None)
    except DoesNotFit as e:
        return BoardRun(board, "too-large", str(e).splitlines()[0])
    # run_firmware: a model with state (an LSTM's, an SVDF's) runs its first inference
    # from the boot state, as TFLite Micro's first invocation.
    try:
        run = run_firmware(result.board, result.out_dir, inputs, result.graph,
                           log=lambda _: None)
    except FirmwareFailed as e:
        return BoardRun(board, "failed", str(e).splitlines()[0])
    ok, why = same(want, run.outputs)
    return BoardRun(board, "exact" if ok else "differs", why, run.instructions)


def check_model(path: Path, boards: list[str], work: Path, seed: int = 0) -> ModelCheck:
    """`path` in TFLite Micro's interpreter, minirt's reference and on each of `boards`
    (board names). A model minirt refuses is still run in TFLite Micro, to say whether
    its interpreter takes it."""
    name = str(path.relative_to(TFLM_MODELS)) if path.is_relative_to(TFLM_MODELS) else path.name
    data = path.read_bytes()
    info = read_model(data)
    inputs = seeded_inputs(info, seed)
    try:
        want, tflm = run_tflm(data, inputs, len(info.outputs)), "runs"
    except Exception as e:  # the interpreter's own refusal, whatever its type
        want, tflm = None, f"{type(e).__name__}: {e}".splitlines()[0]
    try:
        graph = load_tflite(path)
    except TFLiteError as e:
        return ModelCheck(name, "refused", e.render().split(": ", 1)[-1], tflm)
    if want is None:
        return ModelCheck(name, "tflm-fails", "", tflm)
    ok, why = same(want, StateRunner(graph).step(inputs))  # the first inference
    check = ModelCheck(name, "exact", why, tflm, "exact" if ok else "differs")
    for board in boards:
        check.boards.append(run_on_board(path, inputs, want, board, work / board))
    if not ok or any(b.status in ("differs", "failed") for b in check.boards):
        check.status = "differs"
    elif any(b.status == "too-large" for b in check.boards):
        check.status = "exact where it fits"
    return check


__all__ = ["TFLM_MODELS", "BoardRun", "ModelCheck", "check_model", "run_on_board",
           "run_tflm", "same", "seeded_inputs", "tflm_model_paths"]
