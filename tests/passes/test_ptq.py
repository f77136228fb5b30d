"""Int8 post-training quantization (toolchain/passes/ptq.py, calibrate.py): small float
models quantized and checked for integer-only computation between the entry quantize and
the exit dequantize, for accuracy against float on held-out inputs, for TFLite's exact
kernels where the wiring matters, and for clear errors; and the issue's bar on the
shared JAX models dscnn_kws and resnet8."""

from __future__ import annotations

import numpy as np
import pytest
from ptq_models import Model, graph_of

from toolchain.diagnostics import CompileError
from toolchain.graph.ir import Graph, Node
from toolchain.graph.verify import verify_graph
from toolchain.loader import UsageError, load_graph
from toolchain.passes import QuantizeOptions, fold_affine, fold_constants, quantize_graph
from toolchain.passes.calibrate import activation_quant, calibrate, load_calibration
from toolchain.passes.ptq import SOFTMAX_QUANT, quantize_int8, quantize_values
from toolchain.pipeline import prepare_graph
from toolchain.quant import tflm
from toolchain.reference import run_graph
from toolchain.report.accuracy import compare_outputs

# Held-out inputs are drawn with another seed than the calibration samples.
CALIBRATION_SEED, TEST_SEED = 0, 1


def _prepared(text: str) -> Graph:
    return fold_affine(fold_constants(graph_of(text)))


def _normal(graph: Graph, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((count, *t.type.shape)).astype(np.float32)
            for t in graph.inputs]


def _quantized(text: str, samples: int = 32, int8_io: bool = False) -> tuple[Graph, Graph]:
    """(float graph, its int8 quantization calibrated on `samples` normal samples)."""
    float_graph = _prepared(text)
    calib = _normal(float_graph, samples, CALIBRATION_SEED)
    q = quantize_graph(_prepared(text), calib, int8_io=int8_io)
    verify_graph(q)
    return float_graph, q


def _accuracy(float_graph: Graph, q: Graph, count: int = 40):
    inputs = _normal(float_graph, count, TEST_SEED)
    got, want = [], []
    for i in range(count):
        sample = [x[i] for x in inputs]
        got += run_graph(q, sample)
        want += run_graph(float_graph, sample)
    return compare_outputs([np.stack(got)], [np.stack(want)])


def float_work(graph: Graph) -> list[str]:
    """Float ops that are neither the entry quantize nor the exit dequantize.

    Entry: what float graph inputs reach through float tensors (it must end in integers).
    Exit: what float graph outputs are computed from through float tensors (it must start
    from integers). Float constants may feed either. Anything else computing in float is
    listed."""
    def is_float(t) -> bool:
        return t.type.dtype.is_float

    entry: set[int] = {id(t) for t in graph.inputs if is_float(t)}
    entry_nodes: list[Node] = []
    for node in graph.nodes:
        if any(id(t) in entry for t in node.inputs):
            entry_nodes.append(node)
            entry.update(id(t) for t in node.outputs if is_float(t))
    exit_tensors = {id(t) for t in graph.outputs if is_float(t)}
    exit_nodes: list[Node] = []
    for node in reversed(graph.nodes):
        if any(id(t) in exit_tensors for t in node.outputs) and node.op != "constant":
            exit_nodes.append(node)
            exit_tensors.update(id(t) for t in node.inputs if is_float(t))
    ends = {id(n) for n in entry_nodes + exit_nodes}
    constant = {id(t) for n in graph.nodes if n.op == "constant" for t in n.outputs}
    problems = []
    for node in graph.nodes:
        if node.op == "constant" or id(node) in ends:
            continue
        if node.op == "broadcast_in_dim" and id(node.inputs[0]) in constant:
            constant.add(id(node.output))  # a splat: part of the op that reads it
            continue
        if any(is_float(t) for t in node.inputs + node.outputs):
            problems.append(f"{node.op} -> {node.outputs[0].type}")
    # The ends themselves: only the quantize and dequantize arithmetic.
    for node in entry_nodes:
        if node.op not in ("divide", "round_nearest_afz", "clamp", "convert"):
            problems.append(f"entry {node.op}")
    for node in exit_nodes:
        if node.op not in ("convert", "multiply"):
            problems.append(f"exit {node.op}")
    return problems


def _conv_model(depthwise: bool = False) -> str:
    m = Model(1)
    x = m.arg((1, 10, 8, 3 if not depthwise else 6))
    y = m.relu6(m.bias(m.conv(x, 6, depthwise=depthwise), 3))
    y = m.relu(m.bias(m.conv(y, 4, stride=2), 3))
    return m.text(m.avg_pool(y, 2))


