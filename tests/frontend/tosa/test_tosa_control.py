"""COND_IF, WHILE_LOOP and SCATTER beyond the per-op cases (tosa_cases.py): the generic
forms older and newer MLIR print, constants read from inside a region, and the located
errors of ill-formed regions and operands (exit code 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tosa_spec as spec
from tosa_programs import load

from toolchain.cli import build as build_cli
from toolchain.diagnostics import CompileError
from toolchain.reference import run_graph

# Generic forms, as the TOSA validation tests and tosa-to-scf write them: block
# arguments in both cond_if regions, a while_loop carrying a value it never changes
# (the body yields its block argument), a pre-1.0 `value` constant, a pretty yield
# inside a generic op.
GENERIC = """\
func.func @main(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i1>, %n: tensor<i32>)
    -> (tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) {
  %0 = "tosa.cond_if"(%c, %a, %b) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    tosa.yield %x : tensor<f32>
  }, {
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = "tosa.sub"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "tosa.yield"(%s) : (tensor<f32>) -> ()
  }) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
  %zero = "tosa.const"() {values = dense<0> : tensor<i32>} : () -> tensor<i32>
  %1:3 = "tosa.while_loop"(%zero, %a, %n) ({
  ^bb0(%i: tensor<i32>, %v: tensor<f32>, %m: tensor<i32>):
    %ge = "tosa.greater_equal"(%i, %m) : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %go = "tosa.logical_not"(%ge) : (tensor<i1>) -> tensor<i1>
    "tosa.yield"(%go) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>, %m: tensor<i32>):
    %one = "tosa.const"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %j = "tosa.add"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %w = "tosa.add"(%v, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "tosa.yield"(%j, %w, %m) : (tensor<i32>, tensor<f32>, tensor<i32>) -> ()
  }) : (tensor<i32>, tensor<f32>, tensor<i32>) -> (tensor<i32>, tensor<f32>, tensor<i32>)
  return %0, %1#0, %1#1, %1#2 : tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>
}
"""


@pytest.mark.parametrize("c, n", [(True, 5), (False, 0), (False, 3)])
def test_generic_forms(c: bool, n: int) -> None:
    a, b = np.float32(1.5), np.float32(0.25)
    got = run_graph(load(GENERIC), [a, b, np.array(c), np.int32(n)])
    assert got[0] == (a if c else a - b)
    assert got[1] == n and got[3] == n
    assert got[2] == a + n * b  # exact: multiples of 1/4


# A zero point, shift and table defined outside the loop: still constants inside it.
OUTER_CONSTANTS = """\
func.func @main(%x: tensor<4xi8>, %k: tensor<i32>) -> tensor<4xi8> {
  %zp = "tosa.const"() <{values = dense<5> : tensor<1xi8>}> : () -> tensor<1xi8>
  %z0 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %one = "tosa.const"() <{values = dense<1> : tensor<i32>}> : () -> tensor<i32>
  %r:2 = tosa.while_loop (%v = %x, %i = %k) : (tensor<4xi8>, tensor<i32>)
         -> (tensor<4xi8>, tensor<i32>) {
  ^bb0(%v: tensor<4xi8>, %i: tensor<i32>):
    %z = "tosa.const"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %g = tosa.greater %i, %z : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tosa.yield %g : tensor<i1>
  } do {
  ^bb0(%v: tensor<4xi8>, %i: tensor<i32>):
    %n = tosa.negate %v, %zp, %z0 : (tensor<4xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<4xi8>
    %j = tosa.sub %i, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    tosa.yield %n, %j : tensor<4xi8>, tensor<i32>
  }
  return %r#0 : tensor<4xi8>
}
"""


def test_zero_points_defined_outside_a_loop() -> None:
    x = np.array([-128, 0, 5, 127], np.int8)
    for rounds in (0, 1, 2, 3):
        want = x.astype(np.int64)
        for _ in range(rounds):  # NEGATE: 0 - (v - 5), saturated to i8
            want = np.clip(5 - want, -128, 127)
        (got,) = run_graph(load(OUTER_CONSTANTS), [x, np.int32(rounds)])
        np.testing.assert_array_equal(got, want)


BAD = """\
func.func @main(%a: tensor<2xf32>, %c: tensor<i1>, %i: tensor<i32>, %v: tensor<1x4x2xf32>,
                %k: tensor<1x3xi32>, %u: tensor<1x2x2xf32>, %w: tensor<2x2xi1>) -> tensor<2xf32> {
  %0 = tosa.cond_if %c : tensor<i1> -> tensor<2xf32> {
    tosa.yield %a : tensor<2xf32>
  } else {
    tosa.yield %i : tensor<i32>
  }
  %1 = tosa.while_loop (%x = %i) : (tensor<i32>) -> tensor<i32> {
    tosa.yield %x : tensor<i32>
  } do {
  ^bb0(%x: tensor<i32>):
    tosa.yield %x : tensor<i32>
  }
  %2 = "tosa.cond_if"(%c, %a) ({
  ^bb0(%p: tensor<2xf32>, %q: tensor<i32>):
    tosa.yield %p : tensor<2xf32>
  }, {
  ^bb0(%p: tensor<2xf32>, %q: tensor<i32>):
    tosa.yield %p : tensor<2xf32>
  }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  %3 = tosa.while_loop (%x = %i) : (tensor<i32>) -> tensor<i32> {
    %t = tosa.equal %x, %x : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tosa.yield %t : tensor<i1>
  } do {
  ^bb0(%x: tensor<i32>):
    tosa.yield %x, %x : tensor<i32>, tensor<i32>
  }
  %4 = tosa.scatter %v, %k, %u : (tensor<1x4x2xf32>, tensor<1x3xi32>, tensor<1x2x2xf32>)
       -> tensor<1x4x2xf32>
  %5 = tosa.cond_if %w : tensor<2x2xi1> -> tensor<2xf32> {
    %e = tosa.exp %i : (tensor<i32>) -> tensor<i32>
    tosa.yield %a : tensor<2xf32>
  } else {
    tosa.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}
"""

BAD_ERRORS = {
    3: "'tosa.cond_if': the else region yields (tensor<i32>), the op declares "
       "(tensor<2xf32>)",
    8: "'tosa.while_loop': the cond region's result must be a tensor<i1> or tensor<1xi1>, "
       "not tensor<i32>",
    14: "'tosa.cond_if': the then region takes (tensor<2xf32>, tensor<i32>), the input "
        "list is (tensor<2xf32>)",
    21: "'tosa.while_loop': the body region yields (tensor<i32>, tensor<i32>), the loop "
        "carries (tensor<i32>)",
    28: "'tosa.scatter': input is 1x2x2, indices 1x3 and values_in 1x4x2 need it 1x3x2",
    30: "'tosa.cond_if': the condition must be a tensor<i1> or tensor<1xi1>, not "
        "tensor<2x2xi1>",
    31: "'tosa.exp': element type i32 is not supported by exponential",
}


def test_ill_formed_regions_are_located_errors() -> None:
    with pytest.raises(CompileError) as info:
        load(BAD)
    got = {e.loc.line_col[0]: e.message for e in [info.value, *info.value.notes]}
    assert sorted(got) == sorted(BAD_ERRORS)
    for line, message in BAD_ERRORS.items():
        assert message in got[line], (line, got[line])


def test_cli_exit_2_and_no_artifacts(tmp_path: Path, capsys) -> None:
    model = tmp_path / "bad.mlir"
    model.write_text(BAD)
    out = tmp_path / "fw"
    assert build_cli.main([str(model), "--board", "x86-64", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{model}:28:8: error: 'tosa.scatter'" in err
    assert not out.exists()


# LLVM 19 / 20 print cond_if without the condition's type: `tosa.cond_if %c -> (T)`;
# three levels of it, each branch reading values from outside.
NESTED = """\
func.func @main(%a: tensor<f32>, %b: tensor<f32>, %p: tensor<i1>, %q: tensor<i1>) -> tensor<f32> {
  %0 = tosa.cond_if %p -> (tensor<f32>) {
    %1 = tosa.cond_if %q -> (tensor<f32>) {
      %2 = tosa.cond_if %p -> (tensor<f32>) {
        %3 = tosa.add %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tosa.yield %3 : tensor<f32>
      } else {
        tosa.yield %a : tensor<f32>
      }
      tosa.yield %2 : tensor<f32>
    } else {
      %4 = tosa.sub %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
      tosa.yield %4 : tensor<f32>
    }
    tosa.yield %1 : tensor<f32>
  } else {
    tosa.yield %b : tensor<f32>
  }
  return %0 : tensor<f32>
}
"""


@pytest.mark.parametrize("p, q, want", [(True, True, 2.0), (True, False, 1.0),
                                        (False, True, 0.5), (False, False, 0.5)])
def test_nested_cond_if_without_the_condition_type(p: bool, q: bool, want: float) -> None:
    a, b = np.float32(1.5), np.float32(0.5)
    (got,) = run_graph(load(NESTED), [a, b, np.array(p), np.array(q)])
    assert got == want


@pytest.mark.parametrize("indices, updates, message", [
    ("tensor<2x3xi1>", "tensor<2x3x3xf32>", "indices must be integers, not i1"),
    ("tensor<2x3xi32>", "tensor<2x3x3xi32>", "input is i32, values_in f32"),
    ("tensor<2x3xi32>", "tensor<2x3x2xf32>", "input is 2x3x2, indices 2x3 and values_in "
                                             "2x5x3 need it 2x3x3"),
    ("tensor<6xi32>", "tensor<2x3x3xf32>", "takes values_in [N, K, C], indices [N, W]"),
])
def test_scatter_operand_errors(indices: str, updates: str, message: str) -> None:
    text = (f"func.func @main(%v: tensor<2x5x3xf32>, %i: {indices}, %u: {updates}) -> "
            "tensor<2x5x3xf32> {\n"
            f"  %0 = tosa.scatter %v, %i, %u : (tensor<2x5x3xf32>, {indices}, {updates}) -> "
            "tensor<2x5x3xf32>\n  return %0 : tensor<2x5x3xf32>\n}\n")
    with pytest.raises(CompileError) as info:
        load(text)
    assert message in info.value.message and info.value.loc.line_col == (2, 8)


def test_int8_convolution_in_a_branch_with_outer_weights() -> None:
    """Weights and zero points defined outside the COND_IF: built in as constants (the
    zero-point padding of integer convolutions needs them), as the spec computes."""
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (2, 3, 3, 2)).astype(np.int8)
    hexa = w.tobytes().hex().upper()
    text = f"""\
func.func @main(%c: tensor<i1>, %x: tensor<1x4x4x2xi8>) -> tensor<1x4x4x2xi32> {{
  %w = "tosa.const"() <{{values = dense<"0x{hexa}"> : tensor<2x3x3x2xi8>}}>
       : () -> tensor<2x3x3x2xi8>
  %b = "tosa.const"() <{{values = dense<[7, -7]> : tensor<2xi32>}}> : () -> tensor<2xi32>
  %izp = "tosa.const"() <{{values = dense<-3> : tensor<1xi8>}}> : () -> tensor<1xi8>
  %wzp = "tosa.const"() <{{values = dense<0> : tensor<1xi8>}}> : () -> tensor<1xi8>
  %0 = tosa.cond_if %c : tensor<i1> -> tensor<1x4x4x2xi32> {{
    %y = tosa.conv2d %x, %w, %b, %izp, %wzp {{acc_type = i32, dilation = array<i64: 1, 1>,
         pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}} : (tensor<1x4x4x2xi8>,
         tensor<2x3x3x2xi8>, tensor<2xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x2xi32>
    tosa.yield %y : tensor<1x4x4x2xi32>
  }} else {{
    %z = "tosa.const"() <{{values = dense<0> : tensor<1x4x4x2xi32>}}> : () -> tensor<1x4x4x2xi32>
    tosa.yield %z : tensor<1x4x4x2xi32>
  }}
  return %0 : tensor<1x4x4x2xi32>
}}
"""
    graph = load(text)
    (branch,) = [n for n in graph.nodes if n.op == "if"]
    convs = [n for n in branch.regions[0].nodes if n.op == "convolution"]
    assert convs and convs[0].inputs[1].producer.op == "constant"  # weights built in
    x = rng.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    (got,) = run_graph(graph, [np.array(True), x])
    want = spec.conv2d(x, w, np.array([7, -7]), -3, 0, (1, 1), (1, 1, 1, 1), (1, 1))
    np.testing.assert_array_equal(got.astype(np.int64), np.asarray(want).astype(np.int64))
