"""The numpy reference executor: the oracle every compiled result is checked against."""

from toolchain.reference.executor import run_graph

__all__ = ["run_graph"]
