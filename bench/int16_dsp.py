"""Instructions per MAC of minirt's 16x8 contractions (int16 activations, int8 weights)
under QEMU: the convolutions of TFLite Micro's seanet integration tests
(../shared/models/tflm/integration_tests/seanet: CONV_2D and TRANSPOSE_CONV) and 16x8
UNIDIRECTIONAL_SEQUENCE_LSTM models of a few sizes (tests/recurrent_models.py, seeded
weights), with the int8 LSTM models of ../shared/models/tflm for comparison (their gates
are int8 dot products).

Each model is built on its own, run once under QEMU with the per-dispatch profile
(toolchain/emu/profile.py), and compared exactly: a seanet model with TFLite Micro's
golden CSV, an LSTM with the `tflite-micro` interpreter's first inference. The figures:
the contraction dispatches' instructions (those with MACs) over their MACs, and the
whole inference's. A dispatch's MACs are its kernel's domain (toolchain/emu/profile.py
kernel_macs: padded taps included, and for a TRANSPOSE_CONV the zeros of its dilated
input too, which the phase split never multiplies: its figures per MAC are low).

Writes bench/results/int16_dsp-<label>.{json,md} (`--label before` / `after`), and with
both labels recorded for the board, bench/results/int16_dsp.md: before -> after.

    python bench/int16_dsp.py [--board cortex-m4] [--label after] [--only conv0,lstm]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from toolchain.frontend.tflite.importer import import_model, load_tflite  # noqa: E402
from toolchain.frontend.tflite.reader import read_model  # noqa: E402
from toolchain.graph.ir import Graph  # noqa: E402
from toolchain.graph.pinned_inputs import pin_graph_inputs  # noqa: E402
from toolchain.pipeline import compile_graph, run_firmware  # noqa: E402
from toolchain.target import load_board  # noqa: E402
from toolchain.testing.tflm_seanet import SEANET, seanet_cases  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TFLM = ROOT.parent / "shared" / "models" / "tflm"
CONTRACTION_OPS = ("conv", "transpose_conv", "depthwise_conv", "fully_connected")
# (batch, steps, features, units) of the 16x8 LSTMs: an MNIST-like row reader (28 x 28
# pixels, as examples/mnist_lstm), a keyword-spotting-like one (49 frames of 40
# features, 64 units), and one whose input contraction (1100 inputs: sum |w| near
# 1100 x 64 > 2**31 / 2**15) needs the int64 accumulator.
LSTM16 = ((1, 28, 28, 20), (1, 49, 40, 64), (1, 4, 1100, 16))
INT8_LSTMS = ("examples/mnist_lstm/trained_lstm_int8.tflite",
              "xtensa_examples/micro_speech_lstm/micro_speech_lstm.tflite",
              "examples/dtln/dtln_noise_suppression.tflite")


def _from_boot_state(graph: Graph) -> Graph:
    """One inference from the boot state: the state inputs pinned to their boot values
    and the state outputs dropped (as tests/e2e/test_tflite_recurrent.py does)."""
    names = [t.name for t in graph.inputs]
    boot = {names[len(graph.user_inputs) + k]: s.initial for k, s in enumerate(graph.states)}
    graph.outputs = graph.user_outputs
    graph.states = []
    pin_graph_inputs(graph, boot, names)
    return graph


def _measure(name: str, kind: str, graph_of, inputs: list[np.ndarray], want: np.ndarray,
             board, work: Path) -> dict:
    """Builds graph_of() for `board`, runs it once with the profile, compares exactly."""
    result = compile_graph(graph_of(), board, work, log=lambda _: None)
    run = run_firmware(result.board, work, inputs, graph_of(), profile=True, log=lambda _: None)
    got = run.outputs[0]
    rows = [r for r in run.profile.rows if r.macs]
    macs = sum(r.macs for r in rows)
    insns = sum(r.instructions for r in rows)
    return {"model": name, "kind": kind, "exact": bool(np.array_equal(got.reshape(-1),
                                                                      want.reshape(-1))),
            "macs": macs, "contraction_instructions": insns,
            "instructions": run.profile.total,
            "contraction_per_mac": round(insns / macs, 3) if macs else None,
            "per_mac": round(run.profile.total / macs, 3) if macs else None,
            "dispatches": [{"name": r.name, "macs": r.macs, "instructions": r.instructions}
                           for r in rows]}


def seanet_rows(board, tmp: Path, only: set[str]) -> list[dict]:
    rows = []
    for case in seanet_cases():
        if case.op not in CONTRACTION_OPS or (only and case.name not in only):
            continue
        inputs = case.inputs(load_tflite(case.model))
        rows.append(_measure(case.name, case.op.upper(), lambda c=case: load_tflite(c.model),
                             inputs, case.golden(), board, tmp / case.name))
        _log(rows[-1])
    return rows


def lstm_rows(board, tmp: Path, only: set[str]) -> list[dict]:
    from recurrent_models import LstmCase, lstm_model, tflm_first_inference

    rows = []
    for b, t, i, u in LSTM16:
        case = LstmCase("int16", b, t, i, u, cell_scale=2.0 ** -12)
        if only and case.name not in only and "lstm" not in only:
            continue
        model, x = lstm_model(case)
        want = tflm_first_inference(model, x)
        rows.append(_measure(case.name, "LSTM 16x8",
                             lambda m=model: _from_boot_state(import_model(read_model(m))),
                             [x], want, board, tmp / case.name))
        _log(rows[-1])
    for rel in INT8_LSTMS:
        path = TFLM / rel
        if not path.is_file() or (only and path.stem not in only and "lstm" not in only):
            continue
        model = path.read_bytes()
        graph = _from_boot_state(import_model(read_model(model)))
        rng = np.random.default_rng(0)
        x = [rng.integers(-128, 128, t.type.shape).astype(t.type.dtype.np_dtype)
             for t in graph.inputs]
        want = tflm_first_inference(model, x[0]) if len(x) == 1 else None
        if want is None:
            continue
        rows.append(_measure(path.stem, "LSTM int8",
                             lambda m=model: _from_boot_state(import_model(read_model(m))),
                             x, want, board, tmp / path.stem))
        _log(rows[-1])
    return rows


def _log(row: dict) -> None:
    print(f"{row['model']}: exact {row['exact']}, {row['macs']:,} MACs, contraction "
          f"{row['contraction_per_mac']} instr/MAC, whole {row['per_mac']}", file=sys.stderr)


def write(rows: list[dict], board: str, label: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = f"int16_dsp-{label}" if board == "cortex-m4" else f"int16_dsp-{label}-{board}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"board": board, "label": label, "rows": rows}, indent=2) + "\n")
    lines = [f"# 16x8 contractions on {board}, {label} (`python bench/int16_dsp.py "
             f"--board {board} --label {label}`)", "",
             "Instructions of one inference under QEMU; `contraction` counts the dispatches "
             "with MACs only. Exact: equal to TFLite Micro's golden (seanet) or "
             "interpreter (LSTM) in every element.", "",
             "| model | kind | exact | MACs | contraction instructions | per MAC | "
             "whole inference | per MAC |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['kind']} | {'yes' if r['exact'] else 'NO'} | "
                     f"{r['macs']:,} | {r['contraction_instructions']:,} | "
                     f"{r['contraction_per_mac']} | {r['instructions']:,} | {r['per_mac']} |")
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def write_comparison(board: str) -> None:
    """bench/results/int16_dsp.md from the board's `before` and `after` records."""
    suffix = "" if board == "cortex-m4" else f"-{board}"
    paths = [RESULTS / f"int16_dsp-{label}{suffix}.json" for label in ("before", "after")]
    if not all(p.is_file() for p in paths):
        return
    before, after = ({r["model"]: r for r in json.loads(p.read_text())["rows"]} for p in paths)
    lines = [f"# 16x8 contractions on {board}: before -> after the int16 SMLAD steps "
             "(`python bench/int16_dsp.py --label before|after`)", "",
             "Instructions per MAC of one inference under QEMU: `contraction` over the "
             "dispatches with MACs, `whole` over the inference. MACs are the kernels' "
             "domains (a TRANSPOSE_CONV's count the zeros of its dilated input, which are "
             "never multiplied). Exact: equal to TFLite Micro's golden (seanet) or "
             "interpreter (LSTM) in every element, before and after. The int8 LSTMs are "
             "there for comparison (int8 x int8 gates: unchanged).", "",
             "| model | kind | MACs | contraction before | after | whole before | after | "
             "exact |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for name, a in after.items():
        b = before.get(name)
        if b is None:
            continue
        ok = "yes" if a["exact"] and b["exact"] else "NO"
        lines.append(f"| {name} | {a['kind']} | {a['macs']:,} | {b['contraction_per_mac']} | "
                     f"{a['contraction_per_mac']} | {b['instructions']:,} | "
                     f"{a['instructions']:,} | {ok} |")
    (RESULTS / f"int16_dsp{suffix}.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="cortex-m4")
    parser.add_argument("--label", default="after")
    parser.add_argument("--only", default="", help="comma-separated model names ('lstm': "
                        "all the LSTMs)")
    parser.add_argument("--no-seanet", action="store_true")
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    if not SEANET.is_dir():
        print(f"int16_dsp: {SEANET} is absent", file=sys.stderr)
        return 2
    board = load_board(args.board)
    with tempfile.TemporaryDirectory(prefix="int16_dsp_") as tmp:
        rows = [] if args.no_seanet else seanet_rows(board, Path(tmp), only)
        rows += lstm_rows(board, Path(tmp), only)
    write(rows, args.board, args.label)
    write_comparison(args.board)
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
