"""Frontends: MLIR dialect op trees (StableHLO for now) to the core Graph."""

from toolchain.frontend.stablehlo import import_module

__all__ = ["import_module"]
