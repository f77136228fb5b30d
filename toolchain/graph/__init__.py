"""The typed SSA tensor graph every stage after the frontend works on."""

from toolchain.graph.ir import Graph, Node, Tensor

__all__ = ["Graph", "Node", "Tensor"]
