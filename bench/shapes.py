"""int8 layers over a sweep of shapes: MAC per instruction, each layer checked bit-exact.

Issue 21: on models with other shapes than kws's, minirt's int8 layers ran 1.7-2.8x
slower per MAC, mostly with input channels that are not a multiple of 4. This sweep
measures every kind of layer the MLPerf Tiny models use over channel counts that are
and are not multiples of 4, so a kernel rule is shown on many shapes, not on one model.

**The grid** (CHANNELS): 1, 2, 3 (first layers), 4, 8, 12, 16, 32, 48, 64 (multiples of
4, where the packed int8 steps apply) and 7, 13, 31, 61, 63, 67 (remainders 3, 1, 3, 1,
3, 3 beside a multiple of 4, the issue's slow cases). Conv2D with kernels 1x1, 3x3, 5x5
and 1x7 sweeps its input channels (32 outputs) on two maps, 19x6 (the issue's, kws-like)
and 10x10, and its output channels (32 inputs) on 19x6; stride 2 (3x3, 5x5 on 10x10)
and dilation 2 (3x3 on 19x6) sweep the input channels with 16 outputs. Depthwise 3x3
(multiplier 1 and 2, both maps) and 5x5 (multiplier 1, 10x10) sweep the channels; Dense
sweeps its inputs (and 27, 128, 250) to 10 and 32 outputs. SAME padding throughout.
`--grid small` (other boards) keeps 3, 4, 13, 16, 61, 64.

**The count**: each model holds up to GROUP independent layers (one graph input and
output each), so one firmware measures several; `Build.profile()` (minirt-run
--profile) gives each dispatch's exact instructions under QEMU and its MACs (the
contraction's domain: for SAME padding the padded taps count too). A layer's row is
found by its output tensor's name (`L<n>`); MAC/instruction = MACs / instructions of
that dispatch (the requantization and the loops' overhead included).

**The check**: every model's outputs against minirt's numpy reference (`Build.run(
check=True)`, bit-exact) and against TFLite Micro's interpreter (the int8 oracle),
exactly, on the same seeded random inputs.

Writes bench/results/shapes{,-<board>}.{json,md}, with per (kind, kernel, stride,
dilation, map) the min / median / max MAC/instruction and the worst / best channel
ratio, beside the issue's goals.

Usage: python bench/shapes.py [--board cortex-m4] [--grid full|small] [--only REGEX]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tflite_models import Op, Tensor, build_model, run_tflm  # noqa: E402

import minirt  # noqa: E402

CHANNELS = (1, 2, 3, 4, 7, 8, 12, 13, 16, 31, 32, 48, 61, 63, 64, 67)
SMALL = (3, 4, 13, 16, 61, 64)
GROUP = 12  # layers per firmware: builds stay a few seconds, the code small
IN_SCALE, IN_ZP = 0.05, -3


@dataclass(frozen=True)
class Layer:
    """One int8 layer of the sweep. `kind`: conv, depthwise or dense (h = w = 1,
    kh = kw = 1); `family` names the sweep it belongs to (the summary's row)."""

    family: str
    kind: str
    h: int
    w: int
    cin: int
    cout: int
    kh: int = 1
    kw: int = 1
    stride: int = 1
    dilation: int = 1

    @property
    def label(self) -> str:
        if self.kind == "dense":
            return f"dense {self.cin}->{self.cout}"
        extra = (f" s{self.stride}" if self.stride > 1 else "") + (
            f" d{self.dilation}" if self.dilation > 1 else "")
        mult = f" x{self.cout // self.cin}" if self.kind == "depthwise" else ""
        return (f"{self.kind} {self.kh}x{self.kw}{extra}{mult} {self.h}x{self.w} "
                f"{self.cin}->{self.cout}")

    @property
    def out_hw(self) -> tuple[int, int]:
        return -(-self.h // self.stride), -(-self.w // self.stride)

    @property
    def depth(self) -> int:
        """MACs per output (the issue's '64 MACs per output' goal condition)."""
        return self.kh * self.kw * (1 if self.kind == "depthwise" else self.cin)


def layers(grid: Sequence[int]) -> list[Layer]:
    """The sweep (see the module docstring for the why of each part)."""
    out: list[Layer] = []
    for kh, kw in ((1, 1), (3, 3), (5, 5), (1, 7)):
        for h, w in ((19, 6), (10, 10)):
            out += [Layer(f"conv {kh}x{kw} {h}x{w} cin", "conv", h, w, c, 32, kh, kw)
                    for c in grid]
        out += [Layer(f"conv {kh}x{kw} 19x6 cout", "conv", 19, 6, 32, c, kh, kw) for c in grid]
    for k in (3, 5):
        out += [Layer(f"conv {k}x{k} s2 10x10 cin", "conv", 10, 10, c, 16, k, k, stride=2)
                for c in grid]
    out += [Layer("conv 3x3 d2 19x6 cin", "conv", 19, 6, c, 16, 3, 3, dilation=2) for c in grid]
    for mult in (1, 2):
        for h, w in ((19, 6), (10, 10)):
            out += [Layer(f"depthwise 3x3 x{mult} {h}x{w}", "depthwise", h, w, c, c * mult,
                          3, 3) for c in grid]
    out += [Layer("depthwise 5x5 x1 10x10", "depthwise", 10, 10, c, c, 5, 5) for c in grid]
    for n in (10, 32):
        out += [Layer(f"dense ->{n}", "dense", 1, 1, c, n)
                for c in sorted({*grid, 27, 128, 250})]
    return out


def _ops(layer: Layer, index: int, rng: np.random.Generator) -> tuple[Op, Tensor, Tensor]:
    """The layer as one TFLite op with random int8 weights and int32 bias, its input
    and output tensors. The output scale keeps about 3 standard deviations of the
    accumulator in range, so the outputs use the whole int8 range without all
    saturating."""
    kh, kw = layer.kh, layer.kw
    if layer.kind == "dense":
        x = Tensor((1, layer.cin), "int8", scale=IN_SCALE, zero_point=IN_ZP, name=f"x{index}")
        wshape, qdim = (layer.cout, layer.cin), 0
    else:
        x = Tensor((1, layer.h, layer.w, layer.cin), "int8", scale=IN_SCALE,
                   zero_point=IN_ZP, name=f"x{index}")
        wshape, qdim = (((layer.cout, kh, kw, layer.cin), 0) if layer.kind == "conv"
                        else ((1, kh, kw, layer.cout), 3))
    n = layer.cout
    w_scale = rng.uniform(0.005, 0.02, n).astype(np.float32)
    wdata = rng.integers(-127, 128, wshape).astype(np.int8)
    b_scale = (IN_SCALE * w_scale).astype(np.float32)
    std = 74.0 * 74.0 * np.sqrt(layer.depth)
    bias = rng.integers(-int(std), int(std) + 1, n).astype(np.int32)
    out_scale = float(3 * std * IN_SCALE * float(w_scale.mean()) / 128)
    if layer.kind == "dense":  # per-tensor weights, as TFLite's converter writes them
        w_scale = w_scale[:1]
        b_scale = b_scale[:1]
    wt = Tensor(wshape, "int8", scale=list(w_scale), zero_point=[0] * len(w_scale),
                quantized_dimension=qdim, data=wdata, name=f"w{index}")
    bt = Tensor((n,), "int32", scale=list(b_scale), zero_point=[0] * len(b_scale), data=bias,
                name=f"b{index}")
    oh, ow = layer.out_hw
    yshape = (1, n) if layer.kind == "dense" else (1, oh, ow, n)
    y = Tensor(yshape, "int8", scale=out_scale, zero_point=int(rng.integers(-10, 11)),
               name=f"L{index}")
    if layer.kind == "dense":
        return Op("FULLY_CONNECTED", [x, wt, bt], [y]), x, y
    opts = dict(padding="SAME", stride_w=layer.stride, stride_h=layer.stride,
                dilation_w_factor=layer.dilation, dilation_h_factor=layer.dilation)
    if layer.kind == "depthwise":
        opts["depth_multiplier"] = layer.cout // layer.cin
        return Op("DEPTHWISE_CONV_2D", [x, wt, bt], [y], opts), x, y
    return Op("CONV_2D", [x, wt, bt], [y], opts), x, y


def _groups(items: Sequence[Layer], size: int) -> Iterator[list[Layer]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


def measure(group: list[Layer], first: int, board: str, work: Path, tflm: bool) -> list[dict]:
    """Builds one firmware of `group`'s layers for `board`, checks it against the
    reference (and TFLite Micro) and returns a row per layer."""
    rng = np.random.default_rng(first)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(group):
        op, x, y = _ops(layer, first + i, rng)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    model = work / f"shapes_{first}.tflite"
    model.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(model, board, out_dir=work / f"b{first}")
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    check = "ok"
    try:
        run = build.run(inputs, check=True)
    except minirt.Mismatch as e:
        check, run = "MISMATCH (reference)", e.run
    if tflm:
        want, _ = run_tflm(model.read_bytes(), inputs)
        bad = [i for i, (a, b) in enumerate(zip(want, run.outputs))
               if not np.array_equal(a, b)]
        if bad:
            check += f"; MISMATCH (TFLite Micro) in L{first + bad[0]}"
    profile = build.profile(inputs)
    rows = []
    for i, layer in enumerate(group):
        name = f"L{first + i}"
        hits = [r for r in profile.rows if r.macs and _names(r) & {name}]
        insns = sum(r.instructions for r in hits)
        macs = sum(r.macs or 0 for r in hits)
        rows.append({**asdict(layer), "label": layer.label, "depth": layer.depth,
                     "macs": macs, "instructions": insns, "dispatches": len(hits),
                     "mac_per_insn": round(macs / insns, 4) if insns else None,
                     "check": check, "tflm": tflm})
    return rows


def _names(row: object) -> set[str]:
    layer = getattr(row, "layer", None) or {}
    return {s["name"] for s in layer.get("sources", ())} | {str(layer.get("label", ""))}


# The goals: (what, test on a row, the MAC/instruction it must reach).
GOALS = (
    ("conv / dense, >= 8 input channels, >= 64 MACs per output",
     lambda r: r["kind"] in ("conv", "dense") and r["cin"] >= 8 and r["depth"] >= 64, 0.8),
    ("depthwise 3x3", lambda r: r["kind"] == "depthwise" and r["kh"] == 3, 0.6),
    ("conv with 1-3 input channels", lambda r: r["kind"] == "conv" and r["cin"] <= 3, 0.6),
)
RATIO_GOAL = 1.25  # worst channel count within 1.25x of the best, per family


def summary(rows: list[dict]) -> list[str]:
    """Per family: min / median / max MAC/instruction, the worst / best ratio, the
    channel counts at either end; then each goal: how many rows meet it."""
    lines = ["| family | layers | min | median | max | best / worst | worst at | best at |",
             "|---|---|---|---|---|---|---|---|"]
    families: dict[str, list[dict]] = {}
    for r in rows:
        if r["mac_per_insn"]:
            families.setdefault(r["family"], []).append(r)
    for fam, rs in families.items():
        v = [r["mac_per_insn"] for r in rs]
        worst, best = min(rs, key=lambda r: r["mac_per_insn"]), max(
            rs, key=lambda r: r["mac_per_insn"])
        sweep = "cout" if fam.endswith("cout") else "cin"
        lines.append(f"| {fam} | {len(rs)} | {min(v):.3f} | {statistics.median(v):.3f} | "
                     f"{max(v):.3f} | {max(v) / min(v):.2f}x | {sweep} {worst[sweep]} | "
                     f"{sweep} {best[sweep]} |")
    lines += ["", f"Goals (issue 21; best / worst within {RATIO_GOAL}x per family):", "",
              "| goal | MAC/instr. | layers | meet it | worst | worst layer |",
              "|---|---|---|---|---|---|"]
    for what, test, goal in GOALS:
        rs = [r for r in rows if r["mac_per_insn"] and test(r)]
        if not rs:
            continue
        worst = min(rs, key=lambda r: r["mac_per_insn"])
        ok = sum(r["mac_per_insn"] >= goal for r in rs)
        lines.append(f"| {what} | >= {goal} | {len(rs)} | {ok} | {worst['mac_per_insn']:.3f} "
                     f"| {worst['label']} |")
    within = sum(max(r["mac_per_insn"] for r in rs) / min(r["mac_per_insn"] for r in rs)
                 <= RATIO_GOAL for rs in families.values())
    lines.append(f"| families with best / worst <= {RATIO_GOAL}x | | {len(families)} | "
                 f"{within} | | |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="cortex-m4")
    ap.add_argument("--grid", choices=("full", "small"), default="full")
    ap.add_argument("--only", default="", help="regex over the family names")
    ap.add_argument("--tflm-every", type=int, default=1,
                    help="check every n-th firmware against TFLite Micro too (default all)")
    ap.add_argument("--out", default="", help="results name (default shapes[-board])")
    args = ap.parse_args()
    todo = [la for la in layers(CHANNELS if args.grid == "full" else SMALL)
            if re.search(args.only, la.family)]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="minirt-shapes-") as tmp:
        for n, group in enumerate(_groups(todo, GROUP)):
            first = n * GROUP
            rows += measure(group, first, args.board, Path(tmp), n % args.tflm_every == 0)
            for r in rows[-len(group):]:
                print(f"{r['label']:40} {r['mac_per_insn'] or 0:7.3f} {r['check']}",
                      file=sys.stderr, flush=True)
    name = args.out or ("shapes" if args.board == "cortex-m4" else f"shapes-{args.board}")
    out = ROOT / "bench" / "results"
    (out / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n")
    bad = [r for r in rows if r["check"] != "ok"]
    text = [f"# int8 layers over a sweep of shapes on {args.board} (`python bench/shapes.py"
            f"{' --board ' + args.board if args.board != 'cortex-m4' else ''}"
            f"{' --grid small' if args.grid == 'small' else ''}`)", "",
            *__doc__.split("\n\n")[1:5], "",
            f"{len(rows)} layers, {len(rows) - len(bad)} bit-exact with the reference and "
            "TFLite Micro.", "", "## Summary", "", *summary(rows), "", "## Every layer", "",
            "| layer | MACs | instructions | MAC/instr. | check |", "|---|---|---|---|---|",
            *(f"| {r['label']} | {r['macs']:,} | {r['instructions']:,} | "
              f"{r['mac_per_insn'] or 0:.3f} | {r['check']} |" for r in rows), ""]
    (out / f"{name}.md").write_text("\n".join(text))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
