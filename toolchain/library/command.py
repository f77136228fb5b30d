"""The library options of minirt-build (--emit, --name, --arena) and what it prints
for a library build; toolchain/cli/build.py calls these."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from toolchain.graph.ir import Graph
from toolchain.library.build import build_library
from toolchain.library.names import check_name, default_name
from toolchain.library.sources import ARENA_MODES
from toolchain.loader import UsageError
from toolchain.passes import QuantizeOptions
from toolchain.report.size import _num
from toolchain.target import Board

__all__ = ["add_library_options", "emit_library", "library_options"]

EMIT_KINDS = ("firmware", "library")


def add_library_options(p: argparse.ArgumentParser) -> None:
    """--emit, --name and --arena."""
    p.add_argument("--emit", choices=EMIT_KINDS, default="firmware",
                   help="firmware: a whole image to flash (default); library: "
                        "libminirt_<name>.a, <name>.h and CMake / Make snippets to link the "
                        "model into your own firmware (no start-up, no main)")
    p.add_argument("--name", help="--emit library: the C name of the library and its entry "
                                  "<name>_run (default: the model file's name made a C "
                                  "identifier)")
    p.add_argument("--arena", choices=ARENA_MODES, default=None,
                   help="--emit library: the scratch memory is static inside the library, "
                        "or passed by the caller to <name>_run (default: static)")


def library_options(args: argparse.Namespace) -> tuple[str, str] | None:
    """(name, arena) for --emit library, None for a firmware build; UsageError for a bad
    name or a library option without --emit library. Reads no file."""
    if args.emit != "library":
        for flag, value in (("--name", args.name), ("--arena", args.arena)):
            if value is not None:
                raise UsageError(f"{flag} applies to --emit library only")
        return None
    name = check_name(args.name) if args.name is not None else default_name(args.model)
    return name, args.arena or "static"


def emit_library(args: argparse.Namespace, board: Board, graph: Graph, out_dir: Path,
                 quantize: QuantizeOptions, options: tuple[str, str], stamp: dict) -> int:
    """Builds the library into out_dir and prints what it holds; returns the exit code."""
    name, arena = options
    start = time.perf_counter()
    print(f"minirt-build: {args.model} -> {board.identifier} ({board.target_info.triple}), "
          f"library '{name}', arena {arena}")
    result = build_library(graph, board, out_dir, name=name, model=Path(args.model).name,
                           arena=arena, quantize=quantize, stamp=stamp,
                           optimize=args.optimize)
    s, spec = result.sizes, result.spec
    arena_text = (f"arena {_num(spec.arena_size)} B static" if arena == "static" else
                  f"+ the caller's arena of {_num(spec.arena_size)} B")
    print(f"libminirt_{name}.a: code {_num(s.code)} B, read-only data {_num(s.rodata)} B "
          f"(module {_num(s.module)} B), RAM {_num(s.data + s.bss)} B ({arena_text}); a link "
          "with --gc-sections keeps only what the entry reaches")
    print(f"entry: {header_prototype(result.header.read_text(), name)}")
    seconds = time.perf_counter() - start
    print(f"minirt-build: wrote {out_dir}/ ({', '.join(result.files)}) in {seconds:.1f} s")
    return 0


def header_prototype(header: str, name: str) -> str:
    """The `int <name>_run(...);` line of a generated header."""
    return next(line for line in header.splitlines() if line.startswith(f"int {name}_run("))
