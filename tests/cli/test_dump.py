"""`minirt-dump` on bad input: one line, exit 2, like the other tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.cli import dump


@pytest.mark.parametrize("argv, words", [
    ([], "the following arguments are required: module (see minirt-dump --help)"),
    (["--frobnicate", "x.mrt"], "unrecognized arguments: --frobnicate"),
    (["{tmp}"], "Is a directory"),
    (["{tmp}/m.mrt"], "m.mrt: not a valid minirt module"),
])
def test_bad_input_is_one_line(argv: list[str], words: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "m.mrt").write_bytes(b"not a module at all")
    assert dump.main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("minirt-dump: error: ")
    assert words in err
