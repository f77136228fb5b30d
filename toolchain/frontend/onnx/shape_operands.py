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
    "Unsqueeze": frozenset({"axes"}),
    "Squeeze": frozenset({"axes"}),
    "Trilu": frozenset({"k"}),
    **{op: frozenset({"axes"}) for op in _REDUCE_OPS},
    # Range's length is (limit - start) / delta.
    "Range": frozenset({"start", "limit", "delta"}),
    # The trip count and the first condition: a Loop's scan outputs have one row per
    # iteration (loops.py).
    "Loop": frozenset({"M", "cond"}),
    # Output sizes that depend on the values (data_dependent.py): Compress's on its
    # condition, Unique's and NonMaxSuppression's on every input.
    "Compress": frozenset({"condition"}),
    "Unique": frozenset({"X"}),
    "NonMaxSuppression": frozenset({"boxes", "scores", "max_output_boxes_per_class",
                                    "iou_threshold", "score_threshold"}),
}


def shape_operand_inputs(model: Any) -> list[str]:
    """The graph inputs of `model` (an onnx ModelProto) that one of its nodes reads as a
    shape operand (SHAPE_OPERANDS), in the graph's input order: the inputs a user pins
    with --input-value so that the model builds."""
    from onnx import defs

    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                default=0)
    inits = {t.name for t in model.graph.initializer}
    read: set[str] = set()
    for node in model.graph.node:
        wanted = SHAPE_OPERANDS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if not wanted:
            continue
        try:
            schema = defs.get_schema(node.op_type, opset)
        except Exception:  # noqa: BLE001 - no schema at this opset: nothing to pin
            continue
        for i, name in enumerate(node.input):
            if i < len(schema.inputs) and schema.inputs[i].name in wanted:
                read.add(name)
    return [v.name for v in model.graph.input if v.name in read and v.name not in inits]


__all__ = ["SHAPE_OPERANDS", "shape_operand_inputs"]
