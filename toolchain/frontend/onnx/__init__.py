""".onnx import: ONNX models (opset 13 and later; older ones converted to 13) to the
core Graph.

reader.py parses and checks the protobuf with the `onnx` package into plain dataclasses;
importer.py converts them to a Graph through the op table in ops.py (NCHW kept), with
QDQ patterns mapped onto the int8 kernels (quant.py).
"""

from toolchain.frontend.onnx.errors import FormatError, OnnxError, Unsupported
from toolchain.frontend.onnx.importer import import_model, load_onnx
from toolchain.frontend.onnx.ops import OPS
from toolchain.frontend.onnx.reader import ModelInfo, load_model, parse_shape, read_model

__all__ = ["OPS", "FormatError", "ModelInfo", "OnnxError", "Unsupported", "import_model",
           "load_model", "load_onnx", "parse_shape", "read_model"]
