"""A build's output directory (`-o DIR`): what a build may replace, and how.

Every build writes a manifest, build.json: each file it wrote with its SHA-256 and
each folder. A build replaces DIR only when DIR is new, empty, or holds a manifest
and nothing but the files and folders listed there; anything else is the user's, and
the build is refused naming it, before anything is built. A listed file edited in
place is still the build's output, as for make: it is replaced (minirt-run rebuilds a
damaged build so); the hashes tell a damaged build from a complete one (up_to_date,
verify_build). The current directory or one holding it, the home
directory, the filesystem root, the model's folder or one holding it, and a symbolic
link are refused outright.

The new build is written into a sibling staging directory (same parent, so a rename
is atomic) and swapped in under a lock on the parent: the old build is renamed to a
trash name, the new one to DIR, and the trash is deleted file by file from its own
manifest (never a whole tree). Ctrl-C is held back during the swap, so DIR is at every
moment absent, the previous complete build or the new one. Builds into one directory
from several processes take turns at the swap; each succeeds, the last one stays.
Leftovers of a killed build are named `.DIR.minirt-new-*` (holding a marker file or a
manifest) and `.DIR.minirt-old-*` (holding a manifest); the next build into DIR
removes the ones no running build owns.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolchain.loader import UsageError

MANIFEST_FILE = "build.json"
_STAGING = "minirt-new"
_TRASH = "minirt-old"
# In a staging directory from its creation until its manifest is written: with the
# name pattern, what marks a half-written build as minirt's own to remove.
_MARKER = ".minirt-staging"
_REPLACE_HINT = "a build replaces its whole directory, so name a new or empty one"


def check_out_dir(out_dir: str | Path, model: str | Path | None = None) -> None:
    """Raises UsageError (one line naming the directory, and the first file at fault)
    unless a build may write `out_dir`: see the module docstring. `model` is the model
    file, whose folder a build must not replace."""
    out_dir = Path(out_dir)
    _refuse_special(out_dir, model)
    for parent in out_dir.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"{out_dir}: {parent} is not a directory")
    _check_contents(out_dir)


def read_manifest(out_dir: str | Path) -> dict[str, Any] | None:
    """The manifest of the build in `out_dir`, or None when it holds none (or one
    without the file list, from before manifests)."""
    try:
        record = json.loads((Path(out_dir) / MANIFEST_FILE).read_text())
    except (OSError, ValueError):
        return None
    if (not isinstance(record, dict) or not isinstance(record.get("files"), dict)
            or not isinstance(record.get("dirs"), list)):
        return None
    return record


def verify_build(out_dir: str | Path) -> str | None:
    """None when `out_dir` holds a complete build: its manifest's files with their
    hashes and nothing else; otherwise the first thing wrong."""
    out_dir = Path(out_dir)
    manifest = read_manifest(out_dir)
    if manifest is None:
        return f"no build manifest ({MANIFEST_FILE})"
    foreign = _first_foreign(out_dir, manifest, hashes=True)
    if foreign is not None:
        return foreign
    missing = [name for name in manifest["files"] if not (out_dir / name).is_file()]
    missing += [name for name in manifest["dirs"] if not (out_dir / name).is_dir()]
    return f"{sorted(missing)[0]} is missing" if missing else None


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def staged_build(out_dir: str | Path, record: dict[str, Any] | None = None,
                 model: str | Path | None = None,
                 log: Callable[[str], None] = print) -> Iterator[Path]:
    """Yields an empty staging directory beside `out_dir` for the build to write into.
    When the block ends normally, writes the manifest (`record` plus the file list)
    and swaps the staging directory in as `out_dir`; when it raises (Ctrl-C too), the
    staging directory is removed and `out_dir` is left as it was. Checks `out_dir`
    first (check_out_dir) and again at the swap, under the parent's lock."""
    out_dir = Path(out_dir)
    check_out_dir(out_dir, model)
    staging: Path | None = None
    owner: int | None = None
    try:
        # A staging directory is marked as soon as it exists; a Ctrl-C held back until
        # then is delivered as the block ends, inside this try, so it is removed too.
        with _interrupts_deferred():
            try:
                out_dir.parent.mkdir(parents=True, exist_ok=True)
                staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.{_STAGING}-",
                                                dir=out_dir.parent))
            except OSError as e:
                raise UsageError(f"{out_dir}: cannot create the build directory: "
                                 f"{e.strerror or e}") from None
            # Held for the build's life: a staging directory whose lock can be taken
            # belongs to no running build.
            owner = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(owner, fcntl.LOCK_EX)
            (staging / _MARKER).write_text(f"minirt build in progress (pid {os.getpid()})\n")
        yield staging
        _write_manifest(staging, record or {})
        _swap(staging, out_dir, log)
    except BaseException:
        if staging is not None:
            with _interrupts_deferred():
                shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if owner is not None:
            os.close(owner)