def _dense_model() -> str:
    m = Model(2)
    x = m.arg((2, 24))
    h = m.relu(m.bias(m.dense(x, 16), 1))
    return m.text(m.softmax(m.bias(m.dense(h, 10), 1)))


def _residual_model() -> str:
    m = Model(3)
    x = m.arg((1, 6, 6, 4))
    a = m.bias(m.conv(x, 4), 3)
    b = m.conv(x, 4, k=1, pad=0)
    y = m.relu(m.binary("add", a, b))
    z = m.binary("multiply", y, m.unary("tanh", y))
    both = m.concat(z, m.unary("logistic", a), 3)
    return m.text(m.reshape(m.mean(both, (1, 2)), (1, 8)))


MODELS = {"conv": _conv_model, "depthwise": lambda: _conv_model(depthwise=True),
          "dense-softmax": _dense_model, "residual": _residual_model}


@pytest.mark.parametrize("name", MODELS)
def test_small_models_are_integer_only_and_accurate(name: str) -> None:
    float_graph, q = _quantized(MODELS[name]())
    assert float_work(q) == []
    acc = _accuracy(float_graph, q)
    assert acc.cosine_similarity > 0.99, acc
    # The entry quantize and exit dequantize are there: f32 in, f32 out.
    assert [t.type.dtype.name for t in q.inputs + q.outputs] == ["f32"] * (
        len(q.inputs) + len(q.outputs))


def test_float_work_finds_float_ops() -> None:
    """The checker above is no test that cannot fail: a float model is all float work."""
    assert len(float_work(_prepared(_dense_model()))) > 5


def test_int8_io_has_no_float_at_all() -> None:
    _, q = _quantized(_conv_model(), int8_io=True)
    assert not [n.op for n in q.nodes for t in n.inputs + n.outputs if t.type.dtype.is_float]
    (x,), (y,) = q.inputs, q.outputs
    assert x.type.dtype.name == y.type.dtype.name == "i8"
    # Average pooling keeps its input's quantization (TFLite requires it).
    pool_input = next(n for n in q.nodes if n.op == "reduce_window").inputs[0]
    while pool_input.type.quant is None:  # back through the widening to i32
        pool_input = pool_input.producer.inputs[0]
    assert y.type.quant == pool_input.type.quant


def test_conv_is_tflite_conv_with_calibrated_parameters() -> None:
    """One conv + bias + ReLU with int8 I/O equals TFLite Micro's CONV_2D run on the
    parameters the issue asks for: input / output asymmetric per tensor from the
    calibrated ranges, weights symmetric per output channel (max|w| / 127), an int32
    bias at input scale x weight scale, ReLU as the activation range."""
    m = Model(4)
    x = m.arg((1, 7, 6, 3))
    y = m.relu(m.bias(m.conv(x, 5), 3))
    text = m.text(y)
    float_graph = _prepared(text)
    calib = _normal(float_graph, 16, CALIBRATION_SEED)
    ranges = calibrate(float_graph, calib)
    qin = activation_quant(*ranges[id(float_graph.inputs[0])])
    qout = activation_quant(*ranges[id(float_graph.outputs[0])])
    q = quantize_graph(_prepared(text), calib, int8_io=True)
    assert q.inputs[0].type.quant == qin and q.outputs[0].type.quant == qout

    conv = next(n for n in float_graph.nodes if n.op == "convolution")
    w = conv.inputs[1].producer.attrs["value"]  # HWIO
    bias = next(n for n in float_graph.nodes if n.op == "add").inputs[1]
    bias = np.broadcast_to(run_graph_value(float_graph, bias), (1, 7, 6, 5))[0, 0, 0]
    scales = (np.abs(w).max(axis=(0, 1, 2)) / np.float32(127)).astype(np.float32)
    w_q = np.clip(np.round(w / scales), -127, 127).astype(np.int8).transpose(3, 0, 1, 2)
    s_in, z_in = qin.scales[0], qin.zero_points[0]
    s_out, z_out = qout.scales[0], qout.zero_points[0]
    bias_q = np.round(bias.astype(np.float64) / (np.float32(s_in) * scales)).astype(np.int32)
    mult, shift = tflm.conv_params(s_in, scales, s_out)
    lo, hi = tflm.activation_range("RELU", s_out, z_out)
    xs = _normal(float_graph, 5, TEST_SEED)[0]
    for x_f in xs:
        xq = quantize_values(x_f, qin)
        want = tflm.conv2d(xq, w_q, bias_q, strides=(1, 1), padding="SAME", input_zp=z_in,
                           output_zp=z_out, multipliers=mult, shifts=shift, act_min=lo,
                           act_max=hi)
        np.testing.assert_array_equal(run_graph(q, [xq])[0], want)


