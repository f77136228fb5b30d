"""Which minirt source tree a command runs, and a note when the current directory lies
in another one.

A development install (``pip install -e``) makes the console scripts import the
toolchain of the tree it was installed from, wherever they run: ``minirt-run`` started
in a second checkout (a git worktree) builds that first tree's toolchain and runtime_c,
so an edit made in the checkout at hand is not in the image, and its instruction counts
look like a stale build. The build's caches are not at fault (its stamp names the tree
it ran: pipeline.build_stamp), so the command says which tree it is on one line.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["enclosing_tree", "other_tree_note", "running_tree"]


def _is_tree(path: Path) -> bool:
    return (path / "toolchain" / "__init__.py").is_file() and \
        (path / "runtime_c" / "include" / "minirt.h").is_file()


def running_tree() -> Path:
    """The directory holding the toolchain package this process imported."""
    import toolchain

    return Path(toolchain.__file__).resolve().parents[1]


def enclosing_tree(directory: Path) -> Path | None:
    """The nearest minirt source tree (toolchain/ and runtime_c/ side by side) holding
    `directory`, or None."""
    here = Path(directory).resolve()
    for candidate in (here, *here.parents):
        if _is_tree(candidate):
            return candidate
    return None


def other_tree_note(tool: str, cwd: Path, running: Path | None = None) -> str | None:
    """A one-line note when `cwd` lies in a minirt source tree other than the one `tool`
    runs (`running`, default running_tree()); None otherwise."""
    here = enclosing_tree(cwd)
    running = (running or running_tree()).resolve()
    if here is None or here == running:
        return None
    return (f"{tool}: note: running the toolchain of {running}, not of "
            f"{here} (the current directory's tree); to build that one, run with "
            f"PYTHONPATH={here}")
