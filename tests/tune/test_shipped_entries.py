"""The shipped tuning database (toolchain/tunedb/defaults.json, written by
`bench/tune.py --update-defaults`) as a user build meets it: a layer of the shape
sweep with a cortex-m4 entry is built by minirt-build with that entry (the build says
so, from "defaults"), under QEMU retires fewer instructions than with the rules alone
(--tuning-db none), and still matches the reference bit for bit. The layer is the
bench's own (its seed is in the entry's "model"): the key is the layer's shape, but a
constant the graph folds by its values (per-channel requantization values that happen
to be equal become one) can change it for other weights."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op

from toolchain import api
from toolchain.tunedb.database import DEFAULTS, load_entries

BOARD = "cortex-m4"

# (kind, h, w, cin, cout, kh, kw, stride, what the entry does)
LAYERS = {
    "conv 1x1 19x6 32->31": ("conv", 19, 6, 32, 31, 1, 1, 1, "the im2col kernel, which "
                             "the rules keep for 32 channels to 32 outputs or more"),
    "conv 5x5 s2 10x10 4->16": ("conv", 10, 10, 4, 16, 5, 5, 2, "the tile search "
                                "instead of the im2col kernel, which the rules give "
                                "1-4 input channels"),
}


@pytest.mark.parametrize("label", sorted(LAYERS))
def test_build_takes_the_shipped_entry(label: str, tmp_path: Path) -> None:
    kind, h, w, cin, cout, kh, kw, stride, _ = LAYERS[label]
    shipped = {k: e for k, e in load_entries(DEFAULTS).items()
               if k.startswith(f"{BOARD}:")
               and e.get("model", "").startswith(f"bench/tune.py: {label} ")}
    assert shipped, f"no shipped entry measured on {label}"
    (seed,) = {int(re.search(r"\(seed (\d+)\)", e["model"]).group(1))
               for e in shipped.values()}
    # bench/tune.py layer_model: bench/shapes.py's input quantization.
    op, x, y = int8_layer_op(np.random.default_rng(seed), kind, h, w, cin, cout, kh, kw,
                             stride, 1, name="L0", in_scale=0.05, in_zp=-3)
    model = tmp_path / "m.tflite"
    model.write_bytes(build_model([op], [x], [y]))
    lines: list[str] = []
    tuned = api.build(model, BOARD, out_dir=tmp_path / "tuned", log=lines.append)
    used = [line for line in lines if line.startswith("minirt-build: tuned schedule for")]
    assert len(used) == len(shipped) and all("from defaults" in line for line in used), lines
    assert {t["key"] for t in tuned.size.tuned} == set(shipped)
    rules = api.build(model, BOARD, out_dir=tmp_path / "rules", tuning_db="none")
    n_tuned = tuned.run(check=True).instructions  # raises Mismatch unless bit-exact
    n_rules = rules.run(check=True).instructions
    assert n_tuned is not None and n_rules is not None and n_tuned < n_rules
