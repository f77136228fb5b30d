"""Names of the TFLite schema's enums, read from the `tflite` package's generated classes.

Each generated enum is a class of integer constants (`tflite.BuiltinOperator.CONV_2D =
3`); these tables turn a value found in a file back into its name, so the reader and
error messages speak the schema's own words.
"""

from __future__ import annotations

import tflite


def _names(enum: type) -> dict[int, str]:
    return {v: k for k, v in vars(enum).items() if not k.startswith("_") and isinstance(v, int)}


OPERATORS = _names(tflite.BuiltinOperator)
TENSOR_TYPES = _names(tflite.TensorType)
OPTIONS = _names(tflite.BuiltinOptions)
OPTIONS2 = _names(tflite.BuiltinOptions2)
PADDINGS = _names(tflite.Padding)
ACTIVATIONS = _names(tflite.ActivationFunctionType)
WEIGHTS_FORMATS = _names(tflite.FullyConnectedOptionsWeightsFormat)
QUANTIZATION_DETAILS = _names(tflite.QuantizationDetails)

# The schema version this reader understands (TFLite's TFLITE_SCHEMA_VERSION).
SCHEMA_VERSION = 3
# Every .tflite file carries this identifier at bytes 4..8.
FILE_IDENTIFIER = b"TFL3"
