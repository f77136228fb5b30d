"""The errors of the ONNX frontend."""

from __future__ import annotations

from toolchain.diagnostics import CompileError


class Unsupported(Exception):
    """Raised by a node's converter: this node cannot be imported. The message says why;
    the importer prefixes the node's name and op type."""


class NotInt8(Exception):
    """Raised by a QDQ converter: this instance has no exact integer form (another
    quantization, a float bias, ...); the importer then runs the float op on the
    dequantized values instead."""


class FormatError(Exception):
    """The file is no valid ONNX model (damaged protobuf, a checker error, a tensor whose
    data does not match its type)."""


class InputShapeError(FormatError):
    """An input without a static shape, or an --input-shape that does not fit the model:
    the user's to fix with the option, not a damaged file."""


class OnnxError(CompileError):
    """Problems in an .onnx model, each reported as one line `model.onnx: message`.

    A protobuf has no line and column; the node's name and op type locate a message in
    the model (`node 'conv1' (Conv): ...`). It is a CompileError, so the command-line
    tools exit with code 2.
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


__all__ = ["FormatError", "InputShapeError", "NotInt8", "OnnxError", "Unsupported"]
