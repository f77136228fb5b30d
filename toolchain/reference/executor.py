"""Runs a Graph on numpy arrays, each node by its kernel in reference/table.py (which
reference/kernels.py fills: the package's __init__ imports it)."""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph
from toolchain.reference.deadline import check_deadline
from toolchain.reference.table import KERNELS
from toolchain.types import to_dtype


class InputError(ValueError):
    """Inputs that do not match the graph's signature."""


def run_graph(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Evaluates `graph` on `inputs` (one array per graph input, in order). Raises
    ReferenceTimeout past the time limit of an enclosing deadline.time_limit."""
    if len(inputs) != len(graph.inputs):
        raise InputError(f"the model takes {len(graph.inputs)} inputs, got {len(inputs)}")
    env: dict[int, np.ndarray] = {}
    for i, (t, x) in enumerate(zip(graph.inputs, inputs)):
        x = np.asarray(x)
        if x.shape != t.type.shape:
            raise InputError(f"input_{i} has shape {x.shape}, the model expects {t.type.shape}")
        if not np.can_cast(x.dtype, t.type.dtype.np_dtype, casting="same_kind"):
            raise InputError(f"input_{i} has dtype {x.dtype}, the model expects "
                             f"{t.type.dtype}")
        # bf16 inputs arrive as float32: the firmware gets them rounded to bf16, so the
        # reference computes with the same values.
        env[id(t)] = to_dtype(x, t.type.dtype)
    # Checked at entry too: a loop whose body is empty still runs this per turn.
    check_deadline()
    for node in graph.nodes:
        check_deadline()
        args = [env[id(t)] for t in node.inputs]
        result = KERNELS[node.op](node, *args)
        outs = result if isinstance(result, tuple | list) else [result]
        for t, v in zip(node.outputs, outs):
            env[id(t)] = np.asarray(v).reshape(t.type.shape)
    return [env[id(t)] for t in graph.outputs]
