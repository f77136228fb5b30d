"""Paths reach every flashing tool as data: a build directory named with Tcl and shell
syntax (the issue's ``x} [exec touch PWNED] {y $(touch PWNED2)`` among them) gives a
--dry-run plan that, run as printed (each ``$`` command by bash, OpenOCD's ``-c``
commands by tclsh with ``program`` re-evaluating its file name as OpenOCD's does), runs
nothing of the name and hands each tool the exact path."""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.cli import flash as flash_cli

Build = Callable[[str], Path]
BASH = shutil.which("bash") or "bash"

NAMES = [
    "x} [exec touch PWNED] {y $(touch PWNED2)",
    'we}ird [exec touch PWNED] $HOME "q" `touch PWNED2` a,b;c\nnext line \\ end',
    "{ $x [y] \" ' }",
]
BOARDS = {"openocd": "nucleo-l4r5zi", "pyocd": "nucleo-l4r5zi", "dfu": "netduinoplus2",
          "uf2": "feather-m4-express", "qemu": "cortex-m4"}
IMAGE = {"openocd": ".hex", "pyocd": ".hex", "dfu": ".bin", "uf2": ".uf2", "qemu": ".bin"}

# tclsh in OpenOCD's place: `program` re-evaluates its file name as OpenOCD 0.12's
# startup.tcl does (eval flash write_image erase $flash_args); each word that arrives is
# logged NUL-terminated, so any newline or brace in it is seen as it is.
TCL = r"""
set log [open [lindex $argv 0] a]
proc record {what args} {
    puts -nonewline $::log "$what\0"
    foreach a $args { puts -nonewline $::log "$a\0" }
    puts -nonewline $::log "\n"
}
proc adapter {args} { record adapter {*}$args }
proc program {filename args} {
    set flash_args "$filename"
    eval record program $flash_args
}
foreach cmd [lrange $argv 1 end] { uplevel #0 $cmd }
"""

STUB = """\
import json, os, sys
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


def _commands(out: str) -> list[str]:
    """The ``$`` commands of a plan; a quoted newline continues a command's line."""
    commands: list[str] = []
    open_quote = False
    for line in out.splitlines():
        if open_quote:
            commands[-1] += "\n" + line
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        try:
            shlex.split(commands[-1])
            open_quote = False
        except ValueError:  # "No closing quotation": the path had a newline
            open_quote = True
    return commands


def _run_plan(commands: list[str], work: Path) -> list[list[str]]:
    """Runs each command with bash, every tool it names a stub logging its arguments."""
    stubs, cwd = work / "stubs", work / "cwd"
    stubs.mkdir()
    cwd.mkdir()
    log = work / "calls.jsonl"
    log.write_text("")
    for command in commands:
        # A tool named by its full path (QEMU) runs as the stub of the same name: only
        # the first word changes, the rest of the line reaches bash as printed.
        argv0 = shlex.split(command)[0]
        assert command.startswith(shlex.quote(argv0) + " ")
        command = shlex.quote(os.path.basename(argv0)) + command[len(shlex.quote(argv0)):]
        stub = stubs / os.path.basename(argv0)
        assert stub.parent == stubs  # never a file outside the test's folder
        stub.write_text(f"#!{sys.executable}\n{STUB}")
        stub.chmod(0o755)
        subprocess.run([BASH, "-c", command], cwd=cwd, check=True, timeout=60,
                       env={"PATH": str(stubs), "STUB_LOG": str(log), "HOME": str(work)})
    assert list(cwd.iterdir()) == []
    return [json.loads(line) for line in log.read_text().splitlines()]


def _tcl(commands: list[str], work: Path) -> list[list[str]]:
    """What the ``-c`` commands do in tclsh (see TCL), as logged words."""
    script, log, cwd = work / "openocd.tcl", work / "tcl.log", work / "tcl-cwd"
    script.write_text(TCL)
    log.write_bytes(b"")
    cwd.mkdir()
    subprocess.run(["tclsh", str(script), str(log), *commands], cwd=cwd, check=True,
                   timeout=60)
    assert list(cwd.iterdir()) == []
    return [entry.split("\0") for entry in log.read_text().split("\0\n")[:-1]]


@pytest.mark.skipif(shutil.which("tclsh") is None or shutil.which("bash") is None,
                    reason="needs tclsh and bash")
@pytest.mark.parametrize("method", sorted(BOARDS))
@pytest.mark.parametrize("name", NAMES, ids=["issue", "mixed", "braces"])
def test_a_hostile_build_path_is_data(method: str, name: str, double_build: Build,
                                      tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    board = BOARDS[method]
    build = tmp_path / name
    shutil.copytree(double_build(board), build)
    image = str(build / f"firmware{IMAGE[method]}")
    probe = ["--probe", name] if method == "openocd" else []
    rc = flash_cli.main(["--board", board, "--method", method, str(build), "--dry-run",
                         *probe])
    out, err = capsys.readouterr()
    assert rc == 0, err
    work = tmp_path / "work"
    work.mkdir()
    calls = _run_plan(_commands(out), work)
    if method == "openocd":
        (copy, openocd) = calls
        assert copy == ["cp", "--", image, copy[3]]
        tcl = [openocd[i + 1] for i, a in enumerate(openocd) if a == "-c"]
        assert _tcl(tcl, work) == [["adapter", "serial", name], ["program", copy[3]]]
    elif method == "pyocd":
        assert calls == []  # a library call: the path is a Python argument
        literal = out.split(".program(")[1].split(", file_format=")[0]
        assert ast.literal_eval(literal) == image
    elif method == "dfu":
        assert [call[call.index("-D") + 1] for call in calls if "-D" in call] == [image]
    elif method == "uf2":
        assert calls == [["cp", "--", image, "<FEATHERBOOT>/firmware.uf2"]]
    else:
        (qemu,) = calls
        loader = qemu[qemu.index("-device") + 1]
        # QEMU's option syntax: a doubled comma is a comma inside a value.
        fields = [f.replace("\0", ",") for f in loader.replace(",,", "\0").split(",")]
        assert fields[:2] == ["loader", f"file={image}"]
    assert not [p for p in tmp_path.rglob("*") if p.name in ("PWNED", "PWNED2")]
    assert os.path.isdir(build)


def test_a_board_with_a_tcl_configuration_name_is_refused(double_build: Build, tmp_path: Path,
                                                          capsys) -> None:  # type: ignore[no-untyped-def]
    """OpenOCD wraps a -f name in braces and runs it as Tcl: only plain names pass."""
    import yaml

    from toolchain.target import load_board

    source = load_board("nucleo-l4r5zi").path
    data = yaml.safe_load(source.read_text())
    (openocd,) = [m for m in data["flash_methods"] if m["method"] == "openocd"]
    openocd["config"] = ["board/x} [exec touch PWNED] {.cfg"]
    custom = tmp_path / "nucleo-l4r5zi.yaml"
    custom.write_text(yaml.safe_dump(data))
    rc = flash_cli.main(["--board", str(custom), str(double_build("nucleo-l4r5zi")),
                         "--dry-run"])
    _, err = capsys.readouterr()
    assert rc == 2, err
    assert "OpenOCD configuration 'board/x} [exec touch PWNED] {.cfg' may only have" in err