def _refuse_special(out_dir: Path, model: str | Path | None) -> None:
    real = Path(os.path.realpath(out_dir))
    if real == Path(real.anchor) or real == _home():
        raise UsageError(f"{out_dir}: is the filesystem root or the home directory; "
                         f"{_REPLACE_HINT}")
    cwd = Path.cwd().resolve()
    if out_dir.name in ("", ".", "..") or real == cwd or real in cwd.parents:
        raise UsageError(f"{out_dir}: is the current directory or holds it; {_REPLACE_HINT}")
    if out_dir.is_symlink():
        raise UsageError(f"{out_dir}: is a symbolic link; a build does not replace what "
                         "a link points to, so name a directory itself")
    if model is not None and real in Path(model).resolve().parents:
        raise UsageError(f"{out_dir}: holds the model {model}; {_REPLACE_HINT}")


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, KeyError):  # no HOME and no passwd entry
        return None


def _check_contents(out_dir: Path) -> dict[str, Any] | None:
    """Refuses `out_dir` unless it is absent, empty or a build holding only its own
    files; returns that build's manifest (None when there is no build to replace)."""
    if not os.path.lexists(out_dir):
        return None
    if out_dir.is_symlink() or not out_dir.is_dir():
        raise UsageError(f"{out_dir}: exists and is not a directory; the build writes a "
                         "directory of artifacts")
    try:
        entries = sorted(os.listdir(out_dir))
    except OSError as e:
        raise UsageError(f"{out_dir}: cannot read the directory: {e.strerror or e}") from None
    if not entries:
        return None
    manifest = read_manifest(out_dir)
    if manifest is None:
        if MANIFEST_FILE in entries:
            raise UsageError(f"{out_dir}: its {MANIFEST_FILE} lists no files (a build from "
                             "before build manifests, or not a minirt build); delete the "
                             "directory yourself or name another one")
        raise UsageError(f"{out_dir}: not a minirt build (it holds {entries[0]} and has no "
                         f"{MANIFEST_FILE}); {_REPLACE_HINT}")
    foreign = _first_foreign(out_dir, manifest)
    if foreign is not None:
        raise UsageError(f"{out_dir}: holds {foreign}, which no minirt build wrote; "
                         f"{_REPLACE_HINT}, or move it away")
    return manifest


def _first_foreign(root: Path, manifest: dict[str, Any], hashes: bool = False) -> str | None:
    """The first entry under `root` its manifest does not list (with `hashes`, or
    that differs from what the build wrote); symbolic links and special files are never
    a build's."""
    files, dirs = manifest["files"], set(manifest["dirs"])

    def walk(folder: Path, prefix: str) -> str | None:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False) and rel in dirs:
                found = walk(Path(entry.path), rel + "/")
                if found is not None:
                    return found
            elif entry.is_file(follow_symlinks=False) and rel == MANIFEST_FILE:
                continue
            elif entry.is_file(follow_symlinks=False) and rel in files:
                if hashes and file_sha256(entry.path) != files[rel]:
                    return f"{rel} (changed since the build wrote it)"
            else:
                return rel
        return None

    try:
        return walk(root, "")
    except OSError as e:
        return f"{e.filename or root} (unreadable: {e.strerror or e})"


