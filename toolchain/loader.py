"""Model loading and model I/O shared by the command-line tools."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_graph
from toolchain.mlir import parse_file
from toolchain.types import TensorType


class UsageError(Exception):
    """A bad command-line argument or input file (not a problem in the model text)."""


def load_graph(path: str | Path, entry: str = "main") -> Graph:
    """Parses an MLIR model and imports function `entry` as a verified Graph."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.suffix not in (".mlir", ""):
        raise UsageError(f"{path}: expected an MLIR text file (.mlir)")
    module = parse_file(path)
    graph = import_module(module, entry)
    verify_graph(graph)
    return graph


def random_inputs(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs: standard normal floats, small integers, random booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for t in graph.inputs:
        ty = t.type
        dt = ty.dtype
        if dt.is_float:
            out.append(rng.standard_normal(ty.shape).astype(dt.np_dtype))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, ty.shape).astype(bool))
        else:
            info = np.iinfo(dt.np_dtype)
            lo, hi = max(info.min, -128), min(info.max, 127)
            out.append(rng.integers(lo, hi + 1, ty.shape).astype(dt.np_dtype))
    return out


def load_inputs(path: str | Path, graph: Graph) -> list[np.ndarray]:
    """Reads `input_0`, `input_1`, ... from an .npz and checks them against the graph."""
    try:
        data = np.load(path)
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: cannot read inputs: {e}") from None
    out = []
    for i, t in enumerate(graph.inputs):
        key = f"input_{i}"
        if key not in data:
            raise UsageError(f"{path}: missing '{key}' (the model takes {len(graph.inputs)} "
                             "inputs)")
        out.append(_check(data[key], t.type, f"{path}: '{key}'"))
    return out


def _check(x: np.ndarray, ty: TensorType, what: str) -> np.ndarray:
    if x.shape != ty.shape:
        raise UsageError(f"{what} has shape {x.shape}, the model expects {ty.shape}")
    want = ty.dtype.np_dtype
    if x.dtype != want:
        if not np.can_cast(x.dtype, want, casting="same_kind"):
            raise UsageError(f"{what} has dtype {x.dtype}, the model expects {ty.dtype}")
        x = x.astype(want)
    return x


def save_outputs(path: str | Path, outputs: list[np.ndarray]) -> None:
    """Writes `output_0`, ... to an .npz (written whole, then renamed into place)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **{f"output_{i}": o for i, o in enumerate(outputs)})
    tmp.replace(path)


__all__ = ["CompileError", "UsageError", "load_graph", "load_inputs", "random_inputs",
           "save_outputs"]
