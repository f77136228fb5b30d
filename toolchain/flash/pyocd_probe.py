"""pyOCD through its Python API (the optional ``flash`` extra: ``pip install
'minirt[flash]'``, imported only when this method runs): choose the probe, open a
session with the board's target type, program the .hex, read every loaded range back
and compare it, then reset the core so the image starts."""

from __future__ import annotations

import importlib
from typing import Any

from toolchain.flash.common import FlashFailed, FlashJob, Progress, Step
from toolchain.loader import UsageError

__all__ = ["plan", "run"]

INSTALL = "pip install 'minirt[flash]' (pyOCD), or pick another --method"


def plan(job: FlashJob) -> list[Step]:
    """The API calls, in order, as they will be made."""
    assert job.method is not None
    hex_path = job.build.checked(".hex")
    uid = repr(job.probe) if job.probe else "None"
    return [
        Step(text=f"pyocd: ConnectHelper.get_all_connected_probes(blocking=False, "
                  f"unique_id={uid})"),
        Step(text=f"pyocd: Session(probe, target_override={job.method.target!r}) "
                  f"-> FileProgrammer(session, no_reset=True).program({str(hex_path)!r}, "
                  "file_format='hex')"),
        Step(text=f"pyocd: target.read_memory_block8() over {len(job.build.chunks)} "
                  "loaded range(s), compared with firmware.elf; target.reset()"),
    ]


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise UsageError(f"pyOCD is not installed: {INSTALL}") from None


def _choose_probe(job: FlashJob, helpers: Any) -> Any:
    probes = helpers.ConnectHelper.get_all_connected_probes(blocking=False,
                                                            unique_id=job.probe,
                                                            print_wait_message=False)
    if not probes:
        wanted = f" with unique ID containing {job.probe!r}" if job.probe else ""
        raise UsageError(f"pyOCD found no debug probe{wanted}: plug in the board's debug USB "
                         "port (`pyocd list` shows the probes it sees)")
    if len(probes) > 1:
        ids = ", ".join(p.unique_id for p in probes)
        raise UsageError(f"pyOCD sees {len(probes)} debug probes ({ids}): choose one with "
                         "--probe ID")
    return probes[0]


def run(job: FlashJob) -> str:
    """Programs and verifies through pyOCD; returns what was verified."""
    assert job.method is not None
    steps = plan(job)
    helpers = _import("pyocd.core.helpers")
    session_mod = _import("pyocd.core.session")
    programmer = _import("pyocd.flash.file_programmer")
    errors = _import("pyocd.core.exceptions")
    hex_path = job.build.checked(".hex")
    job.show(steps[0])
    probe = _choose_probe(job, helpers)
    job.say(f"probe {probe.unique_id} ({probe.description})")
    job.show(steps[1])
    progress = Progress(job, "writing", job.build.flash_bytes, "bytes")
    try:
        with session_mod.Session(probe, target_override=job.method.target) as session:
            programmer.FileProgrammer(session, progress=progress.fraction,
                                      no_reset=True).program(str(hex_path), file_format="hex")
            job.show(steps[2])
            target = session.target
            for chunk in job.build.chunks:
                got = bytes(target.read_memory_block8(chunk.address, len(chunk.data)))
                if got != chunk.data:
                    k = next(i for i, (a, b) in enumerate(zip(got, chunk.data)) if a != b)
                    raise FlashFailed(f"pyOCD read back {got[k]:#04x} at "
                                      f"{chunk.address + k:#010x}, firmware.elf has "
                                      f"{chunk.data[k]:#04x}")
            target.reset()
    except errors.TargetSupportError as e:
        raise UsageError(f"pyOCD has no target '{job.method.target}' ({e}): install its "
                         f"CMSIS pack with `pyocd pack install {job.method.target}`") from None
    except errors.Error as e:
        raise FlashFailed(f"pyOCD: {e}") from None
    return f"pyOCD read the flash back: {job.build.flash_bytes} bytes verified"
