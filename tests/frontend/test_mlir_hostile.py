"""Hostile MLIR models (issue 24): each file in data/hostile/ is refused by minirt-build
and minirt-run --reference with exit 2 and one located line, never a traceback or a
silently wrong result. A file's first line says what the error must be:
`// error: LINE:COL: message`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli
from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module, stablehlo
from toolchain.graph.dominance import dominators
from toolchain.mlir import parse_text

HOSTILE = Path(__file__).parent / "data" / "hostile"
MODELS = sorted(HOSTILE.glob("*.mlir"))


def _expected(model: Path) -> str:
    head = model.read_text().splitlines()[0]
    m = re.fullmatch(r"// error: (\d+:\d+): (.*)", head)
    assert m, f"{model.name} lacks its '// error: LINE:COL: message' line"
    return f"{model}:{m[1]}: error: {m[2]}"


def _check_refused(rc: int, err: str, model: Path) -> None:
    assert rc == 2, err
    assert "Traceback" not in err, err
    assert err.splitlines()[0].startswith(_expected(model)), err


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_build_refuses(model: Path, tmp_path: Path, capsys) -> None:
    rc = build_cli.main([str(model), "--board", "cortex-m4", "-o", str(tmp_path)])
    _check_refused(rc, capsys.readouterr().err, model)


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_reference_refuses(model: Path, capsys) -> None:
    rc = run_cli.main([str(model), "--reference"])
    _check_refused(rc, capsys.readouterr().err, model)


def test_the_dominance_error_notes_the_definition() -> None:
    model = HOSTILE / "dominance_loop.mlir"
    with pytest.raises(CompileError) as e:
        import_module(parse_text(model.read_text(), "loop.mlir"))
    assert "loop.mlir:15:11: note: %next is defined here" in e.value.render()


def _errors(text: str) -> list[str]:
    try:
        import_module(parse_text(text, "m.mlir"))
    except CompileError as e:
        return [str(x) for x in [e] + e.notes]
    return []


# A sum whose reducer also adds %{read}: a use inside a region, checked at the reduce.
_REDUCE = """  %r = stablehlo.reduce(%x init: %z) across dimensions = [0]
      : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
   reducer(%u: tensor<f32>, %v: tensor<f32>) {{
    %s = stablehlo.add %u, %{read} : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }}
  return %r : tensor<f32>
}}"""


def test_a_capture_in_a_region_is_checked_at_its_op() -> None:
    # %t is used inside the reduce's body, in the join block ^j that ^a's branch skips.
    text = """func.func @main(%p: tensor<i1>, %x: tensor<4xf32>) -> tensor<f32> {
  %c = "builtin.unrealized_conversion_cast"(%p) : (tensor<i1>) -> i1
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  cf.cond_br %c, ^a, ^j
^a:
  %t = stablehlo.constant dense<2.0> : tensor<f32>
  cf.br ^j
^j:
""" + _REDUCE.format(read="t")
    assert _errors(text) == ["m.mlir:12:10: operand %t does not dominate this use"]


def test_a_use_before_its_definition_in_one_block() -> None:
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.add %b, %x : tensor<4xf32>
  %b = stablehlo.tanh %x : tensor<4xf32>
  return %a : tensor<4xf32>
}"""
    assert _errors(text) == ["m.mlir:2:8: operand %b does not dominate this use"]


def test_an_op_region_may_not_use_the_op_s_own_result() -> None:
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
""" + _REDUCE.format(read="r")
    assert _errors(text) == ["m.mlir:6:10: operand %r does not dominate this use"]


def test_a_block_the_entry_never_reaches_is_not_checked() -> None:
    # As in MLIR: ^dead never runs, so what it reads cannot be stale.
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^ok
^dead:
  %d = stablehlo.add %t, %x : tensor<4xf32>
  cf.br ^ok
^ok:
  %t = stablehlo.tanh %x : tensor<4xf32>
  return %t : tensor<4xf32>
}"""
    assert _errors(text) == []


def test_dominators_of_a_diamond_a_loop_and_an_unreachable_block() -> None:
    # 0 -> 1, 2; 1, 2 -> 3; 3 -> 1 (a back edge); 4 is never reached.
    dom = dominators([[1, 2], [3], [3], [1], [0]])
    assert dom == [{0}, {0, 1}, {0, 2}, {0, 3}, None]


@pytest.mark.parametrize("name", ["dominance_join", "dominance_loop"])
def test_the_cfg_rule_refuses_a_read_no_dominating_block_defines(monkeypatch,
                                                                   name: str) -> None:
    # Any producer of a cfg node is checked, not only the MLIR frontend: with the
    # frontend's check switched off, the node's own rule still refuses the read.
    monkeypatch.setattr(stablehlo, "dominance_errors", lambda module: [])
    with pytest.raises(CompileError, match="which no block dominating it defines"):
        import_module(parse_text((HOSTILE / f"{name}.mlir").read_text(), "m.mlir"))
