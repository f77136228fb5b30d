"""Each command's source ops after fusion (schedule/sources.py): a result written
straight into an output buffer keeps its op's name, a copy runs no op of its own, and
the arena timeline peaks at the arena's lower bound."""

from __future__ import annotations

from pathlib import Path

from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph
from toolchain.report.layers import layers_of_program
from toolchain.schedule import schedule

# %1 is returned twice and %x once: one of the %1 outputs is written by the exponential
# itself (its copy elided), the other and %x are copies.
MODEL = """func.func @main(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = stablehlo.negate %x : tensor<8xf32> loc("stem/neg")
  %1 = stablehlo.exponential %0 : tensor<8xf32> loc("head/exp")
  return %1, %1, %x : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
"""


def test_outputs_and_copies(tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(MODEL)
    graph = load_graph(path)
    prepare_graph(graph)
    program = schedule(graph)
    layers = layers_of_program(program)
    kinds = [layer.kind for layer in layers]
    assert kinds.count("copy") == 2 and len(layers) == 3
    (computed,) = [layer for layer in layers if layer.kind != "copy"]
    # negate is inlined into the exponential: one dispatch, both names, in model order.
    assert [s["name"] for s in computed.sources] == ["stem/neg", "head/exp"]
    assert computed.label == "head"
    copies = [layer for layer in layers if layer.kind == "copy"]
    assert [c.label for c in copies] == ["copy", "copy#2"] and not copies[0].sources
    assert max(program.arena_live, default=0) == program.arena_lower_bound
    assert len(program.arena_live) == len(program.steps)
