"""Element and tensor types shared by the MLIR reader, the graph IR and the backends.

Element types are a table, not a class hierarchy: each row gives the MLIR spelling,
the numpy dtype used to hold values on the host and the width in bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.small_floats import FORMATS as SMALL_FLOATS
from toolchain.small_floats import from_bits as small_float_from_bits
from toolchain.small_floats import is_ml_dtype, round_to
from toolchain.small_floats import to_bits as small_float_bits


@dataclass(frozen=True)
class DType:
    """An element type. `kind` is 'f' (float), 'i' (signed), 'u' (unsigned), 'b' (bool)
    or 'c' (complex: a pair of floats, real part first)."""

    name: str
    np_dtype: np.dtype
    bits: int
    kind: str

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def itemsize(self) -> int:
        """Bytes one element takes in a buffer: bf16 is 2 (its host value is a float32),
        i1, i4 and f4E2M1FN take a whole byte."""
        return max(1, (self.bits + 7) // 8)

    def __str__(self) -> str:
        return self.name


def _row(name: str, np_name: str, bits: int, kind: str) -> DType:
    return DType(name, np.dtype(np_name), bits, kind)


# bf16 has no numpy dtype; its values are held as float32 already rounded to bf16.
DTYPES: dict[str, DType] = {
    d.name: d
    for d in [
        _row("f16", "float16", 16, "f"),
        _row("bf16", "float32", 16, "f"),
        _row("f32", "float32", 32, "f"),
        _row("f64", "float64", 64, "f"),
        # The 8-, 6- and 4-bit floats (small_floats.py): held as float32 already rounded
        # to the format, like bf16; one a byte in memory (the 6- and 4-bit ones too).
        *(_row(f.name, "float32", f.bits, "f") for f in SMALL_FLOATS.values()),
        _row("i1", "bool", 1, "b"),
        # Sub-byte integers: computed in registers of their own width (codegen's
        # compute_type), held one a byte (sign- or zero-extended) in memory and on the host.
        _row("i2", "int8", 2, "i"),
        _row("i4", "int8", 4, "i"),
        _row("i8", "int8", 8, "i"),
        _row("i16", "int16", 16, "i"),
        _row("i32", "int32", 32, "i"),
        _row("i64", "int64", 64, "i"),
        _row("ui2", "uint8", 2, "u"),
        _row("ui4", "uint8", 4, "u"),
        _row("ui8", "uint8", 8, "u"),
        _row("ui16", "uint16", 16, "u"),
        _row("ui32", "uint32", 32, "u"),
        _row("ui64", "uint64", 64, "u"),
        _row("index", "int64", 64, "i"),
        # Complex tensors live in the graph until passes/complex.py splits each into two
        # real tensors before scheduling; in I/O buffers they are numpy's layout (real,
        # imaginary interleaved), i.e. a float tensor with a trailing dimension of 2.
        _row("complex<f32>", "complex64", 64, "c"),
        _row("complex<f64>", "complex128", 128, "c"),
    ]
}


def complex_part(dt: DType) -> DType:
    """The real type of a complex type's parts (f32 for complex<f32>); dt itself otherwise."""
    return DTYPES[dt.name[len("complex<"):-1]] if dt.kind == "c" else dt


def complex_of(part: DType) -> DType:
    """The complex type whose parts are of float type `part`."""
    return DTYPES[f"complex<{part.name}>"]
# MLIR's explicitly signed spellings mean the same as the signless ones for our purposes.
ALIASES = {"si2": "i2", "si4": "i4", "si8": "i8", "si16": "i16", "si32": "i32",
           "si64": "i64"}


