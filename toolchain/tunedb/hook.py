"""The rules' calls into the tuning database: which tile (`pick`), and which kernel
family (`choose_kernel`).

The rules rank their candidate tiles with a cost model and pick the cheapest; `pick`
(loops/rules.py _reduction_nest) then takes, instead, the candidate the active session
names for this layer (a tuned entry, or the tuner's forced one), if the search offered
it. Before that search, the rules send some layers to a microkernel of their own (the
few-output and im2col pixel kernels, the depthwise row pairs and 5x5 pairs) by rules of
thumb measured on a few shapes; `choose_kernel` lets the session name, for such a
layer, another family the rules could take it to: "tiles" (the tile search) or the
other pixel kernel. The family decision has a key of its own (the layer's key plus
KERNEL_SUFFIX), so one layer can have both a family entry and, under it, a tile entry.
Either way a database entry can only ever select a schedule the rules themselves would
consider for this kernel and target: an entry that no longer matches (the rules
changed) is ignored and the rules' own choice stands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from toolchain.kernel.form import Kernel
from toolchain.tunedb.database import active_session
from toolchain.tunedb.key import layer_keys, layer_label

__all__ = ["KERNEL_SUFFIX", "TILES", "choose_kernel", "pick"]

C = TypeVar("C")

KERNEL_SUFFIX = ":kernel"  # a layer's kernel-family key: its layer key and this
TILES = "tiles"  # the family of the tile search (loops/rules.py _reduction_nest)


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


def choose_kernel(k: Kernel, targets: Sequence[str], options: Sequence[str],
                  rule: str) -> str | None:
    """The kernel family the session wants kernel `k` computed by on `targets[0]`, of
    `options` (the families that can take it; `rule` the one the rules take it to),
    or None: no entry, or one naming a family not offered here (the rules decide, as
    without a database). The tuner's recorder notes the options under the layer's
    kernel key (KERNEL_SUFFIX) the first time it is asked."""
    session = active_session()
    if len(options) < 2 or (session.forced is None and not session.entries
                            and session.seen is None):
        return None
    keys = [key + KERNEL_SUFFIX for key in layer_keys(k, targets)]
    if session.seen is not None and keys[0] not in session.seen:
        session.seen[keys[0]] = {"label": f"{layer_label(k)}, kernel", "kernel": k.name,
                                 "rule": {"kernel": rule},
                                 "candidates": [{"kernel": o} for o in options]}
    want, source, key = session.wanted_first(keys)
    family = want.get("kernel") if want is not None else None
    if family not in options:
        return None
    if source != "forced" and family != rule:
        used = session.used.setdefault(key, {"label": f"{layer_label(k)}, kernel",
                                             "kernels": [], "schedule": want,
                                             "source": source})
        if k.name not in used["kernels"]:
            used["kernels"].append(k.name)
    return family
