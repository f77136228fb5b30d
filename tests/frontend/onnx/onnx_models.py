"""Build small ONNX models in memory with `onnx.helper`, for tests (no PyTorch).

    data = build([node("Relu", ["x"], ["y"])], inputs={"x": x}, outputs=["y"])
    graph = import_bytes(data)
    want = run_ort(data, [x])          # None when onnxruntime is not installed

`inputs` maps a graph input's name to an example array (its dtype and shape are
declared; `dims` overrides the declared dims, e.g. ["N", 3] for a dynamic batch);
`consts` become initializers. Output types come from onnx's shape inference unless a
test declares them (the checker wants a type on every output).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from toolchain.frontend.onnx import import_model, read_model
from toolchain.graph.ir import Graph

OPSET = 17


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], name: str = "",
         **attrs) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), list(outputs), name=name or outputs[0], **attrs)


def _elem(dt: np.dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


def build(nodes: Sequence[onnx.NodeProto], inputs: dict[str, np.ndarray],
          outputs: Sequence[str], consts: dict[str, np.ndarray] | None = None,
          opset: int = OPSET, dims: dict[str, list] | None = None,
          output_types: dict[str, tuple[np.dtype, list]] | None = None) -> bytes:
    """A checked model's bytes."""
    dims = dims or {}
    ins = [helper.make_tensor_value_info(k, _elem(v.dtype), dims.get(k, list(v.shape)))
           for k, v in inputs.items()]
    outs = []
    for k in outputs:
        if output_types and k in output_types:
            dt, shape = output_types[k]
            outs.append(helper.make_tensor_value_info(k, _elem(dt), shape))
        else:
            outs.append(helper.ValueInfoProto(name=k))
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (consts or {}).items()]
    graph = helper.make_graph(list(nodes), "test", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return typed(model.SerializeToString())


def typed(data: bytes) -> bytes:
    """The model with its output types filled by onnx's shape inference (onnxruntime
    needs them)."""
    model = onnx.load_model_from_string(data)
    inferred = onnx.shape_inference.infer_shapes(model)
    by_name = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in model.graph.output:
        if not out.type.HasField("tensor_type") and out.name in by_name:
            out.CopyFrom(by_name[out.name])
    return model.SerializeToString()


def import_bytes(data: bytes, input_shapes: dict | None = None) -> Graph:
    return import_model(read_model(data, input_shapes))


def run_ort(data: bytes, inputs: Sequence[np.ndarray], optimize: bool = True
            ) -> list[np.ndarray] | None:
    """onnxruntime's outputs (None without onnxruntime). `optimize=False` turns its graph
    optimizations off (QDQ patterns then run as the float ops ONNX specifies)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    opts = ort.SessionOptions()
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def merge(graphs: Sequence[Graph]) -> Graph:
    """One graph computing all of `graphs` side by side (inputs and outputs in order), so
    many small models share one firmware build and one QEMU run."""
    merged = Graph("main")
    for g in graphs:
        merged.inputs += g.inputs
        merged.outputs += g.outputs
        merged.nodes += g.nodes
        merged.input_names += g.input_names
    return merged


def run_firmware(graph: Graph, board: str, out_dir, inputs: Sequence[np.ndarray]
                 ) -> list[np.ndarray]:
    """Builds `graph` for `board` (in place: it is folded) and runs it under QEMU."""
    from toolchain.emu.run import run_image
    from toolchain.module.reader import read_module
    from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs
    from toolchain.target import load_board

    result = compile_graph(graph, load_board(board), out_dir, log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, inputs),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    return decode_outputs(module.outputs, run.outputs)


def randn(shape: Sequence[int], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(tuple(shape)) * scale).astype(
        np.float32)


__all__ = ["OPSET", "TensorProto", "build", "import_bytes", "merge", "node", "randn",
           "run_firmware", "run_ort", "typed"]
