"""Which schedules a layer's tuning measures.

The rules record, per layer, the candidates their search weighed (loops/rules.py
tunable_candidates: under the code cap, as careful with long float sums as the pick,
cheapest first by the cost model) and the one they picked. The model ranks close
candidates by a few instructions in a thousand; what it misses (LLVM's register
allocation, a spill, an addressing mode) is of that order. The tuner measures the
`count` cheapest by the model other than the pick: where the model is wrong, the
better tile is usually near the top.

A layer's kernel-family choice (tunedb/hook.py choose_kernel) is recorded the same way,
its candidates the families that can take the layer ({"kernel": "tiles"}, ...): at
most four, so `count` takes them all.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_COUNT", "to_measure"]

DEFAULT_COUNT = 3  # candidates measured per layer, besides the rules' pick


def to_measure(seen: dict[str, Any], count: int = DEFAULT_COUNT) -> list[dict[str, Any]]:
    """The parameters of the candidates to measure for one layer (`seen`: what the rules
    recorded for it: "rule", "candidates"), at most `count`, the rules' pick excluded."""
    return [p for p in seen["candidates"] if p != seen["rule"]][:count]
