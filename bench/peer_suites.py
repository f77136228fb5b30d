"""How far each frontend gets through its peers' suites, on the host (no firmware): a
yardstick to keep from falling while the importers grow (the full conformance runner,
with QEMU samples, is issue 20's `make conformance`).

- TFLite Micro's models (../shared/models/tflm/**/*.tflite): the files that load (read,
  import, verify).
- The StableHLO interpreter's tests (../shared/suites/stablehlo_interpret/): the test
  functions that import and verify, with the `check.*` statements (the expected values,
  in a dialect minirt does not import) left out, the lines a statement's value runs on
  to included; each `// -----` part is a module.
- ONNX's backend node tests (the installed `onnx` package): the cases whose model loads
  and whose reference outputs match the expected ones like numpy.isclose(rtol=1e-4,
  atol=1e-5, equal_nan), each case within 10 s (ONNX's own tests compare float32 at
  rtol=1e-3; 1e-4 is stricter). Many cases give a shape operand (a Reshape's shape, a
  Reduce's axes, a Pad's pads, a TopK's K, a Resize's scales or sizes) as a graph input
  whose value comes with the test data; minirt's shapes are static, so, as a user would,
  the bench pins those inputs with the test's values through --input-value's mechanism
  (load_graph's input_values; which inputs: frontend/onnx/shape_operands.py) and feeds
  the others: one graph per data set.

Writes bench/results/peer_suites.{json,md}. `--failures N` prints, instead, the N most
common reasons ONNX node tests fail (the first error line, node names and paths left
out, with how many cases each stops): what to import next.

    python bench/peer_suites.py
    python bench/peer_suites.py --failures 30
"""

from __future__ import annotations

import json
import re
import signal
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.frontend import import_module  # noqa: E402
from toolchain.frontend.onnx.shape_operands import shape_operand_inputs  # noqa: E402
from toolchain.graph.verify import verify_graph  # noqa: E402
from toolchain.loader import load_graph  # noqa: E402
from toolchain.mlir.parser import parse_text  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402

SHARED = ROOT.parent / "shared"
RESULTS = ROOT / "bench" / "results"
CASE_SECONDS = 10


def tflm_models() -> tuple[int, int]:
    files = sorted((SHARED / "models" / "tflm").rglob("*.tflite"))
    ok = 0
    for f in files:
        try:
            load_graph(f)
            ok += 1
        except Exception:  # noqa: BLE001 - a refusal, whatever its kind, is a miss here
            pass
    return ok, len(files)


# What a line of the next statement starts with, once a check statement has begun: the
# check's expected value may run over several lines (`dense<[[...],\n [...]]>`), and
# those continuation lines begin with none of these.
_STATEMENT_STARTS = ("%", "func.", "}", "check.", "stablehlo.", "chlo.", '"', "return",
                     "//", "interpreter.", "^")


def without_checks(text: str) -> str:
    """`text` without its `check.*` statements, the lines they continue on included."""
    kept, in_check = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if "check." in line:
            in_check = True
        elif in_check and stripped and not stripped.startswith(_STATEMENT_STARTS):
            continue
        else:
            in_check = False
        if not in_check:
            kept.append(line)
    return "\n".join(kept)


def stablehlo_interpreter_tests() -> tuple[int, int]:
    ok = total = 0
    for f in sorted((SHARED / "suites" / "stablehlo_interpret").glob("*.mlir")):
        for part in f.read_text().split("// -----"):
            text = without_checks(part)
            for name in re.findall(r"func\.func (?:public |private )?@([\w.$]+)", text):
                total += 1
                try:
                    verify_graph(import_module(parse_text(text, f.name), name))
                    ok += 1
                except Exception:  # noqa: BLE001
                    pass
    return ok, total


def _timeout(*_: object) -> None:
    raise TimeoutError


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        return bool(np.isclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True).all())
    return bool((got == want).all())


def onnx_node_tests(failures: Counter | None = None) -> tuple[int, int]:
    """(passing cases, cases); each failure's reason counted into `failures`."""
    import onnx
    from onnx.backend.test.case.node import collect_testcases

    cases = collect_testcases()
    ok = 0
    signal.signal(signal.SIGALRM, _timeout)
    for case in cases:
        try:
            signal.alarm(CASE_SECONDS)
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "model.onnx"
                onnx.save(case.model, path)
                for inputs, outputs in case.data_sets:
                    got = run_pinned(path, case.model, inputs)
                    if len(got) != len(outputs) or not all(map(_close, got, outputs)):
                        raise ValueError("mismatch")
            ok += 1
        except BaseException as e:  # noqa: BLE001 - includes the alarm's TimeoutError
            if failures is not None:
                failures[_reason(e)] += 1
        finally:
            signal.alarm(0)
    return ok, len(cases)


def run_pinned(path: Path, model: object, inputs: list) -> list[np.ndarray]:
    """The reference outputs of the .onnx model at `path` on one data set, its shape
    operands given as graph inputs pinned to their values in `inputs` (--input-value)
    and the other inputs fed to the graph."""
    names = [v.name for v in model.graph.input  # type: ignore[attr-defined]
             if v.name not in {t.name for t in model.graph.initializer}]  # type: ignore
    pinned = set(shape_operand_inputs(model))
    values = {n: np.asarray(x) for n, x in zip(names, inputs) if n in pinned}
    graph = load_graph(path, input_values=values)
    return run_graph(graph, [np.asarray(x) for n, x in zip(names, inputs) if n not in pinned])


def _reason(e: BaseException) -> str:
    """An error's first line without the temporary path and node names."""
    text = (str(e).splitlines() or [""])[0]
    text = re.sub(r"^\S*model\.onnx: ", "", text)
    text = re.sub(r"node ('[^']*'|#\d+) ", "node ", text)
    return f"{type(e).__name__}: {text}"[:160]


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    args = (sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--failures"]:
        failures: Counter = Counter()
        ok, total = onnx_node_tests(failures)
        print(f"ONNX backend node tests: {ok} of {total} pass; the most common failures:")
        for reason, n in failures.most_common(int(args[1]) if len(args) > 1 else 30):
            print(f"{n:5d}  {reason}")
        return 0
    if not SHARED.is_dir():
        print(f"peer_suites: {SHARED} is absent: ONNX's node tests only", file=sys.stderr)
    rows = {}
    if SHARED.is_dir():
        rows["TFLite Micro's models (load)"] = tflm_models()
        rows["StableHLO interpreter tests (import + verify)"] = stablehlo_interpreter_tests()
    rows["ONNX backend node tests (reference matches)"] = onnx_node_tests()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "peer_suites.json").write_text(json.dumps(
        {k: {"pass": a, "total": b} for k, (a, b) in rows.items()}, indent=2) + "\n")
    lines = ["# Peer suites on the host (`python bench/peer_suites.py`)", "",
             "| suite | pass | of |", "|---|---:|---:|"]
    lines += [f"| {k} | {a:,} | {b:,} |" for k, (a, b) in rows.items()]
    (RESULTS / "peer_suites.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
