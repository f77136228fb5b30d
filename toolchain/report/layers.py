"""The model report per layer: each command of a build under the model's own names.

A build writes, beside its image, the list of its dispatch functions in program order
(the dispatches file, pipeline.DISPATCHES_FILE). Each row holds what the reports need
and the image does not: the function's name (``d3_broadcast_in_dim_..._convert``), a
short readable `label` (graph/sources.py: the model's name for the layer, else its op
kind), every source the dispatch fused (``sources``), its MACs (kernel form), the
weights it binds (constant pool entries, by index and bytes; a weight several commands
read is `owned` by the first), the bytes of activations it reads and writes (arena and
I/O buffers), and the arena bytes live while it runs (the peak-memory timeline).
Nothing here is stored in the module: names change no byte of the image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolchain.emu.profile import kernel_macs
from toolchain.graph.sources import layer_labels
from toolchain.report.size import SizeReport
from toolchain.schedule import Program
from toolchain.schedule.optimize import OptimizeChoice

__all__ = ["DISPATCHES_FILE", "NAME_MODES", "Layer", "attach_layers", "layers_json",
           "layers_of_program", "read_layers", "read_optimize", "read_tuned"]

# The file a build writes them to; `minirt-run --profile` and `minirt-size` read it.
DISPATCHES_FILE = "dispatches.json"

# How a report names its layers (--names): the short label, every source name, or the
# dispatch function's own name.
NAME_MODES: tuple[str, ...] = ("short", "full", "function")


@dataclass(frozen=True)
class Layer:
    """One command of a build, as the reports name and measure it."""

    function: str  # the dispatch function (its profile row and ELF symbol)
    label: str
    kind: str
    sources: tuple[dict[str, str], ...] = ()  # {"name", "origin"} per fused source op
    macs: int = 0
    constants: tuple[tuple[int, int], ...] = ()  # (pool index, bytes) of bound weights
    owned: tuple[int, ...] = ()  # the pool indices this command reads first
    activation_in: int = 0  # bytes of arena / input buffers it reads
    activation_out: int = 0  # bytes of arena / output buffers it writes
    arena_live: int = 0  # arena bytes live while it runs

    @property
    def weights_bytes(self) -> int:
        """Bytes of the weights it reads (shared ones included)."""
        return sum(n for _, n in self.constants)

    def name(self, mode: str = "short") -> str:
        """Its name in a report: the label, every source name joined by ' | ' (falling
        back to the label), or the dispatch function's name."""
        if mode == "full":
            return " | ".join(s["name"] for s in self.sources) or self.label
        return self.function if mode == "function" else self.label

    def to_json(self) -> dict[str, Any]:
        """The row as the dispatches file and ``--profile --json`` hold it."""
        return {"name": self.function, "label": self.label, "kind": self.kind,
                "sources": list(self.sources), "macs": self.macs,
                "weights_bytes": self.weights_bytes,
                "constants": [list(c) for c in self.constants], "owned": list(self.owned),
                "activation_in_bytes": self.activation_in,
                "activation_out_bytes": self.activation_out,
                "arena_live_bytes": self.arena_live}


def layers_of_program(program: Program) -> list[Layer]:
    """The layers of a scheduled program, in command order."""
    steps = program.steps
    named = [s.sources.main.name if s.sources and s.sources.main else None for s in steps]
    kinds = [s.sources.kind if s.sources else "dispatch" for s in steps]
    labels = layer_labels(named, kinds)
    seen: set[int] = set()
    layers = []
    for k, step in enumerate(steps):
        n_in = len(getattr(step.kernel, "operands", step.buffers))
        constants, owned = [], []
        act_in = act_out = 0
        for j, b in enumerate(step.buffers):
            if b.kind == "constant":
                if all(c != b.index for c, _ in constants):
                    constants.append((b.index, int(np.asarray(program.constants[b.index]).nbytes)))
                    if b.index not in seen:
                        seen.add(b.index)
                        owned.append(b.index)
            elif j < n_in:
                act_in += b.size
            else:
                act_out += b.size
        live = program.arena_live[k] if k < len(program.arena_live) else 0
        sources = tuple(s.to_json() for s in step.sources.sources) if step.sources else ()
        layers.append(Layer(step.kernel.name, labels[k], kinds[k], sources,
                            kernel_macs(step.kernel), tuple(constants), tuple(owned),
                            act_in, act_out, live))
    return layers


