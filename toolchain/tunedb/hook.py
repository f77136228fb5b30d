"""The rules' one call into the tuning database (loops/rules.py _reduction_nest).

The rules rank their candidate tiles with a cost model and pick the cheapest; `pick`
then takes, instead, the candidate the active session names for this layer (a tuned
entry, or the tuner's forced one), if the search offered it. A database entry can
therefore only ever select a schedule the rules themselves would consider for this
kernel and target: an entry that no longer matches (the rules changed) is ignored and
the rules' own pick stands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from toolchain.kernel.form import Kernel
from toolchain.tunedb.database import active_session
from toolchain.tunedb.key import layer_keys, layer_label

__all__ = ["pick"]

C = TypeVar("C")


def pick(k: Kernel, targets: Sequence[str],
         options: Callable[[], Sequence[tuple[dict[str, Any], C]]],
         rule: tuple[dict[str, Any], C]) -> C:
    """The candidate to schedule kernel `k` with on `targets[0]`: of `options()`
    (parameters, candidate), the one the session wants for the layer on the first of
    `targets` it has an entry for (Target.tuning_targets: the target's own entries, then
    those of the target whose tuning it shares), else `rule`'s (the rules' pick, which is
    among the options). `options` is called only when the session records the
    candidates (the tuner) or wants another than the rule's: listing them costs the
    rules' search the code size of every candidate."""
    session = active_session()
    if session.forced is None and not session.entries and session.seen is None:
        return rule[1]  # nothing tuned: no key to compute
    keys = layer_keys(k, targets)
    key = keys[0]
    listed: Sequence[tuple[dict[str, Any], C]] | None = None
    if session.seen is not None and key not in session.seen:
        listed = options()
        session.seen[key] = {"label": layer_label(k), "kernel": k.name, "rule": rule[0],
                             "candidates": [p for p, _ in listed]}
    want, source, key = session.wanted_first(keys)
    if want is None or want == rule[0]:
        return rule[1]
    for params, candidate in listed if listed is not None else options():
        if params == want:
            if source != "forced":
                used = session.used.setdefault(key, {"label": layer_label(k), "kernels": [],
                                                     "schedule": params, "source": source})
                if k.name not in used["kernels"]:
                    used["kernels"].append(k.name)
            return candidate
    return rule[1]
