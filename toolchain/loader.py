"""Model loading and model I/O shared by the command-line tools."""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.graph.custom_ops import CustomOp
from toolchain.graph.ir import Graph
from toolchain.graph.pinned_inputs import pin_graph_inputs
from toolchain.graph.verify import MAX_TENSOR_BYTES, verify_graph
from toolchain.mlir import parse_file
from toolchain.types import SMALL_FLOATS, DType, TensorType, round_to_bf16, to_small_float


class UsageError(Exception):
    """A bad command-line argument or input file (not a problem in the model text)."""


def load_graph(path: str | Path, entry: str = "main",
               input_shapes: dict[str, tuple[int, ...]] | None = None,
               input_values: dict[str, np.ndarray] | None = None,
               custom_ops: dict[str, CustomOp] | None = None) -> Graph:
    """Loads a model as a verified Graph: function `entry` of an MLIR file, subgraph 0
    of a TFLite flatbuffer (.tflite; `entry` does not apply), or an ONNX model (.onnx,
    its dynamic input dimensions pinned by `input_shapes`: input name -> shape). The
    inputs named in `input_values` (--input-value) become constants of those values:
    an ONNX input by its name, a TFLite input by its tensor's name, an MLIR argument as
    input_0, input_1, ...; the operators registered in `custom_ops` (--custom-op, by
    code: a .tflite custom code, an ONNX custom-domain op type) become custom_call nodes."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if input_shapes and path.suffix != ".onnx":
        raise UsageError(f"{path}: --input-shape applies to .onnx models only (MLIR and "
                         ".tflite models have static shapes)")
    if custom_ops and path.suffix not in (".onnx", ".tflite"):
        raise UsageError(f"{path}: --custom-op applies to .tflite and .onnx models (an MLIR "
                         "model has no custom operators)")
    if path.suffix == ".onnx":
        return _check_custom_ops_used(path, _load_onnx(path, input_shapes, input_values,
                                                       custom_ops), custom_ops)
    if path.suffix == ".tflite":
        graph = _load_tflite(path, custom_ops)
    elif path.suffix not in (".mlir", ""):
        raise UsageError(f"{path}: expected an MLIR text file (.mlir), a TFLite "
                         "flatbuffer (.tflite) or an ONNX model (.onnx)")
    else:
        graph = import_module(parse_file(path), entry)
    if input_values:
        names = list(graph.input_names) or [f"input_{i}" for i in range(len(graph.inputs))]
        try:
            pin_graph_inputs(graph, input_values, names)
        except ValueError as e:
            raise UsageError(f"{path}: {e}") from None
    verify_graph(graph)
    return _check_custom_ops_used(path, graph, custom_ops)


def _check_custom_ops_used(path: Path, graph: Graph, custom_ops: dict[str, CustomOp] | None
                           ) -> Graph:
    """`graph`, once every --custom-op names an operator the model has: a misspelt code
    would otherwise be ignored without a word."""
    used = {n.attrs["op"].code for n in graph.nodes if n.op == "custom_call"}
    unused = sorted(set(custom_ops or {}) - used)
    if unused:
        have = f" (it has {', '.join(sorted(used))})" if used else ""
        raise UsageError(f"{path}: --custom-op {unused[0]}: the model has no custom operator "
                         f"{unused[0]}{have}")
    return graph


def parse_input_value(text: str) -> tuple[str, np.ndarray]:
    """`--input-value NAME=VALUE`: VALUE is a number (16000, 0.5), a comma list (0,2,3:
    a 1-D array) or an .npy file. Integers are read as int64 and numbers with a point or
    exponent as float64; the input they pin converts them when every value fits.
    UsageError naming the option for a bad one."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise UsageError(f"--input-value {text}: expected NAME=VALUE, e.g. sr=16000, "
                         "axes=0,2 or shape=shape.npy")
    if value.endswith(".npy"):
        try:
            with open(value, "rb") as f:
                array = np.load(f, allow_pickle=False)
        except _READ_ERRORS as e:  # a pickled .npy is refused (ValueError)
            raise UsageError(f"--input-value {text}: cannot read {value}: "
                             f"{_reason(e)}") from None
        if not isinstance(array, np.ndarray):
            raise UsageError(f"--input-value {text}: {value} is no .npy array")
        return name, array
    try:
        numbers = [_number(part) for part in value.split(",")]
    except ValueError:
        raise UsageError(f"--input-value {text}: '{value}' is not a number, a comma list "
                         "of numbers or an .npy file") from None
    return name, np.array(numbers[0] if "," not in value else numbers)


