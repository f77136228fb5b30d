"""graph/custom_ops.py: the --custom-op syntax, the default function names, and the
C ABI's numbers, which the header and this table must agree on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolchain.graph.custom_ops import (
    EXIT_CUSTOM_BASE,
    TYPE_CODES,
    CustomOpError,
    custom_ops_by_code,
    default_function,
    parse_custom_op,
)

RUNTIME = Path(__file__).resolve().parents[2] / "runtime_c"


@pytest.mark.parametrize("code, fn", [
    ("SoftsignGain", "softsign_gain"), ("CLIP_SCALE", "clip_scale"), ("my.op-2", "my_op_2"),
    ("3way", "op_3way"), ("relu6X", "relu6_x"),
])
def test_default_function_names(code: str, fn: str) -> None:
    assert default_function(code) == fn
    assert fn.isidentifier()


def test_parse_with_and_without_function_names(tmp_path: Path) -> None:
    (tmp_path / "k.c").write_text("")
    (tmp_path / "r.py").write_text("")
    op = parse_custom_op(f"FooBar={tmp_path}/k.c,{tmp_path}/r.py")
    assert (op.code, op.c_function, op.py_function) == ("FooBar", "foo_bar", "foo_bar")
    assert op.source == (tmp_path / "k.c").resolve()
    op = parse_custom_op(f"FooBar={tmp_path}/k.c:kern,{tmp_path}/r.py:ref")
    assert (op.c_function, op.py_function) == ("kern", "ref")


def test_a_code_twice_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.c").write_text("")
    (tmp_path / "r.py").write_text("")
    text = f"A={tmp_path}/k.c,{tmp_path}/r.py"
    assert set(custom_ops_by_code([text, text.replace("A=", "B=")])) == {"A", "B"}
    with pytest.raises(CustomOpError, match="gives operator A twice"):
        custom_ops_by_code([text, text])


def test_header_type_codes_are_the_table_s() -> None:
    header = (RUNTIME / "include" / "mrt_custom_op.h").read_text()
    defined = {name: int(v) for name, v in
               re.findall(r"#define MRT_CUSTOM_([A-Z0-9]+) (\d+)", header)}
    assert defined == {name: code for code, name in TYPE_CODES.values()}


def test_harness_exit_base_is_the_table_s() -> None:
    harness = (RUNTIME / "harness" / "harness.h").read_text()
    (base,) = re.findall(r"#define MRT_HARNESS_EXIT_CUSTOM_BASE (\d+)", harness)
    assert int(base) == EXIT_CUSTOM_BASE
