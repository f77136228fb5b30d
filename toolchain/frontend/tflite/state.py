"""State that survives an inference, as the TFLite importer builds it (graph/ir.py's
`Graph.states`): resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE,
CALL_ONCE's init subgraph) and variable tensors (`is_variable`).

Any converter reaches it through `OpContext.read_state` / `write_state` under a key of
its own choosing; the resource-variable converters below are its first users. A state
value is one graph input (its value when the inference starts) and, once the whole
model is imported, one graph output (its last value written, or the input itself).
A read after a write in the same inference sees the written value, as TFLite Micro's
READ_VARIABLE after an ASSIGN_VARIABLE does.

Initial values follow TFLite Micro: a variable holds its default value (the zero point
of a quantized type, else 0) until written; CALL_ONCE's init subgraph runs once, before
the first inference, so the values it assigns are the boot values. It has no inputs, so
the importer runs it here, at build time, with the reference executor. A reset
(MicroInterpreter::Reset) sets every variable back to its default value and does not run
the init subgraph again (CALL_ONCE has no reset hook; its `has_run` stays set).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Graph, StateVar, Tensor
from toolchain.reference.executor import run_graph
from toolchain.types import TensorType


def default_value(ty: TensorType) -> np.ndarray:
    """What TFLite Micro fills a fresh or reset variable with: the zero point of a
    quantized int8 type (it memsets the int8 zero point), else 0."""
    fill = 0
    if ty.quant is not None and ty.dtype.name == "i8":
        fill = int(ty.quant.zero_points[0])
    return np.full(ty.shape, fill, ty.dtype.np_dtype)


@dataclass
class _Entry:
    type: TensorType
    input: Tensor | None  # the graph input (None while importing an init subgraph)
    value: Tensor | None  # the last value written in this inference, or None
    initial: np.ndarray
    reset: np.ndarray


class StateTable:
    """The state values one import reads and writes, by key.

    In the main subgraph each key becomes a graph input and output (`finish`). In an init
    subgraph (`boot` is the main table's boot values), a read is a constant of the value
    known so far and the writes are collected for `run_init`."""

    def __init__(self, graph: Graph, boot: dict[str, np.ndarray] | None = None):
        self.graph = graph
        self.entries: dict[str, _Entry] = {}
        self.boot: dict[str, np.ndarray] = {} if boot is None else boot
        self.is_init = boot is not None
        # TFLite resource tensor index -> the variable's key (VAR_HANDLE's output).
        self.handles: dict[int, str] = {}
        # Runs CALL_ONCE's init subgraph k (set by the importer: it owns the converters).
        self.run_init: Callable[[int], dict[str, np.ndarray]] | None = None

    def read(self, key: str, ty: TensorType, initial: np.ndarray | None = None,
             reset: np.ndarray | None = None) -> Tensor:
        """The value of state `key` now: the last written, else its value at the start."""
        entry = self._entry(key, ty, initial, reset)
        if entry.value is not None:
            return entry.value
        if self.is_init:
            node = self.graph.add("constant", [], [ty], {"value": entry.initial.copy()})
            entry.value = node.output
            return entry.value
        assert entry.input is not None
        return entry.input

    def write(self, key: str, value: Tensor, initial: np.ndarray | None = None,
              reset: np.ndarray | None = None) -> None:
        """Makes `value` the state's value from here on (and at the end of the inference,
        unless written again)."""
        self._entry(key, value.type, initial, reset).value = value

    def _entry(self, key: str, ty: TensorType, initial: np.ndarray | None,
               reset: np.ndarray | None) -> _Entry:
        entry = self.entries.get(key)
        if entry is None:
            fill = default_value(ty)
            start = self.boot.get(key, initial if initial is not None else fill)
            start = np.asarray(start, ty.dtype.np_dtype).reshape(ty.shape)
            back = np.asarray(reset if reset is not None else fill,
                              ty.dtype.np_dtype).reshape(ty.shape)
            tensor = None if self.is_init else self.graph.add_input(ty, f"state:{key}")
            entry = self.entries[key] = _Entry(ty, tensor, None, start, back)
        elif (entry.type.shape, entry.type.dtype) != (ty.shape, ty.dtype):
            raise Unsupported(f"state '{key}' is {entry.type} but this operator uses it as {ty}")
        return entry

    def call_once(self, k: int) -> None:
        """CALL_ONCE of init subgraph k: its assignments become the boot values."""
        if self.entries:
            raise Unsupported("CALL_ONCE after a variable was read or assigned: minirt runs "
                              "the init subgraph before the first inference, so it must "
                              "come first")
        if self.run_init is None:
            raise Unsupported("CALL_ONCE inside an init subgraph is not supported")
        self.boot.update(self.run_init(k))

    def written(self) -> dict[str, np.ndarray]:
        """An init subgraph's assignments, computed (it reads nothing but constants)."""
        keys = [k for k, e in self.entries.items() if e.value is not None]
        self.graph.outputs = [self.entries[k].value for k in keys]
        values = run_graph(self.graph, [])
        return {k: np.asarray(v) for k, v in zip(keys, values)}

    def finish(self) -> None:
        """Appends each state's final value to the graph outputs and its StateVar."""
        for key, entry in self.entries.items():
            self.graph.outputs.append(entry.value if entry.value is not None else entry.input)
            self.graph.states.append(StateVar(key, entry.initial, entry.reset))


__all__ = ["StateTable", "default_value"]
