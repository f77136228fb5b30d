"""The model's own names for what the compiler makes of it.

Every graph node may carry the `Source` it came from: the TFLite operator (its index,
opcode and output tensor name), the ONNX node (its name, or its first output's name when
it has none) or the MLIR op (the name its `loc(...)` gives). A frontend converts one
source op into one or more nodes; `tag_new` gives all of them that source. After fusion
a dispatch runs several nodes: the schedule lists their sources per step
(schedule/sources.py), and `layer_labels` turns those lists into one short, unique,
readable name per dispatch for the reports (profile, size report, treemap, library
header). The names are never stored in the module: they change no byte of the image.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Source", "layer_labels", "short_name", "tag_new"]


@dataclass(frozen=True)
class Source:
    """Where a node comes from: the model's own `name` for it (a tensor, node or location
    name) and `origin`, which op of which format it is (``tflite operator 3 (CONV_2D)``)."""

    name: str
    origin: str = ""

    def to_json(self) -> dict[str, str]:
        """The source as data (size.json, ``--profile --json``)."""
        return {"name": self.name, "origin": self.origin}


def tag_new(graph: Any, start: int, source: Source | None) -> None:
    """Gives `source` to the nodes added to `graph` (a graph.ir.Graph, which imports
    this file) since it held `start` nodes (one
    source op's conversion), and to their regions' nodes, unless they have one already
    (an op of a called function keeps its own name; the call's is the fallback)."""
    if source is None or not source.name:
        return
    for node in graph.nodes[start:]:
        stack = [node]
        while stack:
            n = stack.pop()
            if n.source is None:
                n.source = source
            for region in n.regions:
                stack.extend(region.nodes)


# Path components that wrap every name of a model and say nothing about the layer:
# what Keras, TensorFlow's SavedModel and JAX put in front of a model's own names.
WRAPPERS: tuple[str, ...] = ("StatefulPartitionedCall", "PartitionedCall", "model",
                             "sequential", "functional", "jit(main)", "jit(f)")
# TensorFlow ops TFLite fuses into the op before them (an activation, a batch norm):
# their names say what follows a layer, not which layer it is.
FUSED_TF_OPS: frozenset[str] = frozenset({
    "Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "Tanh", "Softplus", "Swish", "Gelu",
    "FusedBatchNorm", "FusedBatchNormV", "clip_by_value", "Minimum", "Maximum"})
_TRAILING_DIGITS = re.compile(r"\d+$")
# The longest label: a profile or size table stays readable in 100 columns.
MAX_LABEL = 40
_WRAPPER_SUFFIX = re.compile(r"_\d+$")


def short_name(name: str) -> str:
    """The layer a model's name for a tensor or op belongs to: TFLite joins the names of
    the TensorFlow ops it fused into one tensor with ';' (``m/activation/Relu;m/conv2d/
    BiasAdd;m/conv2d/Conv2D1``): the layer most of them belong to (``m/conv2d``), read-
    variable resources, activations and normalizations (FUSED_TF_OPS) aside. A path of
    several components loses its last one, the op (``/conv1/Conv`` -> ``/conv1``)."""
    parts = [p for p in name.split(";") if p and "ReadVariableOp" not in p] or [name]
    layers = [p.rsplit("/", 1)[0] if "/" in p.strip("/") else p for p in parts]
    # An activation or normalization TFLite fused into the op is not the layer: count
    # the names of the layer's own computation (ties: the first).
    counts: Counter[str] = Counter()
    for part, layer in zip(parts, layers):
        op = _TRAILING_DIGITS.sub("", part.rsplit("/", 1)[-1])
        counts[layer] += op not in FUSED_TF_OPS
    best = max(counts.values())
    return next(layer for layer in layers if counts[layer] == best)


def _strip_wrappers(paths: list[list[str]]) -> list[list[str]]:
    """Drops the leading components all paths share, and leading wrapper components
    (WRAPPERS, with or without a Keras ``_N`` suffix), keeping at least one."""
    # One name has nothing in common with others: only wrappers go.
    while len(paths) > 1 and all(len(p) > 1 for p in paths) and len({p[0] for p in paths}) == 1:
        paths = [p[1:] for p in paths]
    out = []
    for p in paths:
        while len(p) > 1 and (p[0] == "" or _WRAPPER_SUFFIX.sub("", p[0]) in WRAPPERS):
            p = p[1:]
        out.append(p)
    return out


def layer_labels(names: Sequence[str | None], kinds: Sequence[str]) -> list[str]:
    """One label per dispatch: the short name of its main source (`names`, None when the
    model names nothing in it), else its op kind (`kinds`); common and wrapper prefixes
    dropped, ``:kind`` added to a name several dispatches share, at most MAX_LABEL
    characters (the middle elided), and unique (a repeat gets ``#2``, ``#3``, ...)."""
    named = [i for i, n in enumerate(names) if n]
    paths = _strip_wrappers([short_name(names[i] or "").strip("/").split("/")
                             for i in named]) if named else []
    raw = list(kinds)
    for i, path in zip(named, paths):
        raw[i] = "/".join(path) or kinds[i]
    # A name several dispatches share (a softmax's steps, all from one TFLite operator)
    # says which of them each is by its op kind.
    repeats = Counter(raw)
    raw = [f"{text}:{kind}" if repeats[text] > 1 and text != kind else text
           for text, kind in zip(raw, kinds)]
    labels = []
    seen: Counter[str] = Counter()
    for text in raw:
        if len(text) > MAX_LABEL:
            half = (MAX_LABEL - 3) // 2
            text = text[:half] + "..." + text[-(MAX_LABEL - 3 - half):]
        seen[text] += 1
        labels.append(text if seen[text] == 1 else f"{text}#{seen[text]}")
    return labels