def _write_manifest(staging: Path, record: dict[str, Any]) -> None:
    files: dict[str, str] = {}
    dirs: list[str] = []
    for path in sorted(staging.rglob("*")):
        rel = path.relative_to(staging).as_posix()
        if rel in (_MARKER, MANIFEST_FILE):
            continue
        if path.is_dir():
            dirs.append(rel)
        else:
            files[rel] = file_sha256(path)
    # Written last: a manifest vouches for finished files only.
    (staging / MANIFEST_FILE).write_text(
        json.dumps({**record, "files": files, "dirs": dirs}, indent=2) + "\n")


def _swap(staging: Path, out_dir: Path, log: Callable[[str], None]) -> None:
    """Replaces `out_dir` by `staging` (see the module docstring)."""
    parent = out_dir.parent
    with _locked(parent):
        _remove_leftovers(out_dir, log)
        with _interrupts_deferred():
            manifest = _check_contents(out_dir)  # again: another process may have written
            if manifest is not None:
                _check_deletable(out_dir, manifest)
            (staging / _MARKER).unlink()
            trash = None
            try:
                if manifest is not None:
                    trash = parent / f".{out_dir.name}.{_TRASH}-{secrets.token_hex(4)}"
                    os.rename(out_dir, trash)
                os.rename(staging, out_dir)
            except OSError as e:
                if trash is not None and not os.path.lexists(out_dir):
                    os.rename(trash, out_dir)
                raise UsageError(f"{out_dir}: cannot replace the directory: "
                                 f"{e.strerror or e}") from None
            if trash is not None:
                _delete_build(trash, out_dir, log)


def _check_deletable(out_dir: Path, manifest: dict[str, Any]) -> None:
    """Refuses, before the swap, a previous build whose files cannot all be deleted,
    so it is left whole rather than half deleted."""
    for rel in ["", *manifest["dirs"]]:
        folder = out_dir / rel
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(f"{out_dir}: cannot replace the previous build: {folder} is "
                             "not writable, so its files cannot be deleted (the previous "
                             "build is left as it is)")


def _delete_build(root: Path, out_dir: Path, log: Callable[[str], None]) -> None:
    """Deletes a build by its manifest: the files and folders it lists, then itself;
    anything else in it stays, with a warning."""
    manifest = read_manifest(root)
    try:
        if manifest is None:
            raise OSError(f"{MANIFEST_FILE} is missing")
        for rel in manifest["files"]:
            path = root / rel
            if path.is_file() and not path.is_symlink():
                path.unlink()
        (root / MANIFEST_FILE).unlink()
        for rel in sorted(manifest["dirs"], key=lambda d: d.count("/"), reverse=True):
            if (root / rel).is_dir():
                (root / rel).rmdir()
        root.rmdir()
    except OSError as e:
        log(f"{out_dir}: warning: the previous build was replaced but {root} could not be "
            f"deleted ({e.strerror or e}); the next build into {out_dir} retries")


def _remove_leftovers(out_dir: Path, log: Callable[[str], None]) -> None:
    """Removes what killed builds into `out_dir` left beside it (the module docstring
    says how they are recognised); called under the parent's lock."""
    prefix = f".{out_dir.name}."
    try:
        names = [n for n in os.listdir(out_dir.parent) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        path = out_dir.parent / name
        kind = name[len(prefix):].rpartition("-")[0]
        if kind not in (_STAGING, _TRASH) or path.is_symlink() or not path.is_dir():
            continue
        if kind == _TRASH:
            if read_manifest(path) is not None:
                _delete_build(path, out_dir, log)
            continue
        marked = (path / _MARKER).is_file()
        if not marked and read_manifest(path) is None:
            continue
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a running build's
        finally:
            os.close(fd)
        if marked:  # half written: only the build's own output, whatever it got to
            shutil.rmtree(path, ignore_errors=True)
        else:
            _delete_build(path, out_dir, log)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive flock on `folder` itself, so swaps into it take turns and no lock
    file is left behind."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Holds a Ctrl-C (SIGINT) back until the block ends, then delivers it: the steps
    inside must not be cut in half. Outside the main thread, where Python cannot set
    handlers, the block simply runs."""
    pending: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pending and callable(previous):
            previous(signal.SIGINT, None)
