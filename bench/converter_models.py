"""Models as TFLite's converter writes them, measured: instructions per inference and
MAC/instruction per convolution and dense layer (issues 19 and 21).

The models are tests/frontend/tflite/data/converter/*.tflite (Keras 3 models, and one
tf_keras LSTM, converted by tensorflow-cpu 2.21: int8, 16x8 and float; see the README
there). For each one: the
seeded inputs of toolchain/testing/tflm_models.py through TFLite Micro's interpreter
and minirt's firmware under QEMU (integers compared exactly, floats like
numpy.isclose(rtol=1e-5, atol=1e-6)), the firmware checked against minirt's reference
too, then one profiled inference (`Build.profile()`, as bench/shapes.py counts).

**Per layer**: a CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED operator of the main
subgraph is charged every dispatch whose fused sources came from it (the profile
row's `origin`, "tflite operator N (...)"), so its input pad, the requantization and
anything fused into it are counted. Its MACs are the model's, read from the flatbuffer:
output elements x filter taps x input channels (depthwise: x 1), a SAME window's taps
over the border included (they are executed), channels as the model has them (a kernel
that pads its channels to whole words does more). A model with more than one subgraph
(lstm_float's WHILE) is not broken down, since a profile origin does not name its
subgraph; its total counts every layer, as lstm_tf_keras_int8's counts its LSTM's gate
products (only the three operators above are broken down). tile_upsample_int8, which
TFLite Micro does not run, is compared with the TensorFlow interpreter's outputs stored
beside it.

Writes bench/results/converter_models{,-<board>}.{json,md}.

    python bench/converter_models.py [--board cortex-m4] [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import minirt  # noqa: E402
from toolchain.frontend.tflite.errors import TFLiteError  # noqa: E402
from toolchain.frontend.tflite.importer import load_tflite  # noqa: E402
from toolchain.frontend.tflite.reader import ModelInfo, read_model  # noqa: E402
from toolchain.testing.tflm_models import run_tflm, same, seeded_inputs  # noqa: E402

DATA = ROOT / "tests" / "frontend" / "tflite" / "data" / "converter"
RESULTS = ROOT / "bench" / "results"
LAYER_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
_ORIGIN = re.compile(r"^tflite operator (\d+) \((\w+)\)$")
SEED = 0


def _factor(options: dict, what: str, tag: str) -> str:
    """' s2' for a stride (or dilation) of 2 both ways, ' s1x2' for 1 high and 2 wide,
    '' for 1 (a Conv1D's factors are on the width)."""
    key = "dilation_{}_factor" if what == "dilation" else "stride_{}"
    h, w = (int(options.get(key.format(a)) or 1) for a in ("h", "w"))
    if h == w:
        return f"{tag}{h}" if h > 1 else ""
    return f"{tag}{h}x{w}"


def layer_shape(model: ModelInfo, index: int) -> tuple[str, int]:
    """(a label such as 'conv 3x3 s2 d1 24x24 3->13', its MACs) of operator `index`, a
    CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED."""
    op = model.operators[index]
    x, w = (model.tensors[i].shape for i in op.inputs[:2])
    y = model.tensors[op.outputs[0]].shape
    out = int(np.prod(y))
    if op.opcode == "FULLY_CONNECTED":
        return f"dense {w[1]}->{w[0]}", out * int(w[1])
    _, kh, kw, _ = w
    geometry = _factor(op.options, "stride", " s") + _factor(op.options, "dilation", " d")
    if op.opcode == "DEPTHWISE_CONV_2D":
        return (f"depthwise {kh}x{kw}{geometry} {x[1]}x{x[2]} {x[3]}->{y[3]}",
                out * int(kh) * int(kw))
    return f"conv {kh}x{kw}{geometry} {x[1]}x{x[2]} {x[3]}->{y[3]}", out * int(kh * kw * x[3])


def _operators_of(row: object) -> set[tuple[int, str]]:
    """(index, opcode) of the operators a profile row's dispatch fused."""
    layer = getattr(row, "layer", None) or {}
    found = set()
    for source in layer.get("sources", ()):
        m = _ORIGIN.match(str(source.get("origin", "")))
        if m:
            found.add((int(m.group(1)), m.group(2)))
    return found


def _expected(path: Path) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The (input, output) pairs stored beside a fixture TFLite Micro cannot run."""
    npz = path.with_suffix(".expected.npz")
    if not npz.is_file():
        return None
    with np.load(npz) as f:
        return [(f[f"input_{k}"], f[f"output_{k}"]) for k in range(len(f.files) // 2)]


def measure(path: Path, board: str, work: Path) -> dict:
    """One fixture on `board`: checked against TFLite Micro and the reference, then
    profiled. A model minirt refuses is recorded with its one-line reason."""
    data = path.read_bytes()
    model = read_model(data)
    ops = [op.opcode for op in model.operators]
    row: dict = {"model": path.stem, "bytes": len(data), "operators": ops}
    try:
        load_tflite(path)
    except TFLiteError as e:
        return {**row, "status": "refused", "detail": e.render().split(": ", 1)[-1]}
    inputs, want, oracle = seeded_inputs(model, SEED), None, "TFLite Micro"
    stored = _expected(path)
    if stored:
        (x, y), oracle = stored[0], "TensorFlow's interpreter"
        inputs, want = [x], [y]
    else:
        want = run_tflm(data, inputs, len(model.outputs))
    build = minirt.build(path, board, out_dir=work / path.stem)
    status = "exact"
    try:
        run = build.run(inputs, check=True)
    except minirt.Mismatch as e:
        status, run = "differs from the reference", e.run
    ok, why = same(want, run.outputs)
    status = status if ok else f"differs from {oracle}: {why}"
    if oracle != "TFLite Micro":
        status += f" (against {oracle})"
    profile = build.profile(inputs)
    layers = []
    for i, op in enumerate(model.operators if not model.others else ()):
        if op.opcode not in LAYER_OPS:
            continue
        label, macs = layer_shape(model, i)
        hits = [r for r in profile.rows
                if r.kind == "dispatch" and (i, op.opcode) in _operators_of(r)]
        insns = sum(r.instructions for r in hits)
        layers.append({"operator": i, "opcode": op.opcode, "label": label, "macs": macs,
                       "instructions": insns, "dispatches": len(hits),
                       "mac_per_insn": round(macs / insns, 4) if insns else None})
    return {**row, "status": status, "oracle": oracle, "instructions": run.instructions,
            "layers": layers, "layer_macs": sum(la["macs"] for la in layers),
            "layer_instructions": sum(la["instructions"] for la in layers)}


def report(rows: list[dict], board: str) -> list[str]:
    """The markdown page."""
    cmd = "python bench/converter_models.py" + (f" --board {board}" if board != "cortex-m4"
                                                 else "")
    lines = [f"# Models as TFLite's converter writes them, on {board} (`{cmd}`)", "",
             *"\n\n".join(__doc__.split("\n\n")[1:3]).splitlines(), "", "## Models", "",
             "| model | bytes | instructions | conv / dense MACs | their instructions "
             "| MAC/instr. (conv / dense) | check |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] == "refused":
            lines.append(f"| {r['model']} | {r['bytes']:,} | | | | | refused: {r['detail']} |")
            continue
        lm, li = r["layer_macs"], r["layer_instructions"]
        ratio, lm, li = (f"{lm / li:.3f}", f"{lm:,}", f"{li:,}") if li else ("", "", "")
        lines.append(f"| {r['model']} | {r['bytes']:,} | {r['instructions']:,} | {lm} | "
                     f"{li} | {ratio} | {r['status']} |")
    lines += ["", "## Conv and dense layers", "",
              "| model | operator | layer | MACs | instructions | dispatches | MAC/instr. |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        for la in r.get("layers", ()):
            lines.append(f"| {r['model']} | {la['operator']} | {la['label']} | "
                         f"{la['macs']:,} | {la['instructions']:,} | {la['dispatches']} | "
                         f"{la['mac_per_insn'] or 0:.3f} |")
    return [*lines, ""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="cortex-m4")
    ap.add_argument("--only", default="", help="one fixture name")
    args = ap.parse_args()
    paths = sorted(p for p in DATA.glob("*.tflite") if not args.only or p.stem == args.only)
    rows = []
    with tempfile.TemporaryDirectory(prefix="minirt-converter-") as tmp:
        for path in paths:
            rows.append(measure(path, args.board, Path(tmp)))
            r = rows[-1]
            print(f"{r['model']:24} {r.get('instructions') or 0:>10,} {r['status']}",
                  file=sys.stderr, flush=True)
    name = "converter_models" + ("" if args.board == "cortex-m4" else f"-{args.board}")
    if args.only:  # a partial run is for looking, not for the results
        print("\n".join(report(rows, args.board)))
        return 1 if any(r["status"].startswith("differs") for r in rows) else 0
    (RESULTS / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n")
    (RESULTS / f"{name}.md").write_text("\n".join(report(rows, args.board)))
    bad = [r for r in rows if r["status"].startswith("differs")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
