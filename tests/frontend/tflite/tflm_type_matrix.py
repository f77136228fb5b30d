"""Which element types TFLite Micro's kernels take, operator by operator, and which of
them minirt refuses (with the reason).

Read from TFLite Micro's source (tensorflow/lite/micro/kernels/*.cc at the mirror's
HEAD): the type switches of each kernel's Eval and the type checks of its Prepare, then
checked against the `tflite-micro` interpreter, a later TFLite Micro; where the two
differ the interpreter wins and the entry says so (int16 RSQRT, CAST to bool, no int16
REDUCE_MAX). A type is the element type of the tensor the kernel switches on: the first
data input (TRANSPOSE_CONV's third input; FILL's value). Quantized int8 / int16 tensors
are the kernels' quantized forms (int16: 16x8 where there are weights). Conversions
(CAST, QUANTIZE, DEQUANTIZE) list `in->out` pairs. Operators whose kernel never looks
at the element type (RESHAPE-like copies, SHAPE) list the types the tests build them
with; the state and control-flow operators, "any".

test_tflm_type_matrix.py builds a one-operator model for every (operator, type) here,
runs it in TFLite Micro's interpreter (so the table cannot claim a type the kernel
refuses) and imports it: it must import and compute what the interpreter computes,
unless the pair is in REFUSED, where the import must fail with minirt's one-line error.
It also builds every type the table leaves out of an operator and checks that the
interpreter refuses it (so the table is complete), UNCHECKED aside.
"""

from __future__ import annotations

F, I8, I16, I32, I64, B = "float32", "int8", "int16", "int32", "int64", "bool"
I4W = "int8+int4-weights"
U8 = "uint8"
NUMERIC = (F, I8, I16, I32)

TFLM_TYPES: dict[str, tuple[str, ...]] = {
    # layers
    # (I4W: int8 activations with INT4 weights, which the int8 kernels unpack)
    "CONV_2D": (F, I8, I4W, I16),
    "DEPTHWISE_CONV_2D": (F, I8, I4W, I16),
    "TRANSPOSE_CONV": (F, I8, I16),
    "FULLY_CONNECTED": (F, I8, I4W, I16),
    "AVERAGE_POOL_2D": (F, I8, I16),
    "MAX_POOL_2D": (F, I8, I16),
    "L2_POOL_2D": (F,),
    "BATCH_MATMUL": (F, I8, I16),
    "SVDF": (F, I8),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (F, I8, I16),
    # arithmetic
    "ADD": NUMERIC,
    "SUB": NUMERIC,
    "MUL": NUMERIC,
    "DIV": (F, I8, I32),
    "ADD_N": (F, I8),
    "SQUARED_DIFFERENCE": NUMERIC,
    "MAXIMUM": (*NUMERIC, I64),
    "MINIMUM": (*NUMERIC, I64),
    "FLOOR_DIV": (F,),
    "FLOOR_MOD": (F,),
    # element-wise functions
    "ABS": (F, I8, I16),
    # (the mirror's Prepare refuses int16 RSQRT; the interpreter, a later TFLite Micro,
    # runs it with the kernel's int16 instance)
    "RSQRT": (F, I8, I16),
    "NEG": (F,),
    "SQRT": (F,), "SQUARE": (F,), "EXP": (F,), "LOG": (F,), "SIN": (F,), "COS": (F,),
    "CEIL": (F,), "FLOOR": (F,), "ROUND": (F,),
    "LOGISTIC": (F, I8, I16),
    "TANH": (F, I8, I16),
    "RELU": (F, I8, I16),
    "RELU6": (F, I8, I16),
    "LEAKY_RELU": (F, I8, I16),
    "PRELU": (F, I8, I16),
    "ELU": (F, I8),
    "HARD_SWISH": (F, I8),
    "SOFTMAX": (F, I8, I16, "int8->int16"),
    "LOG_SOFTMAX": (F, I8),
    "L2_NORMALIZATION": (F, I8),
    # reductions
    "MEAN": (F, I8, I16),
    "SUM": (F, I8, I16),
    # (reduce_common.cc's MinMax switch has no int16 case: the interpreter refuses it)
    "REDUCE_MAX": (F, I8),
    "REDUCE_MIN": (F, I8),
    "REDUCE_ALL": (B,),
    "ARG_MAX": (F, I8),
    "ARG_MIN": (F, I8),
    "CUMSUM": (F, I8),
    # comparisons and logic
    "EQUAL": (B, F, I8, I32, I64),
    "NOT_EQUAL": (B, F, I8, I32, I64),
    "GREATER": (F, I8, I16, I32, I64),
    "GREATER_EQUAL": (F, I8, I32, I64),
    "LESS": (F, I8, I32, I64),
    "LESS_EQUAL": (F, I8, I32, I64),
    "LOGICAL_AND": (B,), "LOGICAL_OR": (B,), "LOGICAL_NOT": (B,),
    "SELECT_V2": (F, I8, I16),
    # data movement
    "RESHAPE": (F, I8, I16, I32, I64, B, U8),
    "SQUEEZE": (F, I8, I16, I32, I64, B, U8),
    "EXPAND_DIMS": (F, I8, I16),
    "CONCATENATION": (F, I8, I16, I32, I64, B),
    "PACK": (F, I8, I16, I32, I64),
    "UNPACK": (F, I8, I16, I32),
    "SPLIT": NUMERIC,
    "SPLIT_V": NUMERIC,
    "PAD": NUMERIC,
    "PADV2": NUMERIC,
    "MIRROR_PAD": (F, I8),
    "TRANSPOSE": (F, I8, I16),
    "SLICE": (F, I8, I16, I32, B),
    "STRIDED_SLICE": (F, I8, I16, I32, B),
    "REVERSE_V2": (F, I8, U8, I16, I32, I64, B),
    "GATHER": (F, I8),
    "GATHER_ND": (F, I8),
    "EMBEDDING_LOOKUP": (F, I8, "int8->float32"),
    "DYNAMIC_UPDATE_SLICE": NUMERIC,
    "BROADCAST_TO": (F, I8, I16, I32, I64, B, U8),
    "BROADCAST_ARGS": (I32, I64),
    "SHAPE": (F, I8, I16, I32, I64, B, U8),  # (the input's type: only its shape is read)
    "FILL": (F, I8, I32),
    "ZEROS_LIKE": (F, I8, I32, I64),
    "DEPTH_TO_SPACE": (F, I8),
    "SPACE_TO_DEPTH": (F, I8),
    "SPACE_TO_BATCH_ND": (F, I8),
    "BATCH_TO_SPACE_ND": (F, I8),
    "RESIZE_BILINEAR": (F, I8),
    "RESIZE_NEAREST_NEIGHBOR": (F, I8, I16),
    # conversions
    # (to bool: the interpreter's later TFLite Micro; the mirror's cast.cc has no case)
    "CAST": tuple(f"{a}->{b}" for a in (I8, I16, I32, "uint32", F, B)
                  for b in (I8, I16, I32, "uint32", F) if a != b)
    + tuple(f"{a}->bool" for a in (F, I8, I16, I32, "uint32")),
    "QUANTIZE": ("float32->int8", "float32->int16", "int32->int8", "int32->int16",
                 "int16->int8", "int16->int16", "int16->int32", "int8->int8",
                 "int8->uint8", "int8->int16", "int8->int32", "uint8->int8"),
    "DEQUANTIZE": ("int8->float32", "int16->float32", "uint8->float32"),
    # resource variables: VAR_HANDLE names one; READ / ASSIGN copy bytes of any type
    "VAR_HANDLE": ("any",), "READ_VARIABLE": ("any",), "ASSIGN_VARIABLE": ("any",),
    "CALL_ONCE": ("any",),
    # control flow: the condition's type (IF), or none (WHILE's body decides)
    "IF": (B,),
    "WHILE": ("any",),
}

