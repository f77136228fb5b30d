"""Graph -> graph rewrites run before scheduling."""

from toolchain.passes.fold import fold_constants

__all__ = ["fold_constants"]