def run_graph_value(graph: Graph, t) -> np.ndarray:
    """The value of a constant-only tensor of `graph`."""
    node = t.producer
    if node.op == "constant":
        return np.asarray(node.attrs["value"])
    sub = Graph("c", nodes=[n for n in graph.nodes if n.op == "constant" or n is node])
    sub.outputs = [t]
    return run_graph(sub, [])[0]


def test_softmax_is_tflite_softmax() -> None:
    """The decomposed softmax becomes TFLite's int8 SOFTMAX: output scale 1/256, zero
    point -128, bit for bit TFLite Micro's kernel on the calibrated input quantization."""
    m = Model(5)
    x = m.arg((3, 10))
    text = m.text(m.softmax(m.binary("multiply", x, m.splat(2.0, (3, 10)))))
    _, q = _quantized(text, int8_io=True)
    assert q.outputs[0].type.quant == SOFTMAX_QUANT
    # The softmax reads the x * 2 table's output.
    table = next(n for n in q.nodes if n.op == "gather" and n.inputs[0].type.shape == (256,))
    qx = table.output.type.quant
    xq = np.random.default_rng(9).integers(-128, 128, (3, 10)).astype(np.int8)
    scaled = run_graph(_lookup_graph(q, table), [xq])[0]
    want = tflm_softmax(scaled, qx.scales[0])
    np.testing.assert_array_equal(run_graph(q, [xq])[0], want)


def _lookup_graph(q: Graph, table: Node) -> Graph:
    """The part of q that computes the table lookup's output."""
    live, keep = {id(table.output)}, []
    for node in reversed(q.nodes):
        if any(id(t) in live for t in node.outputs):
            keep.append(node)
            live.update(id(t) for t in node.inputs)
    sub = Graph("t", inputs=list(q.inputs), nodes=keep[::-1])
    sub.outputs = [table.output]
    return sub


def tflm_softmax(x: np.ndarray, scale: float) -> np.ndarray:
    from toolchain.quant import tflm_activations

    return tflm_activations.softmax(x, tflm_activations.softmax_params(scale))


def test_weights_are_symmetric_per_channel_and_biases_int32() -> None:
    _, q = _quantized(_dense_model())
    weights = [n for n in q.nodes if n.op == "dot_general"]
    assert len(weights) == 2
    for dot in weights:
        w = dot.inputs[1].producer.attrs["value"]
        assert w.dtype == np.int8 and np.abs(w).max(axis=0).min() == 127  # per column
        assert dot.output.type.dtype.name == "i32"


def test_activation_quant_is_tflite_converters() -> None:
    q = activation_quant(-1.0, 3.0)  # widened range [-1, 3], 255 steps
    assert q.scales[0] == float(np.float32(4.0) / np.float32(255))
    assert q.zero_points[0] == -128 + round(1.0 / (4.0 / 255))
    relu = activation_quant(0.5, 6.0)  # 0 is always representable exactly
    assert relu.zero_points[0] == -128
    neg = activation_quant(-6.0, -1.0)
    assert neg.zero_points[0] == 127
    assert activation_quant(0.0, 0.0).scales[0] == 1.0


def test_quantize_values_rounds_half_away_and_saturates() -> None:
    q = activation_quant(-1.0, 3.0)
    s, z = q.scales[0], q.zero_points[0]
    v = np.array([0.5 * s, -0.5 * s, 1e9, -1e9, np.nan], np.float32)
    np.testing.assert_array_equal(quantize_values(v, q), [z + 1, z - 1, 127, -128, z])


def test_unsupported_ops_are_located_errors_all_at_once() -> None:
    m = Model(6)
    x = m.arg((1, 8))
    y = m.arg((1, 8))
    a = m.binary("divide", x, y)
    b = m.binary("atan2", a, y)
    text = m.text(b)
    with pytest.raises(CompileError) as info:
        quantize_graph(_prepared(text), _normal(_prepared(text), 4, 0))
    rendered = info.value.render()
    lines = [ln for ln in rendered.splitlines() if ": error: " in ln]
    assert len(lines) == 2, rendered
    assert lines[0].startswith("model.mlir:2:") and "'divide'" in lines[0]
    assert lines[1].startswith("model.mlir:3:") and "'atan2'" in lines[1]
    assert all("--quantize int8" in ln for ln in lines)


def test_op_without_location_names_its_node() -> None:
    from toolchain.graph.builder import GraphBuilder
    from toolchain.types import TensorType, dtype

    g = Graph("g")
    b = GraphBuilder(g)
    x = g.add_input(TensorType((4,), dtype("f32")))
    y = g.add_input(TensorType((4,), dtype("f32")))
    g.outputs = [b.op("atan2", [x, y])]
    with pytest.raises(CompileError, match=r"'atan2' \(node 0, result tensor<4xf32>\)"):
        quantize_graph(g, _normal(g, 2, 0))


