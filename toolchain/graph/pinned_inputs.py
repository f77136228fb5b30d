"""Graph inputs given a value at build time (`--input-value NAME=VALUE`).

A pinned input is no input any more: it is a constant of the model, so whatever depends
on it folds (an `If` on a sample rate, a Reshape whose shape is an input) and the
firmware's inputs are the others, in their order. This module checks a value against
the input it pins (element kind, range, shape) and, for formats whose importer needs no
constant shapes (MLIR, TFLite), turns graph inputs into `constant` nodes; the ONNX
reader makes a pinned input an initializer instead, so that its importer folds with it.
"""

from __future__ import annotations

from hashlib import sha256

import numpy as np

from toolchain.graph.ir import Graph, Node
from toolchain.small_floats import is_ml_dtype
from toolchain.types import DType, held_in_f32, to_dtype

# Which numpy kinds a value may be given in for an input of each element kind (then
# converted when every element is exact): 1.5 is no integer, and only 0 and 1 are
# booleans (a command line has no other way to spell them).
ACCEPTED_KINDS = {"f": "fiu", "i": "iu", "u": "iu", "b": "biu", "c": "cfiu"}


def describe_dims(dims: tuple[int | str | None, ...] | None) -> str:
    """A declared shape as `[1, N, 3]` (`?` for a dimension without a name or size)."""
    if dims is None:
        return "of unknown shape"
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def fit_pinned_value(name: str, value: np.ndarray, dt: DType,
                     dims: tuple[int | str | None, ...] | None) -> np.ndarray:
    """`value` as the constant that input `name` (element type `dt`, declared `dims`:
    an int for a fixed size, a name or None for a dynamic one, None for no shape) takes.
    A value with the declared number of elements in another rank (16000 for a [1] input)
    is reshaped; otherwise its shape must fit every fixed dimension. ValueError saying
    what was given and what the input declares when it does not fit."""
    value = np.asarray(value)
    given = f"a value of {value.dtype} shape {tuple(value.shape)}"
    if is_ml_dtype(value.dtype):  # bfloat16, float8, ... (onnx's arrays): exact in f32
        value = value.astype(np.float32)
    declared = f"input '{name}' is declared {dt} {describe_dims(dims)}"
    if value.dtype.kind not in ACCEPTED_KINDS.get(dt.kind, ""):
        raise ValueError(f"{given}, but {declared}")
    if dims is not None:
        fixed = all(isinstance(d, int) for d in dims)
        if fixed and value.ndim != len(dims) and value.size == int(np.prod(dims)):
            value = value.reshape(tuple(int(d) for d in dims))  # type: ignore[arg-type]
        if value.ndim != len(dims) or any(isinstance(d, int) and d != s
                                          for d, s in zip(dims, value.shape)):
            raise ValueError(f"{given}, but {declared}")
    with np.errstate(all="ignore"):
        converted = to_dtype(value, dt) if held_in_f32(dt) else value.astype(dt.np_dtype)
    if dt.kind == "b" and value.dtype.kind != "b" and not np.isin(value, (0, 1)).all():
        raise ValueError(f"input '{name}' is boolean: give 0 or 1, not "
                         f"{value[~np.isin(value, (0, 1))].flat[0].item()!r}")
    if dt.is_integer:
        lo, hi = (0, (1 << dt.bits) - 1) if dt.kind == "u" else (
            -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1)
        bad = (value < lo) | (value > hi)
        if bad.any():
            raise ValueError(f"{value[bad].flat[0].item()!r} is outside {dt}'s range {lo}..{hi} "
                             f"of input '{name}'")
    elif dt.is_float and (np.isfinite(value) & ~np.isfinite(converted)).any():
        raise ValueError(f"a value is outside {dt}'s range of input '{name}'")
    return converted


def value_digest(values: dict[str, np.ndarray]) -> dict[str, dict]:
    """What the build stamp records of pinned values: each one's dtype, shape and the
    SHA-256 of its bytes (a value from an .npy file may be large)."""
    return {name: {"dtype": str(v.dtype), "shape": list(v.shape),
                   "sha256": sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}
            for name, v in sorted(values.items())}


def check_pin_names(names: list[str], pinned: set[str], shaped: set[str]) -> None:
    """Refuses a pin of no input (listing the inputs) and an input given both a shape
    and a value."""
    unknown = sorted(pinned - set(names))
    if unknown:
        raise ValueError(f"--input-value names {', '.join(unknown)}, which is no input of "
                         f"the model (its inputs: {', '.join(names) or 'none'})")
    both = sorted(pinned & shaped)
    if both:
        raise ValueError(f"input '{both[0]}' is given both --input-shape and --input-value "
                         "(a value sets the shape: give only --input-value)")


def pin_graph_inputs(graph: Graph, values: dict[str, np.ndarray],
                     names: list[str]) -> None:
    """Makes the graph inputs named in `values` (`names`: every input's name, in order)
    `constant` nodes at the top of `graph`, in place; the others stay its inputs, in
    their order. ValueError when a name is no input or a value does not fit."""
    check_pin_names(names, set(values), set())
    constants: list[Node] = []
    kept, kept_names = [], []
    for tensor, name in zip(graph.inputs, names):
        if name not in values:
            kept.append(tensor)
            kept_names.append(name)
            continue
        ty = tensor.type
        try:
            array = fit_pinned_value(name, values[name], ty.dtype, tuple(ty.shape))
        except ValueError as e:
            raise ValueError(f"--input-value {name}: {e}") from None
        node = Node("constant", [], [tensor], {"value": array})
        tensor.producer = node
        constants.append(node)
    graph.inputs = kept
    graph.input_names = kept_names if graph.input_names else []
    graph.nodes[:0] = constants


__all__ = ["check_pin_names", "describe_dims", "fit_pinned_value", "pin_graph_inputs",
           "value_digest"]
