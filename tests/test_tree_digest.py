"""toolchain/tree_digest.py: a source tree's SHA-256, its unchanged files not read again.

The digest must be the one of reading every file (earlier builds' stamps stay current),
an edited file must change it whatever its size, and a file modified within RECENT_NS
must not be trusted to its identity.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from toolchain import tree_digest
from toolchain.tree_digest import tree_sha256

SUFFIXES = (".py", ".c")


def _read_all(root: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.suffix in SUFFIXES and "__pycache__" not in f.parts:
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _age(path: Path, seconds: int = 60) -> None:
    """Dates a file `seconds` back: older than RECENT_NS, so its digest is remembered."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 1_000_000_000))


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tree"
    for rel in ("a/b.py", "a-c.py", "a/z/deep.c", "notes.txt", "a/__pycache__/b.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel * 10)
        _age(root / rel)
    return root


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The files tree_sha256 reads."""
    seen: list[str] = []
    real = tree_digest._file_digest
    monkeypatch.setattr(tree_digest, "_file_digest", lambda p: seen.append(p) or real(p))
    return seen


def test_unchanged_files_are_not_read_again(tree: Path, reads: list[str]) -> None:
    assert tree_sha256(tree, SUFFIXES) == _read_all(tree)
    assert len(reads) == 3
    assert tree_sha256(tree, SUFFIXES) == _read_all(tree)
    assert len(reads) == 3  # every digest remembered


def test_an_edit_of_the_same_size_changes_the_digest(tree: Path, reads: list[str]) -> None:
    before = tree_sha256(tree, SUFFIXES)
    edited = tree / "a" / "b.py"
    edited.write_text(edited.read_text().upper())  # same size, new modification time
    _age(edited, 30)
    assert tree_sha256(tree, SUFFIXES) == _read_all(tree) != before
    assert reads[-1] == str(edited)


def test_a_file_modified_just_now_is_read_every_time(tree: Path, reads: list[str]) -> None:
    (tree / "a" / "b.py").write_text("fresh")  # modified now: within RECENT_NS
    tree_sha256(tree, SUFFIXES)
    tree_sha256(tree, SUFFIXES)
    assert reads.count(str(tree / "a" / "b.py")) == 2
    assert len(reads) == 4  # the other two only once


def test_added_and_removed_files_change_the_digest(tree: Path) -> None:
    before = tree_sha256(tree, SUFFIXES)
    (tree / "new.py").write_text("x")
    assert tree_sha256(tree, SUFFIXES) == _read_all(tree) != before
    (tree / "new.py").unlink()
    (tree / "a-c.py").unlink()
    assert tree_sha256(tree, SUFFIXES) == _read_all(tree)


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]",
                                     b'{"a/b.py": [1, 2, 3, "zz"]}'])
def test_a_damaged_entry_is_read_around(tree: Path, reads: list[str], content: bytes) -> None:
    tree_sha256(tree, SUFFIXES)
    entry = next((tree.parent / "cache" / "stamps").rglob("*.json"))
    digest = hashlib.sha256(content).digest()
    entry.write_bytes(digest + content)  # whole, as the store checks, but not ours
    assert tree_sha256(tree, SUFFIXES) == _read_all(tree)


def test_with_the_cache_off_every_file_is_read(tree: Path, reads: list[str],
                                               monkeypatch) -> None:
    monkeypatch.setenv("MINIRT_CACHE", "off")
    tree_sha256(tree, SUFFIXES)
    tree_sha256(tree, SUFFIXES)
    assert len(reads) == 6
    assert not (tree.parent / "cache").exists()
