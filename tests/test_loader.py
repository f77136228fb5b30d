"""Model inputs on the host: .npz files that are damaged or hostile, conversions that
would change values, seeded random inputs of every element type."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.graph.ir import Graph
from toolchain.loader import (
    UsageError,
    check_host_memory,
    check_input,
    host_memory,
    int_range,
    load_graph,
    load_inputs,
    parse_input_value,
    random_inputs,
    to_host,
)
from toolchain.reference import run_graph
from toolchain.types import DTYPES, TensorType, dtype, round_to_bf16

WHAT = "in.npz: 'input_0'"


def _input(values, np_dtype, ty: str) -> np.ndarray:
    x = np.asarray(values, dtype=np_dtype)
    return check_input(x, TensorType(x.shape, dtype(ty)), WHAT)


@pytest.mark.parametrize("values, np_dtype, ty, message", [
    # int64 -> int8 used to wrap silently: [300, -300, 127, 1000] ran as [44, -44, 127, -24]
    ([300, -300, 127, 1000], "int64", "i8", "'input_0'[0] is 300, outside i8's range -128..127"),
    ([[1, 2], [3, -129]], "int16", "i8", "'input_0'[1, 1] is -129, outside i8's range"),
    ([-1], "int64", "ui16", "'input_0'[0] is -1, outside ui16's range 0..65535"),
    ([2**63], "uint64", "i64", "is 9223372036854775808, outside i64's range"),
    ([5, 8], "int8", "i4", "'input_0'[1] is 8, outside i4's range -8..7"),  # same dtype
    # float64 -> float32 used to turn 1e300 into inf
    ([1.0, 1e300], "float64", "f32", "'input_0'[1] is 1e+300, outside f32's range (it would "
                                     "be inf)"),
    ([-1e39], "float64", "f32", "is -1e+39, outside f32's range (it would be -inf)"),
    ([1.0, 3.4e38], "float32", "bf16", "'input_0'[1] is 3.3999999521443642e+38, outside "
                                       "bf16's range (it would be inf)"),
    ([1e20], "float64", "f16", "outside f16's range"),
])
def test_inexact_conversions_are_refused(values, np_dtype, ty, message) -> None:
    with pytest.raises(UsageError) as info:
        _input(values, np_dtype, ty)
    assert message in str(info.value) and str(info.value).startswith(WHAT)


@pytest.mark.parametrize("values, np_dtype, ty", [
    ([100, -100, 127, -128], "int64", "i8"),
    ([65535, 0], "int64", "ui16"),
    ([2**64 - 1], "uint64", "ui64"),
    ([-8, 7], "int32", "i4"),
    ([0.5, -2.0, np.inf, np.nan], "float64", "f32"),
    ([2**24, -(2**24)], "int64", "f32"),
    ([1.5, -0.0078125, np.nan], "float64", "bf16"),
    ([True, False], "bool", "f32"),
    ([True, False], "bool", "i8"),
    ([65504.0], "float32", "f16"),
])
def test_exact_conversions_are_made(values, np_dtype, ty) -> None:
    x = np.asarray(values, dtype=np_dtype)
    y = _input(values, np_dtype, ty)
    assert y.dtype == dtype(ty).np_dtype
    np.testing.assert_array_equal(y.astype(np.float64) if y.dtype.kind == "f" else y,
                                  x.astype(np.float64) if y.dtype.kind == "f" else x)


@pytest.mark.parametrize("values, np_dtype, ty", [
    ([0.1, -1e-30, 3.0e38], "float64", "f32"),
    ([2**53 + 1, 2**63 - 1], "int64", "f32"),
    ([0.1, 1.0e38], "float32", "bf16"),
    ([0.1, 60000.0], "float64", "f16"),
])
def test_floats_are_rounded_to_nearest(values, np_dtype, ty) -> None:
    """Like a compiler reading a literal: rounded once to the input's type."""
    want = to_host(np.asarray(values, dtype=np_dtype), dtype(ty))
    got = _input(values, np_dtype, ty)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got).all()


@pytest.mark.parametrize("np_dtype, ty", [("float32", "i32"), ("int32", "i1"),
                                          ("complex64", "f32"), ("<U3", "f32")])
def test_other_kinds_are_a_dtype_error(np_dtype, ty) -> None:
    with pytest.raises(UsageError, match=f"has dtype {np.dtype(np_dtype)}, the model expects"):
        _input(np.zeros(2, np_dtype), np_dtype, ty)


def test_int_range_follows_the_width() -> None:
    assert int_range(dtype("i4")) == (-8, 7)
    for d in DTYPES.values():
        if d.is_integer and d.bits == 8 * d.np_dtype.itemsize:
            info = np.iinfo(d.np_dtype)
            assert int_range(d) == (info.min, info.max), d


def _graph(*types: str) -> Graph:
    g = Graph("g")
    for ty in types:
        g.add_input(TensorType((64,), dtype(ty)))
    return g


