"""Writing TOSA test programs as MLIR text, and running them on the numpy reference.

A `Case` is one op (or a few) on named inputs, with the outputs the specification gives
(tosa_spec.py, or numpy for float math). `program` writes one case as a function, or
many cases as one function (value names prefixed per case), so that the QEMU tests
build a single image per board for all of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from toolchain.frontend import import_module
from toolchain.graph.ir import Graph
from toolchain.mlir import parse_text
from toolchain.reference import run_graph

MLIR_TYPES = {
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64", np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16",
    np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.bool_): "i1",
}


def ttype(shape: Sequence[int], dt: str | np.dtype) -> str:
    """`tensor<2x3xf32>` from a shape and an element type (MLIR name or numpy dtype)."""
    name = dt if isinstance(dt, str) else MLIR_TYPES[np.dtype(dt)]
    return "tensor<" + "".join(f"{d}x" for d in shape) + name + ">"


def literal(value: np.ndarray) -> str:
    """An exact dense literal: little-endian hex of the array's bytes."""
    a = np.ascontiguousarray(value)
    raw = a.astype(a.dtype.newbyteorder("<")).tobytes() if a.dtype != np.bool_ else \
        a.astype(np.uint8).tobytes()
    return f'dense<"0x{raw.hex().upper()}">'


def const(name: str, value, dt: str | np.dtype | None = None) -> str:
    """`%name = "tosa.const"() <{values = ...}>`: the generic form MLIR prints."""
    a = np.asarray(value, dtype=None if dt is None or isinstance(dt, str) else dt)
    if isinstance(dt, str):
        a = np.asarray(value, dtype={v: k for k, v in MLIR_TYPES.items()}[dt])
    ty = ttype(a.shape, a.dtype)
    return f'%{name} = "tosa.const"() <{{values = {literal(a)} : {ty}}}> : () -> {ty}'


def shape(name: str, values: Sequence[int]) -> str:
    """`%name = tosa.const_shape {values = dense<[...]> : tensor<Nxindex>}`."""
    n = len(values)
    body = "[" + ", ".join(str(int(v)) for v in values) + "]"
    return (f"%{name} = tosa.const_shape {{values = dense<{body}> : tensor<{n}xindex>}} "
            f": () -> !tosa.shape<{n}>")


@dataclass
class Case:
    """Named inputs, body lines (values as %name), outputs (%name, type) and the values
    the specification gives for them. Float outputs compare with `rtol` / `atol`
    (numpy.isclose, NaN equal to NaN), integer and boolean ones exactly."""

    name: str
    inputs: dict[str, np.ndarray]
    body: list[str]
    outputs: list[tuple[str, str]]
    expected: list[np.ndarray]
    rtol: float = 1e-5
    atol: float = 1e-6
    boards: bool = True  # also part of the QEMU image
    notes: list[str] = field(default_factory=list)
    # Argument types other than the inputs' own (`!quant.uniform<u8:...>` storage).
    input_types: dict[str, str] = field(default_factory=dict)


_NAME = re.compile(r"%([A-Za-z_][\w]*)")


def program(cases: Sequence[Case], name: str = "main") -> str:
    """One function computing every case; with several cases each one's values are
    renamed `%c<i>_<name>` so that they cannot clash."""
    args, lines, outs = [], [], []
    for i, case in enumerate(cases):
        prefix = f"c{i}_" if len(cases) > 1 else ""

        def rename(text: str, prefix: str = prefix) -> str:
            return _NAME.sub(lambda m: f"%{prefix}{m.group(1)}", text)

        for arg, value in case.inputs.items():
            ty = case.input_types.get(arg) or ttype(value.shape, value.dtype)
            args.append(f"%{prefix}{arg}: {ty}")
        lines += ["  " + rename(line) for line in case.body]
        outs += [(f"%{prefix}{v}", ty) for v, ty in case.outputs]
    sig = ", ".join(ty for _, ty in outs)
    return (f"func.func @{name}({', '.join(args)}) -> ({sig}) {{\n" + "\n".join(lines)
            + f"\n  return {', '.join(v for v, _ in outs)} : {sig}\n}}\n")


def inputs_of(cases: Sequence[Case]) -> list[np.ndarray]:
    return [v for case in cases for v in case.inputs.values()]


def expected_of(cases: Sequence[Case]) -> list[tuple[Case, np.ndarray]]:
    return [(case, e) for case in cases for e in case.expected]


def load(text: str) -> Graph:
    return import_module(parse_text(text, "case.mlir"))


def run_reference(cases: Sequence[Case]) -> list[np.ndarray]:
    return run_graph(load(program(cases)), inputs_of(cases))


def assert_output(case: Case, got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """One output against the specification's value."""
    where = f"{case.name}{what}"
    want = np.asarray(want)
    assert got.shape == want.shape, f"{where}: shape {got.shape}, expected {want.shape}"
    if got.dtype.kind == "f":
        ok = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol,
                        atol=case.atol, equal_nan=True)
        assert ok.all(), (f"{where}: got {got[~ok][:8]} where the spec gives "
                          f"{want[~ok][:8]}")
    else:
        g, w = got.astype(np.int64), want.astype(np.int64)
        bad = g != w
        assert not bad.any(), (f"{where}: got {g[bad][:8]} where the spec gives "
                               f"{w[bad][:8]} (at {np.argwhere(bad)[:4].tolist()})")
