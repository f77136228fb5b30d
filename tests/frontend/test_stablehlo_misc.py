"""tuple / get_tuple_element (frontend/stablehlo_tuples.py), optimization_barrier,
composite, get_dimension_size, partition_id, replica_id, reduce_precision, einsum,
unary_einsum and torch_index_select (frontend/stablehlo_misc.py).

tests/frontend/data/misc_ops.mlir uses every one of them, in pretty and generic form,
tuples through a call, a while loop and an if; its reference outputs are checked here
against the spec's examples and numpy, and one firmware per board (cortex-m4, riscv32,
aarch64, x86-64) runs it with --check (floats like numpy.isclose(rtol=1e-5, atol=1e-6),
integers exactly), the bit-level ops compared bit for bit besides.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli
from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.frontend.stablehlo_misc import reduce_precision_bits, reduce_precision_reference
from toolchain.mlir import parse_text
from toolchain.mlir.printer import print_generic
from toolchain.reference import run_graph
from toolchain.types import round_to_bf16

MODEL = Path(__file__).resolve().parent / "data" / "misc_ops.mlir"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]
RNG = np.random.default_rng(9)

# reduce_precision inputs: infinities, NaN, -0, half's largest (65504) and the values
# that round to it or overflow past it, a value in half's subnormal range (flushed:
# the narrower format keeps no subnormals), half's least normal, ties to even at
# 10 mantissa bits (1 + 2^-11 goes down, 1 + 3 * 2^-11 up), an f32 subnormal, the
# largest f32 (rounds to infinity as bf16), ordinary values.
X = np.array([np.inf, -np.inf, np.nan, -0.0, 65504.0, 65519.0, 65520.0, 1e-5,
              2.0 ** -14, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, -1e-40, 3.4028235e38, -2.5,
              0.1, -7.3], np.float32)
H = np.array([np.nan, -np.inf, 0.1, 15.5, 16.0, -0.0, 3.0e-3, 240.0], np.float16)
BH = round_to_bf16(np.array([np.nan, 1e30, -3.1, 0.0, 1e-20, 57344.0, 61440.0, 0.3],
                            np.float32))
# The spec's example, then two more: +inf, NaN, +denormal, 0, 65519 -> 65504, 65520 -> inf.
D = np.array([np.inf, np.nan, 5e-324, 0.0, 65519.0, 65520.0], np.float64)
A = RNG.standard_normal((2, 3)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
P = RNG.standard_normal((2, 3, 4)).astype(np.float32)
Q = RNG.standard_normal((2, 4, 5)).astype(np.float32)
SQ = RNG.standard_normal((3, 3)).astype(np.float32)
IT = np.array([[[100, 101], [110, 111]], [[200, 201], [210, 211]]], np.int32)
IV = np.array([[[0, 1], [1, 0]], [[0, 0], [1, 1]]], np.int32)
SEL = np.array([2, 0, 2], np.int32)
N = np.int32(3)
INPUTS = [X, H, BH, D, A, B, P, Q, SQ, IT, IV, SEL, N]

OUTPUTS = """rp_half rp_bf16 rp_e4m3 rp_e2m0 rp_h rp_b rp_d mm bmm dot diag tr ell outer sum1
rows tis tis2 tis3 dim pid rid fma2 o2 sw_m lm ls li br0 br1 half rp_q""".split()  # noqa: SIM905
# Outputs computed without float arithmetic: compared bit for bit on every board.
EXACT = """rp_half rp_bf16 rp_e4m3 rp_e2m0 rp_h rp_b rp_d diag tr tis tis2 tis3 dim pid rid o2
sw_m li br0 br1""".split()  # noqa: SIM905


def _run(text: str, inputs: list[np.ndarray], name: str = "misc.mlir") -> list[np.ndarray]:
    return run_graph(import_module(parse_text(text, name)), inputs)


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    return dict(zip(OUTPUTS, _run(MODEL.read_text(), INPUTS, str(MODEL)), strict=True))


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit patterns (-0 is not 0); a NaN matches any NaN (its payload is the
    operand's, which numpy's own casts do not promise to keep)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    ui = np.dtype(f"u{got.dtype.itemsize}")
    np.testing.assert_array_equal(got[~nan].view(ui), want[~nan].view(ui))


def _bf16_reference(x: np.ndarray, e: int, m: int) -> np.ndarray:
    """reduce_precision of bf16 values held in float32 (the host's bf16)."""
    hi = (x.view(np.uint32) >> 16).astype(np.int64)
    out = np.array([reduce_precision_bits(int(v), "bf16", e, m) for v in hi], np.uint32)
    y = (out << 16).view(np.float32)
    return np.where(np.isnan(x), x if m > 0 else np.float32(np.inf), y)


# ------------------------------------------------------------------ reduce_precision


def test_reduce_precision_spec_example(reference) -> None:
    """The spec's f64 example: +inf, NaN (kept), a denormal and 0 to 0, 65519 to
    65504, 65520 to +inf."""
    got = reference["rp_d"]
    np.testing.assert_array_equal(got[[0, 2, 3, 4, 5]], [np.inf, 0.0, 0.0, 65504.0, np.inf])
    assert np.isnan(got[1])


def test_reduce_precision_e5m10_is_float16(reference) -> None:
    """e5m10 on f32 is a round trip through IEEE half (numpy's float16, round to nearest
    even), except below half's least normal, where the narrower format has no
    subnormals and the value becomes a zero of its sign."""
    got = reference["rp_half"]
    with np.errstate(over="ignore"):
        want = X.astype(np.float16).astype(np.float32)
    tiny = np.abs(X) < 2.0 ** -14
    want[tiny] = np.copysign(0.0, X[tiny])
    _same_bits(got, want)
    assert got[9] == 1.0 and got[10] == 1 + 2.0 ** -9  # ties to even, both ways


def test_reduce_precision_e8m7_is_bfloat16(reference) -> None:
    """e8m7 on f32 is bfloat16's rounding (round to nearest even); the largest f32
    rounds up to +inf, an f32 subnormal keeps its top 7 mantissa bits."""
    _same_bits(reference["rp_bf16"], round_to_bf16(X))
    assert reference["rp_bf16"][12] == np.inf


@pytest.mark.parametrize("name,x,e,m", [
    ("rp_e4m3", X, 4, 3), ("rp_e2m0", X, 2, 0), ("rp_h", H, 3, 4), ("rp_d", D, 5, 10)])
def test_reduce_precision_against_definition(reference, name, x, e, m) -> None:
    """Bit for bit against the interpreter's definition on integers (e2m0: a NaN
    becomes +inf, having no mantissa bits to be a NaN with)."""
    _same_bits(reference[name], reduce_precision_reference(x, e, m))


def test_reduce_precision_bf16_operand(reference) -> None:
    _same_bits(reference["rp_b"], _bf16_reference(BH, 5, 2))


def test_reduce_precision_quantized(reference) -> None:
    """Of an i8 tensor (scale 0.05, zero point -3): dequantized, reduced, quantized
    again (the spec's dequantize_op_quantize); numpy's float32 steps give the same
    stored integers, so the dequantized outputs agree within f32 rounding (1e-6)."""
    scale, zp = np.float32(0.05), np.float32(-3)

    def quantize(v: np.ndarray) -> np.ndarray:
        return np.clip(np.round(v / scale + zp), -128, 127)

    real = ((quantize(A) - zp) * scale).astype(np.float32)
    again = quantize(reduce_precision_reference(real, 5, 1))
    np.testing.assert_allclose(reference["rp_q"], (again - zp) * scale, rtol=1e-6)
    assert not np.allclose(reference["rp_q"], real)  # one mantissa bit: values moved


@pytest.mark.parametrize("e,m", [(5, 10), (4, 3), (5, 2), (2, 1), (1, 0), (3, 9)])
def test_reduce_precision_every_half(e: int, m: int) -> None:
    """Every one of the 65536 f16 bit patterns, against the definition."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    text = (f"func.func @main(%x: tensor<65536xf16>) -> tensor<65536xf16> {{\n"
            f"  %r = stablehlo.reduce_precision %x, format = e{e}m{m} : tensor<65536xf16>\n"
            f"  return %r : tensor<65536xf16>\n}}\n")
    (got,) = _run(text, [x])
    _same_bits(got, reduce_precision_reference(x, e, m))


# ------------------------------------------------------------------ einsum


@pytest.mark.parametrize("name,spec,operands", [
    ("mm", "ab,bc->ac", (A, B)), ("bmm", "bij,bjk->bik", (P, Q)), ("dot", "ij,ij->", (A, A)),
    ("diag", "ii->i", (SQ,)), ("tr", "ij->ji", (A,)), ("ell", "...ij,...jk->...ik", (P, Q)),
    ("outer", "ab,cd->abcd", (A, B)), ("sum1", "xyz,yw->xw", (P, B)), ("rows", "ab->a", (A,))])
def test_einsum_against_numpy(reference, name: str, spec: str, operands) -> None:
    """numpy.einsum in float64, rounded to f32: within 2e-6 relative (+1e-6 absolute),
    the f32 rounding of sums of a few products and of the two-step sums."""
    want = np.einsum(spec, *(o.astype(np.float64) for o in operands)).astype(np.float32)
    got = reference[name]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_einsum_implicit_output() -> None:
    """Without '->' the result is the letters used once, sorted (numpy's rule): "ba,ac"
    is "ba,ac->bc"."""
    text = ('func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {\n'
            '  %r = "stablehlo.einsum"(%a, %b) {einsum_config = "ba,ac"} : (tensor<2x3xf32>, '
            'tensor<3x4xf32>) -> tensor<2x4xf32>\n  return %r : tensor<2x4xf32>\n}\n')
    (got,) = _run(text, [A, B])
    want = np.einsum("ba,ac", A.astype(np.float64), B.astype(np.float64))
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("spec,shapes", [
    ("...ij,...jk->...ik", ((3, 4), (2, 4, 5))),  # `...` only on one side: broadcast
    ("iii->i", ((3, 3, 3),)),  # a label three times: the main diagonal
    ("ijk,kji->j", ((2, 3, 4), (4, 3, 2))),  # two contracted, one batch label
    ("a,b,", None)])  # three operands named for a two-operand op: refused
def test_einsum_shapes(spec: str, shapes) -> None:
    """More configs on the reference against numpy.einsum (same tolerance as above)."""
    shapes = shapes or ((2,), (3,))
    xs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(spec, *(x.astype(np.float64) for x in xs)) if spec[-1] != "," else None
    out = "".join(f"{d}x" for d in (want.shape if want is not None else ()))
    args = ", ".join(f"%a{i}: tensor<{'x'.join(map(str, s))}xf32>"
                     for i, s in enumerate(shapes))
    types = ", ".join(f"tensor<{'x'.join(map(str, s))}xf32>" for s in shapes)
    operands = ", ".join(f"%a{i}" for i in range(len(xs)))
    name = "unary_einsum" if len(xs) == 1 else "einsum"
    text = (f"func.func @main({args}) -> tensor<{out}f32> {{\n"
            f'  %r = "stablehlo.{name}"({operands}) {{einsum_config = "{spec}"}} : ({types}) '
            f"-> tensor<{out}f32>\n  return %r : tensor<{out}f32>\n}}\n")
    if want is None:
        with pytest.raises(CompileError, match="names 3 operands, the op has 2"):
            _run(text, xs)
        return
    (got,) = _run(text, xs)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-6, atol=1e-6)


# ------------------------------------------------------------------ the others


def test_torch_index_select(reference) -> None:
    """Batched along the last dim (IREE's regression case, dim = batch_dims = -1:
    result[b0, b1, i] = x[b0, b1, index[b0, b1, i]]), and plain index selects."""
    np.testing.assert_array_equal(reference["tis"], [[[100, 101], [111, 110]],
                                                     [[200, 200], [211, 211]]])
    np.testing.assert_array_equal(reference["tis2"], np.take(P, SEL, axis=1))
    np.testing.assert_array_equal(reference["tis3"], np.take(SQ, SEL, axis=0))


def test_shapes_ids_barrier_composite(reference) -> None:
    assert reference["dim"].dtype == np.int32 and reference["dim"] == 5
    for name in ("pid", "rid"):  # one device: replica 0 of partition 0
        assert reference[name].dtype == np.uint32 and reference[name] == 0
    _same_bits(reference["o2"], X)  # the barrier is the identity
    once = A * A + A  # the decomposition, applied twice
    np.testing.assert_allclose(reference["fma2"], once * A + A, rtol=1e-6)


def test_tuples_through_call_loop_and_if(reference) -> None:
    """@swap returns (m * s, s) for (s, m); the loop applies it N times doubling s
    each time, and the if picks (a, swapped) when N > 2."""
    _same_bits(reference["sw_m"], A * np.float32(0.5))
    s, m = np.float32(0.5), A.copy()
    for _ in range(int(N)):
        m, s = m * s, s + s
    np.testing.assert_array_equal(reference["lm"], m)
    assert reference["ls"] == s and reference["li"] == N
    _same_bits(reference["br0"], A)
    _same_bits(reference["br1"], A * np.float32(0.5))


def test_generic_form_gives_the_same_outputs(reference) -> None:
    """The model printed in generic form (`--dump-generic`) imports to the same graph
    outputs: every op here reads the same in either form."""
    generic = print_generic(parse_text(MODEL.read_text(), str(MODEL)))
    assert "stablehlo.tuple\"" in generic and "\"stablehlo.einsum\"" in generic
    for name, got in zip(OUTPUTS, _run(generic, INPUTS, "generic.mlir"), strict=True):
        _same_bits(got, reference[name])


def test_entry_tuples_are_flattened() -> None:
    """A tuple argument or result of the model is its elements, depth-first."""
    text = ("func.func @main(%t: tuple<tensor<2xf32>, tuple<tensor<i32>>>) -> "
            "tuple<tensor<i32>, tensor<2xf32>> {\n"
            "  %a = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf32>, tuple<tensor<i32>>>)"
            " -> tensor<2xf32>\n"
            "  %u = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf32>, tuple<tensor<i32>>>)"
            " -> tuple<tensor<i32>>\n"
            "  %i = stablehlo.get_tuple_element %u[0] : (tuple<tensor<i32>>) -> tensor<i32>\n"
            "  %r = stablehlo.tuple %i, %a : tuple<tensor<i32>, tensor<2xf32>>\n"
            "  return %r : tuple<tensor<i32>, tensor<2xf32>>\n}\n")
    graph = import_module(parse_text(text, "t.mlir"))
    assert [str(t.type) for t in graph.inputs] == ["tensor<2xf32>", "tensor<i32>"]
    i, a = run_graph(graph, [np.array([1.5, -2.0], np.float32), np.int32(7)])
    assert i == 7 and a.tolist() == [1.5, -2.0]


SPEC_EXAMPLES = MODEL.parent / "misc_spec_examples.mlir"


def test_spec_interpreter_examples() -> None:
    """The StableHLO interpreter's own tests for these ops (stablehlo/tests/interpret:
    tuple_and_get_tuple_element, composite, get_dimension_size, optimization_barrier,
    reduce_precision), their checks as outputs."""
    got = _run(SPEC_EXAMPLES.read_text(), [], str(SPEC_EXAMPLES))
    assert got[0].tolist() == [1.0, 2.0] and got[1] == 3 and got[2] == 3 and got[3] == 3
    assert got[4] == 0.0 and got[5] == 1.0
    assert got[6][[0, 2, 3, 4, 5]].tolist() == [np.inf, 0.0, 0.0, 65504.0, np.inf]
    assert np.isnan(got[6][1]) and got[7] == np.inf  # no mantissa bits: NaN is +inf


def test_tuples_through_case_and_blocks() -> None:
    """A case whose branches return tuples, and a tuple passed between blocks."""
    text = """func.func @main(%i: tensor<i32>, %a: tensor<2xf32>) -> (tensor<2xf32>, tensor<i32>) {
  %t = "stablehlo.case"(%i) ({
    %z = stablehlo.constant dense<0> : tensor<i32>
    %r = stablehlo.tuple %a, %z : tuple<tensor<2xf32>, tensor<i32>>
    stablehlo.return %r : tuple<tensor<2xf32>, tensor<i32>>
  }, {
    %n = stablehlo.negate %a : tensor<2xf32>
    %o = stablehlo.constant dense<1> : tensor<i32>
    %r = stablehlo.tuple %n, %o : tuple<tensor<2xf32>, tensor<i32>>
    stablehlo.return %r : tuple<tensor<2xf32>, tensor<i32>>
  }) : (tensor<i32>) -> tuple<tensor<2xf32>, tensor<i32>>
  cf.br ^bb1(%t : tuple<tensor<2xf32>, tensor<i32>>)
^bb1(%u: tuple<tensor<2xf32>, tensor<i32>>):
  %v = stablehlo.get_tuple_element %u[0] : (tuple<tensor<2xf32>, tensor<i32>>) -> tensor<2xf32>
  %k = stablehlo.get_tuple_element %u[1] : (tuple<tensor<2xf32>, tensor<i32>>) -> tensor<i32>
  return %v, %k : tensor<2xf32>, tensor<i32>
}
"""
    a = np.array([1.5, -2.0], np.float32)
    for i, sign in ((0, 1), (1, -1), (7, -1)):  # an index out of range takes the last
        v, k = _run(text, [np.int32(i), a])
        assert v.tolist() == (sign * a).tolist() and k == min(i, 1)


# ------------------------------------------------------------------ errors

_ERRORS = [
    ("%t = stablehlo.tuple %a : tuple<tensor<2xf32>>\n"
     "  %r = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf32>>) -> tensor<2xf32>",
     "index 1 is outside the tuple"),
    ("%t = stablehlo.tuple %a : tuple<tensor<2xf32>>\n"
     "  %g = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf32>>) -> tensor<3xf32>\n"
     "  %r = stablehlo.slice %g [0:2] : (tensor<3xf32>) -> tensor<2xf32>",
     "element 0 has type tensor<2xf32>, not tensor<3xf32>"),
    ("%r = stablehlo.get_tuple_element %a[0] : (tensor<2xf32>) -> tensor<2xf32>",
     "which is not a tuple"),
    ('%r = stablehlo.composite "my.op" %a {decomposition = @nowhere} : '
     "(tensor<2xf32>) -> tensor<2xf32>", "composite 'my.op': no function '@nowhere'"),
    ('%r = stablehlo.composite "my.op" %a {decomposition = @other} : '
     "(tensor<2xf32>) -> tensor<2xf32>", "are not those of '@other'"),
    ("%r = stablehlo.reduce_precision %a, format = e0m3 : tensor<2xf32>",
     "exponent_bits must be at least 1"),
    ('%r = stablehlo.unary_einsum %a, config = "ab->a" : (tensor<2xf32>) -> tensor<2xf32>',
     "does not fit a rank-1 operand"),
    ('%r = stablehlo.unary_einsum %a, config = "i->j" : (tensor<2xf32>) -> tensor<2xf32>',
     "each result label must appear once"),
    ('%r = stablehlo.unary_einsum %a, config = "i->" : (tensor<2xf32>) -> tensor<2xf32>',
     "computes tensor<f32>, not the declared tensor<2xf32>"),
    ('%r = "stablehlo.torch_index_select"(%a, %i) <{dim = 1 : i64, batch_dims = 0 : i64}>'
     " : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>", "dim 1 is outside"),
    ("%d = stablehlo.get_dimension_size %a, dim = 1 : (tensor<2xf32>) -> tensor<i32>\n"
     "  %r = stablehlo.convert %d : (tensor<i32>) -> tensor<2xf32>", "dimension 1 is outside"),
    ("%r, %s = stablehlo.optimization_barrier %a, %i : tensor<2xf32>, tensor<2xi32>\n"
     "  %bad = \"stablehlo.optimization_barrier\"(%a) : (tensor<2xf32>) -> tensor<2xi32>",
     "results must have the operands' types"),
]


@pytest.mark.parametrize("body,message", _ERRORS)
def test_errors_are_located(tmp_path: Path, capsys, body: str, message: str) -> None:
    """Ill-formed uses: exit 2, a located line naming the op, no traceback."""
    model = tmp_path / "bad.mlir"
    model.write_text("func.func private @other(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
                     "  return %x : tensor<3xf32>\n}\n"
                     "func.func @main(%a: tensor<2xf32>, %i: tensor<2xi32>) -> tensor<2xf32> {\n"
                     f"  {body}\n  return %r : tensor<2xf32>\n}}\n")
    rc = run_cli.main([str(model), "--reference"])
    _, err = capsys.readouterr()
    assert rc == 2, err
    assert message in err and "Traceback" not in err
    assert err.startswith(f"{model}:5:") or err.startswith(f"{model}:6:"), err


# ------------------------------------------------------------------ boards


@pytest.mark.parametrize("board", BOARDS)
def test_misc_ops_on_boards(board: str, reference, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """The firmware's outputs match the reference (--check), and the ops computed on
    bits or moving data without arithmetic match it bit for bit."""
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, **{f"input_{i}": v for i, v in enumerate(INPUTS)})
    rc = run_cli.main([str(MODEL), "--board", board, "--check", "--inputs", str(inputs),
                       "--save-outputs", str(outputs), "-o", str(tmp_path / board)])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert "check: outputs match the reference" in out
    with np.load(outputs) as z:
        got = {name: z[f"output_{i}"] for i, name in enumerate(OUTPUTS)}
    for name in EXACT:
        _same_bits(got[name], reference[name])


def test_functions_the_entry_never_calls_are_left_alone() -> None:
    """Like any op of an uncalled function, a broken tuple there is no error."""
    text = ("func.func private @unused(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  %t = stablehlo.tuple %a : tuple<tensor<2xf32>>\n"
            "  %r = stablehlo.get_tuple_element %t[3] : (tuple<tensor<2xf32>>) -> tensor<2xf32>\n"
            "  return %r : tensor<2xf32>\n}\n"
            "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  return %a : tensor<2xf32>\n}\n")
    (got,) = _run(text, [np.array([1.0, 2.0], np.float32)])
    assert got.tolist() == [1.0, 2.0]
