"""The build directory minirt-flash writes from, checked before anything is flashed.

A build is flashed only when its build record (build.json, written by minirt-build)
names the board given on the command line, every file minirt-flash reads (the ELF, the
image a method writes, firmware.bin.base, firmware.ld) still has the hash recorded there,
the ELF is laid out for that board (``layout_problems``) and the image (``.hex``,
``.bin``, ``.uf2``, ``.esp.bin``) carries exactly the ELF's loadable bytes: the file that
reaches the device is the one that was built and verified. Only regular files inside the build
directory are read, opened without blocking, so a FIFO or device in their place, or a
symbolic link leading elsewhere, is refused rather than read or waited on.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from toolchain.link.build import VERIFY_DIR
from toolchain.link.esp_image import ESP_IMAGE_SUFFIX, load_segments, read_esp_image
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
from toolchain.pipeline import STAMP_FILE
from toolchain.target import Board

__all__ = ["FlashBuild", "open_build", "read_regular"]

NAME = "firmware"
_REBUILD = "rebuild with minirt-build"
# Larger than any image or ELF a board's memory can take, small enough to read at once.
_MAX_FILE = 256 << 20
_MAX_RECORD = 16 << 20
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_regular(path: Path, root: Path, limit: int = _MAX_FILE) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes
    inside ``root`` (after following symbolic links); a one-line UsageError otherwise.
    The mode is checked before opening and the file opened non-blocking, so a FIFO or
    device never blocks or is read."""
    try:
        real = path.resolve(strict=True)
        inside = real.is_relative_to(root.resolve(strict=True))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file ({_REBUILD})") from None
    except (OSError, RuntimeError) as e:
        raise UsageError(f"{path}: cannot be read: {getattr(e, 'strerror', None) or e}") \
            from None
    if not inside:
        raise UsageError(f"{path} leads to {real}, outside the build directory: refusing to "
                         f"read it ({_REBUILD})")
    try:
        mode = os.stat(real).st_mode
        if stat.S_ISREG(mode):
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as f:
                mode = os.fstat(f.fileno()).st_mode  # what was opened, not what was checked
                data = f.read(limit + 1) if stat.S_ISREG(mode) else b""
    except OSError as e:
        raise UsageError(f"{path}: cannot be read: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise UsageError(f"{path} is {kind}, not a file minirt-build wrote: refusing to read "
                         "it")
    if len(data) > limit:
        raise UsageError(f"{path}: larger than {limit >> 20} MiB, not a file minirt-build "
                         "wrote")
    return data


@dataclass(frozen=True)
class FlashBuild:
    """A build directory's image for one board, checked."""

    dir: Path  # where the image is: the build directory, or its verify/ for QEMU
    elf: Path
    chunks: tuple[LoadChunk, ...]  # the ELF's flash content: what every file must carry
    root: Path  # the build directory, whose build record vouches for every file
    hashes: dict[str, str]  # the record's sha256 by path relative to root

    @property
    def flash_bytes(self) -> int:
        """Bytes the image programs (gaps excluded)."""
        return sum(len(c.data) for c in self.chunks)

    def file(self, suffix: str) -> Path:
        """``firmware<suffix>``, which must exist."""
        path = self.dir / f"{NAME}{suffix}"
        if not path.exists():
            raise UsageError(f"{self.dir}: no {path.name} ({_REBUILD})")
        return path

    def verified(self, suffix: str) -> bytes:
        """The bytes of ``firmware<suffix>``, which must be those the build recorded."""
        return _verified(self.file(suffix), self.root, self.hashes)

    def bin_base(self) -> int:
        """Where firmware.bin starts (firmware.bin.base)."""
        try:
            return int(self.verified(".bin.base").decode().strip(), 0)
        except (UnicodeDecodeError, ValueError):
            raise UsageError(f"{self.file('.bin.base')}: not an address ({_REBUILD})") \
                from None

    def checked(self, suffix: str, family: int | None = None) -> Path:
        """``firmware<suffix>`` after checking that it is the file the build recorded and
        holds exactly the ELF's loadable bytes (and, for .uf2, the board's family ID; for
        the ESP image, ``family`` is the chip ID, and the bytes are those the ROM copies
        to their run addresses)."""
        path = self.file(suffix)
        data = self.verified(suffix)
        if suffix == ESP_IMAGE_SUFFIX:
            return self._checked_esp(path, data, family)
        try:
            if suffix == ".hex":
                got, _ = read_intel_hex(data.decode(errors="replace"))
            elif suffix == ".bin":
                got = [LoadChunk(self.bin_base(), data)]
            elif suffix == ".uf2":
                got, found = read_uf2(data)
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
                             f"({problems[0]}): {_REBUILD}")
        return path


    def _checked_esp(self, path: Path, data: bytes, chip_id: int | None) -> Path:
        try:
            image = read_esp_image(data)
        except ImageFormatError as e:
            raise UsageError(f"{path}: {e}") from None
        if image.chip_id != chip_id:
            raise UsageError(f"{path}: an image for ESP chip ID {image.chip_id}, the board's "
                             f"chip has ID {chip_id} (rebuild for this board)")
        with self.elf.open("rb") as f:
            entry = ELFFile(f)["e_entry"]
        problems = image_matches(image.segments, load_segments(self.elf), fill=0)
        if image.entry != entry:
            problems.insert(0, f"entry {image.entry:#010x}, the ELF's is {entry:#010x}")
        if problems:
            raise UsageError(f"{path} does not carry what {self.elf.name} loads "
                             f"({problems[0]}): {_REBUILD}")
        return path


