"""A model's tuning, end to end (minirt-tune; toolchain/cli/tune.py is its command line).

1. The model is built with the rules' schedules and run once (measure.py): its
   instructions are the baseline, and the build records each distinct layer's key and
   the candidates the rules weighed (a layer that occurs twice is one key, tuned once).
2. For each layer with a choice, candidates.to_measure's candidates are measured, every
   one in its own firmware, all of them in parallel on the pool (pool.py, ray_pool.py).
   A layer's choices are its tiles (the tile search's candidates) and, for a layer the
   rules send to a microkernel of their own, the other kernel families that can take
   it (tunedb/hook.py choose_kernel: the tile search, the other pixel kernel).
3. A family the rules did not pick is a layer the tile search schedules: its build is
   recorded too, and the tiles of the layer's new key(s) are measured under that
   family (a second round, `inner`), so "tiles" is tried with the best tile, not only
   with the rules' pick of tile.
4. Per layer, the candidate with the fewest instructions, if fewer than the rules',
   and matching the reference, is the layer's result; Tuning.entries() turns them into
   database entries (two for a family with a tile under it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from toolchain.tune.candidates import DEFAULT_COUNT, to_measure
from toolchain.tune.measure import Job, Measurement
from toolchain.tunedb.database import load_entries, save_entries

__all__ = ["Inner", "LayerTuning", "TuneError", "Tuning", "merge_into", "short_schedule", "tune"]


KERNEL = "kernel"  # the parameter of a kernel-family choice (tunedb/hook.py choose_kernel)


class TuneError(RuntimeError):
    """The model cannot be tuned (its rules-scheduled build or run fails): one line."""


class Pool(Protocol):
    def describe(self) -> str: ...

    def map(self, jobs: list[Job]) -> list[Measurement]: ...


@dataclass(frozen=True)
class Inner:
    """A tile forced under a kernel family: the layer key `key` of the kernel the tile
    search schedules, the tile's parameters, the tile search's own pick `rule` and the
    instructions with the family and that pick (`rule_instructions`)."""

    key: str
    label: str
    kernel: str
    params: dict[str, Any]
    rule: dict[str, Any]
    rule_instructions: int


@dataclass
class LayerTuning:
    """One layer's measurements: the rules' pick and `tried` (parameters, measurement);
    `best` the parameters that beat the rules (None: the rules' pick stands)."""

    key: str
    label: str
    kernel: str
    rule: dict[str, Any]
    rule_instructions: int
    tried: list[tuple[dict[str, Any], Measurement]] = field(default_factory=list)
    # tried[i] measured with another layer key forced too (a tile under a kernel
    # family): i -> Inner.
    inner: dict[int, Inner] = field(default_factory=dict)

    def _best_index(self) -> int | None:
        ok = [(m.instructions, i) for i, (_, m) in enumerate(self.tried)
              if m.status == "ok" and m.instructions is not None]
        if not ok:
            return None
        n, i = min(ok)
        return i if n < self.rule_instructions else None

    @property
    def best(self) -> tuple[dict[str, Any], int] | None:
        i = self._best_index()
        return None if i is None else (self.tried[i][0], self.tried[i][1].instructions)

    @property
    def best_inner(self) -> Inner | None:
        """The tile the best candidate was measured with, if it is one of the second
        round's (module doc)."""
        i = self._best_index()
        return None if i is None else self.inner.get(i)

    @property
    def rejected(self) -> list[tuple[dict[str, Any], Measurement]]:
        """The candidates that failed: wrong outputs, or no build."""
        return [(p, m) for p, m in self.tried if m.status != "ok"]


@dataclass
class Tuning:
    """A model's tuning on one board: the baseline and each layer's measurements."""

    model: str
    board: str
    target: str
    baseline: int
    layers: list[LayerTuning]

    def entries(self) -> dict[str, dict[str, Any]]:
        """The database entries of the layers a candidate improved."""
        out = {}
        for layer in self.layers:
            if layer.best is None:
                continue
            params, n = layer.best
            out[layer.key] = {"schedule": params, "label": layer.label,
                              "instructions": n, "rules_instructions": layer.rule_instructions,
                              "model": self.model, "kernel": layer.kernel,
                              "rules_schedule": layer.rule}
            inner = layer.best_inner
            if inner is not None:
                # The tile under the family: its rules' count is the family's with the
                # tile search's own pick.
                out[inner.key] = {"schedule": inner.params, "label": inner.label,
                                  "instructions": n,
                                  "rules_instructions": inner.rule_instructions,
                                  "model": self.model, "kernel": inner.kernel,
                                  "rules_schedule": inner.rule}
        return out

    @property
    def saved(self) -> int:
        """The instructions the improved layers save together (each measured with the
        others at the rules' pick; separate dispatches, so the savings add up)."""
        return sum(layer.rule_instructions - layer.best[1] for layer in self.layers
                   if layer.best is not None)


def _job(model: Path, board: str, options: Mapping[str, Any], seed: int,
         forced: dict[str, dict[str, Any]], label: str, record: bool = False) -> Job:
    return Job(model.read_bytes(), model.suffix, board,
               tuple((k, json.dumps(v, sort_keys=True)) for k, v in forced.items()), seed,
               tuple(sorted(options.items())), record, label)


def tune(model: str | Path, board: str, pool: Pool, *, count: int = DEFAULT_COUNT,
         seed: int = 0, options: Mapping[str, Any] | None = None,
         log: Callable[[str], None] = print) -> Tuning:
    """Tunes every distinct layer of `model` on `board` (module doc), measuring up to
    `count` candidates per layer on `pool`; `options` are minirt.build's."""
    from toolchain.target import load_board

    model, options = Path(model), dict(options or {})
    target = load_board(board).target_info.name
    (base,) = pool.map([_job(model, board, options, seed, {}, "rules", record=True)])
    if base.status != "ok" or base.instructions is None:
        raise TuneError(f"{model}: the build with the rules' schedules fails on {board}: "
                        f"{base.message}")
    log(f"minirt-tune: {model} on {board}: {base.instructions:,} instructions with the "
        f"rules' schedules; {len(base.seen)} distinct layer(s)")
    plan: list[tuple[str, dict[str, Any]]] = []
    for key, seen in base.seen.items():
        plan += [(key, p) for p in to_measure(seen, count)]
    log(f"minirt-tune: measuring {len(plan)} candidate(s) on {pool.describe()}")
    # A kernel family's build records its layers, whose new keys are the second round's.
    results = pool.map([_job(model, board, options, seed, {key: p},
                             f"{base.seen[key]['kernel']} {p}", record=KERNEL in p)
                        for key, p in plan])
    layers = {key: LayerTuning(key, seen["label"], seen["kernel"], seen["rule"],
                               base.instructions) for key, seen in base.seen.items()}
    for (key, params), m in zip(plan, results):
        layers[key].tried.append((params, m))
    second: list[tuple[str, dict[str, Any], str, dict[str, Any], dict[str, Any], int]] = []
    for (key, params), m in zip(plan, results):
        if KERNEL not in params or m.status != "ok" or m.instructions is None:
            continue
        for inner_key, seen in m.seen.items():
            if inner_key in base.seen or KERNEL in seen["rule"]:
                continue
            second += [(key, params, inner_key, p, seen, m.instructions)
                       for p in to_measure(seen, count)]
    if second:
        log(f"minirt-tune: measuring {len(second)} tile(s) under other kernel families")
        results = pool.map([_job(model, board, options, seed, {key: p, inner_key: q},
                                 f"{seen['kernel']} {p} {q}")
                            for key, p, inner_key, q, seen, _ in second])
        for (key, p, inner_key, q, seen, n), m in zip(second, results):
            layer = layers[key]
            layer.inner[len(layer.tried)] = Inner(inner_key, seen["label"], seen["kernel"],
                                                  q, seen["rule"], n)
            layer.tried.append((p, m))
    tuned = Tuning(str(model), board, target, base.instructions,
                   [t for t in layers.values() if t.tried])
    for layer in tuned.layers:
        log(_describe(layer))
    return tuned


def _describe(layer: LayerTuning) -> str:
    lines = [f"  {layer.kernel} ({layer.label}): rules {layer.rule_instructions:,}"]
    for i, (params, m) in enumerate(layer.tried):
        what = f"{m.instructions:,}" if m.status == "ok" else f"{m.status.upper()}: {m.message}"
        inner = layer.inner.get(i)
        under = f" with {short_schedule(inner.params)}" if inner else ""
        lines.append(f"    {short_schedule(params)}{under}: {what}")
    best, inner = layer.best, layer.best_inner
    under = f" with {short_schedule(inner.params)}" if inner else ""
    lines.append(f"    -> {short_schedule(best[0])}{under}: {layer.rule_instructions - best[1]:,}"
                 f" fewer instructions" if best else "    -> the rules' pick stands")
    return "\n".join(lines)


def short_schedule(params: dict[str, Any]) -> str:
    """A candidate in a line: a kernel family (tunedb/hook.py choose_kernel), or a tile:
    blocks, unrolled / looped dims, partials, dot, vector."""
    if KERNEL in params:
        return f"kernel {params[KERNEL]}"
    parts = ["blocks " + (" ".join(f"d{d}x{f}" for d, f in params["blocks"]) or "-"),
             "unroll " + (" ".join(f"d{d}" for d in params["unroll"]) or "-"),
             "loops " + (" ".join(f"d{d}" for d in params["loops"]) or "-")]
    if params.get("partials", 1) > 1:
        parts.append(f"partials {params['partials']}")
    if params.get("dot"):
        parts.append(f"dot {params['dot']}")
    if params.get("vector", 1) > 1:
        parts.append(f"vector {params['vector']}")
    return ", ".join(parts)


def merge_into(path: Path, tuning: Tuning) -> tuple[int, int]:
    """Adds `tuning`'s entries to database file `path` (created if missing); an entry
    of the same key is replaced (the newest measurement stands). Returns (entries
    written, entries in the file)."""
    entries = load_entries(path)
    new = tuning.entries()
    entries.update(new)
    save_entries(path, entries)
    return len(new), len(entries)
