"""Reading an .onnx file into plain, validated dataclasses.

The protobuf is parsed and checked by the `onnx` package (its checker knows every op's
schema: attribute types, input counts); this module turns what the importer needs into
plain values and refuses, with one line each, everything it cannot hold: a damaged file,
an older opset than 13 that onnx's version converter cannot convert (one whose ops all
mean what they mean in 13 is read as it is), tensors whose data does not match their
type, dynamic input dimensions that `--input-shape` did not pin.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toolchain.frontend.onnx.dynamic_dims import dynamic_dims_message
from toolchain.frontend.onnx.errors import FormatError, InputShapeError, OnnxError
from toolchain.graph.pinned_inputs import check_pin_names, fit_pinned_value
from toolchain.graph.verify import tensor_type_error
from toolchain.types import DType, TensorType, dtype

MIN_OPSET = 13
# A protobuf message is limited to 2 GiB; larger files are refused before reading.
MAX_FILE_BYTES = (1 << 31) - 1

# ONNX TensorProto element types minirt holds, and their graph element types.
# The sub-byte integers (UINT4 21, INT4 22, UINT2 25, INT2 26) are minirt's ui4 / i4 /
# ui2 / i2: onnx's numpy_helper unpacks their packed bytes into ml_dtypes arrays, which
# the importer holds as int8 / uint8 (importer._constant); a constant of them is packed
# again in the module (schedule/sub_byte.py).
DTYPES: dict[int, str] = {
    1: "f32", 2: "ui8", 3: "i8", 4: "ui16", 5: "i16", 6: "i32", 7: "i64", 9: "i1",
    10: "f16", 11: "f64", 12: "ui32", 13: "ui64", 16: "bf16",
    21: "ui4", 22: "i4", 25: "ui2", 26: "i2",
    # The 8- and 4-bit floats (toolchain/small_floats.py); onnx's numpy_helper gives
    # their data as ml_dtypes arrays, FLOAT4E2M1 unpacked from its two codes a byte.
    17: "f8E4M3FN", 18: "f8E4M3FNUZ", 19: "f8E5M2", 20: "f8E5M2FNUZ", 23: "f4E2M1FN",
    24: "f8E8M0FNU",
}
# ml_dtypes' names of the sub-byte arrays numpy_helper returns, as graph element types.
SUB_BYTE_ARRAYS = {"uint4": "ui4", "int4": "i4", "uint2": "ui2", "int2": "i2"}


def onnx_dtype(elem_type: int, what: str) -> DType:
    """The graph element type of ONNX element type `elem_type`; Unsupported-style
    FormatError naming `what` when minirt has none."""
    name = DTYPES.get(elem_type)
    if name is None:
        import onnx

        try:
            spelled = onnx.TensorProto.DataType.Name(elem_type)
        except ValueError:
            spelled = str(elem_type)
        raise FormatError(f"{what} has element type {spelled}, which minirt does not support")
    return dtype(name)


@dataclass
class ValueInfo:
    """A graph input or output: its name and declared element type and shape (None for a
    dimension without a size: a `dim_param` such as 'N', or no value at all)."""

    name: str
    dtype: DType | None
    dims: tuple[int | str | None, ...] | None  # None: no shape declared

    def describe(self) -> str:
        if self.dims is None:
            return "unknown shape"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.dims) + "]"


@dataclass
class NodeInfo:
    """One node: op type, inputs ('' for an omitted optional input), outputs, attributes
    as Python values (ints, floats, strings, lists, numpy arrays for tensors)."""

    index: int
    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    proto: Any = None  # the NodeProto, for evaluating constant nodes with onnx's reference

    def describe(self) -> str:
        who = f"'{self.name}'" if self.name else f"#{self.index}"
        return f"node {who} ({self.op_type})"


@dataclass
class ModelInfo:
    opset: int
    inputs: list[tuple[ValueInfo, TensorType]]  # with the static type each one gets
    outputs: list[ValueInfo]
    initializers: dict[str, np.ndarray]
    nodes: list[NodeInfo]
    unknown_ops: set[str] = field(default_factory=set)  # ops the checker has no schema for
    # The types the file declares for values (value_info and the graph's outputs): what
    # a custom-domain node registered with --custom-op computes (graph/custom_ops.py).
    declared: dict[str, ValueInfo] = field(default_factory=dict)


def parse_shape(text: str) -> tuple[int, ...]:
    """'1x3x32x32' -> (1, 3, 32, 32); ValueError for anything else."""
    parts = text.lower().split("x")
    if not text or not all(p.isdigit() for p in parts):
        raise ValueError(f"'{text}' is not a shape like 1x3x32x32")
    dims = tuple(int(p) for p in parts)
    if any(d == 0 for d in dims):
        raise ValueError(f"'{text}' has a zero dimension")
    return dims


def _array(t: Any, what: str) -> np.ndarray:
    """A TensorProto as a numpy array, refusing what does not decode."""
    from onnx import numpy_helper

    if t.data_location == 1:  # EXTERNAL, not loaded
        raise FormatError(f"{what} keeps its data in an external file that was not loaded")
    onnx_dtype(t.data_type, what)
    try:
        size = math.prod(t.dims)
        if any(d < 0 for d in t.dims):
            raise ValueError(f"negative dimension in {list(t.dims)}")
        if size * np.dtype(np.float64).itemsize > MAX_FILE_BYTES * 4:
            raise ValueError(f"shape {list(t.dims)} is larger than any model can hold")
        a = numpy_helper.to_array(t)
    except FormatError:
        raise
    except Exception as e:  # numpy_helper raises many kinds on bad data
        raise FormatError(f"{what}: cannot decode its data: {_reason(e)}") from None
    return np.asarray(a)


def _reason(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return (text[:300] + "...") if len(text) > 300 else (text or type(e).__name__)


def node_attributes(proto: Any, what: str) -> dict[str, Any]:
    from onnx import AttributeProto, helper

    attrs: dict[str, Any] = {}
    for a in proto.attribute:
        if a.type == AttributeProto.TENSOR:
            attrs[a.name] = _array(a.t, f"{what}: attribute '{a.name}'")
            continue
        if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS, AttributeProto.TENSORS,
                      AttributeProto.SPARSE_TENSOR, AttributeProto.SPARSE_TENSORS,
                      AttributeProto.TYPE_PROTO, AttributeProto.TYPE_PROTOS):
            attrs[a.name] = a  # kept raw: the converters that take them say so
            continue
        try:
            value = helper.get_attribute_value(a)
        except Exception as e:
            raise FormatError(f"{what}: attribute '{a.name}': {_reason(e)}") from None
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list):
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                     for v in value]
        attrs[a.name] = value
    return attrs


def _value_info(v: Any) -> ValueInfo:
    tt = v.type.tensor_type if v.type.HasField("tensor_type") else None
    if tt is None:
        return ValueInfo(v.name, None, None)
    dt = DTYPES.get(tt.elem_type)
    dims = None
    if tt.HasField("shape"):
        dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else
                     (d.dim_param or None) if not d.HasField("dim_value") else
                     d.dim_value for d in tt.shape.dim)
    return ValueInfo(v.name, dtype(dt) if dt else None, dims)


def _input_type(info: ValueInfo, elem_type: int, pinned: tuple[int, ...] | None
                ) -> TensorType:
    """The static type of a graph input: its declared shape, or the --input-shape pin."""
    what = f"input '{info.name}'"
    dt = onnx_dtype(elem_type, what)
    if info.dims is not None and any(isinstance(d, int) and d < 0 for d in info.dims):
        raise FormatError(f"{what} has a negative dimension: {info.describe()}")
    if info.dims is None and pinned is None:
        raise InputShapeError(f"{what} has no declared shape: give it one with --input-shape "
                          f"{info.name}=1x3x32x32 (its real sizes)")
    if pinned is not None:
        if info.dims is not None:
            if len(pinned) != len(info.dims):
                raise InputShapeError(f"--input-shape {info.name}={'x'.join(map(str, pinned))} has "
                                  f"rank {len(pinned)}, but {what} is declared "
                                  f"{info.describe()} (rank {len(info.dims)})")
            for i, (p, d) in enumerate(zip(pinned, info.dims)):
                if isinstance(d, int) and d != p:
                    raise InputShapeError(f"--input-shape {info.name}="
                                      f"{'x'.join(map(str, pinned))} sets dim {i} to {p}, but "
                                      f"{what} declares it {d}")
        shape = tuple(pinned)
    else:
        assert info.dims is not None  # dynamic dims are reported together, before
        shape = tuple(int(d) for d in info.dims)  # type: ignore[arg-type]
    ty = TensorType(shape, dt)
    problem = tensor_type_error(ty)
    if problem is not None:
        raise FormatError(f"{what}: {problem}")
    return ty


def _pinned(info: ValueInfo, elem_type: int, value: np.ndarray) -> np.ndarray:
    """The --input-value of input `info` as the initializer it becomes."""
    dt = onnx_dtype(elem_type, f"input '{info.name}'")
    try:
        return fit_pinned_value(info.name, value, dt, info.dims)
    except ValueError as e:
        raise InputShapeError(f"--input-value {info.name}: {e}") from None


def _check(model: Any) -> set[str]:
    """Runs the onnx checker; returns the op types it has no schema for (they are
    reported later with every other unsupported node, all together)."""
    import onnx

    try:
        onnx.checker.check_model(model)
        return set()
    except onnx.checker.ValidationError as e:
        text = str(e)
        if "No Op registered for" not in text and "No opset import for domain" not in text:
            raise FormatError(f"the onnx checker refuses it: {_reason(e).split(' ==> ')[0]}"
                              ) from None
    except Exception as e:
        raise FormatError(f"the onnx checker refuses it: {_reason(e)}") from None
    # Unknown ops stop the checker at the first; check node by node for the rest.
    unknown: set[str] = set()
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = model.ir_version
    ctx.opset_imports = {o.domain: o.version for o in model.opset_import}
    lex = onnx.checker.C.LexicalScopeContext()
    for node in model.graph.node:
        try:
            onnx.checker.check_node(node, ctx, lex)
        except onnx.checker.ValidationError as e:
            text = str(e)
            if "No Op registered for" in text or "No opset import for domain" in text:
                unknown.add(node.op_type)
                continue
            raise FormatError(f"the onnx checker refuses node "
                              f"'{node.name or node.op_type}': "
                              f"{_reason(e).split(' ==> ')[0]}") from None
    return unknown


def read_model(data: bytes, input_shapes: dict[str, tuple[int, ...]] | None = None,
               base_dir: str | Path | None = None,
               input_values: dict[str, np.ndarray] | None = None) -> ModelInfo:
    """Parses and validates an ONNX model. Raises FormatError (one message) for a damaged
    or invalid file, OnnxError-ready messages are made by the caller. The inputs named in
    `input_values` (--input-value) become initializers of those values."""
    import onnx
    from onnx import external_data_helper

    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # DecodeError and whatever protobuf raises on garbage
        raise FormatError(f"cannot parse the protobuf: {_reason(e)}") from None
    if not model.HasField("graph") or not model.graph.node:
        raise FormatError("it holds no graph (no nodes)")
    opset = None
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = o.version
    if opset is None:
        raise FormatError("it imports no version of the default ONNX opset")
    if base_dir is not None and any(external_data_helper.uses_external_data(t)
                                    for t in model.graph.initializer):
        try:
            external_data_helper.load_external_data_for_model(model, str(base_dir))
        except Exception as e:
            raise FormatError(f"cannot load its external data: {_reason(e)}") from None
    if opset < MIN_OPSET and not _same_as_min_opset(model, opset):
        model, opset = _converted(model, opset), MIN_OPSET
    unknown = _check(model)
    g = model.graph
    initializers: dict[str, np.ndarray] = {}
    for t in g.initializer:
        initializers[t.name] = _array(t, f"initializer '{t.name}'")
    pins = dict(input_shapes or {})
    values = dict(input_values or {})
    names = [v.name for v in g.input if v.name not in initializers]
    unknown_pins = sorted(set(pins) - set(names))
    if unknown_pins:
        raise InputShapeError(f"--input-shape names {', '.join(unknown_pins)}, which is no "
                              f"input of the model (its inputs: {', '.join(names) or 'none'})")
    try:
        check_pin_names(names, set(values), set(pins))
    except ValueError as e:
        raise InputShapeError(str(e)) from None
    inputs = []
    dynamic: dict[str, tuple[int | str | None, ...]] = {}  # inputs with unpinned dims
    fixed: dict[str, tuple[tuple[int | str | None, ...], tuple[int, ...]]] = {}
    for v in g.input:
        if v.name in initializers:
            continue  # IR < 4 lists initializers among the inputs
        info = _value_info(v)
        if not v.type.HasField("tensor_type"):
            raise FormatError(f"input '{v.name}' is not a tensor")
        if v.name in values:
            initializers[v.name] = _pinned(info, v.type.tensor_type.elem_type,
                                           values[v.name])
            if info.dims is not None:
                fixed[v.name] = (info.dims, initializers[v.name].shape)
            continue
        pin = pins.get(v.name)
        if pin is None and info.dims is not None and not all(isinstance(d, int)
                                                             for d in info.dims):
            dynamic[v.name] = info.dims
            continue
        if pin is not None and info.dims is not None:
            fixed[v.name] = (info.dims, pin)
        ty = _input_type(info, v.type.tensor_type.elem_type, pin)
        if ty.num_elements == 0:
            # A tensor with an empty dimension holds no values: all there is to know of
            # it is known now, so it is a constant and the firmware takes no such input.
            # Its numpy type is ONNX's for the element type (ml_dtypes' int2, bfloat16,
            # ...), so the constant keeps the element type the model declares.
            elem = v.type.tensor_type.elem_type
            initializers[v.name] = np.zeros(ty.shape, onnx.helper.tensor_dtype_to_np_dtype(elem))
            continue
        inputs.append((info, ty))
    if dynamic:
        raise InputShapeError(dynamic_dims_message(model, dynamic, fixed))
    outputs = [_value_info(v) for v in g.output]
    if not outputs:
        raise FormatError("the graph has no outputs")
    nodes = []
    for i, n in enumerate(g.node):
        info = NodeInfo(i, n.name, n.op_type, n.domain, list(n.input), list(n.output), proto=n)
        info.attrs = node_attributes(n, info.describe())
        nodes.append(info)
    declared = {v.name: _value_info(v) for v in g.value_info}
    declared.update((o.name, o) for o in outputs)
    return ModelInfo(opset, inputs, outputs, initializers, nodes, unknown, declared)


# What onnx's version converter drops: an Upsample becomes a Resize without a
# coordinate_transformation_mode, which then means opset 11's half_pixel; Upsample maps
# an output index x to x / scale, floored (onnxruntime's and ONNX's Upsample), which in
# Resize's terms is this (node output -> attributes restored on the Resize).
_LOST_IN_CONVERSION = {
    "Upsample": {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
}


def _converted(model: Any, opset: int) -> Any:
    """An older-opset model converted to MIN_OPSET by onnx's version converter (each op
    rewritten by its adapters: Slice's and Split's attributes become inputs, Upsample a
    Resize, ...). FormatError naming the op the converter has no adapter for."""
    from onnx import helper, version_converter

    lost = {n.output[0]: _LOST_IN_CONVERSION[n.op_type] for n in model.graph.node
            if n.op_type in _LOST_IN_CONVERSION and n.domain in ("", "ai.onnx") and n.output}
    try:
        converted = version_converter.convert_version(model, MIN_OPSET)
    except Exception as e:  # noqa: BLE001 - the converter's C++ asserts surface as anything
        text = _reason(e)
    else:
        _same_inputs(model, converted, opset)
        for n in converted.graph.node:
            have = {a.name for a in n.attribute}
            for name, value in lost.get(n.output[0] if n.output else "", {}).items():
                if name not in have:
                    n.attribute.append(helper.make_attribute(name, value))
        return converted
    missing = re.search(r"No Adapter (?:From|To) Version \$?(\d+) for (\w+)", text)
    if missing is not None:
        raise FormatError(f"it uses opset {opset}, and onnx's version converter cannot "
                          f"convert its {missing[2]} nodes from opset {missing[1]} to "
                          f"{MIN_OPSET} (no adapter)")
    raise FormatError(f"it uses opset {opset}, and onnx's version converter cannot convert "
                      f"it to opset {MIN_OPSET}: {text.split(': ', 1)[-1]}")


def _same_inputs(model: Any, converted: Any, opset: int) -> None:
    """FormatError when the conversion changed a graph input's type: the adapter of an
    op whose meaning changed (Scan 8's batch axis) rewrites the model's interface, and
    the user's data would no longer fit it."""
    before = {v.name: v.type for v in model.graph.input}
    for v in converted.graph.input:
        if v.name in before and before[v.name] != v.type:
            raise FormatError(f"it uses opset {opset}, and onnx's version converter changes "
                              f"its input '{v.name}' when converting it to opset "
                              f"{MIN_OPSET}")


def _same_as_min_opset(model: Any, opset: int) -> bool:
    """Whether every node of an older-opset model means what it means in opset 13: its
    op's definition at `opset` is the one opset 13 still uses (And, Or, Xor, Not have not
    changed since opsets 1 and 7, and ONNX's own tests declare those opsets). Then
    nothing would differ after a version conversion, so the model is read as it is."""
    from onnx import defs

    for n in model.graph.node:
        if n.domain not in ("", "ai.onnx"):
            continue
        try:
            old = defs.get_schema(n.op_type, opset).since_version
            new = defs.get_schema(n.op_type, MIN_OPSET).since_version
        except Exception:  # noqa: BLE001 - an unknown op: the checker names it later
            return False
        if old != new:
            return False
    return True


def load_model(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
               input_values: dict[str, np.ndarray] | None = None) -> ModelInfo:
    """Reads `path`; OnnxError (`path: not a valid ONNX model: ...`) when it is damaged or
    its inputs cannot get static shapes, OSError when it cannot be read."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise OnnxError(str(path), [f"not a valid ONNX model: the file has {size} bytes, more "
                                    "than the 2 GiB a protobuf can hold"])
    try:
        return read_model(path.read_bytes(), input_shapes, path.parent, input_values)
    except FormatError as e:
        text = str(e) if isinstance(e, InputShapeError) else f"not a valid ONNX model: {e}"
        raise OnnxError(str(path), [text]) from None


__all__ = ["DTYPES", "MIN_OPSET", "ModelInfo", "NodeInfo", "ValueInfo", "load_model",
           "node_attributes", "onnx_dtype", "parse_shape", "read_model"]
