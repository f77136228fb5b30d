"""The dispatch of a `custom_call` node: one call of the user's C kernel
(graph/custom_ops.py; codegen/custom_call.py emits it, runtime_c/include/mrt_custom_op.h
is its ABI)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.graph.custom_ops import CustomOp, type_code
from toolchain.graph.ir import Node
from toolchain.types import TensorType


@dataclass(frozen=True)
class CustomCall:
    """Calls `op.c_function` on the operands and results; `options` are the bytes the
    kernel gets, `ordinal` the operator's number in the model (its failure status)."""

    name: str
    op: CustomOp
    operands: tuple[TensorType, ...]
    results: tuple[TensorType, ...]
    options: bytes
    ordinal: int

    in_place = False  # it writes its results without reading them

    @property
    def binding_types(self) -> tuple[TensorType, ...]:
        """The types of the buffers a command binds to it, in order."""
        return self.operands + self.results


def lower_custom_call(node: Node) -> CustomCall:
    """The CustomCall of a graph `custom_call` node; CustomOpError for a tensor the ABI
    cannot describe (an element type without a code)."""
    op: CustomOp = node.attrs["op"]
    operands = tuple(t.type for t in node.inputs)
    results = tuple(node.attrs["result_types"])
    for k, t in enumerate(operands + results):
        type_code(t, f"custom op {op.code} tensor {k}")
    return CustomCall(f"custom_{op.c_function}", op, operands, results,
                      bytes(node.attrs["options"]), int(node.attrs["ordinal"]))


def run_custom_call_kernel(kernel: CustomCall, args: list[np.ndarray]) -> list[np.ndarray]:
    """The host evaluation of the dispatch: the user's Python reference (what the C
    kernel must compute)."""
    from toolchain.graph.ir import Graph
    from toolchain.reference.custom_call import run_custom_call

    g = Graph("custom")
    inputs = [g.add_input(t) for t in kernel.operands]
    node = g.add("custom_call", inputs, list(kernel.results),
                 {"op": kernel.op, "options": kernel.options, "ordinal": kernel.ordinal,
                  "result_types": kernel.results})
    return run_custom_call(node, *args)
