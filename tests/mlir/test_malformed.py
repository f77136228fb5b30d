"""Malformed models: every one must give a located one-line error, exit 2, no traceback.

Each case is run through `minirt-build --dump-ir` in-process; a few also through a
real subprocess so the console-script path (and its exit status) is covered too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolchain.cli import build

REPO = Path(__file__).resolve().parents[2]

# A two-argument function header; cases append a body (often deliberately unfinished).
H = "func.func @main(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {\n"
END = "  return %0 : tensor<4xf32>\n}\n"
M = "func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {\n"


@dataclass
class Case:
    id: str
    text: str
    line: int
    col: int
    message: str
    args: tuple[str, ...] = ()


CASES = [
    # ---------------------------------------------------------------- truncated files
    Case("truncated-mid-op", H + "  %0 = stablehlo.add %a,", 2, 24, "expected ':'"),
    Case("truncated-mid-operands", H + "  %0 = stablehlo.add ", 2, 22,
         "expected ':' before the operation's type, found end of file"),
    Case("truncated-mid-tensor-type", H + "  %0 = stablehlo.add %a, %a : tensor<4x", 2, 40,
         "expected element type, found end of file"),
    Case("truncated-mid-dense", H + "  %c = stablehlo.constant dense<[1.0, 2.0", 2, 42,
         "expected ']' to close the list, found end of file"),
    Case("truncated-mid-hex-dense", H + '  %c = stablehlo.constant dense<"0x0000', 2, 33,
         "unterminated string literal"),
    Case("truncated-mid-region", H + "  %0 = stablehlo.abs %a : tensor<4xf32>\n", 3, 1,
         "region is not closed"),
    Case("truncated-mid-generic-name", H + '  %0 = "stablehlo.add', 2, 8,
         "unterminated string literal"),
    Case("truncated-mid-signature", "func.func @main(%a: tensor<4xf32>", 1, 34,
         "found end of file"),
    Case("truncated-resource-section",
         H + "  return %a : tensor<4xf32>\n}\n{-#\n  dialect_resources: {\n", 6, 1,
         "expected dialect name, found end of file"),
    Case("empty-file", "", 1, 1, "no function '@main'"),
    # ---------------------------------------------------------------- bad tokens
    Case("bad-character", H + "  %0 = stablehlo.abs %a : tensor<4xf32> $\n" + END, 2, 41,
         "unexpected character '$'"),
    Case("bad-element-type", H + "  %0 = stablehlo.abs %a : tensor<4xf33>\n" + END, 2, 36,
         "unsupported element type 'f33'"),
    Case("missing-equals", H + "  %0 stablehlo.abs %a : tensor<4xf32>\n" + END, 2, 6,
         "expected '=' after result names"),
    Case("generic-op-without-function-type",
         H + '  %0 = "foo.bar"(%a) : tensor<4xf32>\n' + END, 2, 24, "expected function type"),
    Case("unbalanced-loc", H + '  %0 = stablehlo.abs %a : tensor<4xf32> loc("x"\n', 2, 44,
         "unbalanced '('"),
    Case("undefined-attribute-alias",
         H + '  %0 = "foo.bar"(%a) {x = #nope} : (tensor<4xf32>) -> tensor<4xf32>\n' + END,
         2, 27, "undefined attribute alias '#nope'"),
    Case("quant-float-storage",
         "func.func @main(%a: tensor<4x!quant.uniform<f32:f32, 0.5>>) -> tensor<4xf32> {\n",
         1, 45, "storage type must be an integer"),
    # ---------------------------------------------------------------- bad dense literals
    Case("dense-wrong-count",
         H + "  %0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<4xf32>\n" + END,
         2, 33, "dense literal has 3 elements in a dimension of size 4"),
    Case("dense-not-a-number",
         H + "  %0 = stablehlo.constant dense<[1.0, abc, 2.0, 3.0]> : tensor<4xf32>\n" + END,
         2, 39, "expected a number in dense literal, found 'abc'"),
    Case("dense-bad-hex-length",
         H + '  %0 = stablehlo.constant dense<"0x000000"> : tensor<4xf32>\n' + END,
         2, 33, "hex literal has 3 bytes but 'tensor<4xf32>' needs 16"),
    Case("dense-bad-hex-digit",
         H + '  %0 = stablehlo.constant dense<"0x0G"> : tensor<4xf32>\n' + END,
         2, 33, "malformed hex in dense literal"),
    Case("dense-int-out-of-range",
         H + "  %0 = stablehlo.constant dense<300> : tensor<4xi8>\n" + END,
         2, 33, "integer literal 300 does not fit in i8"),
    Case("dense-hex-float-too-wide",
         H + "  %0 = stablehlo.constant dense<0x1FF800000> : tensor<4xf32>\n" + END,
         2, 33, "does not fit in f32"),
    Case("dense-nested-too-shallow",
         H + "  %0 = stablehlo.constant dense<[1, 2]> : tensor<2x2xi32>\n" + END,
         2, 33, "nested too shallowly for rank 2"),
    Case("dense-bool-in-float", H + "  %0 = stablehlo.constant dense<true> : tensor<4xf32>\n"
         + END, 2, 33, "boolean literal in a dense literal of type f32"),
    Case("dense-i1-not-0-or-1", H + "  %0 = stablehlo.constant dense<2> : tensor<4xi1>\n"
         + END, 2, 33, "i1 literal must be 0 or 1"),
    Case("dense-int-literal-float",
         H + "  %0 = stablehlo.constant dense<1.5> : tensor<4xi32>\n" + END,
         2, 33, "expected integer literal for i32, found '1.5'"),
    Case("dense-resource-missing-blob",
         H + "  %0 = stablehlo.constant dense_resource<blob1> : tensor<4xf32>\n" + END,
         2, 42, "unknown dense_resource 'blob1'"),
    # ---------------------------------------------------------------- type mismatches
    Case("operand-type-vs-signature", H + "  %0 = stablehlo.add %a, %a : tensor<8xf32>\n",
         2, 22, "operand 0 ('%a') has type 'tensor<4xf32>' but the operation's type says "
         "'tensor<8xf32>'"),
    Case("return-type-vs-function",
         "func.func @main(%a: tensor<4xf32>) -> tensor<8xf32> {\n  return %a : tensor<4xf32>\n}\n",
         2, 3, "returns (tensor<4xf32>) but its signature declares (tensor<8xf32>)"),
    Case("call-argument-types",
         "func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n  return %x : tensor<8xf32>\n}\n"
         + H + "  %0 = call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>\n" + END,
         5, 8, "call arguments do not match the signature of '@f'"),
    # ---------------------------------------------------------------- verifier: shapes
    Case("add-shape-mismatch",
         H + "  %0 = stablehlo.add %a, %b : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>\n"
         + END, 2, 8, "'add': operand 1 has shape 8 but operand 0 has 4"),
    Case("bad-broadcast-dims",
         H + "  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<4xf32>) -> "
         "tensor<4x3xf32>\n  return %a : tensor<4xf32>\n}\n",
         2, 8, "operand dim 0 (size 4) cannot broadcast to result dim 1 (size 3)"),
    Case("dot-general-contracting-sizes",
         M + "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] :\n"
         "      (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>\n"
         "  return %0 : tensor<2x5xf32>\n}\n",
         2, 8, "lhs dim 1 (size 3) does not match rhs dim 0 (size 4)"),
    Case("reshape-element-count",
         H + "  %0 = stablehlo.reshape %a : (tensor<4xf32>) -> tensor<5xf32>\n"
         "  return %a : tensor<4xf32>\n}\n", 2, 8, "changes the element count"),
    Case("transpose-repeated-dim",
         "func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
         "  %0 = stablehlo.transpose %a, dims = [0, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
         "  return %0 : tensor<4x4xf32>\n}\n", 2, 8, "repeat a dimension"),
    Case("declared-result-type-wrong",
         H + "  %0 = stablehlo.convert %a : (tensor<4xf32>) -> tensor<5xi32>\n"
         "  return %a : tensor<4xf32>\n}\n", 2, 8, "result 0 is declared 'tensor<5xi32>'"),
    # ---------------------------------------------------------------- operand counts
    Case("too-few-operands", H + "  %0 = stablehlo.add %a : tensor<4xf32>\n" + END,
         2, 8, "'add' takes 2 operands, got 1"),
    Case("generic-operand-count",
         H + '  %0 = "stablehlo.add"(%a, %a) : (tensor<4xf32>) -> tensor<4xf32>\n' + END,
         2, 34, "operation has 2 operands but its type lists 1"),
    Case("result-group-count", H + "  %0:2 = stablehlo.abs %a : tensor<4xf32>\n", 2, 3,
         "defines 1 results but 2 names were given"),
    Case("result-index-out-of-range",
         H + '  %0:2 = "foo.two"(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)\n'
         "  %1 = stablehlo.abs %0#2 : tensor<4xf32>\n", 3, 22, "'%0' has only 2 results"),
    # ---------------------------------------------------------------- unknown ops
    Case("unknown-generic-op",
         H + '  %0 = "foo.bar"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n' + END,
         2, 8, "unsupported op 'foo.bar'"),
    Case("unknown-pretty-op", H + "  %0 = frobnicate %a : tensor<4xf32>\n" + END,
         2, 8, "unknown operation 'frobnicate'"),
    Case("unknown-dialect-op-pretty", H + "  %0 = foo.bar %a [x] : tensor<4xf32>\n" + END,
         2, 8, "unknown operation 'foo.bar'"),
    Case("unknown-reduction-op",
         "func.func @main(%a: tensor<4xf32>) -> tensor<f32> {\n"
         "  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
         "  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.frob across dimensions = [0]"
         " :\n      (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n", 3, 46,
         "unknown reduction op 'stablehlo.frob'"),
    # ---------------------------------------------------------------- dynamic dims
    Case("dynamic-dim-argument",
         "func.func @main(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
         "  return %a : tensor<?x4xf32>\n}\n", 1, 1,
         "argument 0 of '@main' has type 'tensor<?x4xf32>'; minirt needs static"),
    Case("dynamic-dim-op",
         H + "  %0 = stablehlo.reshape %a : (tensor<4xf32>) -> tensor<?xf32>\n"
         "  return %a : tensor<4xf32>\n}\n", 2, 8, "dynamic shape (tensor<?xf32>)"),
    # ---------------------------------------------------------------- values and symbols
    Case("undefined-value", H + "  %0 = stablehlo.add %a, %x : tensor<4xf32>\n", 2, 26,
         "use of undefined value '%x'"),
    Case("redefined-value", H + "  %0 = stablehlo.abs %a : tensor<4xf32>\n"
         "  %0 = stablehlo.abs %a : tensor<4xf32>\n", 3, 3, "redefinition of SSA value '%0'"),
    Case("call-unknown-function", H + "  %0 = call @g(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
         + END, 2, 8, "call to unknown function '@g'"),
    Case("recursive-call",
         "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %0 = call @main(%a) : (tensor<4xf32>) -> tensor<4xf32>\n" + END, 2, 8,
         "recursive call to '@main'"),
    Case("function-defined-twice", H + "  %0 = stablehlo.abs %a : tensor<4xf32>\n" + END
         + "func.func @main() -> () {\n  return\n}\n", 5, 1, "redefinition of function '@main'"),
    Case("missing-return", H + "  %0 = stablehlo.abs %a : tensor<4xf32>\n}\n", 1, 1,
         "does not end in a return"),
    # ---------------------------------------------------------------- issue 9
    # An unknown op in pretty form is named at its name, not at a later token (it used to
    # be "expected operation, found '->'" at the type arrow).
    Case("unknown-chlo-op", H + "  %0 = chlo.foo %a : tensor<4xf32> -> tensor<4xf32>\n"
         + END, 2, 8, "unknown operation 'chlo.foo'"),
    Case("unknown-stablehlo-op", H + "  %0 = stablehlo.frob %a : tensor<4xf32>\n" + END,
         2, 8, "unknown operation 'stablehlo.frob'"),
    Case("unknown-dialect-op-with-arrow-type",
         H + "  %0 = mine.erf %a : tensor<4xf32> -> tensor<4xf32>\n" + END, 2, 8,
         "unknown operation 'mine.erf'"),
    Case("generic-only-op-without-its-body", H + "  %0 = stablehlo.sort %a : tensor<4xf32>\n"
         + END, 2, 23, "'stablehlo.sort' has no pretty form"),
    Case("struct-attribute-field-twice",
         M + '  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<'
         "lhs_contracting_dimensions = [1], lhs_contracting_dimensions = [1]>}> : "
         "(tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>\n", 2, 115,
         "'lhs_contracting_dimensions' appears twice in '#stablehlo.dot'"),
    Case("struct-attribute-unknown-field",
         M + '  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<'
         "lhs_contracting = [1]>}> : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>\n",
         2, 81, "expected one of 'lhs_batching_dimensions'"),
    Case("nesting-too-deep", H + "  %0 = stablehlo.abs %a {k = " + "[" * 500 + "]" * 500
         + "} : tensor<4xf32>\n" + END, 2, 91, "nesting deeper than 64 levels"),
    Case("integer-too-long", H + "  %c = stablehlo.constant dense<" + "9" * 5000
         + "> : tensor<i32>\n" + END, 2, 33, "integer literal of 5000 digits is too large"),
    Case("constant-too-large", H + "  %c = stablehlo.constant dense<1.0> : "
         "tensor<65536x65536xf32>\n" + END, 2, 40, "constants are limited to 1073741824 bytes"),
    Case("undefined-block", H + "  cf.br ^bb7\n}\n", 2, 9,
         "reference to an undefined block '^bb7'"),
    Case("block-defined-twice", H + "  cf.br ^bb1\n^bb1:\n  cf.br ^bb1\n^bb1:\n" + END,
         5, 1, "redefinition of block '^bb1'"),
    Case("forward-reference-never-defined",
         H + "  cf.br ^bb1\n^bb1:\n  %0 = stablehlo.abs %y : tensor<4xf32>\n" + END, 4, 22,
         "use of undefined value '%y'"),
    Case("forward-reference-of-another-type",
         H + "  cf.br ^bb2\n^bb1:\n  return %y : tensor<4xf32>\n^bb2:\n"
         "  %y = stablehlo.abs %b : tensor<8xf32>\n  cf.br ^bb1\n}\n", 4, 10,
         "'%y' is used as 'tensor<4xf32>' here but defined as 'tensor<8xf32>'"),
    Case("complex-literal-for-a-float", H + "  %c = stablehlo.constant dense<(1.0, 2.0)> : "
         "tensor<f32>\n" + END, 2, 33, "complex literal in a dense literal of type f32"),
    Case("complex-of-integers", H + "  %c = stablehlo.constant dense<1> : "
         "tensor<complex<i32>>\n" + END, 2, 53, "unsupported element type 'complex<i32>'"),
    # Found by the parser fuzzer (bench/fuzz_parse.py): each was a Python traceback.
    Case("fuzz-nested-quant-types", H + "  %0 = stablehlo.abs %a : tensor<4x"
         + "!quant.uniform<" * 1000 + "\n" + END, 2, 951, "nesting deeper than 64 levels"),
    Case("fuzz-parenthesized-complex-literal", H + "  %c = stablehlo.constant dense<"
         + "(" * 20000 + "> : tensor<f32>\n" + END, 2, 34,
         "expected the real part of a complex literal, found '('"),
    Case("fuzz-huge-convolution-padding",
         "func.func @main(%x: tensor<1x4x4x1xf32>, %w: tensor<3x3x1x1xf32>) -> "
         "tensor<1x4x4x1xf32> {\n  %0 = stablehlo.convolution(%x, %w) dim_numbers = "
         "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, "
         "100000000000000000000000], [1, 1]]} : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>)"
         " -> tensor<1x4x4x1xf32>\n  return %0 : tensor<1x4x4x1xf32>\n}\n", 2, 114,
         "integer 100000000000000000000000 does not fit in i64"),
    Case("fuzz-integer-attribute-beyond-its-type", H + '  %0 = "stablehlo.concatenate"(%a) '
         "{dimension = 100000000000000000000 : i64} : (tensor<4xf32>) -> tensor<4xf32>\n"
         + END, 2, 49, "integer 100000000000000000000 does not fit in i64"),
    # An unknown entry has no op to point at: the error names the module's first op.
    Case("unknown-entry", H + "  %0 = stablehlo.abs %a : tensor<4xf32>\n" + END, 1, 1,
         "no function '@nope' in the module (functions: @main)", ("--entry", "nope")),
]


def _run(capsys: pytest.CaptureFixture[str], path: Path, args: tuple[str, ...] = ()):
    code = build.main(["--dump-ir", str(path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _check_error(err: str, path: Path, source: str, line: int, col: int, message: str) -> None:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) >= 3, err
    head = re.match(rf"^{re.escape(str(path))}:(\d+):(\d+): error: (.*)$", lines[0])
    assert head, lines[0]
    assert (int(head.group(1)), int(head.group(2))) == (line, col), lines[0]
    assert message in head.group(3)
    src_line = (source.split("\n") + [""])[line - 1]
    if len(src_line) <= 100 + col and col <= 101:  # longer lines are clipped around the caret
        assert lines[1] == src_line
        assert lines[2] == " " * (col - 1) + "^"
    else:  # the caret still points at the character at fault
        caret = lines[2].index("^")
        assert lines[2] == " " * caret + "^"
        assert lines[1][caret] == src_line[col - 1]


def test_suite_is_big_enough() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model.mlir"
    path.write_text(case.text)
    code, out, err = _run(capsys, path, case.args)
    assert code == 2, (out, err)
    assert "Traceback" not in out
    _check_error(err, path, case.text, case.line, case.col, case.message)


def test_every_unsupported_op_is_listed(tmp_path: Path, capsys) -> None:
    text = (H + '  %0 = "foo.one"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n'
            "  %1 = stablehlo.abs %0 : tensor<4xf32>\n"
            '  %2 = "foo.two"(%1) : (tensor<4xf32>) -> tensor<4xf32>\n'
            "  %3 = stablehlo.cosine %2 : tensor<4xf32>\n"
            '  %4 = "foo.three"(%3) : (tensor<4xf32>) -> tensor<4xf32>\n'
            "  return %4 : tensor<4xf32>\n}\n")
    path = tmp_path / "three.mlir"
    path.write_text(text)
    code, _, err = _run(capsys, path)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 9, err
    for k, (line, name) in enumerate([(2, "foo.one"), (4, "foo.two"), (6, "foo.three")]):
        _check_error("\n".join(lines[3 * k: 3 * k + 3]), path, text, line, 8,
                     f"unsupported op '{name}'")


def test_dynamic_dims_everywhere_are_listed(tmp_path: Path, capsys) -> None:
    text = ("func.func @main(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
            "  %0 = stablehlo.abs %a : tensor<?x4xf32>\n"
            "  %1 = stablehlo.negate %0 : tensor<?x4xf32>\n"
            "  return %1 : tensor<?x4xf32>\n}\n")
    path = tmp_path / "dyn.mlir"
    path.write_text(text)
    code, _, err = _run(capsys, path)
    assert code == 2
    heads = [ln for ln in err.splitlines() if ": error: " in ln]
    assert [h.split(":")[1:3] for h in heads] == [["1", "1"], ["2", "8"], ["3", "8"]]


def test_non_utf8_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bin.mlir"
    path.write_bytes(b"func.func @main() {\n  \xff\xfe\n}\n")
    code, _, err = _run(capsys, path)
    assert code == 2
    head = err.splitlines()[0]
    assert head.startswith(f"{path}:2:3: error: not a UTF-8 text file")
    assert err.splitlines()[2] == "  ^"


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys) -> None:
    code, _, err = _run(capsys, tmp_path / "nope.mlir")
    assert code == 2
    assert err.startswith("minirt-build: error: ") and "no such file" in err
    assert len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ real processes


def _script() -> list[str]:
    exe = Path(sys.executable).parent / "minirt-build"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "toolchain.cli.build"]


SUBPROCESS_CASES = [c for c in CASES if c.id in (
    "truncated-mid-dense", "add-shape-mismatch", "unknown-generic-op")]


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=[c.id for c in SUBPROCESS_CASES])
def test_malformed_subprocess(case: Case, tmp_path: Path) -> None:
    path = tmp_path / "model.mlir"
    path.write_text(case.text)
    proc = subprocess.run([*_script(), "--dump-ir", str(path)], capture_output=True,
                          text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    _check_error(proc.stderr, path, case.text, case.line, case.col, case.message)


def test_module_entry_via_python_m(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "unknown-entry")
    path = tmp_path / "model.mlir"
    path.write_text(case.text)
    proc = subprocess.run([sys.executable, "-m", "toolchain.cli.build", "--dump-ir", str(path),
                           *case.args], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 2
    _check_error(proc.stderr, path, case.text, case.line, case.col, case.message)
