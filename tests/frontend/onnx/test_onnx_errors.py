"""Bad .onnx input: unsupported ops listed together, dynamic shapes and --input-shape,
old opsets, damaged tensors, and a fuzz of truncated and bit-flipped files. Every one is
a one-line message per problem and exit code 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_e2e_models import cnn, qdq_cnn_by_hand
from onnx_models import build, node, randn

from toolchain.cli import build as build_cli
from toolchain.diagnostics import CompileError
from toolchain.loader import UsageError, load_graph, random_inputs
from toolchain.reference import run_graph


def _dump_ir(path: Path, capsys, *extra: str) -> tuple[int, list[str]]:
    rc = build_cli.main(["--dump-ir", str(path), *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err.strip().splitlines()


def test_unsupported_ops_are_listed_together(tmp_path: Path, capsys) -> None:
    """Each unsupported node once, by name and op type (a node reading a failed one is
    not reported again), whatever the reason: no converter, an unknown op the checker
    has no schema for, another domain."""
    nodes = [node("RandomNormalLike", ["x"], ["a"], name="rnl"), node("Relu", ["a"], ["b"]),
             node("Multinomial", ["x"], ["c"], name="mn"),
             helper.make_node("FusedGemm", ["x", "x"], ["d"], name="fg",
                              domain="com.microsoft"),
             node("FooBar", ["x"], ["e"], name="foo"), node("Relu", ["x"], ["f"])]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", 1, [2, 3])],
                              [helper.make_tensor_value_info(n, 1, [2, 3])
                               for n in ("b", "d", "e", "f")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    rc, lines = _dump_ir(path, capsys)
    assert rc == 2
    assert lines == [f"{path}: node 'rnl' (RandomNormalLike) is not supported",
                     f"{path}: node 'mn' (Multinomial) is not supported",
                     f"{path}: node 'fg' (FusedGemm) is not supported (domain com.microsoft)",
                     f"{path}: node 'foo' (FooBar) is not supported"]


def test_unsupported_attribute_names_the_node(tmp_path: Path, capsys) -> None:
    x = randn((1, 2, 5, 5), 1)
    data = build([node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                       storage_order=1)], {"x": x}, ["y"])
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    rc, lines = _dump_ir(path, capsys)
    assert rc == 2
    assert lines == [f"{path}: node 'pool' (MaxPool): storage_order=1 is not supported"]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("onnx-errors") / "cnn.onnx"
    path.write_bytes(cnn())
    return path


def test_dynamic_dimension_says_how_to_pin_it(example: Path, capsys) -> None:
    rc, lines = _dump_ir(example, capsys)
    assert rc == 2
    assert lines == [f"{example}: input with dynamic dimensions: 'input' [N, 1, 12, 12]; "
                     "minirt needs static shapes: pin them with --input-shape "
                     "input=1x1x12x12 (N=1 as a batch)"]
    graph = load_graph(example, input_shapes={"input": (5, 1, 12, 12)})
    assert graph.inputs[0].type.shape == (5, 1, 12, 12)
    assert graph.outputs[0].type.shape == (5, 4)


@pytest.mark.parametrize("option,message", [
    ("input=1x1x12", "--input-shape input=1x1x12 has rank 3, but input 'input' is declared "
                     "[N, 1, 12, 12] (rank 4)"),
    ("input=1x3x12x12", "--input-shape input=1x3x12x12 sets dim 1 to 3, but input 'input' "
                        "declares it 1"),
    ("image=1x1x12x12", "--input-shape names image, which is no input of the model (its "
                        "inputs: input)"),
])
def test_input_shape_that_does_not_fit(example: Path, option: str, message: str,
                                       capsys) -> None:
    rc, lines = _dump_ir(example, capsys, "--input-shape", option)
    assert rc == 2 and lines == [f"{example}: {message}"]


@pytest.mark.parametrize("option,message", [
    ("input", "--input-shape input: expected NAME=SHAPE, e.g. input=1x3x32x32"),
    ("input=1xAx3", "--input-shape input=1xAx3: '1xAx3' is not a shape like 1x3x32x32"),
    ("input=0x1", "--input-shape input=0x1: '0x1' has a zero dimension"),
])
def test_malformed_input_shape_option(example: Path, option: str, message: str,
                                      capsys) -> None:
    rc, lines = _dump_ir(example, capsys, "--input-shape", option)
    assert rc == 2 and lines == [f"minirt-build: error: {message}"]


def test_input_shape_on_a_model_with_static_shapes(capsys) -> None:
    seed = Path(__file__).resolve().parents[3] / "examples" / "seed.mlir"
    rc, lines = _dump_ir(seed, capsys, "--input-shape", "x=1x4")
    assert rc == 2
    assert lines == [f"minirt-build: error: {seed}: --input-shape applies to .onnx models "
                     "only (MLIR and .tflite models have static shapes)"]


def test_old_opset_is_converted(tmp_path: Path) -> None:
    """Opset 11's Relu, once refused, is converted to opset 13's (test_onnx_opsets.py
    has the ops whose meaning changed)."""
    path = tmp_path / "old.onnx"
    path.write_bytes(build([node("Relu", ["x"], ["y"])], {"x": randn((2,), 0)}, ["y"],
                           opset=11))
    x = np.array([-1.5, 2.0], np.float32)
    assert run_graph(load_graph(path), [x])[0].tolist() == [0.0, 2.0]


@pytest.mark.parametrize("damage,words", [
    ("short", "raw_data size (10 bytes) is too small"),  # the onnx checker's words
    ("complex", "initializer 'w' has element type COMPLEX64, which minirt does not support"),
])
def test_damaged_initializer(damage: str, words: str, tmp_path: Path, capsys) -> None:
    model = onnx.load_model_from_string(build([node("Add", ["x", "w"], ["y"])],
                                              {"x": randn((2, 3), 0)}, ["y"],
                                              {"w": randn((2, 3), 1)}))
    w = model.graph.initializer[0]
    if damage == "short":
        w.raw_data = w.raw_data[:10]
    else:
        w.data_type = onnx.TensorProto.COMPLEX64
        w.raw_data = w.raw_data + w.raw_data
    path = tmp_path / "damaged.onnx"
    path.write_bytes(model.SerializeToString())
    rc, lines = _dump_ir(path, capsys)
    assert rc == 2 and len(lines) == 1
    assert lines[0].startswith(f"{path}: not a valid ONNX model: ")
    assert words in lines[0]


def test_truncated_file_through_the_cli(example: Path, tmp_path: Path, capsys) -> None:
    path = tmp_path / "cut.onnx"
    path.write_bytes(example.read_bytes()[:777])
    rc, lines = _dump_ir(path, capsys, "--input-shape", "input=1x1x12x12")
    assert rc == 2 and len(lines) == 1
    assert lines[0].startswith(f"{path}: not a valid ONNX model: ")


@pytest.mark.parametrize("model", ["cnn", "qdq_cnn"])
def test_fuzz_truncations_and_bit_flips(model: str, tmp_path: Path) -> None:
    """80 truncations and 400 single-bit flips of a valid model: each one loads (and
    then runs on the reference: a flipped weight is still a model) or is refused with a
    CompileError or UsageError, which the tools print as one line with exit 2."""
    data = cnn() if model == "cnn" else qdq_cnn_by_hand()
    pins = {"input": (1, 1, 12, 12)} if model == "cnn" else None
    rng = np.random.default_rng(12)
    variants = [data[:int(n)] for n in rng.choice(len(data), 80, replace=False)]
    for _ in range(400):
        b = bytearray(data)
        i = int(rng.integers(len(b)))
        b[i] ^= 1 << int(rng.integers(8))
        variants.append(bytes(b))
    path = tmp_path / "fuzz.onnx"
    outcomes = {"loaded": 0, "refused": 0}
    for v in variants:
        path.write_bytes(v)
        try:
            graph = load_graph(path, input_shapes=pins)
        except (CompileError, UsageError) as e:
            assert str(e).strip(), "an empty message"
            outcomes["refused"] += 1
            continue
        with np.errstate(all="ignore"):
            run_graph(graph, random_inputs(graph))
        outcomes["loaded"] += 1
    assert outcomes["refused"] >= 50 and outcomes["loaded"] > 0, outcomes


def test_constant_subgraph_is_folded_not_refused(tmp_path: Path) -> None:
    """Ops without a converter are fine when their inputs are constant: onnx's reference
    evaluates them at import (here Range and Equal feed a Where)."""
    x = randn((4,), 3)
    nodes = [node("Range", ["start", "limit", "delta"], ["r"]),
             node("Equal", ["r", "two"], ["eq"]), node("Cast", ["eq"], ["m"], to=1),
             node("Mul", ["x", "m"], ["y"])]
    consts = {"start": np.array(0, np.int64), "limit": np.array(4, np.int64),
              "delta": np.array(1, np.int64), "two": np.array(2, np.int64)}
    path = tmp_path / "fold.onnx"
    path.write_bytes(build(nodes, {"x": x}, ["y"], consts))
    got = run_graph(load_graph(path), [x])[0]
    assert np.array_equal(got, x * np.array([0, 0, 1, 0], np.float32))


def test_initializer_type_survives(tmp_path: Path) -> None:
    """An int64 initializer read as a tensor keeps its type (Gather's data here)."""
    table = np.arange(12, dtype=np.int64).reshape(4, 3) * 1000
    idx = np.array([3, 0], np.int64)
    path = tmp_path / "g.onnx"
    path.write_bytes(build([node("Gather", ["t", "i"], ["y"])], {"i": idx}, ["y"],
                           {"t": table}))
    assert np.array_equal(run_graph(load_graph(path), [idx])[0], table[[3, 0]])


def test_dump_generic_is_for_mlir_only(example: Path, capsys) -> None:
    rc = build_cli.main(["--dump-generic", str(example)])
    assert rc == 2
    assert capsys.readouterr().err.strip() == (
        f"minirt-build: error: {example}: --dump-generic prints MLIR in generic op form; a "
        ".onnx model is no MLIR (--dump-ir prints its graph)")


def test_padding_the_graph_cannot_express(tmp_path: Path, capsys) -> None:
    """Reflect padding needs pads smaller than the axis (it mirrors without the edge)."""
    data = build([node("Pad", ["x", "p"], ["y"], name="pad", mode="reflect")],
                 {"x": randn((2, 4), 0)}, ["y"], {"p": np.array([0, 4, 0, 1], np.int64)})
    path = tmp_path / "pad.onnx"
    path.write_bytes(data)
    rc, lines = _dump_ir(path, capsys)
    assert rc == 2
    assert lines == [f"{path}: node 'pad' (Pad): reflect padding (4, 1) of an axis of 4 "
                     "needs pads smaller than 4"]


def test_function_body_failure_names_the_op_and_the_body_op(tmp_path: Path, capsys) -> None:
    """An op imported through its ONNX function body fails as the op, one line, naming
    the body's op that could not be converted (here a Pad whose pads come from a shape
    given at run time)."""
    x = randn((4, 5), 0)
    size = np.array([3, 6], np.int64)
    data = build([node("CenterCropPad", ["x", "s"], ["y"], name="ccp")],
                 {"x": x, "s": size}, ["y"], opset=18,
                 output_types={"y": (np.float32, [3, 6])})
    path = tmp_path / "ccp.onnx"
    path.write_bytes(data)
    rc, lines = _dump_ir(path, capsys)
    assert rc == 2
    assert lines == [f"{path}: node 'ccp' (CenterCropPad) is not supported (in the ONNX "
                     "function that defines it: Pad: input 1 (pads) must be a constant (an "
                     "initializer, a Constant node, or computed from them and static shapes))"]
