"""The error of code generation, in a file of its own so that every emitter (the
generic kernel's, the loop nest's, the packed steps', the other kinds') can raise it
without importing the emitter that dispatches to them."""

from __future__ import annotations


class EmitError(Exception):
    """A kernel the emitter cannot lower (unknown op, unsupported type, bad shapes)."""
