"""One measurement of the tuner: a model's firmware built with one layer's schedule
forced, run once under QEMU, its instructions counted and its outputs checked.

QEMU's count of retired instructions is exact and the same on every run, so one run per
candidate decides. Every other layer keeps the rules' pick (the session's `forced`
names only the layer measured), so the difference between two candidates' counts is
the difference of that layer's (and of every layer sharing its key, which an entry
would schedule alike). The outputs are compared with the numpy reference as minirt-run
--check compares them (Build.run(check=True): integers exactly, bit for bit; floats
within its tolerance, as a reordered float sum rounds differently): a candidate that
computes anything else is reported and never stored.

A Job carries the model's bytes, not its path, so a Ray worker on another machine can
measure it (its node needs minirt installed, with the same toolchain).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Job", "Measurement", "measure"]


@dataclass(frozen=True)
class Job:
    """What to build and run: `model` (its bytes) with suffix `suffix` (.tflite, .onnx,
    .mlir) for `board`, the schedules `forced` (key -> parameters; every other layer the
    rules' pick), on seeded random inputs `seed`; `options` are minirt.build's keyword
    options (quantize, entry, ...). `record`: also return every layer's candidates."""

    model: bytes
    suffix: str
    board: str
    forced: tuple[tuple[str, str], ...] = ()  # (key, JSON of the parameters), hashable
    seed: int = 0
    options: tuple[tuple[str, Any], ...] = ()
    record: bool = False
    label: str = ""  # what the job measures, for the report


@dataclass
class Measurement:
    """A Job's result: `status` "ok" (with `instructions`), "mismatch" (the outputs
    differ from the reference: `message` says where) or "error" (the build or run
    failed: `message`). `seen`: the layers' candidates (Job.record)."""

    label: str
    status: str
    instructions: int | None = None
    message: str = ""
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)


def measure(job: Job) -> Measurement:
    """Builds and runs `job` in a temporary directory (module doc)."""
    import json

    from toolchain import api
    from toolchain.tunedb.database import Session, build_session

    forced = {key: json.loads(params) for key, params in job.forced}
    session = Session(forced=forced, seen={} if job.record else None)
    with tempfile.TemporaryDirectory(prefix="minirt-tune-") as tmp:
        model = Path(tmp) / f"model{job.suffix}"
        model.write_bytes(job.model)
        try:
            with build_session(session):
                build = api.build(model, job.board, out_dir=Path(tmp) / "build",
                                  **dict(job.options))
            run = build.run(seed=job.seed, check=True)
        except api.Mismatch as e:
            return Measurement(job.label, "mismatch", None, _line(e), session.seen or {})
        except api.Error as e:
            return Measurement(job.label, "error", None, _line(e), session.seen or {})
        except Exception as e:  # noqa: BLE001 - a candidate the code generator refuses
            # (a compiler bug, reported as the candidate's failure, not the tuning's)
            return Measurement(job.label, "error", None,
                               f"{type(e).__name__}: {_line(e)}", session.seen or {})
    if run.instructions is None:
        return Measurement(job.label, "error", None,
                           f"board {job.board} counts no instructions (not run under QEMU)")
    return Measurement(job.label, "ok", run.instructions, "", session.seen or {})


def _line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
