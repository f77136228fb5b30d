"""What every minirt command shares: error reporting and exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable

from toolchain.diagnostics import CompileError
from toolchain.link.build import LinkError
from toolchain.loader import UsageError
from toolchain.target import DescriptorError

EXIT_OK = 0
EXIT_MISMATCH = 1  # the tool ran but the result is wrong or over budget
EXIT_INPUT = 2  # bad model, option or input file


def run_tool(name: str, body: Callable[[list[str] | None], int],
             argv: list[str] | None = None) -> int:
    """Runs a tool's body; turns user errors into located one-line messages and exit 2."""
    try:
        return body(argv)
    except CompileError as e:
        print(e.render(), file=sys.stderr)
        return EXIT_INPUT
    except (UsageError, DescriptorError, LinkError) as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
