"""Hostile numbers in .onnx models: sizes that would allocate terabytes or loop forever
when evaluated at import, scales of 0 / inf / NaN / negative, zero points of another
type than their values, attributes whose lengths disagree with the rank. Each is one
line naming the file and the node, exit code 2, within a few seconds of CPU; and the
structured edits of toolchain/testing/fuzz_onnx.py never get more than such a line."""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import build, node, randn

from toolchain.cli import build as build_cli
from toolchain.diagnostics import CompileError
from toolchain.frontend.onnx import OPS, OnnxError
from toolchain.frontend.onnx.ops import OpRow
from toolchain.loader import UsageError, load_graph
from toolchain.testing.fuzz_onnx import EDITS, seed_models

I64 = np.int64


class Overrun(BaseException):
    """CPU time ran out: a BaseException, so that no `except Exception` on the way (the
    constant folder has one) can take it for an ordinary failure."""


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    """Fails the test when the block uses more than `seconds` of CPU time (a hang)."""

    def overrun(signum: int, frame: object) -> None:
        raise Overrun(f"over {seconds} s of CPU time")

    old = signal.signal(signal.SIGPROF, overrun)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def _model(nodes: list, inputs: dict[str, tuple[int, list]], outputs: dict[str, tuple[int, list]],
           consts: dict[str, np.ndarray], opset: int = 17) -> bytes:
    """A model with declared output types (shape inference cannot type what these
    hostile values make)."""
    graph = helper.make_graph(
        nodes, "hostile",
        [helper.make_tensor_value_info(k, t, s) for k, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(k, t, s) for k, (t, s) in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def _errors(data: bytes, tmp_path: Path, seconds: float = 10) -> list[str]:
    """The lines minirt-build prints for the model (exit code 2 asserted), without the
    file name (asserted at the start of each)."""
    path = tmp_path / "hostile.onnx"
    path.write_bytes(data)
    with cpu_limit(seconds):
        try:
            load_graph(path)
        except OnnxError as e:
            lines = e.render().splitlines()
        else:
            raise AssertionError("the model loaded")
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    return [line.removeprefix(f"{path}: ") for line in lines]


F = TensorProto.FLOAT
XY = {"x": (F, [2, 3])}


# ------------------------------------------------------------------ evaluated at import


def test_loop_with_a_huge_trip_count_is_not_run(tmp_path: Path) -> None:
    """A Loop of constants was evaluated at import by onnx's reference implementation:
    2**62 iterations never finished. Ops with a body are never evaluated: the Loop is
    the graph's `while`, its trip count a constant of the cond region."""
    body = helper.make_graph(
        [node("Identity", ["v"], ["v2"]), node("Identity", ["c"], ["c2"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", F, [])],
        [helper.make_tensor_value_info("c2", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v2", F, [])])
    data = _model([helper.make_node("Loop", ["M", "cond", "v0"], ["v"], name="loop", body=body),
                   node("Add", ["x", "v"], ["y"])], XY, {"y": (F, [2, 3])},
                  {"M": np.array(2**62, I64), "cond": np.array(True),
                   "v0": np.array(1.0, np.float32)})
    path = tmp_path / "hostile.onnx"
    path.write_bytes(data)
    with cpu_limit(10):
        graph = load_graph(path)
    assert [n.op for n in graph.nodes if n.regions] == ["while"]


@pytest.mark.parametrize("op,consts,error", [
    # Range's converter counts its elements (data_dependent.py) before making any.
    ("Range", {"a": np.array(0, I64), "b": np.array(2**40, I64), "c": np.array(1, I64)},
     ": its 1099511627776 elements are more than the 1048576 minirt computes at build "
     "time"),
    # Tile has a converter: the graph refuses the tensor, before anything is allocated.
    ("Tile", {"a": np.ones((2, 3), np.float32), "b": np.array([2**20, 2**20], I64)},
     ": 'broadcast_in_dim' result 'tensor<1048576x2x1048576x3xf32>' takes 26388279066624 "
     "bytes; minirt tensors are limited to 1073741824 bytes (1 GiB: a module addresses "
     "buffers with 30 bits)"),
])
def test_constants_too_large_to_evaluate(op: str, consts: dict, error: str,
                                         tmp_path: Path) -> None:
    """The size of a constant result comes from onnx's shape inference before anything
    is computed: a Range of 2**40 elements was allocated (or failed to be) first."""
    data = _model([node(op, list(consts), ["r"], name="big"), node("Cast", ["r"], ["rf"], to=1),
                   node("ReduceSum", ["rf"], ["s"], keepdims=0), node("Add", ["x", "s"], ["y"])],
                  XY, {"y": (F, [2, 3])}, consts)
    sep = "" if error.startswith(":") else " "
    assert _errors(data, tmp_path) == [f"node 'big' ({op}){sep}{error}"]


def test_constant_of_shape_too_large(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """ConstantOfShape of [2**31 - 1, 3] asked numpy for 24 GiB: a MemoryError traceback."""
    data = _model([node("ConstantOfShape", ["s"], ["c"], name="zeros"),
                   node("ReduceSum", ["c"], ["r"], keepdims=0), node("Add", ["x", "r"], ["y"])],
                  XY, {"y": (F, [2, 3])}, {"s": np.array([2**31 - 1, 3], I64)})
    path = tmp_path / "zeros.onnx"
    path.write_bytes(data)
    with cpu_limit(10):
        rc = build_cli.main(["--dump-ir", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"{path}: node 'zeros' (ConstantOfShape): shape [2147483647, 3] makes a constant of "
        "25769803764 bytes; minirt tensors are limited to 1073741824 bytes"]


def test_slice_of_a_huge_axis_is_not_listed(tmp_path: Path) -> None:
    """Slice listed every index of the axis: 2**28 Python ints (10 GB) for one node."""
    n = 2**28
    data = _model([node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="slice")],
                  {"x": (F, [n])}, {"y": (F, [n // 3 + 1])},
                  {"s": np.array([-1], I64), "e": np.array([-(2**62)], I64),
                   "a": np.array([0], I64), "st": np.array([-3], I64)})
    path = tmp_path / "slice.onnx"
    path.write_bytes(data)
    with cpu_limit(5):
        graph = load_graph(path)
    assert graph.outputs[0].type.shape == (n // 3 + 1,)
    (sl,) = [nd for nd in graph.nodes if nd.op == "slice"]
    # reversed, then every third from 0: the original's last, n - 4, ..., down to index 0
    assert sl.attrs["start"] == (0,) and sl.attrs["limit"] == (n,) and sl.attrs["strides"] == (3,)


def test_pool_window_taps_are_counted_not_listed(tmp_path: Path) -> None:
    """AveragePool listed every tap of every window to count them: 2**24 windows of 2**20
    taps asked for 128 TiB. Counted arithmetically, the divisor of the edge windows
    (count_include_pad=0) is the taps inside the input."""
    k, n = 2**20, 2**24
    out = n + 2 - k + 1
    data = _model([node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[k],
                        pads=[2, 0])],
                  {"x": (F, [1, 1, n])}, {"y": (F, [1, 1, out])}, {})
    path = tmp_path / "pool.onnx"
    path.write_bytes(data)
    with cpu_limit(10):
        graph = load_graph(path)
    assert graph.outputs[0].type.shape == (1, 1, out)
    (counts,) = [nd.attrs["value"] for nd in graph.nodes
                 if nd.op == "constant" and nd.attrs["value"].size == out]
    assert counts.reshape(-1)[:4].tolist() == [k - 2, k - 1, k, k]


# ------------------------------------------------------------------ scales and zero points


def _qlinear_conv(**change: np.ndarray) -> bytes:
    rng = np.random.default_rng(3)
    consts = {"xs": np.array(0.02, np.float32), "xz": np.array(-3, np.int8),
              "w": rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
              "ws": np.array([0.01, 0.02, 0.015, 0.03], np.float32),
              "wz": np.zeros(4, np.int8), "ys": np.array(0.07, np.float32),
              "yz": np.array(5, np.int8)}
    consts.update(change)
    n = node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
             name="qconv", pads=[1, 1, 1, 1])
    return _model([n], {"x": (TensorProto.INT8, [1, 3, 5, 5])},
                  {"y": (TensorProto.INT8, [1, 4, 5, 5])}, consts)


@pytest.mark.parametrize("name,whose", [("xs", "the input's"), ("ys", "the output's")])
@pytest.mark.parametrize("value,shown", [(0.0, "0"), (-0.5, "-0.5"), (np.nan, "nan"),
                                         (np.inf, "inf"), (1e300, "1e+300")])
def test_qlinear_scale_must_be_positive_and_finite(name: str, whose: str, value: float,
                                                   shown: str, tmp_path: Path) -> None:
    """QLinearConv took any scale: a NaN one was 'ValueError: cannot convert float NaN to
    integer', 0 and negatives were imported and computed nonsense. A float64 scale
    beyond float32 is an infinity."""
    dt = np.float64 if value == 1e300 else np.float32
    data = _qlinear_conv(**{name: np.array(value, dt)})
    assert _errors(data, tmp_path) == [
        f"node 'qconv' (QLinearConv): {whose} scale {shown} is not positive and finite"]


def test_per_channel_scale_names_the_channel(tmp_path: Path) -> None:
    data = _qlinear_conv(ws=np.array([0.01, 0.02, -0.015, 0.03], np.float32))
    assert _errors(data, tmp_path) == [
        "node 'qconv' (QLinearConv): the weights' scale -0.015 (element 2) is not positive "
        "and finite"]


@pytest.mark.parametrize("change,message", [
    ({"xz": np.array(300, np.int32)},
     "the input's zero point is int32, but the quantized values are int8"),
    ({"wz": np.zeros(3, np.int8)},
     "the weights' scale [4] and zero point [3] must be scalars or matching 1-D tensors"),
    ({"ws": np.full(5, 0.01, np.float32), "wz": np.zeros(5, np.int8)},
     "the weights' 5 scales do not match dimension 0 of shape [4, 3, 3, 3]"),
    ({"ys": np.array(2, np.int32)}, "the output's scale is int32; a float tensor is expected"),
])
def test_qlinear_zero_points_and_shapes(change: dict, message: str, tmp_path: Path) -> None:
    """A zero point stored wider than its values (300 for int8) was used as it was."""
    assert _errors(_qlinear_conv(**change), tmp_path) == [
        f"node 'qconv' (QLinearConv): {message}"]


def test_dequantize_zero_point_of_another_type(tmp_path: Path) -> None:
    """DequantizeLinear of int8 values with an int32 zero point of -300: ONNX wants one
    type for both, and the values could never be -300 apart from anything in int8."""
    data = build([node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq")],
                 {"q": np.zeros((2, 3), np.int8)}, ["y"],
                 {"s": np.array(0.1, np.float32), "z": np.array(-300, np.int32)},
                 output_types={"y": (np.float32, [2, 3])})
    assert _errors(data, tmp_path) == [
        "node 'dq' (DequantizeLinear): the zero point is int32, but the quantized values are "
        "int8"]


def test_int8_conv_with_padding_beyond_any_tensor(tmp_path: Path) -> None:
    """The int8 Conv skipped the float Conv's check of the padded size: the graph check
    then refused a 2**62-wide tensor in a line without the file or the node."""
    model = onnx.load_model_from_string(seed_models()["qdq_conv"])
    (conv,) = [n for n in model.graph.node if n.op_type == "Conv"]
    (pads,) = [a for a in conv.attribute if a.name == "pads"]
    pads.ints[:] = [2**62, 1, 1, 1]
    lines = _errors(model.SerializeToString(), tmp_path)
    assert len(lines) == 1 and lines[0].startswith("node 'conv' (Conv): padding ")
    assert lines[0].endswith("makes the padded input larger than 1073741824 bytes")


def test_graph_check_errors_name_the_file(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    """The graph check after the import is a safety net for a converter that let an
    ill-formed node through: its errors are lines of the model's file too."""

    def wrong(ctx) -> object:  # a transpose without its permutation
        x = ctx.input(0)
        return ctx.graph.add("transpose", [x], [x.type], {}).output

    monkeypatch.setitem(OPS, "Relu", OpRow(wrong, None, 1, 1))
    data = build([node("Relu", ["x"], ["y"])], {"x": randn((2, 3), 0)}, ["y"])
    lines = _errors(data, tmp_path)
    assert len(lines) == 1 and lines[0].startswith("the imported graph is ill-formed: ")


def test_negative_input_dimension(tmp_path: Path) -> None:
    """An input declared [-1, 3] became a tensor of that shape: only a declared output
    shape could catch it, and a symbolic one ('N') matched."""
    data = _model([node("Relu", ["x"], ["y"])], {"x": (F, [2, 3])}, {"y": (F, ["N", 3])}, {})
    model = onnx.load_model_from_string(data)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    assert _errors(model.SerializeToString(), tmp_path) == [
        "not a valid ONNX model: input 'x' has a negative dimension: [-1, 3]"]


# ------------------------------------------------------------------ attributes and the rank


X4 = randn((1, 2, 5, 5), 0)


@pytest.mark.parametrize("op,attrs,consts,message", [
    ("ConvTranspose", {"output_shape": [9]}, {"w": randn((2, 3, 3, 3), 1)},
     "output_shape [9] must be 2 spatial sizes >= 1"),
    ("ConvTranspose", {"output_shape": [0, 9]}, {"w": randn((2, 3, 3, 3), 1)},
     "output_shape [0, 9] must be 2 spatial sizes >= 1"),
    ("ConvTranspose", {"output_padding": [1], "strides": [2, 2]},
     {"w": randn((2, 3, 3, 3), 1)}, "output_padding [1] must be 2 values >= 0"),
    ("Conv", {"strides": [1, 1, 1]}, {"w": randn((3, 2, 3, 3), 1)},
     "strides [1, 1, 1] must be 2 values >= 1"),
    ("Conv", {"dilations": [1, -1]}, {"w": randn((3, 2, 3, 3), 1)},
     "dilations [1, -1] must be 2 values >= 1"),
    ("MaxPool", {"kernel_shape": [2, 2], "pads": [1, 1]}, {},
     "pads [1, 1] must be 4 values >= 0"),
    ("AveragePool", {"kernel_shape": [2, 2], "pads": [0, -1, 0, 0]}, {},
     "pads [0, -1, 0, 0] must be 4 values >= 0"),
    ("Transpose", {"perm": [0, 1, 2, 4]}, {}, "perm [0, 1, 2, 4] is not a permutation of 4 "
     "dimensions"),
    ("Softmax", {"axis": 4}, {}, "axis 4 is out of range for rank 4"),
    ("Gather", {"axis": -5}, {"i": np.array([0], I64)}, "axis -5 is out of range for rank 4"),
    ("Squeeze", {}, {"a": np.array([2**40], I64)},
     "axis 1099511627776 is out of range for rank 4"),
    ("ReduceSum", {}, {"a": np.array([1, 1], I64)}, "axes [1, 1] repeat an axis"),
])
def test_attributes_checked_against_the_rank(op: str, attrs: dict, consts: dict,
                                             message: str, tmp_path: Path) -> None:
    data = _model([node(op, ["x", *consts], ["y"], name="n", **attrs)],
                  {"x": (F, list(X4.shape))}, {"y": (F, ["a", "b", "c", "d"])}, consts)
    assert _errors(data, tmp_path) == [f"node 'n' ({op}): {message}"]


# ------------------------------------------------------------------ the structured edits


def test_structured_edits_load_or_get_one_line(tmp_path: Path) -> None:
    """Every edit on every seed, three times: the edited model loads or is refused with
    lines naming the file, within the CPU limit, never with another exception. Each edit
    describes itself in one line and nearly always changes the model (a hostile value
    may happen to be the old one), and the seeds themselves load."""
    path = tmp_path / "edited.onnx"
    outcomes = {"loaded": 0, "refused": 0, "same": 0}
    for name, seed in seed_models().items():
        path.write_bytes(seed)
        load_graph(path)
        for kind, edit in EDITS.items():
            for i in range(3):
                data, what = edit(seed, random.Random(f"{name}:{kind}:{i}"))
                assert what.startswith(f"{kind}: ") and "\n" not in what
                outcomes["same"] += data == seed and "unchanged" not in what
                path.write_bytes(data)
                with cpu_limit(10):
                    try:
                        load_graph(path)
                    except (CompileError, UsageError) as e:
                        text = e.render() if isinstance(e, OnnxError) else str(e)
                        assert text.startswith(str(path)), (what, text)
                        outcomes["refused"] += 1
                    else:
                        outcomes["loaded"] += 1
    assert outcomes["loaded"] > 50 and outcomes["refused"] > 100, outcomes
    assert outcomes["same"] < 5, outcomes