def dtype(name: str) -> DType:
    """Looks up an element type by its MLIR name; raises KeyError if unknown."""
    return DTYPES[ALIASES.get(name, name)]


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bf16 (ties to even), still as float32: how
    the host holds bf16. NaN stays NaN (quiet), infinities stay infinite."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    out = rounded.astype(np.uint32).view(np.float32).reshape(np.shape(x))
    return np.where(np.isnan(x), np.float32("nan"), out).astype(np.float32)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """The uint16 patterns of float32 values that are already bf16 (their top halves)."""
    return (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_from_bits(bits: np.ndarray) -> np.ndarray:
    """float32 values of bf16 bit patterns (uint16): exact."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """Values of a wider type (float64, any integer) narrowed to float32 with rounding to
    odd: an inexact result is the neighbour whose last bit is 1.

    Rounding x to nearest float32 and then to nearest bf16 (or f16) can be wrong: e.g.
    1 + 2**-8 + 2**-30 becomes the bf16 tie 1 + 2**-8 and then 1.0, where the correctly
    rounded bf16 is 1 + 2**-7. With round-to-odd the float32 step keeps "above / below / exactly" of
    every bf16 and f16 midpoint (float32 has more than 2 bits beyond their precision), so
    the second rounding gives the correctly rounded result of x.
    """
    x = np.asarray(x)
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.asarray(x.astype(np.float32))
        if x.dtype.kind in "iu":
            # Python compares int with float exactly; numpy would round the int first.
            # np.asarray: on rank-0 object arrays the comparisons give a plain bool.
            wide, back = x.astype(object), f.astype(np.float64).astype(object)
            inexact = np.asarray(back != wide).astype(bool)
            away = np.asarray(np.abs(back) > np.abs(wide)).astype(bool)
        else:
            wide, back = x.astype(np.float64), f.astype(np.float64)
            inexact = (back != wide) & ~np.isnan(wide)
            away = np.abs(back) > np.abs(wide)
    bits = f.view(np.uint32)
    # The odd neighbour of an even result: one step towards zero if it rounded away from
    # zero (overflow to inf included: inf - 1 step is the largest float32), else away.
    step = np.where(away, np.uint32(0xFFFFFFFF), np.uint32(1))
    fix = inexact & ((bits & 1) == 0)
    return np.where(fix, bits + step, bits).astype(np.uint32).view(np.float32).reshape(x.shape)


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Values of any real type rounded once to the nearest bf16 (ties to even), as the
    float32 array the host holds bf16 in."""
    x = np.asarray(x)
    if x.dtype in (np.float32, np.float16, np.bool_):
        return round_to_bf16(x.astype(np.float32))  # exact widening first
    return round_to_bf16(f32_round_to_odd(x))


def held_in_f32(dt: DType) -> bool:
    """Whether dt's host values are float32 rounded to a narrower format (bf16 and the
    small floats), so that its buffers hold other bytes than the host array's."""
    return dt.name == "bf16" or dt.name in SMALL_FLOATS


def to_small_float(x: np.ndarray, name: str) -> np.ndarray:
    """Values of any real type rounded once to small float format `name` (ties to even),
    as the float32 array the host holds it in."""
    x = np.asarray(x)
    if x.dtype in (np.float32, np.float16, np.bool_) or is_ml_dtype(x.dtype):
        wide = x.astype(np.float32)  # exact
    else:
        # Through f32 rounded to odd: f32 keeps far more than 2 bits beyond any small
        # format's precision, so the second rounding is the correct one (f32_round_to_odd).
        wide = f32_round_to_odd(x)
    return round_to(wide, SMALL_FLOATS[name])


def storage_bits(x: np.ndarray, dt: DType) -> np.ndarray:
    """The bit patterns a buffer holds for host values `x` of a held_in_f32 type dt
    (uint16 for bf16, uint8 for the small floats), after rounding them to dt."""
    if dt.name == "bf16":
        return bf16_bits(to_bf16(x))
    fmt = SMALL_FLOATS[dt.name]
    return small_float_bits(to_small_float(x, dt.name), fmt)


def from_storage_bits(bits: np.ndarray, dt: DType) -> np.ndarray:
    """Host values (float32) of a held_in_f32 type dt's bit patterns: exact."""
    if dt.name == "bf16":
        return bf16_from_bits(bits)
    return small_float_from_bits(bits, SMALL_FLOATS[dt.name])


def to_dtype(x: np.ndarray, dt: DType) -> np.ndarray:
    """x (computed in its own, at least as wide type) as the host array of dt: floats
    rounded once to nearest even (bf16 and the small floats included), integers wrapped
    like C."""
    x = np.asarray(x)
    if dt.name == "bf16":
        return to_bf16(x) if not is_ml_dtype(x.dtype) else round_to_bf16(x.astype(np.float32))
    if dt.name in SMALL_FLOATS:
        return to_small_float(x, dt.name)
    if dt.is_integer and dt.bits < 8 and x.dtype.kind in "iub":
        return wrap_sub_byte(x, dt)
    with np.errstate(over="ignore"):  # a float too large for dt becomes inf, as in IEEE
        return x.astype(dt.np_dtype)


def wrap_sub_byte(x: np.ndarray, dt: DType) -> np.ndarray:
    """Integers wrapped to dt's `bits` (two's complement for signed dt), as its host
    array (int8 / uint8): i4 holds -8..7, ui4 0..15, i2 -2..1, ui2 0..3."""
    v = np.asarray(x).astype(np.int64) & ((1 << dt.bits) - 1)
    if dt.kind == "i":
        v = np.where(v >= 1 << (dt.bits - 1), v - (1 << dt.bits), v)
    return v.astype(dt.np_dtype)


F32 = DTYPES["f32"]
I1 = DTYPES["i1"]
I64 = DTYPES["i64"]


@dataclass(frozen=True)
class QuantParams:
    """`!quant.uniform` parameters: real = scale * (stored - zero_point).

    `axis` is None for per-tensor quantization, else the channel dimension and
    `scales` / `zero_points` hold one entry per channel.
    """

    storage: DType
    expressed: DType
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None = None
    storage_min: int | None = None
    storage_max: int | None = None

    def __str__(self) -> str:
        storage = self.storage.name
        if self.storage_min is not None:
            storage += f"<{self.storage_min}:{self.storage_max}>"
        head = f"{storage}:{self.expressed.name}"
        if self.axis is None:
            return f"!quant.uniform<{head}, {_fmt_scale(self.scales[0])}:{self.zero_points[0]}>"
        pairs = ", ".join(f"{_fmt_scale(s)}:{z}" for s, z in zip(self.scales, self.zero_points))
        return f"!quant.uniform<{head}:{self.axis}, {{{pairs}}}>"


def _fmt_scale(x: float) -> str:
    return repr(float(x))


@dataclass(frozen=True)
class TensorType:
    """A tensor type. A dimension of None is dynamic (`?`); `shape` None is unranked."""

    shape: tuple[int | None, ...] | None
    dtype: DType
    quant: QuantParams | None = None

    @property
    def rank(self) -> int:
        assert self.shape is not None
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape or ():
            n *= d  # type: ignore[operator]
        return n

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(tuple(shape), self.dtype, self.quant)

    def with_dtype(self, dt: DType) -> TensorType:
        return TensorType(self.shape, dt, None)

    def __str__(self) -> str:
        elem = str(self.quant) if self.quant else self.dtype.name
        if self.shape is None:
            return f"tensor<*x{elem}>"
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        return f"tensor<{dims}{elem}>"


@dataclass(frozen=True)
class FunctionType:
    """`(inputs) -> results`."""

    inputs: tuple
    results: tuple

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0]}"
        return f"({ins}) -> ({', '.join(map(str, self.results))})"


@dataclass(frozen=True)
class OpaqueType:
    """A type we keep only as text (dialect types, vectors, tuples...)."""

    text: str

    def __str__(self) -> str:
        return self.text
