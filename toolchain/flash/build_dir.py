"""The build directory minirt-flash writes from, checked before anything is flashed.

A build is flashed only when it was made for the board named on the command line, its
ELF is laid out for that board (``layout_problems``) and the file a method writes
(``.hex``, ``.bin``, ``.uf2``) carries exactly the ELF's loadable bytes: the file that
reaches the device is the one that was verified.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from toolchain.link.build import VERIFY_DIR
from toolchain.link.images import (
    ImageFormatError,
    LoadChunk,
    flash_chunks,
    image_matches,
    layout_problems,
    read_intel_hex,
    read_uf2,
)
from toolchain.loader import UsageError
from toolchain.target import Board

__all__ = ["FlashBuild", "open_build"]

NAME = "firmware"
_BOARD_RE = re.compile(r"for board '([^']+)'")


@dataclass(frozen=True)
class FlashBuild:
    """A build directory's image for one board, checked."""

    dir: Path
    elf: Path
    chunks: tuple[LoadChunk, ...]  # the ELF's flash content: what every file must carry

    @property
    def flash_bytes(self) -> int:
        """Bytes the image programs (gaps excluded)."""
        return sum(len(c.data) for c in self.chunks)

    def file(self, suffix: str) -> Path:
        """``firmware<suffix>``, which must exist."""
        path = self.dir / f"{NAME}{suffix}"
        if not path.is_file():
            raise UsageError(f"{self.dir}: no {path.name} (rebuild with minirt-build)")
        return path

    def bin_base(self) -> int:
        """Where firmware.bin starts (firmware.bin.base)."""
        path = self.file(".bin.base")
        try:
            return int(path.read_text().strip(), 0)
        except ValueError:
            raise UsageError(f"{path}: not an address (rebuild with minirt-build)") from None

    def checked(self, suffix: str, family: int | None = None) -> Path:
        """``firmware<suffix>`` after checking that it holds exactly the ELF's loadable
        bytes (and, for .uf2, the board's family ID)."""
        path = self.file(suffix)
        try:
            if suffix == ".hex":
                got, _ = read_intel_hex(path.read_text(errors="replace"))
            elif suffix == ".bin":
                got = [LoadChunk(self.bin_base(), path.read_bytes())]
            elif suffix == ".uf2":
                got, found = read_uf2(path.read_bytes())
                if found != family:
                    shown = "none" if found is None else f"{found:#010x}"
                    raise UsageError(f"{path}: UF2 family {shown}, the board's bootloader "
                                     f"takes {family:#010x} (rebuild for this board)")
            else:
                raise ValueError(f"no image format {suffix}")  # a programming error
        except ImageFormatError as e:
            raise UsageError(f"{path}: {e}") from None
        problems = image_matches(got, self.chunks)
        if problems:
            raise UsageError(f"{path} does not carry what {self.elf.name} loads "
                             f"({problems[0]}): rebuild with minirt-build")
        return path


def _built_for(build_dir: Path) -> str | None:
    """The board the build's generated linker script names."""
    script = build_dir / f"{NAME}.ld"
    try:
        match = _BOARD_RE.search(script.read_text(errors="replace"))
    except OSError:
        return None
    return match.group(1) if match else None


def open_build(build_dir: Path, board: Board, relinked: bool = False) -> FlashBuild:
    """The checked image of ``build_dir`` for ``board`` (UsageError saying what is wrong
    otherwise). ``relinked``: the copy relinked for the board's emulated sibling
    (``verify/``), which is what QEMU boots for such a board."""
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        raise UsageError(f"{build_dir}: no such build directory (make one with minirt-build "
                         f"--board {board.identifier} MODEL -o {build_dir})")
    elf = build_dir / f"{NAME}.elf"
    if not elf.is_file():
        raise UsageError(f"{build_dir}: no {elf.name}: not a minirt build directory")
    made_for = _built_for(build_dir)
    if made_for != board.identifier:
        what = f"board '{made_for}'" if made_for else "an unknown board"
        raise UsageError(f"{build_dir} was built for {what}, not '{board.identifier}' "
                         f"(rebuild with minirt-build --board {board.identifier})")
    layout_board = board
    if relinked:
        build_dir, layout_board = build_dir / VERIFY_DIR, board.relinked_for_sibling()
        elf = build_dir / f"{NAME}.elf"
        if not elf.is_file():
            raise UsageError(f"{build_dir}: no {elf.name} (rebuild with minirt-build)")
    try:
        problems = layout_problems(elf, layout_board)
    except Exception as e:  # an ELF that cannot even be read
        raise UsageError(f"{elf}: not a readable ELF image: {e}") from None
    if problems:
        raise UsageError(f"{elf} is not laid out for board {board.identifier}: {problems[0]}")
    chunks = flash_chunks(elf, layout_board.flash.origin, layout_board.flash.end)
    return FlashBuild(build_dir, elf, tuple(chunks))
