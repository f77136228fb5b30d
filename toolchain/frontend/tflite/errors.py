"""The errors of the .tflite frontend."""

from __future__ import annotations

from toolchain.diagnostics import CompileError


class Unsupported(Exception):
    """Raised by an operator's converter: this instance cannot be imported. The message
    says why; the importer prefixes the operator's index and opcode."""


class TFLiteError(CompileError):
    """Problems in a .tflite model, each reported as one line `model.tflite: message`.

    A flatbuffer has no line and column, so the file name alone locates the message and
    the operator index in it (`operator 7 (SQUARED_DIFFERENCE) is not supported`) points
    into the model. It is a CompileError, so the command-line tools exit with code 2.
    """

    def __init__(self, path: str, messages: list[str]):
        super().__init__(messages[0])
        self.path = path
        self.messages = list(messages)

    def render(self) -> str:
        """One line per problem."""
        return "\n".join(f"{self.path}: {m}" for m in self.messages)

    def __str__(self) -> str:
        return self.render()
