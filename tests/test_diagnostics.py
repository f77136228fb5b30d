"""Diagnostics: errors are reported once each, in source order, with notes for where a
function's error was reached from (issue 9)."""

from __future__ import annotations

import pytest

from toolchain.diagnostics import (
    CompileError,
    ErrorCollector,
    Location,
    SourceFile,
    merge_errors,
    raise_all,
)

SRC = SourceFile("m.mlir", "line one\nline two\nline three\nline four\n")


def at(line: int) -> Location:
    return Location(SRC, SRC.text.index(["one", "two", "three", "four"][line - 1]) - 5)


def test_errors_come_out_in_source_order() -> None:
    errors = [CompileError("c", at(3)), CompileError("a", at(1)), CompileError("b", at(2))]
    assert [e.message for e in merge_errors(errors)] == ["a", "b", "c"]


def test_errors_without_a_location_keep_their_order_after_the_others() -> None:
    errors = [CompileError("x"), CompileError("b", at(2)), CompileError("y")]
    assert [e.message for e in merge_errors(errors)] == ["b", "x", "y"]


def test_one_error_per_place_with_every_call_site_as_a_note() -> None:
    errors = ErrorCollector()
    for call_line in (4, 2, 4):  # the same function inlined three times, twice from line 4
        with errors.called_from("'@f' is called here", at(call_line)):
            errors.append(CompileError("unsupported op 'x'", at(1)))
    errors.append(CompileError("later", at(3)))
    merged = merge_errors(errors)
    assert [e.message for e in merged] == ["unsupported op 'x'", "later"]
    assert [loc.line_col[0] for _, loc in merged[0].context] == [2, 4]
    assert merged[1].context == []


def test_raise_all_renders_notes_after_their_error() -> None:
    errors = ErrorCollector()
    with errors.called_from("'@f' is called here", at(3)):
        errors += [CompileError("bad", at(1))]
    errors.append(CompileError("worse", at(2)))
    with pytest.raises(CompileError) as info:
        raise_all(errors)
    lines = info.value.render().splitlines()
    assert [ln for ln in lines if ln.startswith("m.mlir")] == [
        "m.mlir:1:1: error: bad", "m.mlir:3:1: note: '@f' is called here",
        "m.mlir:2:1: error: worse"]


def test_raise_all_is_silent_without_errors() -> None:
    raise_all(ErrorCollector())
