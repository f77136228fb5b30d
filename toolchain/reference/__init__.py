"""The numpy reference executor: the oracle every compiled result is checked against."""

# kernels.py fills the kernel table (reference/table.py) that the executor reads; every
# import of a module of this package runs this file first, so the table is full.
from toolchain.reference import kernels  # noqa: F401
from toolchain.reference.deadline import ReferenceTimeout, time_limit
from toolchain.reference.executor import run_graph

__all__ = ["ReferenceTimeout", "run_graph", "time_limit"]
