"""The one error for every dynamic input dimension of an ONNX model, with the shapes to
pin them to: `--input-shape` options ready to paste.

Each dimension without a size gets one value per symbol (a symbol shared by several
inputs, like a batch `N`, gets one value), taken from the first of:

- another input's pin: an `--input-shape` or `--input-value` of an input that declares
  the same symbol fixes it;
- the model's own shapes: onnx's shape inference, run from the inputs with their symbols
  (a dimension without a name gets one of its own), carries each symbol to the tensors
  it reaches; where the model's value_info or outputs declare a size at that place, the
  symbol is that size;
- a batch-like name (`N`, `batch`, `batch_size`, ...) is 1;
- anything else is 1 too, but the message says it is a guess, to be replaced by the
  real size.
"""

from __future__ import annotations

from typing import Any

Dims = tuple[int | str | None, ...]

# Lower-cased dimension names read as a batch (and anything containing "batch").
BATCH_NAMES = frozenset({"n", "b", "bs", "batch", "batch_size", "batchsize", "nbatch"})
# How each source of a symbol's value is said in the message.
SOURCES = {"pin": "from another input's pin", "model": "from the model's own shapes",
           "batch": "as a batch", "guess": "a guess: give its real size"}


def _symbol(input_name: str, i: int, dim: int | str | None) -> str | None:
    """The symbol of dim `i` of an input: its name, or one of its own when it has none;
    None for a fixed size."""
    if isinstance(dim, int):
        return None
    return dim if dim else f"{input_name}[{i}]"


def _is_batch(name: str) -> bool:
    lowered = name.lower()
    return lowered in BATCH_NAMES or "batch" in lowered


def _from_model(model: Any, declared: dict[str, Dims]) -> dict[str, int]:
    """Symbol -> size implied by the model's own value_info and output shapes: inference
    from the inputs' symbols, compared place by place with what the model declares."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    g = copy.graph
    for v in g.input:
        dims = declared.get(v.name)
        if dims is None:
            continue
        for i, d in enumerate(v.type.tensor_type.shape.dim):
            symbol = _symbol(v.name, i, dims[i])
            if symbol is not None:
                d.Clear()
                d.dim_param = symbol
    sized = {}
    for v in list(model.graph.value_info) + list(model.graph.output):
        if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape"):
            sized[v.name] = [d.dim_value if d.HasField("dim_value") else None
                             for d in v.type.tensor_type.shape.dim]
    del g.value_info[:]
    for v in g.output:
        if v.type.HasField("tensor_type"):
            v.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(copy)
    except Exception:  # noqa: BLE001 - no inference: the other sources decide
        return {}
    found: dict[str, int] = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output):
        want = sized.get(v.name)
        if want is None or not v.type.tensor_type.HasField("shape"):
            continue
        dims = v.type.tensor_type.shape.dim
        if len(dims) != len(want):
            continue
        for d, size in zip(dims, want):
            if d.HasField("dim_param") and size:
                found.setdefault(d.dim_param, size)
    return found


def dynamic_dims_message(model: Any, dynamic: dict[str, Dims],
                         pinned: dict[str, tuple[Dims, tuple[int, ...]]]) -> str:
    """The one-line error for inputs with dynamic dimensions: `dynamic` maps each such
    input to its declared dims (in the model's input order), `pinned` each input given
    a shape (--input-shape, or a --input-value's shape) to its declared dims and that
    shape. Lists every input and suggests `--input-shape` options for all of them."""
    values: dict[str, tuple[int, str]] = {}
    for name, (dims, shape) in pinned.items():
        for i, (d, size) in enumerate(zip(dims, shape)):
            symbol = _symbol(name, i, d)
            if symbol is not None:
                values.setdefault(symbol, (size, "pin"))
    model_sizes: dict[str, int] | None = None
    options, described = [], []
    for name, dims in dynamic.items():
        shape = []
        for i, d in enumerate(dims):
            symbol = _symbol(name, i, d)
            if symbol is None:
                shape.append(int(d))  # type: ignore[arg-type]
                continue
            if symbol not in values:
                if model_sizes is None:
                    model_sizes = _from_model(model, dynamic)
                if symbol in model_sizes:
                    values[symbol] = (model_sizes[symbol], "model")
                else:
                    values[symbol] = (1, "batch" if _is_batch(symbol) else "guess")
            shape.append(values[symbol][0])
        options.append(f"--input-shape {name}={'x'.join(map(str, shape))}")
        described.append(f"'{name}' [{', '.join('?' if d is None else str(d) for d in dims)}]")
    used = {_symbol(n, i, d) for n, dims in dynamic.items() for i, d in enumerate(dims)}
    reasons = [f"{s}={v} {SOURCES[src]}" for s, (v, src) in values.items() if s in used]
    what = "input" if len(dynamic) == 1 else "inputs"
    return (f"{what} with dynamic dimensions: {', '.join(described)}; minirt needs static "
            f"shapes: pin them with {' '.join(options)} ({'; '.join(reasons)})")


__all__ = ["BATCH_NAMES", "dynamic_dims_message"]