# Every builtin operator TFLite Micro's MicroMutableOpResolver can register (its
# AddBuiltin calls, micro_mutable_op_resolver.h): the table above must list them all.
TFLM_REGISTERED = frozenset({
    "ABS", "ADD", "ADD_N", "ARG_MAX", "ARG_MIN", "ASSIGN_VARIABLE", "AVERAGE_POOL_2D",
    "BATCH_MATMUL", "BATCH_TO_SPACE_ND", "BROADCAST_ARGS", "BROADCAST_TO", "CALL_ONCE",
    "CAST", "CEIL", "CONCATENATION", "CONV_2D", "COS", "CUMSUM", "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE", "DEQUANTIZE", "DIV", "DYNAMIC_UPDATE_SLICE", "ELU",
    "EMBEDDING_LOOKUP", "EQUAL", "EXP", "EXPAND_DIMS", "FILL", "FLOOR", "FLOOR_DIV",
    "FLOOR_MOD", "FULLY_CONNECTED", "GATHER", "GATHER_ND", "GREATER", "GREATER_EQUAL",
    "HARD_SWISH", "IF", "L2_NORMALIZATION", "L2_POOL_2D", "LEAKY_RELU", "LESS",
    "LESS_EQUAL", "LOG", "LOGICAL_AND", "LOGICAL_NOT", "LOGICAL_OR", "LOGISTIC",
    "LOG_SOFTMAX", "MAXIMUM", "MAX_POOL_2D", "MEAN", "MINIMUM", "MIRROR_PAD", "MUL", "NEG",
    "NOT_EQUAL", "PACK", "PAD", "PADV2", "PRELU", "QUANTIZE", "READ_VARIABLE", "REDUCE_ALL",
    "REDUCE_MAX", "REDUCE_MIN", "RELU", "RELU6", "RESHAPE", "RESIZE_BILINEAR",
    "RESIZE_NEAREST_NEIGHBOR", "REVERSE_V2", "ROUND", "RSQRT", "SELECT_V2", "SHAPE", "SIN",
    "SLICE", "SOFTMAX", "SPACE_TO_BATCH_ND", "SPACE_TO_DEPTH", "SPLIT", "SPLIT_V", "SQRT",
    "SQUARE", "SQUARED_DIFFERENCE", "SQUEEZE", "STRIDED_SLICE", "SUB", "SUM", "SVDF",
    "TANH", "TRANSPOSE", "TRANSPOSE_CONV", "UNIDIRECTIONAL_SEQUENCE_LSTM", "UNPACK",
    "VAR_HANDLE", "WHILE", "ZEROS_LIKE",
})

# (operator, type) pairs TFLite Micro takes that minirt refuses, and why.
REFUSED: dict[tuple[str, str], str] = {
    ("GREATER", I16): "TFLite Micro's int16 GREATER compares with scaling parameters its "
                      "Prepare never sets (ComparisonsPrepare computes int8's only), so "
                      "its result is not a function of the model",
}

# Pairs the interpreter runs only because its kernel never checks the type (LOGICAL_AND
# and LOGICAL_OR read any input's bytes as bools): no kernel of that type exists, and
# minirt refuses them (its own one-line error).
UNCHECKED: dict[str, tuple[str, ...]] = {
    "LOGICAL_AND": (F, I8, I16, I32, I64, U8),
    "LOGICAL_OR": (F, I8, I16, I32, I64, U8),
}
