"""The tuning database: the schedule minirt-tune measured best per (layer shape, target),
and the build session through which the rules look it up.

**Files.** JSON, ``{"version": 1, "entries": {KEY: ENTRY}}``, KEY from key.py
(``<target>:<hash>``), ENTRY ``{"schedule": PARAMS, "label": ..., "instructions": N,
"rules_instructions": M, "model": ...}``: PARAMS the candidate's parameters as the rules
name them (loops/rules.py candidate_params), the rest what the tuner measured (the whole
firmware's instructions with this schedule and with the rules' pick), for people.

**Shared tuning.** A target whose kernels and dispatch schedules are another's names it
in ``tuning_from`` (targets/cortex-m7.yaml: cortex-m4): its builds take, for a layer
without an entry of their own target, that target's entry for the layer
(Target.tuning_targets, Session.wanted_first); an entry of their own target wins.

**Precedence.** A build consults the shipped defaults (toolchain/tunedb/defaults.json,
what bench/tune.py measured on the shape sweep) and a user file: ``--tuning-db PATH``
(minirt-build, minirt-run, the API's ``tuning_db=``), else the file named by the
environment variable MINIRT_TUNING_DB. An entry of the user file replaces the shipped
one of the same key. ``--tuning-db none`` (or MINIRT_TUNING_DB=none) turns both off:
the rules alone choose.

**Sessions.** The rules look entries up in the active Session (a context variable, set
around a build's scheduling and code generation by pipeline.compile_image, which every
build goes through: firmware, --emit library, minirt-bench); with none active (a direct
call of the rules) they consult nothing. The tuner runs its builds in sessions of its own:
`forced` schedules for the layers it measures, the rules' pick for every other, and
`seen` records each layer's candidates.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from toolchain.loader import UsageError

__all__ = ["DEFAULTS", "ENV", "NONE", "DatabaseError", "Session", "active_session",
           "build_session", "current_session", "load_entries", "resolve_user_file", "save_entries",
           "tuning_stamp"]

DEFAULTS = Path(__file__).with_name("defaults.json")
ENV = "MINIRT_TUNING_DB"
NONE = "none"  # --tuning-db none: no database, the rules alone
VERSION = 1


class DatabaseError(UsageError):
    """A tuning database file that cannot be read (its message names the file): a bad
    input file, one line and exit 2 like any other."""


def load_entries(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of database file `path` ({} for a missing file)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise DatabaseError(f"{path}: cannot read the tuning database: {e.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DatabaseError(f"{path}: not a tuning database (invalid JSON: {e.msg} at line "
                            f"{e.lineno})") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or \
            not isinstance(data.get("entries"), dict):
        raise DatabaseError(f'{path}: not a tuning database (expected {{"version": {VERSION},'
                            f' "entries": {{...}}}})')
    for key, entry in data["entries"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("schedule"), dict):
            raise DatabaseError(f"{path}: entry {key!r} has no schedule object")
    return data["entries"]


def save_entries(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    """Writes `entries` to `path` (sorted by key, so a diff shows what changed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # An entry a line: a diff of the file shows which layers changed.
    lines = [f" {json.dumps(key)}: {json.dumps(entry, sort_keys=True)}"
             for key, entry in sorted(entries.items())]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f'{{"version": {VERSION}, "entries": {{\n' + ",\n".join(lines) + "\n}}\n")
    tmp.replace(path)


@lru_cache(maxsize=8)
def _cached(path: str, mtime_ns: int, size: int) -> dict[str, dict[str, Any]]:
    return load_entries(Path(path))


