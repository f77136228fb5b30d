""".tflite import: TFLite flatbuffers (subgraph 0) to the core Graph, without TensorFlow.

reader.py reads the flatbuffer through the `tflite` package's generated classes with
every offset checked (flatbuf.py) into plain dataclasses; importer.py converts those to
a Graph through the operator table in ops.py.
"""

from toolchain.frontend.tflite.errors import TFLiteError, Unsupported
from toolchain.frontend.tflite.importer import import_model, load_tflite
from toolchain.frontend.tflite.reader import FormatError, ModelInfo, read_model

__all__ = ["FormatError", "ModelInfo", "TFLiteError", "Unsupported", "import_model",
           "load_tflite", "read_model"]
