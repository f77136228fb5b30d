"""`minirt-flash`: write a build into a board with the board's flash method, verify it,
and say what was verified; for an emulated board, boot the image file under QEMU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolchain.cli.common import EXIT_MISMATCH, EXIT_OK, ArgumentParser, positive_int, run_tool
from toolchain.loader import UsageError
from toolchain.target import DescriptorError, list_boards, load_board

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    from toolchain.flash import METHODS

    p = ArgumentParser(
        prog="minirt-flash",
        description="Write a minirt build (minirt-build's output directory) into a board and "
                    "verify it: pyOCD, OpenOCD, DFU, a UF2 bootloader drive or esptool, as the "
                    "board's descriptor lists them; an emulated board boots the image under QEMU. "
                    "Only the files the build recorded in its build.json (by SHA-256, with "
                    "the board) are flashed.",
        epilog="Exit codes: 0 flashed and verified, 1 writing or verifying failed (or the "
               "image failed under QEMU), 2 bad option or build, or a missing tool, probe "
               "or drive. MINIRT_UF2_MOUNTS: more places to look for UF2 drives (a path "
               "list).")
    p.add_argument("build_dir", metavar="BUILD_DIR", help="the build directory to flash")
    p.add_argument("--board", required=True,
                   help=f"the board it was built for ({', '.join(list_boards())})")
    p.add_argument("--method", choices=sorted(METHODS),
                   help="flash method (default: the board's first; qemu for emulated boards)")
    p.add_argument("--probe", metavar="ID",
                   help="which probe (pyOCD unique ID, OpenOCD adapter serial, DFU serial) or "
                        "UF2 drive (mount point or name) when several are connected")
    p.add_argument("--port", metavar="PORT",
                   help="esptool: the board's serial port, e.g. /dev/ttyACM0 (default: "
                        "esptool tries each)")
    p.add_argument("--baud", metavar="N", type=positive_int,
                   help="esptool: the serial baud rate (default: esptool's, 460800)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would run (needs none of the tools, probes or drives)")
    return p


def _main(argv: list[str] | None) -> int:
    from toolchain.flash import METHODS, FlashFailed, FlashJob, methods_for, open_build

    args = _parser().parse_args(argv)
    try:
        board = load_board(args.board)
    except DescriptorError as e:
        raise UsageError(str(e)) from None
    names = methods_for(board)
    if not names:
        raise UsageError(f"board {board.identifier} runs images as Linux programs: there is "
                         "nothing to flash (minirt-run runs them)")
    name = args.method or names[0]
    if name not in names:
        raise UsageError(f"board {board.identifier} is not flashed with {name} (its methods: "
                         f"{', '.join(names)})")
    if (args.port or args.baud) and name != "esptool":
        raise UsageError(f"--port and --baud are esptool's options; board {board.identifier} "
                         f"is flashed here with {name}")
    if args.probe and name == "esptool":
        raise UsageError("--probe names a debug probe or UF2 drive; esptool talks over a "
                         "serial port: give --port")
    method = METHODS[name]
    descriptor = next((m for m in board.flash_methods if m.method == name), None)
    relinked = name == "qemu" and board.verify_mode == "relink"
    build = open_build(Path(args.build_dir), board, relinked=relinked)
    build.verified(method.image)  # refused before anything is said about flashing it
    job = FlashJob(board, build, descriptor, args.probe, args.port, args.baud)
    job.say(f"{board.name} with {method.tool}: {build.flash_bytes} bytes from "
            f"{build.dir / ('firmware' + method.image)}")
    if args.dry_run:
        for step in method.plan(job):
            job.show(step)
        return EXIT_OK
    try:
        verified = method.run(job)
    except FlashFailed as e:
        print(f"minirt-flash: error: {e}", file=sys.stderr)
        return EXIT_MISMATCH
    job.say(f"done: {verified}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """The console entry point."""
    return run_tool("minirt-flash", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
