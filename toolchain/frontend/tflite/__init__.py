""".tflite import: TFLite flatbuffers (subgraph 0), without TensorFlow.

reader.py reads the flatbuffer through the `tflite` package's generated classes with
every offset checked (flatbuf.py) into plain dataclasses.
"""

from toolchain.frontend.tflite.reader import FormatError, ModelInfo, read_model

__all__ = ["FormatError", "ModelInfo", "read_model"]
