"""What a build may replace (-o DIR) and how: the manifest, the refusals, the atomic
swap's leftovers (toolchain/link/out_dir.py)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import threading
from pathlib import Path

import pytest

from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli
from toolchain.link import out_dir
from toolchain.link.out_dir import MANIFEST_FILE, check_out_dir, staged_build, verify_build
from toolchain.loader import UsageError

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A complete minirt-build output, copied by the tests that need a previous build."""
    out = tmp_path_factory.mktemp("template") / "fw"
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(out)]) == 0
    return out


def _build(out: Path, *extra: str, model: Path = SEED) -> int:
    return build_cli.main([str(model), "--board", "cortex-m4", "-o", str(out), *extra])


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*") if p.is_file()}


def _one_line_error(capsys, *words: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minirt-build: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


def test_a_build_lists_every_file_it_wrote(template: Path) -> None:
    manifest = json.loads((template / MANIFEST_FILE).read_text())
    on_disk = {p.relative_to(template).as_posix() for p in template.rglob("*")
               if p.is_file() and p.name != MANIFEST_FILE}
    assert set(manifest["files"]) == on_disk
    assert {"firmware.elf", "model.mrt", "size.json", "dispatches.json"} <= on_disk
    assert manifest["dirs"] == ["obj"]
    assert verify_build(template) is None


@pytest.mark.parametrize("own_firmware", [False, True])
def test_a_project_folder_is_never_replaced(own_firmware: bool, tmp_path: Path,
                                            capsys) -> None:
    """A folder with a file named like an artifact used to be replaced as a whole."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    if own_firmware:
        (project / "firmware.elf").write_bytes(b"\x7fELF mine")
    before = _snapshot(project)
    assert _build(project) == 2
    _one_line_error(capsys, str(project), "not a minirt build",
                    "firmware.elf" if own_firmware else "src")
    assert _snapshot(project) == before


def test_a_user_file_inside_a_previous_build_is_kept(template: Path, tmp_path: Path,
                                                     capsys) -> None:
    out = tmp_path / "fw"
    shutil.copytree(template, out)
    (out / "obj" / "notes.txt").write_text("mine")
    before = _snapshot(out)
    assert _build(out) == 2
    _one_line_error(capsys, "holds obj/notes.txt, which no minirt build wrote")
    assert _snapshot(out) == before


def test_an_artifact_edited_in_place_is_still_the_builds(template: Path,
                                                        tmp_path: Path) -> None:
    """A listed file with other bytes is a damaged build, replaced (as make would), and
    one that verify_build reports."""
    out = tmp_path / "fw"
    shutil.copytree(template, out)
    (out / "firmware.hex").write_text("patched\n")
    assert verify_build(out) == "firmware.hex (changed since the build wrote it)"
    assert _build(out) == 0
    assert verify_build(out) is None


def test_a_previous_build_is_replaced(template: Path, tmp_path: Path) -> None:
    out = tmp_path / "fw"
    shutil.copytree(template, out)
    (out / "firmware.bin.base").unlink()  # a missing file is nothing lost
    old = json.loads((out / MANIFEST_FILE).read_text())
    assert _build(out) == 0
    assert verify_build(out) is None
    assert json.loads((out / MANIFEST_FILE).read_text())["files"] != old["files"]  # size.json
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fw"]


@pytest.mark.parametrize("where", [".", "cwd-by-path", "parent-of-cwd"])
def test_the_current_directory_is_refused(where: str, tmp_path: Path, monkeypatch,
                                          capsys) -> None:
    """`-o .` used to empty the working directory, then crash on rmdir('.')."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    out = {".": ".", "cwd-by-path": str(work), "parent-of-cwd": ".."}[where]
    assert _build(Path(out)) == 2
    _one_line_error(capsys, "current directory")
    assert os.listdir(tmp_path) == ["work"] and os.listdir(work) == []


def test_the_folder_of_the_model_and_its_parents_are_refused(tmp_path: Path, capsys) -> None:
    model = tmp_path / "proj" / "models" / "seed.mlir"
    model.parent.mkdir(parents=True)
    shutil.copyfile(SEED, model)
    for out in (model.parent, tmp_path / "proj"):
        assert _build(out, model=model) == 2
        _one_line_error(capsys, f"{out}: holds the model {model}")
    assert os.listdir(model.parent) == ["seed.mlir"]


@pytest.mark.parametrize("where", ["/", "~"])
def test_root_and_home_are_refused(where: str) -> None:
    with pytest.raises(UsageError, match="filesystem root or the home directory"):
        check_out_dir(Path(where).expanduser())


def test_a_symlink_is_refused_and_its_target_kept(template: Path, tmp_path: Path,
                                                  capsys) -> None:
    """-o as a link to an earlier build used to end in an OSError traceback."""
    target = tmp_path / "real"
    shutil.copytree(template, target)
    before = _snapshot(target)
    link = tmp_path / "fw"
    link.symlink_to(target)
    assert _build(link) == 2
    _one_line_error(capsys, f"{link}: is a symbolic link")
    assert link.is_symlink() and _snapshot(target) == before


def test_an_undeletable_previous_build_is_left_whole(template: Path, tmp_path: Path,
                                                     monkeypatch, capsys) -> None:
    """A previous build with a folder whose files cannot be deleted used to be left half
    deleted, with a traceback. (Root may delete anything, so the test makes obj/
    unwritable by the permission check itself.)"""
    out = tmp_path / "fw"
    shutil.copytree(template, out)
    before = _snapshot(out)
    real_access = os.access
    monkeypatch.setattr(out_dir.os, "access",
                        lambda p, mode: real_access(p, mode) and Path(p).name != "obj")
    assert _build(out) == 2
    _one_line_error(capsys, f"{out / 'obj'} is not writable",
                    "the previous build is left as it is")
    assert _snapshot(out) == before and verify_build(out) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fw"]  # the new one is gone


def test_leftovers_of_killed_builds_are_removed_and_nothing_else(template: Path,
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "fw"
    half = tmp_path / ".fw.minirt-new-dead1"  # killed while building: marker, no lock
    (half / "obj").mkdir(parents=True)
    (half / ".minirt-staging").write_text("")
    (half / "obj" / "x.o").write_bytes(b"partial")
    trash = tmp_path / ".fw.minirt-old-dead2"  # killed while deleting the old build
    shutil.copytree(template, trash)
    (trash / "firmware.elf").unlink()
    live = tmp_path / ".fw.minirt-new-live3"  # another build still writing
    live.mkdir()
    (live / ".minirt-staging").write_text("")
    unmarked = tmp_path / ".fw.minirt-new-user4"  # a name alike, but no marker: not ours
    unmarked.mkdir()
    (unmarked / "thesis.tex").write_text("mine")
    owner = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(owner, fcntl.LOCK_EX)
        with staged_build(out, log=print) as staging:
            (staging / "a.txt").write_text("new")
    finally:
        os.close(owner)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".fw.minirt-new-live3", ".fw.minirt-new-user4", "fw"]
    assert (unmarked / "thesis.tex").read_text() == "mine"
    assert verify_build(out) is None and (out / "a.txt").read_text() == "new"


@pytest.mark.parametrize("previous", [False, True])
def test_ctrl_c_while_the_staging_directory_is_made(previous: bool, template: Path,
                                                    tmp_path: Path, monkeypatch) -> None:
    """A Ctrl-C held back while the staging directory is created and marked is delivered
    as that step ends; it used to leave the directory behind (the CI's random Ctrl-C
    test, tests/cli/test_out_dir_cli.py, caught it once in 24 tries)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Ctrl-C is held back only in the main thread")
    out = tmp_path / "fw"
    if previous:
        shutil.copytree(template, out)
    before = _snapshot(out) if previous else None
    made = out_dir.tempfile.mkdtemp

    def mkdtemp_then_ctrl_c(**kwargs) -> str:
        path = made(**kwargs)
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)  # as the signal would
        return path

    monkeypatch.setattr(out_dir.tempfile, "mkdtemp", mkdtemp_then_ctrl_c)
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), staged_build(out, log=print) as staging:
            (staging / "a.txt").write_text("never")
    finally:
        signal.signal(signal.SIGINT, handler)
    assert sorted(p.name for p in tmp_path.iterdir()) == (["fw"] if previous else [])
    if previous:
        assert _snapshot(out) == before


def test_a_failed_build_leaves_the_previous_one(template: Path, tmp_path: Path) -> None:
    out = tmp_path / "fw"
    shutil.copytree(template, out)
    before = _snapshot(out)
    with pytest.raises(KeyboardInterrupt), staged_build(out) as staging:
        (staging / "firmware.elf").write_bytes(b"half")
        raise KeyboardInterrupt
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fw"]


def test_minirt_run_does_not_replace_another_models_build(template: Path, tmp_path: Path,
                                                          capsys) -> None:
    """minirt-run -o DIR used to rebuild silently over a build of another model."""
    out = tmp_path / "fw"
    shutil.copytree(template, out)
    other = tmp_path / "other.mlir"
    shutil.copyfile(SEED, other)
    before = _snapshot(out)
    assert run_cli.main([str(other), "--board", "cortex-m4", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"holds a build of {SEED}, not of {other}" in err
    assert _snapshot(out) == before
