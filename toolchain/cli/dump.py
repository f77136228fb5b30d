"""`minirt-dump`: print a packed module (.mrt) like iree-dump-module."""

from __future__ import annotations

import sys
from pathlib import Path

from toolchain.cli.common import EXIT_OK, ArgumentParser, run_tool
from toolchain.loader import UsageError
from toolchain.module.dump import dump_module
from toolchain.module.reader import ModuleFormatError


def _main(argv: list[str] | None) -> int:
    p = ArgumentParser(
        prog="minirt-dump",
        description="Print a minirt module: header, sections with sizes, I/O signature, "
                    "commands and constants.")
    p.add_argument("module", help="a .mrt file (minirt-build writes model.mrt)")
    args = p.parse_args(argv)
    path = Path(args.module)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    try:
        sys.stdout.write(dump_module(data))
    except ModuleFormatError as e:
        raise UsageError(f"{path}: not a valid minirt module: {e}") from None
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_tool("minirt-dump", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
