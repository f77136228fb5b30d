"""How a model's inputs and outputs sit in the harness's I/O files: each tensor in its
buffer layout, in signature order. The host side of the firmware's I/O, beside the
module format that records the signature."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolchain.module.pack import TensorSig
from toolchain.module.reader import read_module
from toolchain.types import SMALL_FLOATS, dtype, from_storage_bits, storage_bits

# How each module element type sits in an I/O buffer (little-endian numpy dtypes), and
# the types whose host values are not those bytes: bf16 and the small floats are held
# as float32 on the host, their buffers hold bit patterns.
_NUMPY = {"f32": "float32", "f16": "float16", "f64": "float64", "i8": "int8",
          "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
          "u32": "uint32", "u64": "uint64", "i1": "bool", "bf16": "uint16",
          **{name: "uint8" for name in SMALL_FLOATS}}
_HELD_IN_F32 = ("bf16", *SMALL_FLOATS)


def module_outputs(module: bytes) -> tuple[TensorSig, ...]:
    """The output signature recorded in a module."""
    return read_module(module).outputs


def encode_inputs(signature: Sequence[TensorSig], arrays: Sequence[np.ndarray]) -> bytes:
    """The harness's input file: each array in its buffer layout, in signature order
    (bf16 as its bit patterns after rounding, i1 one byte per element, little-endian).
    Raises ValueError when the arrays do not match the signature."""
    if len(arrays) != len(signature):
        raise ValueError(f"the module takes {len(signature)} inputs, got {len(arrays)}")
    chunks = []
    for sig, x in zip(signature, arrays):
        x = np.asarray(x)
        if np.iscomplexobj(x) and sig.shape == x.shape + (2,):
            x = np.stack([x.real, x.imag], axis=-1)  # a complex tensor's parts: complex.py
        if x.shape != sig.shape:
            raise ValueError(f"{sig.name} has shape {x.shape}, the module expects {sig.shape}")
        if sig.dtype.name in _HELD_IN_F32:
            x = storage_bits(x, dtype(sig.dtype.name))
        chunks.append(x.astype(np.dtype(_NUMPY[sig.dtype.name]).newbyteorder("<")).tobytes())
    return b"".join(chunks)


def decode_outputs(signature: tuple[TensorSig, ...], raw: bytes) -> list[np.ndarray]:
    """Splits the harness's output file into one array per output, as the host holds
    values of its type (bf16 as float32)."""
    outs, offset = [], 0
    for sig in signature:
        dt = np.dtype(_NUMPY[sig.dtype.name]).newbyteorder("<")
        n = sig.byte_size
        if offset + n > len(raw):
            raise ValueError(f"firmware wrote {len(raw)} output bytes, the signature needs "
                             f"{sum(s.byte_size for s in signature)}")
        x = np.frombuffer(raw[offset:offset + n], dtype=dt).reshape(sig.shape)
        x = x.astype(dt.newbyteorder("="))
        held = sig.dtype.name in _HELD_IN_F32
        outs.append(from_storage_bits(x, dtype(sig.dtype.name)) if held else x)
        offset += n
    return outs
