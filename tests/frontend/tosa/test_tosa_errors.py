"""TOSA input minirt cannot compile: every problem of a model is reported in one run,
each at its op's `file:line:col`, with exit code 2 and no traceback; what is read but
not supported yet says so and why."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from toolchain.cli import build as build_cli
from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.frontend.tosa.unsupported import REASONS
from toolchain.mlir import parse_text

UNSUPPORTED = """\
func.func @main(%a: tensor<2x3xf32>, %c: tensor<2xi1>, %n: tensor<1xf32>) -> tensor<2x3xf32> {
  %0 = tosa.cond_if %c : tensor<2xi1> -> tensor<2x3xf32> {
    tosa.yield %a : tensor<2x3xf32>
  } else {
    %r, %i = tosa.rfft2d %a : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
    tosa.yield %r : tensor<2x3xf32>
  }
  %v = tosa.negate %a, %n, %n : (tensor<2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %5 = tosa.custom %a {operator_name = "mine", domain_name = "x",
       implementation_attrs = ""} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  tosa.yield %a : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


def errors(text: str) -> list[tuple[str, tuple[int, int] | None]]:
    with pytest.raises(CompileError) as info:
        import_module(parse_text(text, "m.mlir"))
    return [(e.message, e.loc.line_col if e.loc else None)
            for e in [info.value, *info.value.notes]]


def test_unsupported_ops_are_listed_together_at_their_locations() -> None:
    got = errors(UNSUPPORTED)
    by_line = {line: message for message, (line, _) in got}
    assert "'tosa.cond_if': the condition must be a tensor<i1> or tensor<1xi1>" in by_line[2]
    # An op inside a region is reported with the others, at its own line.
    assert "'tosa.rfft2d': not supported yet: minirt has no complex arithmetic" in by_line[5]
    assert "'tosa.negate': input1_zp (operand 1) must be a constant" in by_line[8]
    assert "'tosa.custom': not supported yet" in by_line[9]
    assert REASONS["yield"] in by_line[11]
    assert len(got) == 5


@pytest.mark.parametrize("body, message", [
    # A zero point computed at run time: TOSA 1.0 allows it, minirt builds it in.
    ("%0 = tosa.negate %q, %q, %z8 : (tensor<4xi8>, tensor<4xi8>, tensor<1xi8>) -> "
     "tensor<4xi8>", "input1_zp (operand 1) must be a constant"),
    ("%0 = tosa.rescale %q, %m, %h, %z8, %z8 {rounding_mode = DOUBLE_ROUND, scale32 = "
     "false, per_channel = false} : (tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, "
     "tensor<1xi8>, tensor<1xi8>) -> tensor<4xi8>", "DOUBLE_ROUND needs scale32 = true"),
    ("%0 = tosa.rescale %q, %m, %h, %z8, %z8 {rounding_mode = SINGLE_ROUND, scale32 = "
     "true, per_channel = true} : (tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, "
     "tensor<1xi8>, tensor<1xi8>) -> tensor<4xi8>", "has 1 multiplier values for 4 channels"),
    ("%0 = tosa.rescale %q, %m, %h, %z8, %z8 {rounding_mode = SOMETIMES, scale32 = true} "
     ": (tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi8>) -> "
     "tensor<4xi8>", "'rounding_mode' must be one of SINGLE_ROUND, INEXACT_ROUND"),
    ("%0 = tosa.add %f, %f : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x4xf32>",
     "cannot broadcast 2x3 to 2x4"),
    ("%0 = tosa.exp %q : (tensor<4xi8>) -> tensor<4xi8>",
     "element type i8 is not supported by exponential"),
    ("%0 = tosa.abs %d : (tensor<?x3xf32>) -> tensor<?x3xf32>",
     "has a dynamic shape (tensor<?x3xf32>); minirt needs static shapes"),
    ("%0 = tosa.cast %f : (tensor<2x3xf32>) -> tensor<3x2xi8>",
     "result 0 is tensor<2x3xi8> by TOSA's rules, not the declared tensor<3x2xi8>"),
    ("%0 = tosa.reduce_sum %f {axis = 2 : i32} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
     "axis 2 is out of range for rank 2"),
])
def test_bad_op_instances_are_located(body: str, message: str) -> None:
    text = ("func.func @main(%q: tensor<4xi8>, %f: tensor<2x3xf32>, %d: tensor<?x3xf32>) {\n"
            '  %m = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}> : () -> '
            "tensor<1xi32>\n"
            '  %h = "tosa.const"() <{values = dense<30> : tensor<1xi8>}> : () -> tensor<1xi8>\n'
            '  %z8 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>\n'
            f"  {body}\n  return\n}}\n")
    # (A dynamic argument is also an error of the function, at line 1.)
    ((got, where),) = [e for e in errors(text) if e[1] != (1, 1)]
    assert message in got
    assert where == (5, 8)


def test_cli_reports_every_problem_with_exit_2(tmp_path: Path, capsys) -> None:
    model = tmp_path / "bad.mlir"
    model.write_text(UNSUPPORTED)
    out = tmp_path / "fw"
    assert build_cli.main([str(model), "--board", "cortex-m4", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert [line.split(":")[1] for line in lines] == ["2", "5", "8", "9", "11"]
    assert f"{model}:8:8: error: 'tosa.negate': input1_zp (operand 1) must be a constant" in err
    assert not out.exists()


# Operand lists of the wrong count, rank or type, result types that do not fit, absurd
# attributes: every converter must turn each into a located CompileError, never another
# exception and never a message about Python's internals.
FUZZ_OPERANDS = {"f": "tensor<2x3xf32>", "i": "tensor<4xi8>", "r": "tensor<1x4x4x2xf32>",
                 "b": "tensor<2x3xi1>"}
FUZZ_LISTS = [(), ("f",), ("f", "f"), ("i", "i", "i"), ("r", "r", "f", "f", "f"), ("f", "s"),
              ("r", "s", "s", "s"), ("b", "f", "f"), ("i", "i", "i", "i", "i")]
FUZZ_RESULTS = ["tensor<2x3xf32>", "tensor<4xi8>"]
FUZZ_ATTRS = ["", "{axis = 7 : i32, kernel = array<i64: 2>, stride = array<i64: 1, 1>, "
              "pad = array<i64: 0>, perms = array<i32: 0>, out_pad = array<i64: 9>}",
              "{rounding_mode = SINGLE_ROUND, per_channel = true, min_val = 1.0 : f32, "
              "max_val = 0.0 : f32, mode = BILINEAR, nan_mode = IGNORE, round = true}"]


def test_malformed_ops_never_escape_as_python_errors() -> None:
    from toolchain.frontend.tosa import CONVERTERS

    internals = ("unpack", "index out", "NoneType", "object has no", "not iterable")
    checked = 0
    for name in sorted(CONVERTERS):
        for operands in FUZZ_LISTS:
            values, lines = [], []
            for n, kind in enumerate(operands):
                if kind == "s":
                    lines.append(f"%s{n} = tosa.const_shape {{values = dense<[2, 3]> : "
                                 "tensor<2xindex>} : () -> !tosa.shape<2>")
                values.append(f"%{kind}{n}")
            args = ", ".join(f"%{k}{n}: {FUZZ_OPERANDS[k]}" for n, k in enumerate(operands)
                             if k != "s")
            types = ", ".join(FUZZ_OPERANDS.get(k, "!tosa.shape<2>") for k in operands)
            for result, attrs in itertools.product(FUZZ_RESULTS, FUZZ_ATTRS):
                op = (f"%r = {name} {', '.join(values)} {attrs} : ({types}) -> {result}"
                      if values else f"%r = {name} {attrs} : () -> {result}")
                text = (f"func.func @main({args}) -> {result} {{\n  "
                        + "\n  ".join([*lines, op]) + f"\n  return %r : {result}\n}}\n")
                try:
                    import_module(parse_text(text, "f.mlir"))
                except CompileError as e:
                    for m in (e, *e.notes):
                        assert not any(w in m.message for w in internals), (text, m.message)
                checked += 1
    assert checked == len(CONVERTERS) * len(FUZZ_LISTS) * len(FUZZ_RESULTS) * len(FUZZ_ATTRS)
