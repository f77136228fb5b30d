"""Which operands of an ONNX op decide a shape or the computation's structure (a
Reshape's shape, a Slice's starts, a Reduce's axes, a TopK's K, a Resize's scales), and
so must be known when the model is built: minirt's shapes are static. When a model gives
one as a graph input, `--input-value NAME=VALUE` pins it (docs/formats.md).

The table holds the operands that minirt's converters read as constants (ctx.const), by
the op schema's input names.
"""

from __future__ import annotations

from typing import Any

_REDUCE_OPS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
               "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")

# op type -> the schema names of its inputs that decide a shape or the structure.
SHAPE_OPERANDS: dict[str, frozenset[str]] = {
    "Reshape": frozenset({"shape"}),
    "Expand": frozenset({"shape"}),
    "ConstantOfShape": frozenset({"input"}),
    "CenterCropPad": frozenset({"shape"}),
    "Tile": frozenset({"repeats"}),
    "Pad": frozenset({"pads", "axes"}),
    "Slice": frozenset({"starts", "ends", "axes", "steps"}),
    "Resize": frozenset({"roi", "scales", "sizes"}),
    "TopK": frozenset({"K"}),
    "Split": frozenset({"split"}),
    "OneHot": frozenset({"depth"}),
    "CumSum": frozenset({"axis"}),
    "CumProd": frozenset({"axis"}),
    "DFT": frozenset({"dft_length", "axis"}),
    "STFT": frozenset({"frame_step", "frame_length"}),
    "Col2Im": frozenset({"image_shape", "block_shape"}),
    "MaxUnpool": frozenset({"output_shape"}),
    "Unsqueeze": frozenset({"axes"}),
    "Squeeze": frozenset({"axes"}),
    "Trilu": frozenset({"k"}),
    **{op: frozenset({"axes"}) for op in _REDUCE_OPS},
    # Range's length is (limit - start) / delta.
    "Range": frozenset({"start", "limit", "delta"}),
    # The trip count and the first condition: a Loop's scan outputs have one row per
    # iteration (loops.py).
    "Loop": frozenset({"M", "cond"}),
    # Outputs whose size is an input's value: a window's length, AffineGrid's grid, and
    # Upsample's scales (the Resize it becomes reads them as constants).
    **{op: frozenset({"size"}) for op in ("HannWindow", "HammingWindow", "BlackmanWindow",
                                           "AffineGrid")},
    "Upsample": frozenset({"scales"}),
    # A constant matrix whose size is two of its inputs (its values follow from all).
    "MelWeightMatrix": frozenset({"num_mel_bins", "dft_length", "sample_rate",
                                  "lower_edge_hertz", "upper_edge_hertz"}),
    # Output sizes that depend on the values (data_dependent.py): Compress's on its
    # condition, Unique's, NonZero's and NonMaxSuppression's on every input.
    "Compress": frozenset({"condition"}),
    "Unique": frozenset({"X"}),
    "NonZero": frozenset({"X"}),
    "NonMaxSuppression": frozenset({"boxes", "scores", "max_output_boxes_per_class",
                                    "iou_threshold", "score_threshold"}),
}


# Quantization parameters: minirt compiles them into the integer arithmetic
# (multipliers and shifts, docs/int8.md), so they too must be known when it builds. Only
# a graph input read directly is pinned: a scale computed from the data
# (DynamicQuantizeLinear) would pin the data itself, and is refused instead.
QUANT_PARAMS: dict[str, frozenset[str]] = {
    "QuantizeLinear": frozenset({"y_scale", "y_zero_point"}),
    "DequantizeLinear": frozenset({"x_scale", "x_zero_point"}),
    "QLinearMatMul": frozenset({"a_scale", "a_zero_point", "b_scale", "b_zero_point",
                                "y_scale", "y_zero_point"}),
    "QLinearConv": frozenset({"x_scale", "x_zero_point", "w_scale", "w_zero_point",
                              "y_scale", "y_zero_point"}),
}

# Ops whose outputs depend only on their input's static shape, never its values: a
# shape operand computed from one of them needs nothing pinned upstream.
_SHAPE_ONLY = frozenset({"Shape", "Size"})


def _walk(graph: Any) -> list[Any]:
    """The nodes of `graph` and of the bodies of its nodes (Loop, If, Scan), nested."""
    out = []
    for node in graph.node:
        out.append(node)
        for a in node.attribute:
            out += [n for g in ([a.g] if a.HasField("g") else list(a.graphs))
                    for n in _walk(g)]
    return out


def _operands(nodes: list[Any], table: dict[str, frozenset[str]], opset: int) -> set[str]:
    """The names the nodes read as the operands `table` lists for their op."""
    from onnx import defs

    read: set[str] = set()
    for node in nodes:
        wanted = table.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if not wanted:
            continue
        try:
            schema = defs.get_schema(node.op_type, opset)
        except Exception:  # noqa: BLE001 - no schema at this opset: nothing to pin
            continue
        for i, name in enumerate(node.input):
            if i < len(schema.inputs) and schema.inputs[i].name in wanted:
                read.add(name)
    return read


def shape_operand_inputs(model: Any) -> list[str]:
    """The graph inputs of `model` (an onnx ModelProto) that a shape operand
    (SHAPE_OPERANDS) of one of its nodes is read from or computed from, in the graph's
    input order: the inputs a user pins with --input-value so that the model builds.
    (A function's body written out, a Range's trip count computed from its start, limit
    and delta, reads them through other nodes; a Shape or Size reads only the static
    shape of its input, so the way back stops there.) Quantization parameters
    (QUANT_PARAMS) given as graph inputs are pinned too."""
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                default=0)
    inits = {t.name for t in model.graph.initializer}
    nodes = _walk(model.graph)
    producer = {o: n for n in nodes for o in n.output if o}
    read = _operands(nodes, SHAPE_OPERANDS, opset)
    todo, seen = list(read), read | _operands(nodes, QUANT_PARAMS, opset)
    while todo:  # back through the nodes computing them
        p = producer.get(todo.pop())
        if p is None or p.op_type in _SHAPE_ONLY:
            continue
        # A node with bodies (If, Loop) also computes from what its bodies read.
        inner = [name for a in p.attribute
                 for g in ([a.g] if a.HasField("g") else list(a.graphs))
                 for n in _walk(g) for name in n.input]
        for name in [*p.input, *inner]:
            if name and name not in seen:
                seen.add(name)
                todo.append(name)
    return [v.name for v in model.graph.input if v.name in seen and v.name not in inits]


__all__ = ["QUANT_PARAMS", "SHAPE_OPERANDS", "shape_operand_inputs"]
