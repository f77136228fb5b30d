"""Command-line entry points (console scripts declared in pyproject.toml).

A Ctrl-C while a tool's modules load (numpy, llvmlite: a second or more) would end in
a KeyboardInterrupt traceback before run_tool can catch it. When this process is a
minirt command (a console script, or `python -m toolchain.cli.X`), a SIGINT until
run_tool starts prints one line and exits 130: nothing has been written yet. Once
run_tool is done, Ctrl-C is ignored: the work is finished, and a SIGINT while the
interpreter shuts down would otherwise end the process silently with status -2.
"""

from __future__ import annotations

import gc
import os
import signal
import sys


def _module_run() -> str | None:
    """The module of `python -m MODULE`, if that is how this process started."""
    argv = getattr(sys, "orig_argv", [])
    return argv[argv.index("-m") + 1] if "-m" in argv[:-1] else None


def _tool_name() -> str:
    """minirt-build for `minirt-build ...` and for `python -m toolchain.cli.build ...`."""
    module = _module_run()
    if module is not None:
        return "minirt-" + module.rpartition(".")[2]
    return os.path.basename(sys.argv[0]) if sys.argv else "minirt"


def exit_at_start_up(signum: int, frame: object) -> None:
    """The SIGINT handler until run_tool starts: one line, exit 130, no traceback."""
    os.write(2, f"{_tool_name()}: interrupted\n".encode())
    os._exit(130)


def _is_command() -> bool:
    """A minirt console script, or `python -m toolchain.cli.X`; anything else (pytest,
    a program importing the tools) keeps its own SIGINT handling."""
    module = _module_run()
    if module is not None:
        return module.startswith("toolchain.cli.")
    return bool(sys.argv) and os.path.basename(sys.argv[0]).startswith("minirt-")


# This process is a minirt command: it ends when run_tool returns.
IS_COMMAND = _is_command()
# First, before anything slow: the imports below and the dataclass cache's read.
if IS_COMMAND and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, exit_at_start_up)
if IS_COMMAND:
    # numpy's OpenBLAS starts a thread per core when numpy is imported, and they spin
    # before they sleep: about 0.05 s of CPU per command, a tenth of a small model's
    # build, for matrix products that are all small here (models for microcontrollers)
    # and that OpenBLAS computes element by element in the same order on any number of
    # threads. A user's own setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
if IS_COMMAND:
    # Start-up (a command's imports: numpy, llvmlite, the toolchain's 500 modules) makes
    # objects by the hundred thousand and frees almost none, so Python's cyclic collector
    # walks the growing heap again and again for nothing: 15-20 ms of CPU, a fifteenth of
    # what minirt-build's start-up costs. Off until run_tool starts the command's body
    # (cli/common.py), which turns it back on unless the command keeps it off.
    gc.disable()
    # The methods @dataclass compiles for the toolchain's 160 dataclasses: from the user
    # cache when an earlier run compiled them (cli/dataclass_code.py; saved by run_tool).
    from toolchain.cli.dataclass_code import install

    install(_tool_name())
