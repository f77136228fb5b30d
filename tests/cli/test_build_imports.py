"""minirt-build's start-up: the command imports only what the build in hand needs.

Every import is CPU time on every build (bench/compile_time.py's ``start-up`` stage):
ml_dtypes alone registers about 0.6 s of numpy casts, the ONNX frontend takes about
0.1 s, and a float MLIR model needs neither. These tests run the real command in a
fresh interpreter and read what it imported from ``python -X importtime``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"

# Imported by no build of a float MLIR model (nor by --help): the bf16 / small-float
# values' type library and the ONNX frontend with the onnx package under it.
NOT_FOR_MLIR = ("ml_dtypes", "onnx", "toolchain.frontend.onnx")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _imported(args: list[str], tmp_path: Path) -> set[str]:
    """The modules `python -m toolchain.cli.build ARGS` imports (its -X importtime lines)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "toolchain.cli.build",
                           *args], capture_output=True, text=True, env=_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_help_imports_no_frontend_it_does_not_need(tmp_path: Path) -> None:
    imported = _imported(["--help"], tmp_path)
    assert "toolchain.cli.common" in imported  # the lines are read right
    assert not imported & set(NOT_FOR_MLIR), sorted(imported & set(NOT_FOR_MLIR))


def test_float_mlir_build_imports_neither_ml_dtypes_nor_onnx(tmp_path: Path) -> None:
    imported = _imported([str(SEED), "--board", "cortex-m4", "-o", str(tmp_path / "fw")],
                         tmp_path)
    assert "toolchain.codegen.target_machine" in imported  # it did build
    assert (tmp_path / "fw" / "firmware.elf").is_file()
    assert not imported & set(NOT_FOR_MLIR), sorted(imported & set(NOT_FOR_MLIR))


def test_input_shape_still_parses_through_the_onnx_reader(tmp_path: Path) -> None:
    """The lazy import changed when the reader loads, not what the option accepts."""
    from toolchain.cli.build import _parser, input_shapes
    from toolchain.loader import UsageError

    args = _parser().parse_args([str(SEED), "--input-shape", "x=1x3x8x8"])
    assert input_shapes(args) == {"x": (1, 3, 8, 8)}
    assert input_shapes(_parser().parse_args([str(SEED)])) == {}
    with pytest.raises(UsageError, match="--input-shape x"):
        input_shapes(_parser().parse_args([str(SEED), "--input-shape", "x=1xq"]))


@pytest.mark.parametrize("given, expected", [(None, "1"), ("4", "4")])
def test_commands_run_openblas_on_one_thread_unless_told(given: str | None,
                                                         expected: str) -> None:
    env = _env()
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    code = ("import os, sys; sys.argv[0] = 'minirt-build'; import toolchain.cli; "
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.strip() == expected


def test_a_program_importing_the_tools_keeps_its_blas_threads() -> None:
    code = ("import os; import toolchain.cli.build; "
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(), check=True).stdout
    assert out.strip() == "None"


def _collector_states(module: str) -> list[str]:
    """Whether the cyclic garbage collector runs at start-up (after the command module's
    imports) and in the command's body, in a fresh interpreter that is the command (as
    `python -m MODULE` makes it)."""
    code = (f"import gc, sys; sys.orig_argv = ['python', '-m', {module!r}]; "
            + f"import {module} as m; from toolchain.cli import common; "
            "seen = [gc.isenabled()]; "
            "common.run_tool('t', lambda argv: seen.append(gc.isenabled()) or 0, [], "
            "collect_garbage=" + ("False" if module.endswith(".build") else "True") + "); "
            "print(seen)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(), check=True).stdout
    return out.split()


def test_a_command_starts_up_without_the_garbage_collector() -> None:
    """Start-up's imports make objects and free almost none: the collector is off until
    the body runs, then on again for a command that does not end with its body."""
    assert _collector_states("toolchain.cli.run") == ["[False,", "True]"]
    # minirt-build keeps it off through the build, which ends its process.
    assert _collector_states("toolchain.cli.build") == ["[False,", "False]"]


def test_a_program_importing_the_tools_keeps_its_garbage_collector() -> None:
    code = "import gc; import toolchain.cli.build; print(gc.isenabled())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(), check=True).stdout
    assert out.strip() == "True"
