"""bench/results/conformance.{json,md}: totals, per-op rows, the exclusions with their
reasons, the most common refusals (what to import next), and the board sample's
results per board."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from toolchain.testing.conformance.outcome import STATUSES, Result

__all__ = ["totals", "write"]

SUITES = {"onnx": "ONNX backend node tests", "stablehlo": "StableHLO interpreter tests"}


def totals(results: list[Result]) -> dict[str, int]:
    """Cases per status, and `in_scope` (all but the excluded)."""
    c = Counter(r.status for r in results)
    out = {s: c.get(s, 0) for s in STATUSES}
    out["in_scope"] = sum(out.values()) - out["excluded"]
    return out


def _rate(t: dict[str, int]) -> str:
    return f"{100 * t['pass'] / t['in_scope']:.1f} %" if t["in_scope"] else "-"


def _by_op(results: list[Result]) -> dict[str, dict[str, int]]:
    rows: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        rows[r.op].append(r)
    return {op: totals(rs) for op, rs in sorted(rows.items())}


def _reason_key(reason: str) -> str:
    """A refusal without its file, position and node number, so that equal refusals
    count together."""
    reason = re.sub(r"^\S*?(model\.onnx|\.mlir:\d+:\d+): ", "", reason)
    reason = re.sub(r" \(and \d+ more\)$", "", reason)
    return re.sub(r"node #\d+ ", "node ", reason)


def write(out: Path, reference: dict[str, list[Result]],
          boards: dict[str, dict[str, list[Result]]], settings: dict) -> dict:
    """Writes conformance.json and conformance.md into `out`; returns the JSON."""
    data = {
        "settings": settings,
        "reference": {s: {"totals": totals(rs), "by_op": _by_op(rs),
                          "cases": [r.to_json() for r in rs]}
                      for s, rs in reference.items()},
        "boards": {b: {s: {"totals": totals(rs), "cases": [r.to_json() for r in rs]}
                       for s, rs in per.items()} for b, per in boards.items()},
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "conformance.json").write_text(json.dumps(data, indent=1) + "\n")
    (out / "conformance.md").write_text(_markdown(reference, boards, settings))
    return data


def _markdown(reference: dict[str, list[Result]],
              boards: dict[str, dict[str, list[Result]]], settings: dict) -> str:
    lines = ["# Conformance (`make conformance`: `python bench/conformance.py`)", "",
             f"Settings: {', '.join(f'{k} = {v}' for k, v in settings.items())}.", "",
             "## Totals on the reference", "",
             "| suite | cases | excluded | in scope | pass | refused | wrong | crash | "
             "pass rate |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s, rs in reference.items():
        t = totals(rs)
        lines.append(f"| {SUITES[s]} | {len(rs):,} | {t['excluded']:,} | {t['in_scope']:,} "
                     f"| {t['pass']:,} | {t['refused']:,} | {t['wrong']} | {t['crash']} | "
                     f"{_rate(t)} |")
    lines += ["", "## The board sample under QEMU", "",
              "| board | suite | run | pass | refused | wrong | crash |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for b, per in boards.items():
        for s, rs in per.items():
            t = totals(rs)
            lines.append(f"| {b} | {SUITES[s]} | {len(rs)} | {t['pass']} | {t['refused']} "
                         f"| {t['wrong']} | {t['crash']} |")
    bad = [(b, r) for b, per in boards.items() for rs in per.values() for r in rs
           if r.status != "pass"]
    if bad:
        lines += ["", "Not passing on a board:", ""]
        lines += [f"- {b}: `{r.name}`: {r.status}: {r.reason}" for b, r in bad]
    for s, rs in reference.items():
        lines += ["", f"## {SUITES[s]}: exclusions (out of scope), with the reason", "",
                  "| cases | reason |", "|---:|---|"]
        lines += [f"| {n} | {why} |" for why, n in Counter(
            r.reason for r in rs if r.status == "excluded").most_common()]
        lines += ["", f"## {SUITES[s]}: the most common refusals (to do)", "",
                  "| cases | refusal |", "|---:|---|"]
        lines += [f"| {n} | {why.replace('|', '/')} |" for why, n in Counter(
            _reason_key(r.reason) for r in rs if r.status == "refused").most_common(40)]
        failing = [r for r in rs if r.status in ("wrong", "crash")]
        if failing:
            lines += ["", f"## {SUITES[s]}: wrong answers and crashes (to fix)", ""]
            lines += [f"- `{r.name}`: {r.status}: {r.reason}" for r in failing]
        lines += ["", f"## {SUITES[s]}: per op", "",
                  "| op | pass | refused | wrong | crash | excluded |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {op} | {t['pass']} | {t['refused']} | {t['wrong']} | {t['crash']} | "
                  f"{t['excluded']} |" for op, t in _by_op(rs).items()]
    return "\n".join(lines) + "\n"
