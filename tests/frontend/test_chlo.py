"""CHLO ops (toolchain/frontend/chlo.py): each op's semantics on the reference, and the
whole set compiled and run with --check on cortex-m4, riscv32, aarch64 and x86-64.

tests/frontend/data/chlo_ops.mlir applies every CHLO op minirt takes to fixed inputs
(INPUTS); one firmware per board runs them all. The reference's outputs are checked
against the ops' definitions (ChloOps.td and the XLA operation semantics it cites):
the special functions against mpmath at 50 digits, rounded to f32 (the reference
computes in float64 and rounds once, so it must be within 1 ulp: rtol 2**-23), the
rest against numpy exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli
from toolchain.frontend import import_module
from toolchain.mlir import parse_text
from toolchain.reference import run_graph
from toolchain.types import bf16_from_bits, round_to_bf16

mpmath = pytest.importorskip("mpmath", reason="mpmath (the dev extra) is the oracle here")

MODEL = Path(__file__).resolve().parent / "data" / "chlo_ops.mlir"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]

X = np.array([[-3.7, -2.25, -0.5, -1e-3, 0.0, 0.3, 0.9, 1.4],
              [1.9, 2.5, 3.3, 4.75, 6.0, 9.5, -4.2, 0.05]], np.float32)
U = np.array([-0.99, -0.7, -0.3, -1e-4, 0.0, 0.45, 0.8, 0.999], np.float32)
S = np.array([1.5, 2.0, 2.5, 3.0, 4.25, 6.0, 9.0, 12.0], np.float32)
Q = np.array([0.3, 1.0, 1.7, 2.5, 0.8, 5.0, 3.3, 10.0], np.float32)
N = np.array([0, 1, 2, 3, 0, 1, 4, 2], np.float32)
W = np.array([np.inf, -np.inf, 0.0, 1.0, -3e38, 3e38, np.nan, -0.0], np.float32)
I = np.array([[-7, 100000, -2147483648, 2147483647, 5, -1, 123456789, 0],  # noqa: E741
              [1 << 20, -(1 << 20), 77777, -99999, 3, 65536, -65536, 42]], np.int32)
J = np.array([0, 1, 3, 7, 31, 2, 16, 5], np.int32)
C = np.array([2.0, -0.5], np.float32)
T = np.array([1.0, 3.0, 3.0, np.nan, -np.inf, 3.0], np.float32)  # ties and a NaN
RX = np.linspace(-2, 2, 24).reshape(6, 4).astype(np.float32)
RW = np.cos(np.arange(60)).reshape(3, 4, 5).astype(np.float32)
GS = np.array([2, 0, 3], np.int32)  # an empty group, and a last row in none
INPUTS = [X, U, S, Q, N, W, I, J, C, T, RX, RW, GS]

OUTPUTS = """erf erfc lgamma digamma i1e tan atan sinh cosh asinh square conj erf_inv asin
acos atanh acosh zeta polygamma next isinf ispos isneg const like x2 bmul bcmp bsel bsub
bdiv bmax bmin bpow brem batan2 band bor bxor bshl bsra bsrl bnext bzeta bpoly mulhi topv
topi tiev tiei ragged""".split()  # noqa: SIM905

mp = mpmath.mp
mp.dps = 50


def _mp(f, *arrays: np.ndarray) -> np.ndarray:
    """f over float64 copies of the f32 inputs (broadcast), at 50 digits, to f32."""
    bs = np.broadcast_arrays(*(a.astype(np.float64) for a in arrays))
    out = [float(f(*(mp.mpf(float(v)) for v in vals))) for vals in zip(*(b.ravel() for b in bs))]
    return np.array(out).reshape(bs[0].shape).astype(np.float32)


def _lgamma(x):
    return mp.inf if x <= 0 and x == mp.floor(x) else mp.log(abs(mp.gamma(x)))


def _digamma(x):
    return mp.nan if x <= 0 and x == mp.floor(x) else mp.digamma(x)


# Special functions: name -> (mpmath definition, operand arrays).
SPECIAL = {
    "erf": (mp.erf, [X]), "erfc": (mp.erfc, [X]), "lgamma": (_lgamma, [X]),
    "digamma": (_digamma, [X]), "i1e": (lambda x: mp.besseli(1, x) * mp.exp(-abs(x)), [X]),
    "tan": (mp.tan, [X]), "atan": (mp.atan, [X]), "sinh": (mp.sinh, [X]),
    "cosh": (mp.cosh, [X]), "asinh": (mp.asinh, [X]), "erf_inv": (mp.erfinv, [U]),
    "asin": (mp.asin, [U]), "acos": (mp.acos, [U]), "atanh": (mp.atanh, [U]),
    "acosh": (mp.acosh, [S]), "zeta": (mp.zeta, [S, Q]), "bzeta": (mp.zeta, [S, Q]),
    "polygamma": (lambda n, x: mp.polygamma(int(n), x), [N, Q]),
    "bpoly": (lambda n, x: mp.polygamma(int(n), x), [N, Q]),
}


def _top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """k largest along the last dim, NaN above everything, ties by the lower index."""
    key = np.where(np.isnan(x), np.inf, x)
    rank = np.isnan(x).astype(int)
    idx = np.lexsort((np.arange(x.shape[-1]) + np.zeros_like(x, int), -key, -rank), axis=-1)
    idx = idx[..., :k]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


def _mulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ((a.astype(np.int64) * b.astype(np.int64)) >> 32).astype(np.int32)


def _exact() -> dict[str, np.ndarray]:
    """The non-special outputs by numpy: exact."""
    x2 = X + U
    with np.errstate(all="ignore"):
        out = {
            "square": X * X, "conj": X, "next": np.nextafter(X, x2),
            "isinf": np.isinf(W), "ispos": np.inf == W, "isneg": -np.inf == W,
            "const": np.array([1.5, -2.0, 0.25], np.float32),
            "like": np.full_like(X, 0.75), "x2": x2, "bmul": X * C[:, None], "bcmp": X < U,
            "bsel": np.where(X < U, X, np.broadcast_to(U, X.shape)), "bsub": X - U,
            "bdiv": X / S, "bmax": np.maximum(X, U), "bmin": np.minimum(U, X),
            "brem": np.fmod(X, S), "band": I & J, "bor": I | J, "bxor": I ^ J,
            "bshl": (I.astype(np.int64) << J).astype(np.int32), "bsra": I >> J,
            "bsrl": (I.view(np.uint32) >> J.astype(np.uint32)).view(np.int32),
            "bnext": np.nextafter(X, U), "mulhi": _mulhi(I, I),
        }
    out["topv"], out["topi"] = _top_k(X, 3)
    out["tiev"], out["tiei"] = _top_k(T, 4)
    return out


def _ragged_dot() -> np.ndarray:
    """lax.ragged_dot's definition: rows of each group times that group's matrix, rows
    past the groups zero (float64, then f32)."""
    out, start = np.zeros((6, 5)), 0
    for g, n in enumerate(GS):
        out[start:start + n] = RX[start:start + n].astype(np.float64) @ RW[g]
        start += n
    return out.astype(np.float32)


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    graph = import_module(parse_text(MODEL.read_text(), str(MODEL)))
    return dict(zip(OUTPUTS, run_graph(graph, INPUTS), strict=True))


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_functions_on_the_reference(reference, name: str) -> None:
    f, args = SPECIAL[name]
    want = _mp(f, *args)
    got = reference[name]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=2.0**-23, atol=0,
                               equal_nan=True, err_msg=name)


def test_ragged_dot(reference) -> None:
    """Sums of four products: within 1e-6 of the float64 value (f32 rounding)."""
    np.testing.assert_allclose(reference["ragged"], _ragged_dot(), rtol=1e-6, atol=1e-6)
    assert (reference["ragged"][5] == 0).all()


def test_power_and_atan2_broadcast(reference) -> None:
    """IEEE functions the mathlib already had, here behind broadcast_*: float64 numpy
    rounded to f32 (the reference's own rounding)."""
    want = np.power(S.astype(np.float64), X.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(reference["bpow"], want, rtol=2.0**-23)
    want = np.arctan2(X.astype(np.float64), U.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(reference["batan2"], want, rtol=2.0**-23)


@pytest.mark.parametrize("name", sorted(_exact()))
def test_exact_ops_on_the_reference(reference, name: str) -> None:
    want = _exact()[name]
    got = reference[name]
    assert got.shape == want.shape and got.dtype == want.dtype, name
    np.testing.assert_array_equal(got, want, err_msg=name)
    if got.dtype.kind == "f":  # -0 stays -0 (next_after, conj, select)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), name


@pytest.mark.parametrize("board", BOARDS)
def test_chlo_ops_on_boards(board: str, reference, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """The firmware's outputs match the reference (--check: isclose rtol 1e-5, atol
    1e-6; integers and predicates exactly), and the exact ops bit for bit."""
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, **{f"input_{i}": v for i, v in enumerate(INPUTS)})
    rc = run_cli.main([str(MODEL), "--board", board, "--check", "--inputs", str(inputs),
                       "--save-outputs", str(outputs), "-o", str(tmp_path / board)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "check: outputs match the reference" in out
    with np.load(outputs) as z:
        got = {name: z[f"output_{i}"] for i, name in enumerate(OUTPUTS)}
    for name, want in _exact().items():
        np.testing.assert_array_equal(got[name], want, err_msg=f"{board} {name}")
    np.testing.assert_allclose(got["ragged"], _ragged_dot(), rtol=1e-6, atol=1e-6)
    # Special functions: within the mathlib's documented bounds (docs/mathlib.md: 8 ulp
    # at most over these inputs, which avoid the zeros of lgamma and digamma on the
    # negative axis, where only an absolute bound holds).
    for name, (f, args) in SPECIAL.items():
        want = _mp(f, *args).reshape(got[name].shape)
        np.testing.assert_allclose(got[name], want, rtol=8 * 2.0**-23, atol=1e-44,
                                   equal_nan=True, err_msg=f"{board} {name}")


# ------------------------------------------------------------------ errors

ERRORS = [
    ("%r = chlo.erf %i : tensor<2xi32> -> tensor<2xi32>", "tensor<2xi32>",
     "'chlo.erf' cannot be computed: element type i32"),
    ('%r = "chlo.scan"(%i) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 0, 1>, '
     "resultSegmentSizes = array<i32: 0, 1>}> ({\n^bb0(%c: tensor<2xi32>):\n"
     "  stablehlo.return %c : tensor<2xi32>\n}) : (tensor<2xi32>) -> tensor<2xi32>",
     "tensor<2xi32>", "'chlo.scan' needs at least one scanned input (its length is the trip "
     "count)"),
    ("%r = chlo.broadcast_add %i, %j : (tensor<2xi32>, tensor<3xi32>) -> tensor<3xi32>",
     "tensor<3xi32>", "operand tensor<2xi32> does not broadcast to the result's shape [3]"),
    ("%r, %k = chlo.top_k(%i, k = 3) : tensor<2xi32> -> (tensor<3xi32>, tensor<3xi32>)",
     "tensor<3xi32>", "k = 3 must be between 0 and the last dim of tensor<2xi32>"),
    ("%r = chlo.mulhi %a, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>",
     "tensor<2x3xf32>", "takes integers of up to 64 bits, not f32"),
    ('%r = "chlo.ragged_dot"(%a, %b, %g) <{ragged_dot_dimension_numbers = '
     "#chlo.ragged_dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], "
     "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0], "
     "lhs_ragged_dimensions = [1], rhs_group_dimensions = []>}> : (tensor<2x3xf32>, "
     "tensor<3x2xf32>, tensor<2xi32>) -> tensor<2x2x2xf32>", "tensor<2x2x2xf32>",
     "ragged contracting and batch dims are not implemented"),
    ('%r = "chlo.erf"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>',
     "tensor<2x3xf32>", "'chlo.erf' takes 1 operand, not 2"),
    ("%r = chlo.is_inf %j : tensor<3xi32> -> tensor<3xi1>", "tensor<3xi1>",
     "takes a float tensor, not tensor<3xi32>"),
    ("%r = chlo.square %i : tensor<2xi32> -> tensor<2xf32>", "tensor<2xf32>",
     "result 0 is tensor<2xi32> by CHLO's rules, not the declared tensor<2xf32>"),
]


@pytest.mark.parametrize("body,result,message", ERRORS, ids=range(len(ERRORS)))
def test_errors_are_located(tmp_path: Path, capsys, body: str, result: str,
                            message: str) -> None:
    """Ill-formed or refused CHLO: exit 2, one located line naming the op, no
    traceback. (A sweep of every CHLO op in generic form with 0 to 3 operands of seven
    types, four result lists and eight attribute sets, 143,616 models, ended in a graph
    or a located error each.)"""
    model = tmp_path / "bad.mlir"
    model.write_text("func.func @main(%i: tensor<2xi32>, %j: tensor<3xi32>, "
                     "%l: tensor<2xi64>, %a: tensor<2x3xf32>, %b: tensor<3x2xf32>, "
                     f"%g: tensor<2xi32>) -> {result} {{\n  {body}\n"
                     f"  return %r : {result}\n}}\n")
    rc = run_cli.main([str(model), "--reference"])
    _, err = capsys.readouterr()
    assert rc == 2, err
    assert message in err, err
    assert f"{model}:2:" in err and "Traceback" not in err, err


# ------------------------------------------------------------------ mulhi, 64 bits

_EDGES = [0, 1, -1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, -2**63, -2**63 + 1, 3**39]


def _mulhi64_case(kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Operands (edges of the 32-bit halves and the sign, then random) and the high 64
    bits of their exact product by Python's unbounded integers."""
    dt = np.int64 if kind == "i" else np.uint64
    rng = np.random.default_rng(64)
    edges = np.array([v % 2**64 for v in _EDGES], np.uint64).view(dt)
    a = np.concatenate([np.repeat(edges, len(edges)),
                        rng.integers(0, 2**64, 28, np.uint64, endpoint=False).view(dt)])
    b = np.concatenate([np.tile(edges, len(edges)),
                        rng.integers(0, 2**64, 28, np.uint64, endpoint=False).view(dt)])
    want = np.array([((int(x) * int(y)) >> 64) % 2**64 for x, y in zip(a, b, strict=True)],
                    np.uint64).view(dt)
    return a, b, want


@pytest.mark.parametrize("board", [None, "cortex-m4", "x86-64"])
@pytest.mark.parametrize("kind", ["i", "ui"])
def test_mulhi_64_bits(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str,
                       board: str | None) -> None:
    """i64 / ui64 mulhi (by 32-bit halves: no 128-bit type) equals the high half of the
    exact product, on the reference and bit for bit on the boards."""
    a, b, want = _mulhi64_case(kind)
    t = f"tensor<{a.size}x{kind}64>"
    model = tmp_path / "m.mlir"
    model.write_text(f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
                     f"  %r = chlo.mulhi %a, %b : {t}, {t} -> {t}\n"
                     f"  return %r : {t}\n}}\n")
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, input_0=a, input_1=b)
    where = ["--reference"] if board is None else ["--board", board, "--check", "-o",
                                                   str(tmp_path / board)]
    rc = run_cli.main([str(model), *where, "--inputs", str(inputs), "--save-outputs",
                       str(outputs)])
    _, err = capsys.readouterr()
    assert rc == 0, err
    with np.load(outputs) as z:
        np.testing.assert_array_equal(z["output_0"], want)


# ------------------------------------------------------------------ f64, f16, bf16

TYPES_MODEL = MODEL.parent / "chlo_types.mlir"
D = np.array([1.5, 2.25, 3.0, 0.3, 7.5, 1.1], np.float64)
H = np.array([-2.5, 0.5, 1.25, 3.5, 6.0, 0.0], np.float16)
B = round_to_bf16(np.array([-0.75, -0.1, 0.0, 0.3, 0.9, 0.5], np.float32))
HY = np.array([0.0, 1.0, 1.25, -np.inf, np.inf, -1.0], np.float16)
BY = round_to_bf16(np.array([0.0, 1.0, 0.0, -1.0, np.inf, -1.0], np.float32))


def _bf16_step(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """nextafter on bf16's grid by brute force: the nearest bf16 pattern past x toward y
    among all 65,536 (independent of the bit arithmetic under test)."""
    grid = bf16_from_bits(np.arange(1 << 16, dtype=np.uint16))
    grid = np.unique(grid[np.isfinite(grid)])  # sorted; -0 and +0 merge
    out = []
    for a, b in zip(x, y, strict=True):
        if a == b:
            out.append(b)
        elif b > a:
            out.append(grid[np.searchsorted(grid, a, side="right")])
        else:
            out.append(grid[np.searchsorted(grid, a, side="left") - 1])
    return np.array(out, np.float32)


@pytest.mark.parametrize("board", BOARDS)
def test_other_float_types_on_boards(board: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """f64 goes through f32 (f32's accuracy: within 4e-7 relative of mpmath), f16 and
    bf16 are computed in f32 and rounded once (within one ulp of their format), and
    next_after steps on each type's own grid, bit for bit."""
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, input_0=D, input_1=H, input_2=B, input_3=HY, input_4=BY)
    rc = run_cli.main([str(TYPES_MODEL), "--board", board, "--check", "--inputs",
                       str(inputs), "--save-outputs", str(outputs), "-o",
                       str(tmp_path / board)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "check: outputs match the reference" in out
    with np.load(outputs) as z:
        got = [z[f"output_{i}"] for i in range(11)]
    d = [mp.mpf(float(v)) for v in D]
    np.testing.assert_allclose(got[0], [float(mp.erf(v)) for v in d], rtol=4e-7)
    np.testing.assert_allclose(got[1], [float(_lgamma(v)) for v in d], rtol=4e-7)
    want = [float(mp.zeta(v, v)) if v > 1 else np.nan for v in d]
    np.testing.assert_allclose(got[2], want, rtol=4e-7, equal_nan=True)
    h = [mp.mpf(float(v)) for v in H]
    # f16: within one ulp of the format (2**-24 absolute among the subnormals).
    np.testing.assert_allclose(got[3], [float(mp.erfc(v)) for v in h], rtol=2.0**-10,
                               atol=2.0**-24)
    np.testing.assert_allclose(got[4], [float(_digamma(v)) for v in h], rtol=2.0**-10,
                               atol=2.0**-24, equal_nan=True)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[5], np.where(H == HY, HY, np.nextafter(H, HY)))
    b = [mp.mpf(float(v)) for v in B]
    np.testing.assert_allclose(got[6], [float(mp.erfinv(v)) for v in b], rtol=2.0**-7)
    np.testing.assert_allclose(got[7], [float(mp.besseli(1, v) * mp.exp(-abs(v)))
                                        for v in b], rtol=2.0**-7)
    np.testing.assert_array_equal(got[8], _bf16_step(B, BY))
    np.testing.assert_array_equal(got[9], np.sort(B)[::-1][:3])
    np.testing.assert_array_equal(got[10], np.argsort(-B, kind="stable")[:3])


# ------------------------------------------------------------------ complex

COMPLEX_MODEL = MODEL.parent / "chlo_complex.mlir"
RE = np.array([[1.0, -2.0, 3.0], [0.5, -0.0, np.inf]], np.float32)
IM = np.array([4.0, -5.0, 0.0], np.float32)


@pytest.mark.parametrize("board", BOARDS)
def test_complex_broadcast_and_conj_on_boards(board: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """broadcast_complex pairs each real part with its broadcast imaginary part; conj
    negates the imaginary part (a zero becomes -0): bit for bit, infinities included."""
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, input_0=RE, input_1=IM)
    rc = run_cli.main([str(COMPLEX_MODEL), "--board", board, "--check", "--inputs",
                       str(inputs), "--save-outputs", str(outputs), "-o",
                       str(tmp_path / board)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "check: outputs match the reference" in out
    with np.load(outputs) as z:
        pair, conj, imag = z["output_0"], z["output_1"], z["output_2"]
    im = np.broadcast_to(IM, RE.shape)
    for got, want_im in ((pair, im), (conj, -im)):
        assert got.dtype == np.complex64
        np.testing.assert_array_equal(got.real.view(np.uint32), RE.view(np.uint32))
        np.testing.assert_array_equal(got.imag.view(np.uint32),
                                      np.ascontiguousarray(want_im).view(np.uint32))
    np.testing.assert_array_equal(imag.view(np.uint32),
                                  np.ascontiguousarray(-im).view(np.uint32))
