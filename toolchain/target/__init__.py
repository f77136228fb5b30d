"""Target (instruction set / ABI) and board (memory map / runner) descriptors."""

from toolchain.target.descriptors import (
    Board,
    Budgets,
    Capabilities,
    CompilerHelpers,
    DescriptorError,
    MemoryRegion,
    Simulation,
    Target,
    boards_dir,
    list_boards,
    list_targets,
    load_board,
    load_target,
    targets_dir,
)

__all__ = [
    "Board",
    "Budgets",
    "Capabilities",
    "CompilerHelpers",
    "DescriptorError",
    "MemoryRegion",
    "Simulation",
    "Target",
    "boards_dir",
    "list_boards",
    "list_targets",
    "load_board",
    "load_target",
    "targets_dir",
]