def _number(text: str) -> int | float:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def _load_tflite(path: Path, custom_ops: dict[str, CustomOp] | None = None) -> Graph:
    # Imported here: the TFLite frontend is only needed for .tflite files.
    from toolchain.frontend.tflite import load_tflite

    try:
        return load_tflite(path, custom_ops)
    except OSError as e:  # a directory, no permission, ...
        raise UsageError(f"{path}: cannot read the model: {e.strerror or e}") from None


def _load_onnx(path: Path, input_shapes: dict[str, tuple[int, ...]] | None,
               input_values: dict[str, np.ndarray] | None,
               custom_ops: dict[str, CustomOp] | None = None) -> Graph:
    # Imported here: the ONNX frontend (and the onnx package) is only needed for .onnx.
    from toolchain.frontend.onnx import load_onnx

    try:
        return load_onnx(path, input_shapes, input_values, custom_ops)
    except OSError as e:
        raise UsageError(f"{path}: cannot read the model: {e.strerror or e}") from None


# Element types whose host value is not simply the numpy dtype's: a bf16 or a small float
# is held as a float32 already rounded to it (toolchain/types.py).
_HOST_ROUNDING = {"bf16": round_to_bf16,
                  **{name: lambda y, name=name: to_small_float(y, name) for name in SMALL_FLOATS}}
# Which numpy kinds an input of each element kind may be given as (then converted when
# every value is exact): a float array for an integer input is a mistake, not data.
_ACCEPTED_KINDS = {"f": "fiub", "i": "iub", "u": "iub", "b": "b", "c": "cfiub"}


def to_host(x: np.ndarray, dt: DType) -> np.ndarray:
    """`x` as the host holds values of element type `dt` (bf16: rounded float32)."""
    with np.errstate(all="ignore"):
        y = np.asarray(x).astype(dt.np_dtype)
    rounding = _HOST_ROUNDING.get(dt.name)
    return y if rounding is None else rounding(y)


def int_range(dt: DType) -> tuple[int, int]:
    """The least and greatest value of an integer type, from its width (i4: -8..7)."""
    if dt.kind == "u":
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


def random_inputs(graph: Graph, seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs: standard normal floats (bf16-rounded for bf16), small integers
    (within -128..127 and the type's range), random booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for t in graph.user_inputs:  # the state's are the model's own (graph/ir.py)
        ty = t.type
        dt = ty.dtype
        if dt.is_complex:  # both parts standard normal
            parts = rng.standard_normal((2, *ty.shape))
            out.append((parts[0] + 1j * parts[1]).astype(dt.np_dtype))
        elif dt.is_float:
            out.append(to_host(rng.standard_normal(ty.shape), dt))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, ty.shape).astype(bool))
        else:
            lo, hi = int_range(dt)
            out.append(rng.integers(max(lo, -128), min(hi, 127) + 1, ty.shape)
                       .astype(dt.np_dtype))
    return out


# What reading an .npz can raise on a damaged or hostile file: zip and zlib errors,
# truncated members, headers numpy refuses (object arrays), absurd claimed sizes.
_READ_ERRORS = (OSError, ValueError, EOFError, MemoryError, zipfile.BadZipFile, zlib.error)


_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a member first; an empty archive


