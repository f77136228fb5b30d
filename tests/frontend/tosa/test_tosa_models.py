"""The TOSA example models (examples/tosa) end to end.

- `cnn.mlir`, the shared JAX cnn in TOSA: the reference gives JAX's outputs (cnn.npz)
  within numpy.isclose(rtol=1e-5, atol=1e-6), the README's float bound.
- `int8_cnn.mlir`, an int8 network with a RESCALE at every change of scale: the
  reference gives, bit for bit, what the specification's pseudo-code gives when the
  layers of tosa_spec.py are chained by hand.

- `while_loop.mlir` and `cond_if.mlir`, TOSA's control flow: the reference gives what
  the same computation gives in Python (tosa_spec.while_loop / cond_if around numpy in
  float64 within isclose(rtol=1e-5, atol=1e-6), the float bound; integers exactly:
  math.gcd and the spec's RESCALE / TABLE).

All run with `minirt-run --check` on cortex-m4, riscv32, aarch64 and x86-64 (one build
each, 1 to 2 s; cond_if.mlir runs a second input set on the same firmware so that every
branch runs on every board), and their outputs are compared with JAX's / the spec's /
Python's as well.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
from pathlib import Path

import numpy as np
import pytest
import tosa_spec as spec
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain.cli import run as run_cli
from toolchain.loader import load_graph
from toolchain.reference import run_graph

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "tosa"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]
JAX_CNN = MODELS_DIR / "jax" / "cnn"


def _generator():
    loaded = importlib.util.spec_from_file_location("tosa_example_models",
                                                    EXAMPLES / "models.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


MODELS = _generator()
PARAMS = MODELS.int8_params()


def spec_int8_cnn(x: np.ndarray, p: dict = PARAMS) -> list[np.ndarray]:
    """int8_cnn.mlir layer by layer with the specification's pseudo-code."""
    def rescale(v, scales, in_zp, out_zp, double, per_channel, in_bits, out_bits):
        mults, shifts = zip(*scales)
        return spec.rescale(v, mults, shifts, in_zp, out_zp, scale32=True,
                            double_round=double, per_channel=per_channel,
                            input_unsigned=False, output_unsigned=False, in_bits=in_bits,
                            out_bits=out_bits)

    acc1 = spec.conv2d(x, p["w1"], p["b1"], p["in_zp"], 0, (1, 1), (1, 1, 1, 1), (1, 1))
    q1 = rescale(acc1, p["r1"], 0, p["c1_zp"], True, True, 32, 8)
    relu1 = np.clip(q1, p["c1_zp"], 127)
    pool1 = spec.avg_pool2d_int(relu1, (2, 2), (2, 2), (0, 0, 0, 0), p["c1_zp"], p["c1_zp"])
    acc2 = spec.depthwise_conv2d(pool1, p["w2"], p["b2"], p["c1_zp"], 0, (1, 1),
                                 (1, 1, 1, 1), (1, 1))
    q2 = rescale(acc2, p["r2"], 0, p["c2_zp"], False, True, 32, 8)
    sa = rescale(pool1, [p["ra"]], p["c1_zp"], 0, False, False, 8, 32)
    sb = rescale(q2, [p["rb"]], p["c2_zp"], 0, False, False, 8, 32)
    res = rescale(sa + sb, [p["rs"]], 0, p["sum_zp"], True, False, 32, 8)
    pool2 = spec.max_pool2d(res.astype(np.float64), (2, 2), (2, 2), (0, 0, 0, 0))
    acc3 = spec.matmul(pool2.astype(np.int64).reshape(1, 1, 32), p["w3"], p["sum_zp"], 0)
    q3 = rescale(acc3 + p["b3"], [p["r3"]], 0, p["out_zp"], True, False, 32, 8)
    logits = q3.reshape(1, 10).astype(np.int8)
    return [logits, spec.table(logits, p["sigmoid"]), spec.argmax(logits, 1)]


def int8_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    xs = [rng.integers(-128, 128, (1, 8, 8, 3)).astype(np.int8) for _ in range(3)]
    return xs + [np.full((1, 8, 8, 3), -128, np.int8), np.full((1, 8, 8, 3), 127, np.int8)]


