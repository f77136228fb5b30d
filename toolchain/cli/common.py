"""What every minirt command shares: the argument parser, error reporting, exit codes."""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from toolchain.cli import IS_COMMAND, exit_at_start_up
from toolchain.cli.dataclass_code import installed
from toolchain.cli.source_tree import other_tree_note
from toolchain.diagnostics import CompileError
from toolchain.graph.custom_ops import CustomOpError
from toolchain.link.build import LinkError
from toolchain.loader import UsageError
from toolchain.module.pack import PackError
from toolchain.target import DescriptorError

EXIT_OK = 0
EXIT_MISMATCH = 1  # the tool ran but the result is wrong or over budget
EXIT_INPUT = 2  # bad model, option or input file
EXIT_INTERRUPTED = 130  # Ctrl-C, like a shell reports SIGINT
EXIT_BUDGET = 3  # the firmware stopped the inference over its --max-cycles budget


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are UsageErrors: one line and exit 2, like every other bad
    input, instead of argparse's usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


# What a bad model, option or input file raises anywhere below the tools: exit 2.
INPUT_ERRORS = (CompileError, UsageError, DescriptorError, LinkError, PackError,
                CustomOpError)


def input_error_text(e: BaseException) -> str:
    """The message of one of INPUT_ERRORS: a model error with its location, source line
    and caret (CompileError.render), anything else on one line."""
    if isinstance(e, CompileError):
        return e.render()
    if isinstance(e, PackError):  # a model the module format cannot hold (65536 inputs, ...)
        return f"the model does not fit a module: {e}"
    return str(e)


def exit_now(code: int) -> NoReturn:
    """Ends a finished command's process with `code` once its output is flushed, without
    Python's finalization: tearing down the modules and objects of a build (numpy,
    llvmlite, the graph and program) took 0.07-0.10 s of CPU after minirt-build's work
    was done, a tenth of a small model's build. Only for a process that is the command
    (cli/__init__.py IS_COMMAND), after every file it writes is closed; a tool whose
    libraries keep exit work (pyocd's probe sessions in minirt-flash) does not call it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to add
            stream.flush()
    os._exit(code)


def run_tool(name: str, body: Callable[[list[str] | None], int],
             argv: list[str] | None = None, *, collect_garbage: bool = True) -> int:
    """Runs a tool's body; turns user errors into located one-line messages and exit 2,
    and Ctrl-C anywhere into one line and exit 130 (a build in progress removes its
    staging directory as the KeyboardInterrupt passes: link/out_dir.py). A command's
    start-up ran without the cyclic garbage collector (cli/__init__.py); it is back on
    for the body unless `collect_garbage` is False (a process that ends with the body)."""
    if IS_COMMAND:
        if collect_garbage:
            gc.enable()
        else:
            gc.disable()
        # An editable install runs its own tree from any checkout (cli/source_tree.py).
        with contextlib.suppress(OSError):
            note = other_tree_note(name, Path.cwd())
            if note is not None:
                print(note, file=sys.stderr)
    try:
        if signal.getsignal(signal.SIGINT) is exit_at_start_up:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return body(argv)
    except INPUT_ERRORS as e:
        text = input_error_text(e)
        # A model error starts with its own file:line:col; the others name the tool.
        print(text if isinstance(e, CompileError) else f"{name}: error: {text}",
              file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    finally:
        if IS_COMMAND:  # the work is done and the process about to end (cli/__init__.py)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            code = installed()
            if code is not None:  # what @dataclass compiled, for the next run
                code.save()