def _reason(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def open_npz(path: str | Path, what: str, arrays: str) -> np.lib.npyio.NpzFile:
    """`path` opened as an .npz archive, or UsageError naming the file and `what` it was to
    hold (`arrays`: the member names expected, for the hint). Only a zip is handed to
    numpy, which would otherwise unpickle or mis-read a plain .npy."""
    try:
        with open(path, "rb") as f:
            is_zip = f.read(4) in _ZIP_MAGIC
        data = np.load(path, allow_pickle=False) if is_zip else None
    except _READ_ERRORS as e:
        raise UsageError(f"{path}: cannot read {what}: {_reason(e)}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise UsageError(f"{path}: cannot read {what}: not an .npz archive (np.savez "
                         f"writes one, with arrays {arrays})")
    return data


def read_member(data: np.lib.npyio.NpzFile, path: str | Path, key: str) -> np.ndarray:
    """Member `key` of an open archive; UsageError when it is damaged."""
    try:
        return data[key]
    except _READ_ERRORS as e:
        raise UsageError(f"{path}: cannot read '{key}': {_reason(e)}") from None


def load_inputs(path: str | Path, graph: Graph) -> list[np.ndarray]:
    """Reads `input_0`, `input_1`, ... from an .npz and checks them against the graph:
    shapes must match, and values of another dtype are converted only when every one
    is exact in the input's type (check_input). Each member's .npy header and zip entry
    are checked first (check_member_header), so nothing is decompressed that the
    model's input cannot hold."""
    return [check_input(x, ty, what)
            for ty, what, x in input_members(path, graph, "inputs", "input_0, input_1, ...")]


def input_members(path: str | Path, graph: Graph, purpose: str, form: str,
                  samples: bool = False) -> Iterator[tuple[TensorType, str, np.ndarray]]:
    """Each caller input's member of the .npz at `path` (`input_0`, ...), its header
    checked against the input's type first (with a leading axis when `samples`): the
    input's type, how errors name it, and the array. UsageError for a missing one."""
    data = open_npz(path, purpose, form)
    with data:
        for i, t in enumerate(graph.user_inputs):
            key = f"input_{i}"
            if key not in data:
                raise UsageError(f"{path}: missing '{key}' (the model takes "
                                 f"{len(graph.user_inputs)} inputs)")
            what = f"{path}: '{key}'"
            check_member_header(data, path, key, t.type, what, samples=samples)
            yield t.type, what, read_member(data, path, key)


def check_member_header(data: np.lib.npyio.NpzFile, path: str | Path, key: str,
                        ty: TensorType, what: str, samples: bool = False) -> None:
    """Checks member `key`'s declared shape and dtype (its .npy header, read without the
    data) against `ty`, and the zip entry's declared uncompressed size against what they
    imply, so an archive whose member would inflate past the input (a decompression
    bomb, or a header that lies) is refused before anything is allocated. With
    `samples`, the member holds a leading axis of samples (calibration files): the rest
    of its shape must be `ty`'s, and the whole at most MAX_TENSOR_BYTES."""
    member = key + ".npy" if key + ".npy" in data.zip.namelist() else key
    try:
        info = data.zip.getinfo(member)
        with data.zip.open(member) as f:
            version = np.lib.format.read_magic(f)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dt = read_header(f)
            header_size = f.tell()
    except _READ_ERRORS as e:
        raise UsageError(f"{path}: cannot read '{key}': {_reason(e)}") from None
    if dt.hasobject:
        raise UsageError(f"{path}: cannot read '{key}': Object arrays cannot be loaded "
                         "(it holds Python objects, not numbers)")
    if samples:
        if len(shape) != ty.rank + 1 or tuple(shape[1:]) != ty.shape:
            want = "(S, " + ", ".join(map(str, ty.shape)) + ")" if ty.shape else "(S,)"
            raise UsageError(f"{what} has shape {tuple(shape)}; the model's input has shape "
                             f"{ty.shape}, so calibration samples need {want}: a leading "
                             "axis of S samples")
        _check_shape_and_kind(tuple(shape[1:]), dt, ty, what)
        if int(np.prod(shape, dtype=object)) * dt.itemsize > MAX_TENSOR_BYTES:
            raise UsageError(f"{what} declares shape {tuple(shape)} of {dt}, over "
                             f"{MAX_TENSOR_BYTES} bytes (1 GiB)")
    else:
        _check_shape_and_kind(tuple(shape), dt, ty, what)
    declared = header_size + int(np.prod(shape, dtype=object)) * dt.itemsize
    if info.file_size != declared:
        raise UsageError(f"{what}: its zip entry declares {info.file_size} bytes, its .npy "
                         f"header's shape {tuple(shape)} and dtype {dt} make {declared}")


def _check_shape_and_kind(shape: tuple[int, ...], dt: np.dtype, ty: TensorType,
                          what: str) -> None:
    if shape != ty.shape:
        raise UsageError(f"{what} has shape {shape}, the model expects {ty.shape}")
    if dt.kind not in _ACCEPTED_KINDS.get(ty.dtype.kind, ""):
        raise UsageError(f"{what} has dtype {dt}, the model expects {ty.dtype}")


def check_input(x: np.ndarray, ty: TensorType, what: str) -> np.ndarray:
    """`x` as an input of type `ty`, in its host dtype. Integers are converted only when
    every value is in the type's range (300 is no int8); floats are rounded to nearest
    (float64 0.1 becomes f32 0.1, as any compiler reads a literal), but a finite value
    that would become infinite (1e300 as f32) is refused, and so is an integer a float
    type cannot tell from its neighbours' range. UsageError names `what` and the first
    element that does not fit."""
    _check_shape_and_kind(x.shape, x.dtype, ty, what)
    dt = ty.dtype
    narrower = dt.name in _HOST_ROUNDING or (dt.is_integer and dt.bits < 8 * dt.np_dtype.itemsize)
    if x.dtype == dt.np_dtype and not narrower:  # i4 and bf16 hold less than their dtype
        return x
    y = to_host(x, dt)
    with np.errstate(all="ignore"):
        fits = _fits(x, y, dt)
    if not fits.all():
        idx = np.unravel_index(int(np.argmin(fits)), x.shape)
        where = f"[{', '.join(map(str, idx))}]" if idx else ""
        value = x[idx].item()
        if dt.is_integer:
            lo, hi = int_range(dt)
            raise UsageError(f"{what}{where} is {value!r}, outside {dt}'s range {lo}..{hi} "
                             f"({x.dtype} values are converted only when all of them fit)")
        raise UsageError(f"{what}{where} is {value!r}, outside {dt}'s range (it would be "
                         f"{y[idx].item()!r}); {x.dtype} values are rounded to {dt} only "
                         "when all of them stay finite")
    return y


def _fits(x: np.ndarray, y: np.ndarray, dt: DType) -> np.ndarray:
    """Where `y` (x converted to `dt`'s host form) still holds x: exactly for integer
    types, rounded but finite for float types."""
    if x.dtype.kind == "b":
        return np.ones(x.shape, dtype=bool)
    if dt.is_integer:
        lo, hi = int_range(dt)
        return (x >= lo) & (x <= hi)
    return ~np.isfinite(x) | np.isfinite(y)


def host_memory_limit() -> int:
    """Bytes of host memory a run may plan to use: half of this machine's RAM."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (OSError, ValueError):
        return 1 << 33  # 8 GiB where the machine does not say


def host_memory(graph: Graph, reference: bool) -> int:
    """Bytes of host memory a run of `graph` needs, estimated: its inputs (random ones
    are drawn in float64 first) and, for a `reference` run, every tensor the graph
    computes (run_graph keeps them all) plus a float64 copy of the largest
    (contractions accumulate in float64)."""
    tensors = list(graph.inputs)
    if reference:
        tensors += [t for node in graph.nodes for t in node.outputs]
    held = sum(t.type.num_elements * t.type.dtype.np_dtype.itemsize for t in tensors)
    largest = max((t.type.num_elements for t in tensors), default=0)
    return held + 8 * largest


def check_host_memory(graph: Graph, reference: bool, what: str) -> None:
    """Refuses up front a run that would need more host memory than host_memory_limit,
    rather than failing half-way with a MemoryError."""
    need, limit = host_memory(graph, reference), host_memory_limit()
    if need > limit:
        run = "the reference run" if reference else "its inputs"
        raise UsageError(f"{what}: {run} would need about {need / 2**30:.1f} GiB of host "
                         f"memory, more than the {limit / 2**30:.1f} GiB (half of this "
                         "machine's RAM) minirt allows itself")


def check_output_file(path: str | Path) -> None:
    """Refuses, before any work, an output file that cannot be written: its directory
    must exist, and the path must not be a directory."""
    path = Path(path)
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{path}: directory {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"{path}: is a directory")


def save_outputs(path: str | Path, outputs: list[np.ndarray]) -> None:
    """Writes `output_0`, ... to an .npz (written whole, then renamed into place)."""
    path = Path(path)
    check_output_file(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **{f"output_{i}": o for i, o in enumerate(outputs)})
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write outputs: {e.strerror or e}") from None


__all__ = ["CompileError", "UsageError", "check_host_memory", "check_input",
           "check_member_header", "check_output_file", "host_memory", "input_members", "int_range",
           "load_graph", "load_inputs", "parse_input_value", "random_inputs", "save_outputs",
           "to_host"]