def _read(path: Path) -> dict[str, dict[str, Any]]:
    """load_entries, cached while the file is unchanged (every build reads the
    defaults)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    return _cached(str(path), st.st_mtime_ns, st.st_size)


def resolve_user_file(explicit: str | Path | None) -> Path | None | str:
    """The user file a build reads: `explicit` (--tuning-db), else $MINIRT_TUNING_DB,
    else None; NONE when either says "none" (no database at all). A named file must
    exist."""
    value = str(explicit) if explicit is not None else os.environ.get(ENV, "")
    if not value:
        return None
    if value == NONE:
        return NONE
    path = Path(value)
    if not path.is_file():
        source = "--tuning-db" if explicit is not None else f"${ENV}"
        raise DatabaseError(f"{source} {value}: no such tuning database file")
    return path


@dataclass
class Session:
    """What the rules consult while one build is scheduled (module doc).

    `entries`: key -> entry, the user file's over the defaults'; `sources`: key -> the
    file it came from. `forced` (the tuner's): key -> schedule parameters; when set,
    every key it does not name gets the rules' pick. `seen` (the tuner's recorder):
    key -> {"label", "rule", "candidates"}. `used`: key -> what a build took from the
    database ({"label", "kernels", "schedule", "source"}), for its log and size report.
    """

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    forced: dict[str, dict[str, Any]] | None = None
    seen: dict[str, dict[str, Any]] | None = None
    used: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def for_build(cls, user_file: str | Path | None = None) -> Session:
        """The session of a build with --tuning-db `user_file` (resolve_user_file)."""
        user = resolve_user_file(user_file)
        if user == NONE:
            return cls()
        entries = {k: v for k, v in _read(DEFAULTS).items()}
        sources = dict.fromkeys(entries, "defaults")
        if user is not None:
            mine = _read(Path(user))
            entries.update(mine)
            sources.update(dict.fromkeys(mine, str(user)))
        return cls(entries, sources)

    def wanted(self, key: str) -> tuple[dict[str, Any] | None, str]:
        """The schedule parameters to take for `key` (None: the rules' pick) and where
        they come from."""
        if self.forced is not None:
            return self.forced.get(key), "forced"
        entry = self.entries.get(key)
        return (entry["schedule"], self.sources[key]) if entry else (None, "")

    def wanted_first(self, keys: Sequence[str]) -> tuple[dict[str, Any] | None, str, str]:
        """`wanted` for the first of `keys` that has an entry: a layer's own key, then
        its key on the targets whose tuning its target shares (Target.tuning_targets).
        Returns the parameters, where they come from and the key found (keys[0] when
        none). The tuner's forced schedules are its own target's: keys[0] only."""
        for key in keys[:1] if self.forced is not None else keys:
            want, source = self.wanted(key)
            if want is not None:
                return want, source, key
        return None, "", keys[0]

    def used_lines(self) -> list[str]:
        """One line per tuned layer the build took from the database."""
        return [f"tuned schedule for {', '.join(u['kernels'])} ({u['label']}; {key}, from "
                f"{u['source']})" for key, u in self.used.items()]


_ACTIVE: ContextVar[Session | None] = ContextVar("minirt_tuning_session", default=None)


def current_session() -> Session | None:
    """The session the rules consult now, if one is set (build_session)."""
    return _ACTIVE.get()


_RULES_ALONE = Session()


def active_session() -> Session:
    """The session of the build being scheduled; outside any build (a direct call of
    loops.choose_schedule: the rules' own tests, a tool asking what the rules pick) an
    empty one: the rules alone."""
    s = _ACTIVE.get()
    return s if s is not None else _RULES_ALONE


@contextmanager
def build_session(session: Session) -> Iterator[Session]:
    """Makes `session` the one the rules consult inside the block."""
    token = _ACTIVE.set(session)
    try:
        yield session
    finally:
        _ACTIVE.reset(token)


def tuning_stamp(user_file: str | Path | None) -> str | None:
    """What a build's stamp records of its user database (a build made with another
    file's entries is stale): "none", the file's path and digest, or None when no user
    file is read (the shipped defaults are in the toolchain's own digest)."""
    import hashlib

    user = resolve_user_file(user_file)
    if user is None:
        return None
    if user == NONE:
        return NONE
    return f"{user}:{hashlib.sha256(Path(user).read_bytes()).hexdigest()}"