def layers_json(program: Program) -> str:
    """The dispatches file of a build: ``{"dispatches": [row, ...], "arena_size",
    "arena_lower_bound", "optimize"}``, a row per command (Layer.to_json), and what the
    build chose under --optimize (schedule/optimize.py), which minirt-size states."""
    data = {"dispatches": [layer.to_json() for layer in layers_of_program(program)],
            "arena_size": program.arena_size,
            "arena_lower_bound": program.arena_lower_bound}
    if program.optimize is not None:
        data["optimize"] = program.optimize.to_json()
    if program.tuned:  # the layers scheduled from the tuning database (minirt-size too)
        data["tuned"] = program.tuned
    return json.dumps(data, indent=1) + "\n"


def _layer(row: dict[str, Any]) -> Layer:
    return Layer(str(row["name"]), str(row.get("label") or row["name"]),
                 str(row.get("kind", "")),
                 tuple({"name": str(s["name"]), "origin": str(s.get("origin", ""))}
                       for s in row.get("sources", ())),
                 int(row.get("macs", 0)),
                 tuple((int(i), int(n)) for i, n in row.get("constants", ())),
                 tuple(int(i) for i in row.get("owned", ())),
                 int(row.get("activation_in_bytes", 0)), int(row.get("activation_out_bytes", 0)),
                 int(row.get("arena_live_bytes", 0)))


def read_layers(path: Path) -> list[Layer]:
    """The layers in a dispatches file. Raises ValueError (with the reason) when it is
    missing or unreadable; a build older than the names gives labels equal to the
    function names."""
    path = Path(path)
    try:
        return [_layer(r) for r in json.loads(path.read_text())["dispatches"]]
    except OSError as e:
        raise ValueError(f"{path}: cannot read the build's dispatch list "
                         f"({e.strerror or e}); rebuild the model") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: cannot read the build's dispatch list ({e}); rebuild "
                         "the model") from None


def read_tuned(path: Path) -> list[dict[str, Any]]:
    """The layers a build scheduled from the tuning database, from its dispatches file
    (SizeReport.tuned; none for a build older than the record). Raises ValueError when
    the file is unreadable."""
    try:
        tuned = json.loads(Path(path).read_text()).get("tuned", [])
    except (OSError, ValueError, AttributeError) as e:
        raise ValueError(f"{path}: cannot read the build's dispatch list ({e}); rebuild "
                         "the model") from None
    return tuned if isinstance(tuned, list) else []


def read_optimize(path: Path) -> OptimizeChoice | None:
    """What the build chose under --optimize, from its dispatches file; None for a
    build older than the record. Raises ValueError (with the reason) when the file or
    the record is unreadable."""
    path = Path(path)
    try:
        record = json.loads(path.read_text()).get("optimize")
        return None if record is None else OptimizeChoice.from_json(record)
    except OSError as e:
        raise ValueError(f"{path}: cannot read the build's dispatch list "
                         f"({e.strerror or e}); rebuild the model") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: cannot read the build's --optimize record ({e}); "
                         "rebuild the model") from None


def attach_layers(report: SizeReport, layers: list[Layer]) -> SizeReport:
    """`report` naming its dispatch functions by their layers (SizeReport.layers): per
    layer its function, label, op kind, source names, code bytes (the function's
    symbol) and weights bytes (the constants it reads first; shared ones count once)."""
    code = {s.name: s.size for s in report.symbols}
    pool = {i: n for layer in layers for i, n in layer.constants}
    report.layers = [{"function": layer.function, "label": layer.label, "kind": layer.kind,
                      "sources": [s["name"] for s in layer.sources],
                      "code_bytes": code.get(layer.function, 0),
                      "weights_bytes": sum(pool[i] for i in layer.owned)}
                     for layer in layers]
    return report
