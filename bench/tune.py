"""minirt-tune on layers of the shape sweep (bench/shapes.py): how many instructions the
measured schedules save over the rules' picks, each checked bit-exact.

**What runs**: each layer (LAYERS: the sweep's kinds of layer over channel counts that
are and are not multiples of 4) is one int8 model of that layer alone, built as
bench/shapes.py builds its layers (tests/tflite_models.py int8_layer_op, SAME padding,
seeded random weights). `toolchain.tune.tuner.tune` measures up to CANDIDATES of the
tile search's candidates besides the rules' pick and, for a layer the rules send to a
microkernel of their own or one that could take it (im2col, few-output, depthwise row
pairs or 5x5 pairs), the other kernel families, each family with the tile search's
candidates under it; each in its own firmware under QEMU, outputs compared bit-exact
with the reference. "rules' kernel" is the family the rules take the layer to.

**What is checked after**: the improved layers' entries are written to a fresh
database, and the model is built again with it (minirt.build(tuning_db=...)) as a user
build would: the build must say it used the entry, retire exactly the instructions the
tuner measured, and still match the reference bit-exactly. A layer for which this does
not hold fails the bench.

**The numbers**: instructions of one inference (the layer's dispatch and the runtime's
fixed few hundred around it) with the rules' schedule and with the best measured one.
Keys depend on the layer's shape and element types only, so the entries apply to any
model with such a layer; `--update-defaults` writes them to the shipped defaults
(toolchain/tunedb/defaults.json).

**Whole models** (`--models kws_ref_model,...`, from ../shared/models/mlperf_tiny):
every distinct layer tuned, then the model built with all the entries found; it must
retire exactly the rules' count less the layers' measured savings, bit-exact. Their
entries are not shipped (they are the models' layers, not the sweep's).

Usage: python bench/tune.py [--boards riscv32,cortex-m4] [--only REGEX] [-j N]
       [--models NAMES] [--update] [--update-defaults]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from shapes import IN_SCALE, IN_ZP, Layer  # noqa: E402
from tflite_models import build_model, int8_layer_op  # noqa: E402

from toolchain import api  # noqa: E402
from toolchain.target import load_board  # noqa: E402
from toolchain.tune.pool import LocalPool  # noqa: E402
from toolchain.tune.tuner import KERNEL, short_schedule, tune  # noqa: E402
from toolchain.tunedb.database import DEFAULTS, load_entries, save_entries  # noqa: E402

CANDIDATES = 4
MODELS_DIR = ROOT.parent / "shared" / "models" / "mlperf_tiny"
LAYERS = [
    *(Layer("conv 1x1 19x6 cin", "conv", 19, 6, c, 32) for c in (3, 13, 16, 61)),
    *(Layer("conv 3x3 10x10 cin", "conv", 10, 10, c, 32, 3, 3) for c in (3, 13, 16)),
    *(Layer("conv 5x5 10x10 cin", "conv", 10, 10, c, 32, 5, 5) for c in (3, 13)),
    *(Layer("conv 1x7 19x6 cin", "conv", 19, 6, c, 32, 1, 7) for c in (3, 13)),
    *(Layer("depthwise 3x3 x1 10x10", "depthwise", 10, 10, c, c, 3, 3) for c in (13, 16, 61)),
    *(Layer("depthwise 3x3 x1 19x6", "depthwise", 19, 6, c, c, 3, 3) for c in (16, 64)),
    *(Layer("dense ->32", "dense", 1, 1, c, 32) for c in (13, 64, 250)),
    # Appended (the layers above keep their seeds): the sweep's layers where, on
    # cortex-m4, another kernel family than the rules' measured faster (a sweep over
    # every family's layers with minirt-tune's kernel choices, docs/architecture.md):
    # pointwise and windowed layers from 32 channels to few outputs, a 5x5 stride-2
    # layer over 4 channels, stride-2 depthwise layers over 1-3 channels; a 5x5
    # depthwise layer over one channel whose tile the cost model misjudges; 5x5 layers
    # over 4 channels (the tile search, where the rules take im2col).
    *(Layer("conv 1x1 19x6 cout", "conv", 19, 6, 32, c) for c in (2, 7, 31)),
    *(Layer(f"conv {kh}x{kw} 19x6 cout", "conv", 19, 6, 32, 8, kh, kw)
      for kh, kw in ((3, 3), (5, 5), (1, 7))),
    Layer("conv 1x7 19x6 cout", "conv", 19, 6, 32, 13, 1, 7),
    Layer("conv 5x5 s2 10x10 cin", "conv", 10, 10, 4, 16, 5, 5, stride=2),
    *(Layer("depthwise 3x3 s2 x1 10x10", "depthwise", 10, 10, c, c, 3, 3, stride=2)
      for c in (1, 2, 3)),
    Layer("depthwise 5x5 x1 10x10", "depthwise", 10, 10, 1, 1, 5, 5),
    *(Layer(f"conv 5x5 {h}x{w} cin", "conv", h, w, 4, 32, 5, 5)
      for h, w in ((19, 6), (10, 10))),
]


def layer_model(layer: Layer, seed: int) -> bytes:
    """The layer alone as an int8 .tflite model (bench/shapes.py's ops)."""
    rng = np.random.default_rng(seed)
    op, x, y = int8_layer_op(rng, layer.kind, layer.h, layer.w, layer.cin, layer.cout,
                             layer.kh, layer.kw, layer.stride, layer.dilation, name="L0",
                             in_scale=IN_SCALE, in_zp=IN_ZP)
    return build_model([op], [x], [y])


def rules_kernel(result) -> str:
    """The kernel family the rules take the layer to: a microkernel of theirs (its
    kernel key's rule, tunedb/hook.py choose_kernel) or the tile search."""
    return next((t.rule[KERNEL] for t in result.layers if KERNEL in t.rule), "tiles")


def tune_model(model: Path, label: str, family: str, board: str, work: Path,
               jobs: int) -> tuple[dict, dict]:
    """Tunes one model and checks the database build (module doc). Returns its row and
    its database entries."""
    start = time.perf_counter()
    result = tune(model, board, LocalPool(jobs), count=CANDIDATES, log=lambda _: None)
    # Where an entry was measured, for people reading the shipped defaults.
    entries = {k: {**e, "model": f"bench/tune.py: {label}"}
               for k, e in result.entries().items()}
    row = {"label": label, "family": family, "board": board,
           "target": result.target, "rules": result.baseline, "tuned": result.baseline,
           "layers": len(result.layers),
           "candidates": sum(len(t.tried) for t in result.layers),
           "rejected": sum(len(t.rejected) for t in result.layers),
           "kernel": rules_kernel(result) if family != "model" else "(per layer)",
           "seconds": round(time.perf_counter() - start, 1), "keys": sorted(entries),
           "check": "ok"}
    if entries:
        # Each entry was measured with the others' layers at the rules' pick; the
        # layers are separate dispatches, so together they save the sum.
        want = result.baseline - result.saved
        db = work / f"db-{board}.json"
        save_entries(db, entries)
        lines: list[str] = []
        build = api.build(model, board, out_dir=work / f"b-{board}", tuning_db=db,
                          log=lines.append)
        try:
            run = build.run(check=True)
        except api.Mismatch as e:
            row["check"] = f"MISMATCH with the database: {e}"
            return row, {}
        said = sum("tuned schedule" in line for line in lines)  # a line per entry used
        row["tuned"] = run.instructions
        if said != len(entries) or len(build.size.tuned) != len(entries) or \
                run.instructions != want:
            row["check"] = (f"DATABASE BUILD: {run.instructions:,} instructions, tuner "
                            f"measured {want:,}; log names {said} tuned layer(s), size "
                            f"report {len(build.size.tuned)}, of {len(entries)}")
        row["schedules"] = [{"key": k, "schedule": e["schedule"],
                             "rules_schedule": e["rules_schedule"]} for k, e in entries.items()]
    row["saved"] = row["rules"] - row["tuned"]
    row["saved_pct"] = round(100 * row["saved"] / row["rules"], 2)
    return row, entries


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="riscv32,cortex-m4")
    ap.add_argument("--only", default="", help="regex over the layers' labels")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--models", default="",
                    help="comma list of ../shared/models/mlperf_tiny models to tune whole "
                         "instead of the layers (kws_ref_model, ...)")
    ap.add_argument("--update", action="store_true",
                    help="replace only the measured rows in the results, keep the others")
    ap.add_argument("--update-defaults", action="store_true",
                    help="add the improved layers' entries to toolchain/tunedb/defaults.json")
    args = ap.parse_args()
    rows: list[dict] = []
    found: dict[str, dict] = {}
    models = [m for m in args.models.split(",") if m]
    if models and not MODELS_DIR.is_dir():
        print(f"bench/tune.py: --models needs {MODELS_DIR} (../shared beside the checkout)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="minirt-tune-bench-") as tmp:
        work = Path(tmp)
        todo = [(f"{layer.label} (seed {seed})", layer.family, seed, layer)
                for seed, layer in enumerate(LAYERS)
                if not models and re.search(args.only, layer.label)]
        todo += [(name, "model", -1, None) for name in models]
        for board in args.boards.split(","):
            for label, family, seed, layer in todo:
                if layer is not None:
                    model = work / f"layer{seed}.tflite"
                    model.write_bytes(layer_model(layer, seed))
                else:
                    model = MODELS_DIR / f"{label}.tflite"
                sub = work / f"{board}-{seed}-{family.replace(' ', '_')}"
                sub.mkdir()
                row, entries = tune_model(model, label, family, board, sub, args.jobs)
                row["label"] = layer.label if layer is not None else label
                rows.append(row)
                if row["check"] == "ok" and layer is not None:
                    found.update(entries)
                print(f"{board:10} {row['label']:36} {row['rules']:>11,} -> "
                      f"{row['tuned']:>11,} ({row['saved_pct']:5.2f} %) {row['check']}",
                      file=sys.stderr, flush=True)
    out = ROOT / "bench" / "results"
    if args.update and (out / "tune.json").exists():
        fresh = {(r["board"], r["label"]): r for r in rows}
        old = json.loads((out / "tune.json").read_text())
        rows = [fresh.pop((r["board"], r["label"]), r) for r in old] + list(fresh.values())
    (out / "tune.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "tune.md").write_text(report(rows))
    bad = [r for r in rows if r["check"] != "ok"]
    if args.update_defaults:
        entries = load_entries(DEFAULTS)
        if not args.only and not models:
            # Every layer was tuned on these boards: their targets' old entries go (an
            # entry of a layer the rules now send elsewhere would sit there unused).
            targets = {load_board(b).target_info.name for b in args.boards.split(",")}
            entries = {k: e for k, e in entries.items() if k.split(":")[0] not in targets}
        entries.update(found)
        save_entries(DEFAULTS, entries)
        print(f"bench/tune.py: {len(found)} entries written to {DEFAULTS}", file=sys.stderr)
    return 1 if bad else 0


def report(rows: list[dict]) -> str:
    """tune.md: the layers' table, the models' table, the schedules chosen."""
    layers = [r for r in rows if r["family"] != "model"]
    models = [r for r in rows if r["family"] == "model"]
    bad = [r for r in rows if r["check"] != "ok"]
    improved = [r for r in layers if r["saved"] > 0 and r["check"] == "ok"]
    head = "| board | {} | rules' kernel | candidates | rules | tuned | saved | check |"
    line = ("| {board} | {label} | {kernel} | {candidates} | {rules:,} | {tuned:,} | "
            "{saved_pct:.2f} % | {check} |")
    text = ["# minirt-tune on layers of the shape sweep (`python bench/tune.py`)", "",
            "\n\n".join(__doc__.split("\n\n")[1:5]), "",
            f"{len(layers)} layers tuned, {len(improved)} improved over the rules' pick; "
            f"{len(rows) - len(bad)} of {len(rows)} rows checked bit-exact through the "
            f"database build; {sum(r['rejected'] for r in rows)} candidates rejected (wrong "
            "outputs or no build).", "",
            head.format("layer"), "|---|---|---|---|---|---|---|---|",
            *(line.format(**r) for r in layers), ""]
    if models:
        text += ["## Whole models (`--models`)", "",
                 "Every distinct layer of the model tuned (a key shared by several layers "
                 "once), the model built with the entries found, retiring exactly the "
                 "baseline less the layers' measured savings, bit-exact.", "",
                 head.format("model") + " layers |", "|---|---|---|---|---|---|---|---|---|",
                 *(line.format(**r) + f" {r['layers']} |" for r in models), ""]
    text += ["## The schedules chosen", "",
             "| board | layer | rules' pick | measured best |", "|---|---|---|---|",
             *(f"| {r['board']} | {r['label']} | `{short_schedule(s['rules_schedule'])}` | "
               f"`{short_schedule(s['schedule'])}` |" for r in rows
               for s in r.get("schedules", ())), ""]
    return "\n".join(text)


if __name__ == "__main__":
    sys.exit(main())