def test_int8_example_is_what_the_generator_writes() -> None:
    assert (EXAMPLES / "int8_cnn.mlir").read_text() == MODELS.int8_text()


def test_cnn_example_is_what_the_generator_writes() -> None:
    if not have_models():
        pytest.skip(MISSING_REASON)
    assert (EXAMPLES / "cnn.mlir").read_text() == MODELS.cnn_text(JAX_CNN.with_suffix(".mlir"))


def test_cnn_gives_jax_outputs_on_the_reference() -> None:
    if not have_models():
        pytest.skip(MISSING_REASON)
    with np.load(JAX_CNN.with_suffix(".npz")) as data:
        x, want = data["input_0"], data["output_0"]
    (got,) = run_graph(load_graph(EXAMPLES / "cnn.mlir"), [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("index", range(5))
def test_int8_cnn_is_the_specification_on_the_reference(index: int) -> None:
    x = int8_inputs()[index]
    got = run_graph(load_graph(EXAMPLES / "int8_cnn.mlir"), [x])
    for g, w in zip(got, spec_int8_cnn(x)):
        np.testing.assert_array_equal(g.astype(np.int64), np.asarray(w).astype(np.int64))


def _run(model: Path, board: str, work: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    np.savez(work / "in.npz", **{f"input_{i}": x for i, x in enumerate(inputs)})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli.main([str(model), "--board", board, "--check", "--inputs",
                           str(work / "in.npz"), "-o", str(work / "fw"), "--save-outputs",
                           str(work / "out.npz")])
    assert rc == 0, err.getvalue()[-3000:]
    assert "check: outputs match the reference" in out.getvalue()
    with np.load(work / "out.npz") as data:
        return [data[f"output_{i}"] for i in range(len(data.files))]


@pytest.mark.parametrize("board", BOARDS)
def test_cnn_on_the_board(board: str, tmp_path: Path) -> None:
    if have_models():
        with np.load(JAX_CNN.with_suffix(".npz")) as data:
            x, want = data["input_0"], data["output_0"]
    else:  # --check against the reference still runs; JAX's outputs need the models
        x, want = np.random.default_rng(0).standard_normal((1, 16, 16, 1)), None
    (got,) = _run(EXAMPLES / "cnn.mlir", board, tmp_path, [x.astype(np.float32)])
    if want is not None:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("board", BOARDS)
def test_int8_cnn_on_the_board(board: str, tmp_path: Path) -> None:
    x = int8_inputs()[0]
    got = _run(EXAMPLES / "int8_cnn.mlir", board, tmp_path, [x])
    for g, w in zip(got, spec_int8_cnn(x)):
        np.testing.assert_array_equal(g.astype(np.int64), np.asarray(w).astype(np.int64))


@pytest.mark.parametrize("name", ["cnn.mlir", "int8_cnn.mlir"])
def test_generic_form_gives_the_same_graph(name: str) -> None:
    """The examples (pretty form) printed in generic form import to the same graph."""
    import re

    from toolchain.frontend import import_module
    from toolchain.graph.printer import print_graph
    from toolchain.mlir import parse_file, parse_text
    from toolchain.mlir.printer import print_generic

    pretty = parse_file(EXAMPLES / name)
    generic_text = print_generic(pretty)
    assert '"tosa.' in generic_text and "tosa.conv2d %" not in generic_text

    def text(graph) -> str:
        return re.sub(r"  // .*$", "", print_graph(graph), flags=re.M)

    assert text(import_module(parse_text(generic_text, "g.mlir"))) == \
        text(import_module(pretty))


# ---------------------------------------------------------------------- control flow

CONTROL = MODELS.control_params()


def while_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    xs = rng.uniform(-1, 1, (1, CONTROL["steps"], 4)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (1, 1, 4)).astype(np.float32)
    # gcd(0, 0), a zero on either side, consecutive Fibonacci numbers (the most rounds
    # for their size: 28 here), powers of two, coprimes.
    a = np.array([0, 12, 1071, 832040, 17, 0, 1 << 30, 999999], np.int32)
    b = np.array([0, 18, 462, 514229, 0, 5, 3 << 20, 1000000], np.int32)
    return [xs, h0, a, b]


def python_while(xs, h0, a, b) -> list[np.ndarray]:
    """while_loop.mlir in Python: the cell in float64, Euclid with truncating division."""
    def cell(h, t):
        x_t = xs[0, t].astype(np.float64)
        return np.tanh(h @ CONTROL["W"][0] + x_t @ CONTROL["U"][0]), t + 1

    h, _ = spec.while_loop(lambda h, t: CONTROL["steps"] > t, cell,
                           h0[0, 0].astype(np.float64), 0)

    def euclid(x, y, n):
        z = y == 0
        safe = np.where(z, 1, y)
        rem = x - np.trunc(x / safe).astype(np.int64) * safe
        return np.where(z, x, y), np.where(z, y, rem), n + 1

    x, _, n = spec.while_loop(lambda x, y, n: not (y == 0).all(), euclid,
                              a.astype(np.int64), b.astype(np.int64), 0)
    assert x.tolist() == [math.gcd(int(u), int(v)) for u, v in zip(a, b)]
    return [h.reshape(1, 1, 4), x, np.array(n)]


def cond_if_inputs(positive: bool, flag: bool) -> list[np.ndarray]:
    x = np.abs(np.random.default_rng(6).uniform(0.1, 1, (1, 1, 8))).astype(np.float32)
    x[0, 0, :3] *= -1  # a mixed-sign input whose sum decides the branch
    x = x if positive == (x.sum() > 0) else -x
    q = np.array([[-128, -100, -3, -1, 0, 1, 64, 127]], np.int8)
    return [x, np.array(flag), q]


def python_cond_if(x, flag, q) -> list[np.ndarray]:
    """cond_if.mlir in Python: numpy's dense layers, the spec's RESCALE and TABLE."""
    v = x[0].astype(np.float64)
    relu = lambda v: np.maximum(v @ CONTROL["W1"][0], 0)  # noqa: E731
    sigmoid = lambda v: 1 / (1 + np.exp(-(v @ CONTROL["W2"][0])))  # noqa: E731
    dense = spec.cond_if(np.array([x.sum() > 0]), relu, sigmoid, v)
    mult, shift = CONTROL["r"]
    scale = lambda: spec.rescale(q, mult, shift, 0, 0, scale32=True,  # noqa: E731
                                 double_round=False, per_channel=False,
                                 input_unsigned=False, output_unsigned=False, in_bits=8,
                                 out_bits=8)
    requant = spec.cond_if(np.atleast_1d(flag), scale,
                           lambda: spec.table(q, CONTROL["double"]))
    return [dense.reshape(1, 1, 4), requant]


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g.astype(np.int64), np.asarray(w).astype(np.int64))


@pytest.mark.parametrize("name, text", [("while_loop.mlir", "while_text"),
                                        ("cond_if.mlir", "cond_if_text")])
def test_control_examples_are_what_the_generator_writes(name: str, text: str) -> None:
    assert (EXAMPLES / name).read_text() == getattr(MODELS, text)()


def test_while_loop_example_on_the_reference() -> None:
    ins = while_inputs()
    got = run_graph(load_graph(EXAMPLES / "while_loop.mlir"), ins)
    want = python_while(*ins)
    assert int(want[2]) == 28  # Fibonacci inputs: the loop runs 28 times
    _close(got, want)


@pytest.mark.parametrize("positive, flag", [(True, True), (True, False), (False, True),
                                            (False, False)])
def test_cond_if_example_on_the_reference(positive: bool, flag: bool) -> None:
    ins = cond_if_inputs(positive, flag)
    _close(run_graph(load_graph(EXAMPLES / "cond_if.mlir"), ins), python_cond_if(*ins))


@pytest.mark.parametrize("board", BOARDS)
def test_while_loop_example_on_the_board(board: str, tmp_path: Path) -> None:
    ins = while_inputs()
    _close(_run(EXAMPLES / "while_loop.mlir", board, tmp_path, ins), python_while(*ins))


@pytest.mark.parametrize("board", BOARDS)
def test_cond_if_example_on_the_board(board: str, tmp_path: Path) -> None:
    # Two input sets on one firmware (the second run reuses the build): between them
    # both branches of both COND_IFs run.
    for positive, flag in ((True, False), (False, True)):
        ins = cond_if_inputs(positive, flag)
        _close(_run(EXAMPLES / "cond_if.mlir", board, tmp_path, ins), python_cond_if(*ins))
