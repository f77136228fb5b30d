"""What the importer says when a model cannot be imported: one line, whatever the count.

A model with forty unsupported operators used to print forty lines; the user needs the
list of operators to replace, so the problems are grouped by opcode (and reason) with
counts and the operators they hit: `3 operators are not supported: SIN x2 (operators 0,
2), ELU x1 (operator 1)`. A model compiled by Arm's Vela for an Ethos-U NPU is refused
before anything else is looked at: its graph is a command stream for that NPU, not
operators minirt could replace; a model with sparse tensors is refused as sparse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolchain.frontend.tflite.reader import ModelInfo

# The custom operator Vela puts in place of the layers it compiled for the Ethos-U NPU.
VELA_OPCODE = "CUSTOM:ethos-u"
# Operators listed by index in a group before the rest are counted only.
MAX_INDICES = 6


@dataclass(frozen=True)
class Problem:
    """One problem of the model: on an operator (index and opcode), or elsewhere (a model
    input or output: `where` alone). `reason` is empty for an operator with no converter."""

    where: str
    reason: str = ""
    opcode: str | None = None
    index: int | None = None

    def line(self) -> str:
        """The problem on its own: `operator 3 (SIN) is not supported`."""
        if self.opcode is None:
            return f"{self.where}: {self.reason}" if self.reason else self.where
        return f"{self.where} is not supported" if not self.reason else (
            f"{self.where}: {self.reason}")


def vela_refusal(model: ModelInfo) -> str | None:
    """The one-line refusal of a model compiled by Vela (an `ethos-u` custom operator),
    or None."""
    for op in model.operators:
        if op.opcode == VELA_OPCODE:
            return (f"the model was compiled by Vela into an Ethos-U NPU command stream "
                    f"(operator {op.index}, {op.opcode}), which minirt cannot run: give it "
                    "the model from before Vela")
    return None


def sparse_refusal(model: ModelInfo) -> str | None:
    """The one-line refusal of a model with sparse tensors (TFLite's `sparsity` field: a
    buffer of non-zero blocks, densified by DENSIFY or read sparse by a kernel), or None.
    Said once for the model, so that neither a DENSIFY nor a byte count hides why."""
    sparse = [t for t in model.tensors if t.sparse]
    if not sparse:
        return None
    more = f" (and {len(sparse) - 1} more)" if len(sparse) > 1 else ""
    return (f"{sparse[0].describe()} is sparse{more}: the model uses sparse tensors, which "
            "minirt does not support; give it the model converted without sparsity")


def _indices(indices: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in indices[:MAX_INDICES])
    more = f", +{len(indices) - MAX_INDICES} more" if len(indices) > MAX_INDICES else ""
    return f"operator{'s' if len(indices) > 1 else ''} {shown}{more}"


def summary(problems: Sequence[Problem]) -> str:
    """All `problems` as one line. One problem is its own line; several operators are
    grouped by opcode and reason in first-seen order, `OPCODE xN (operators i, j: reason)`,
    and problems elsewhere follow after a `;`."""
    if len(problems) == 1:
        return problems[0].line()
    groups: dict[tuple[str, str], list[int]] = {}
    others: list[str] = []
    for p in problems:
        if p.opcode is None or p.index is None:
            others.append(p.line())
        else:
            groups.setdefault((p.opcode, p.reason), []).append(p.index)
    parts = []
    if groups:
        count = sum(len(v) for v in groups.values())
        items = [f"{opcode} x{len(indices)} ({_indices(indices)}"
                 f"{': ' + reason if reason else ''})"
                 for (opcode, reason), indices in groups.items()]
        noun = "operator is" if count == 1 else "operators are"
        parts.append(f"{count} {noun} not supported: {', '.join(items)}")
    return "; ".join(parts + others)


__all__ = ["MAX_INDICES", "VELA_OPCODE", "Problem", "sparse_refusal", "summary",
           "vela_refusal"]