def _verified(path: Path, root: Path, hashes: dict[str, str]) -> bytes:
    """The bytes of ``path`` when its hash is the one the build record gives it."""
    data = read_regular(path, root)
    name = path.relative_to(root).as_posix()
    want = hashes.get(name)
    if want is None:
        raise UsageError(f"{path}: not in the build record {root / STAMP_FILE} ({_REBUILD})")
    if hashlib.sha256(data).hexdigest() != want:
        raise UsageError(f"{path} is not the file minirt-build wrote (its hash differs from "
                         f"the one in {STAMP_FILE}): refusing to flash it; {_REBUILD}")
    return data


def _flash_record(build_dir: Path) -> tuple[str, dict[str, str]]:
    """The board and file hashes of the build record's ``flash`` entry."""
    path = build_dir / STAMP_FILE
    text = read_regular(path, build_dir, _MAX_RECORD)
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as e:  # RecursionError: nesting too deep
        reason = (str(e).splitlines() or ["nested too deeply"])[0][:120]
        raise UsageError(f"{path}: not a build record ({reason}); {_REBUILD}") from None
    flash = record.get("flash") if isinstance(record, dict) else None
    board = flash.get("board") if isinstance(flash, dict) else None
    files = flash.get("files") if isinstance(flash, dict) else None
    if not (isinstance(board, str) and isinstance(files, dict)
            and all(isinstance(v, str) for v in files.values())):
        raise UsageError(f"{path} records no board and hashes of the files to flash (made "
                         f"before minirt-flash checked them, or edited): {_REBUILD}")
    return board, files


def open_build(build_dir: Path, board: Board, relinked: bool = False) -> FlashBuild:
    """The checked image of ``build_dir`` for ``board`` (UsageError saying what is wrong
    otherwise). ``relinked``: the copy relinked for the board's emulated sibling
    (``verify/``), which is what QEMU boots for such a board. The board is the one the
    build record names; the ELF and linker script must be the files it hashes."""
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        raise UsageError(f"{build_dir}: no such build directory (make one with minirt-build "
                         f"--board {board.identifier} MODEL -o {build_dir})")
    elf = build_dir / f"{NAME}.elf"
    if not os.path.lexists(elf) and not os.path.lexists(build_dir / STAMP_FILE):
        raise UsageError(f"{build_dir}: no {elf.name}: not a minirt build directory")
    if not os.path.lexists(build_dir / STAMP_FILE):
        raise UsageError(f"{build_dir}: no {STAMP_FILE}, the record of what the build wrote "
                         f"that minirt-flash checks every file against; {_REBUILD}")
    made_for, hashes = _flash_record(build_dir)
    if made_for != board.identifier:
        raise UsageError(f"{build_dir} was built for board '{made_for}', not "
                         f"'{board.identifier}' (rebuild with minirt-build --board "
                         f"{board.identifier})")
    # The linker script names the board too: one edited or replaced is refused here.
    _verified(build_dir / f"{NAME}.ld", build_dir, hashes)
    layout_board = board
    if relinked:
        elf = build_dir / VERIFY_DIR / f"{NAME}.elf"
        layout_board = board.relinked_for_sibling()
    if not os.path.lexists(elf):
        raise UsageError(f"{elf.parent}: no {elf.name} ({_REBUILD})")
    _verified(elf, build_dir, hashes)
    try:
        problems = layout_problems(elf, layout_board)
    except Exception as e:  # an ELF that cannot even be read
        raise UsageError(f"{elf}: not a readable ELF image: {e}") from None
    if problems:
        raise UsageError(f"{elf} is not laid out for board {board.identifier}: {problems[0]}")
    chunks = flash_chunks(elf, layout_board.flash.origin, layout_board.flash.end)
    return FlashBuild(elf.parent, elf, tuple(chunks), build_dir, hashes)