def test_a_model_quantizing_itself_is_refused_as_hybrid() -> None:
    """TFLite's hybrid kernels (int8 weights, activations quantized at run time) convert
    floats to integers in the graph: no float model for PTQ, and the error says so."""
    from toolchain.graph.builder import GraphBuilder
    from toolchain.types import TensorType, dtype

    g = Graph("g")
    b = GraphBuilder(g)
    x = g.add_input(TensorType((4,), dtype("f32")))
    q = b.op("convert", [b.op("round_nearest_afz", [x])], dtype="i8")
    g.outputs = [b.op("convert", [q], dtype="f32")]
    with pytest.raises(CompileError, match="converts f32 to i8 itself \\(a hybrid model"):
        quantize_graph(g, _normal(g, 2, 0))


# ---------------------------------------------------------------------- calibration files


def _calib_file(tmp_path, **arrays) -> str:
    path = tmp_path / "calib.npz"
    np.savez(path, **arrays)
    return str(path)


@pytest.mark.parametrize("arrays, message", [
    ({}, r"has no 'input_0' \(the model takes 1 input: input_0\)"),
    ({"input_0": np.zeros((2, 1, 24), np.float32)}, r"has shape \(2, 1, 24\); the model's "
     r"input has shape \(2, 24\), so calibration samples need \(S, 2, 24\)"),
    ({"input_0": np.zeros((2, 24), np.float32)}, r"has shape \(2, 24\)"),
    ({"input_0": np.zeros((0, 2, 24), np.float32)}, "holds no samples"),
    ({"input_0": np.zeros((3, 2, 24), np.float32), "input_1": np.zeros((3, 2, 24))},
     r"holds 'input_1', which is no input of the model \(it takes 1: input_0\)"),
    ({"input_0": np.full((3, 2, 24), np.nan, np.float32)},
     r"'input_0'\[0, 0, 0\] is nan; calibration samples must be finite"),
])
def test_bad_calibration_files(tmp_path, arrays: dict, message: str) -> None:
    graph = _prepared(_dense_model())
    path = _calib_file(tmp_path, **arrays)
    with pytest.raises(UsageError, match=message):
        load_calibration(path, graph)


def test_calibration_not_npz_and_missing(tmp_path) -> None:
    graph = _prepared(_dense_model())
    bad = tmp_path / "calib.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(UsageError, match="not an .npz archive"):
        load_calibration(bad, graph)
    with pytest.raises(UsageError, match="cannot read the calibration file"):
        load_calibration(tmp_path / "absent.npz", graph)


def test_calibration_sample_counts_must_agree(tmp_path) -> None:
    m = Model(7)
    a, b = m.arg((4,)), m.arg((4,))
    graph = _prepared(m.text(m.binary("add", a, b)))
    path = _calib_file(tmp_path, input_0=np.zeros((3, 4)), input_1=np.zeros((2, 4)))
    with pytest.raises(UsageError, match=r"different numbers of samples \(input_0 3, "
                                         r"input_1 2\)"):
        load_calibration(path, graph)


def test_int8_mode_needs_a_calibration_file() -> None:
    with pytest.raises(UsageError, match="--quantize int8 needs --calibration"):
        quantize_int8(_prepared(_dense_model()), QuantizeOptions("int8"))


def test_prepare_graph_runs_ptq_from_the_file(tmp_path) -> None:
    text = _dense_model()
    path = _calib_file(tmp_path, input_0=_normal(_prepared(text), 8, 0)[0])
    graph = prepare_graph(graph_of(text), QuantizeOptions("int8", calibration=path))
    assert float_work(graph) == []


# ---------------------------------------------------------------------- the shared models


@pytest.mark.parametrize("name", ["dscnn_kws", "resnet8"])
def test_shared_models_keep_top1_and_cosine(name: str, models_dir) -> None:
    """The issue's bar: calibrated on 32 random samples, measured on 200 others, top-1
    agreement with float >= 0.95 and cosine >= 0.99. The samples are standard normal,
    which is how the .npz inputs beside the models are drawn (mean ~0, std ~1)."""
    path = models_dir / "jax" / f"{name}.mlir"
    float_graph = prepare_graph(load_graph(path))
    calib = _normal(float_graph, 32, CALIBRATION_SEED)
    q = quantize_graph(prepare_graph(load_graph(path)), calib)
    assert float_work(q) == []
    acc = _accuracy(float_graph, q, count=200)
    print(f"{name}: {acc.format()}")
    assert acc.top1_agreement >= 0.95 and acc.cosine_similarity >= 0.99, acc