def test_random_inputs_hold_exact_values_of_their_type() -> None:
    names = [n for n, d in DTYPES.items() if d.kind != "?"]
    inputs = random_inputs(_graph(*names), seed=1)
    for name, x in zip(names, inputs):
        d = dtype(name)
        assert x.dtype == d.np_dtype, name
        if name == "bf16":
            np.testing.assert_array_equal(round_to_bf16(x), x)
            assert len(np.unique(x)) > 8
        if d.is_integer:
            lo, hi = int_range(d)
            assert lo <= x.min() and x.max() <= hi, name
        check_input(x, TensorType(x.shape, d), name)  # what we make, we accept


def test_random_inputs_are_unchanged_for_existing_types() -> None:
    """The seeded inputs of f32 / int models are what they were before bf16 rounding
    and width-driven integer ranges: printed results and benchmarks stay comparable."""
    f, i = random_inputs(_graph("f32", "i8"), seed=0)
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(f, rng.standard_normal((64,)).astype(np.float32))
    np.testing.assert_array_equal(i, rng.integers(-128, 128, (64,)).astype(np.int8))


def _npz(tmp_path: Path, name: str, **arrays) -> Path:
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def _damaged(tmp_path: Path, compressed: bool) -> Path:
    path = tmp_path / "in.npz"
    save = np.savez_compressed if compressed else np.savez
    save(path, input_0=np.arange(64, dtype=np.float32))
    raw = bytearray(path.read_bytes())
    for i in range(80, 140):  # inside the first member's data, past its local header
        raw[i] ^= 0x55
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: _damaged(p, compressed=False), "cannot read 'input_0': Bad CRC-32"),
    (lambda p: _damaged(p, compressed=True), "cannot read 'input_0': Error -3"),
    (lambda p: (p / "in.npz").write_bytes(
        _npz(p, "x.npz", input_0=np.zeros(64, np.float32)).read_bytes()[:100]) and p / "in.npz",
     "cannot read inputs: File is not a zip file"),
    (lambda p: _npz(p, "in.npz", input_0=np.array([None] * 64, dtype=object)),
     "cannot read 'input_0': Object arrays cannot be loaded"),
    (lambda p: np.save(p / "in.npy", np.zeros(64, np.float32)) or p / "in.npy",
     "not an .npz archive"),
    (lambda p: p, "cannot read inputs:"),  # a directory
])
def test_unreadable_inputs_are_usage_errors(make, message, tmp_path: Path) -> None:
    path = make(tmp_path)
    with pytest.raises(UsageError) as info:
        load_inputs(path, _graph("f32"))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_host_memory_of_a_reference_run(monkeypatch) -> None:
    g = _graph("f32", "f64")
    assert host_memory(g, reference=False) == 64 * 4 + 64 * 8 + 8 * 64
    monkeypatch.setattr("toolchain.loader.host_memory_limit", lambda: 1000)
    with pytest.raises(UsageError, match=r"m.mlir: the reference run would need about "):
        check_host_memory(g, reference=True, what="m.mlir")


# ---------------------------------------------------------------- --input-value


def test_input_value_pins_a_tflite_input_by_its_tensor_name(tmp_path: Path) -> None:
    """A .tflite input is named by its tensor: pinned 'bias', ADD's other input stays."""
    from tflite_models import Tensor, single_op_model

    x, bias = Tensor((3,), "float32", name="x"), Tensor((3,), "float32", name="bias")
    path = tmp_path / "add.tflite"
    path.write_bytes(single_op_model("ADD", [x, bias], [Tensor((3,), "float32", name="y")]))
    graph = load_graph(path, input_values={"bias": np.array([1.0, 2.0, 3.0])})
    assert graph.input_names == ["x"]
    (got,) = run_graph(graph, [np.array([0.5, 0.25, 0.0], np.float32)])
    assert got.tolist() == [1.5, 2.25, 3.0]
    with pytest.raises(UsageError, match=r"add.tflite: --input-value names z, which is no "
                                         r"input of the model \(its inputs: x, bias\)"):
        load_graph(path, input_values={"z": np.array(1)})


@pytest.mark.parametrize(("text", "value"), [
    ("sr=16000", np.array(16000)),
    ("axes=0,-2", np.array([0, -2])),
    ("scale=0.5", np.array(0.5)),
    ("k=1e3", np.array(1000.0)),
])
def test_parse_input_value(text: str, value: np.ndarray) -> None:
    name, got = parse_input_value(text)
    assert name == text.split("=")[0]
    assert got.dtype == value.dtype and np.array_equal(got, value)


def test_parse_input_value_reads_an_npy_file_and_refuses_a_pickle(tmp_path: Path) -> None:
    np.save(tmp_path / "v.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
    _, got = parse_input_value(f"v={tmp_path / 'v.npy'}")
    assert got.dtype == np.int32 and got.shape == (2, 3)
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(UsageError, match=r"--input-value v=.*obj.npy: cannot read .*obj.npy: "):
        parse_input_value(f"v={tmp_path / 'obj.npy'}")
