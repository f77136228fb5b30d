"""A command started in one minirt tree while it runs another's toolchain (an editable
install used from a second checkout) says so on one line (toolchain/cli/source_tree.py):
the build it makes is of the other tree's sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toolchain.cli.source_tree import enclosing_tree, other_tree_note, running_tree

REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> Path:
    (root / "toolchain").mkdir(parents=True)
    (root / "toolchain" / "__init__.py").write_text("")
    (root / "runtime_c" / "include").mkdir(parents=True)
    (root / "runtime_c" / "include" / "minirt.h").write_text("")
    return root


def test_the_running_tree_is_this_checkout() -> None:
    assert running_tree() == REPO.resolve()
    assert enclosing_tree(REPO / "runtime_c" / "core") == REPO.resolve()


def test_a_note_only_from_inside_another_tree(tmp_path: Path) -> None:
    other = _tree(tmp_path / "wt")
    (other / "bench").mkdir()
    note = other_tree_note("minirt-run", other / "bench", running=REPO)
    assert note is not None and "\n" not in note
    assert note.startswith("minirt-run: note: ") and str(REPO.resolve()) in note
    assert f"PYTHONPATH={other.resolve()}" in note
    assert other_tree_note("minirt-run", REPO / "bench", running=REPO) is None
    assert other_tree_note("minirt-run", tmp_path, running=REPO) is None  # no tree


def test_the_command_says_which_tree_it_builds(tmp_path: Path) -> None:
    other = _tree(tmp_path / "wt")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # As the console script pip writes (its own directory first on sys.path, not the
    # current one, which `python -m` would put first).
    script = tmp_path / "bin" / "minirt-build"
    script.parent.mkdir()
    script.write_text("import sys\nfrom toolchain.cli.build import main\nsys.exit(main())\n")

    def stderr(cwd: Path) -> str:
        return subprocess.run([sys.executable, str(script), "--help"], cwd=cwd, env=env,
                              capture_output=True, text=True).stderr

    assert f"not of {other.resolve()}" in stderr(other)
    assert "note:" not in stderr(tmp_path)
