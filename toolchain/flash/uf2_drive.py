"""UF2 bootloaders: the board shows a USB drive holding INFO_UF2.TXT; copying a .uf2
file onto it writes the flash, and the bootloader then resets into the image, so the
drive goes away. That disappearance is the verification: the bootloader only leaves
after taking every block (a wrong family or a short file keeps the drive there).

Drives are looked for in the usual mount points and in ``MINIRT_UF2_MOUNTS`` (a path
list: each entry a drive or a folder holding drives), which is how tests give a fake
drive.
"""

from __future__ import annotations

import getpass
import os
import time
from pathlib import Path

from toolchain.flash.common import FlashFailed, FlashJob, Progress, Step
from toolchain.link.images import UF2_BLOCK_SIZE
from toolchain.loader import UsageError

__all__ = ["INFO_FILE", "find_drives", "plan", "run"]

INFO_FILE = "INFO_UF2.TXT"
MOUNTS_ENV = "MINIRT_UF2_MOUNTS"
TIMEOUT_ENV = "MINIRT_UF2_TIMEOUT"  # seconds to wait for the drive to go (default 20)
_DEFAULT_TIMEOUT = 20.0
_BLOCKS_PER_WRITE = 16  # 8 KB per write: progress without a system call per block


def _roots() -> list[Path]:
    """Where drives may be mounted: MINIRT_UF2_MOUNTS first, then the usual places."""
    roots = [Path(p) for p in os.environ.get(MOUNTS_ENV, "").split(os.pathsep) if p]
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = ""
    if user:
        roots += [Path("/media") / user, Path("/run/media") / user]
    return roots + [Path("/media"), Path("/mnt"), Path("/Volumes")]


def _board_id(drive: Path) -> str:
    """The Board-ID line of the drive's INFO_UF2.TXT ("" when it has none)."""
    try:
        text = (drive / INFO_FILE).read_text(errors="replace")
    except OSError:
        return ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "board-id":
            return value.strip()
    return ""


def find_drives() -> list[tuple[Path, str]]:
    """(mount point, Board-ID) of every mounted UF2 drive, each once."""
    found: dict[Path, str] = {}
    for root in _roots():
        candidates = [root]
        try:
            if root.is_dir():
                candidates += sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        for drive in candidates:
            if (drive / INFO_FILE).is_file():
                found.setdefault(drive.resolve(), _board_id(drive))
    return list(found.items())


def _choose(job: FlashJob) -> Path:
    """The one drive of this board (by Board-ID prefix, or --probe as a path or name)."""
    assert job.method is not None
    drives = find_drives()
    ours = [d for d, board_id in drives if board_id.startswith(job.method.board_id)]
    if job.probe:
        ours = [d for d in ours if job.probe in (str(d), d.name)]
    if not ours:
        others = "; ".join(f"{d} (Board-ID: {b or 'none'})" for d, b in drives)
        seen = f"; UF2 drives of other boards: {others}" if others else ""
        label = job.method.drive or "the bootloader's drive"
        asked = f" named {job.probe!r}" if job.probe else ""
        raise UsageError(f"no UF2 drive{asked} of a {job.method.board_id} board is mounted: "
                         f"double-press the board's RESET button so {label} appears, and "
                         f"mount it{seen}")
    if len(ours) > 1:
        raise UsageError(f"{len(ours)} UF2 drives of a {job.method.board_id} board are "
                         f"mounted ({', '.join(map(str, ours))}): choose one with --probe")
    return ours[0]


def plan(job: FlashJob, drive: Path | None = None) -> list[Step]:
    """The copy, and the wait that verifies it."""
    assert job.method is not None
    uf2 = job.build.checked(".uf2", family=job.method.family)
    target = (drive or Path(f"<{job.method.drive or 'UF2 drive'}>")) / uf2.name
    return [Step(("cp", "--", str(uf2), str(target))),
            Step(text=f"wait until {target.parent / INFO_FILE} goes away (the bootloader "
                      "took every block and reset into the image)")]


def run(job: FlashJob) -> str:
    """Copies the .uf2 with progress, then waits for the drive to go."""
    drive = _choose(job)
    copy, wait = plan(job, drive)
    data = job.build.verified(".uf2")
    blocks = len(data) // UF2_BLOCK_SIZE
    job.show(copy)
    progress = Progress(job, "copying", blocks, "blocks")
    step = _BLOCKS_PER_WRITE * UF2_BLOCK_SIZE
    try:
        with open(copy.argv[3], "wb") as f:
            for start in range(0, len(data), step):
                f.write(data[start:start + step])
                f.flush()
                progress.update(min(blocks, (start + step) // UF2_BLOCK_SIZE))
            os.fsync(f.fileno())
    except OSError as e:
        # A bootloader may reset as the last block lands, before the host closes the file:
        # an error then is the drive going away, which the wait below sees at once.
        if (drive / INFO_FILE).exists():
            raise FlashFailed(f"copying to {drive} failed: {e.strerror or e}") from None
    job.show(wait)
    limit = float(os.environ.get(TIMEOUT_ENV, _DEFAULT_TIMEOUT))
    deadline = time.monotonic() + limit
    while (drive / INFO_FILE).exists():
        if time.monotonic() > deadline:
            raise FlashFailed(f"{drive} is still mounted {limit:g} s after the copy: the "
                              "bootloader did not take the image (wrong board or family?)")
        time.sleep(0.05)
    return f"the bootloader took all {blocks} blocks and left {drive}"
