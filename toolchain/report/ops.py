"""docs/ops.md: every op of every frontend, whether minirt takes it (and if not, why),
and the element types it takes; generated from the op tables.

"Supported" is data: an op is supported when its frontend's converter table has a row
for it. The op lists are the StableHLO spec (toolchain/mlir/stablehlo_ops.py, with the
reason an op cannot apply to a static single-device model), CHLO's and TOSA's pretty-
syntax tables, TFLite's builtin operators from its schema, and ONNX's op table.
Frontends are picked up when their package is present (`toolchain.frontend.onnx`,
`toolchain.frontend.tosa`), so new ones need no change here. Element types are measured:
each MLIR op's sample program (op_samples.py) goes through parse + import + verify once
per element type.

    python -m toolchain.report.ops [-o docs/ops.md] [--check]

`--check` exits 1 when the file differs from what the tables give (tests run it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolchain.diagnostics import CompileError
from toolchain.frontend.chlo import UNSUPPORTED as CHLO_REFUSED
from toolchain.mlir.chlo_syntax import CHLO_OPS
from toolchain.mlir.parser import complex_dtype
from toolchain.mlir.stablehlo_ops import SPEC_OPS
from toolchain.report import op_samples
from toolchain.types import DTYPES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ops.md"

NOT_YET = "not implemented yet"


@dataclass(frozen=True)
class Row:
    op: str
    supported: bool
    types: str  # measured element types, or how the frontend's families read
    why_not: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    rows: list[Row]


# ------------------------------------------------------------------------- element types

# Every element type the MLIR parser reads, in the order the docs list them.
# (DTYPES holds the complex types too: listed once.)
CANDIDATES = list(dict.fromkeys([n for n in DTYPES if n != "index"] + ["complex<f32>",
                                                                       "complex<f64>"]))


def _instantiate(sample: op_samples.Sample, op: str, ty: str) -> str:
    args, body, result = sample
    real = ty[len("complex<"):-1] if ty.startswith("complex<") else ty
    zero = "(0.0, 0.0)" if ty.startswith("complex<") else "0"

    def fill(text: str) -> str:
        return (text.replace("{op}", op.split(".", 1)[1]).replace("{T}", ty).replace("{R}", real)
                .replace("{ZERO}", zero))

    return (fill(op_samples.HELPERS) + f"func.func @main({fill(args)}) -> {fill(result)} {{\n"
            f"  {fill(body)}\n  return %r : {fill(result)}\n}}\n")


def measured_types(sample: op_samples.Sample | None, op: str) -> list[str]:
    """The element types for which `sample` imports and verifies."""
    if sample is None:
        return []
    from toolchain.frontend import import_module
    from toolchain.graph.verify import verify_graph
    from toolchain.mlir import parse_text

    taken = []
    for ty in CANDIDATES:
        if ty.startswith("complex<") and complex_dtype(DTYPES[ty[8:-1]]) is None:
            continue
        try:
            verify_graph(import_module(parse_text(_instantiate(sample, op, ty), "sample.mlir")))
        except CompileError:
            continue
        taken.append(ty)
    return taken


def _types_text(supported: bool, types: list[str], sampled: bool) -> str:
    if not supported:
        return "-"
    if not sampled:
        return "not measured"
    return " ".join(types) if types else "none of the sampled types"


# ------------------------------------------------------------------------- frontends


def _converter_keys(module_prefix: str, dialects: tuple[str, ...]) -> set[str]:
    """Op names of every converter table in the frontend modules named `prefix*`: module
    dicts whose keys are `dialect.op` names of `dialects`."""
    keys: set[str] = set()
    package = importlib.import_module("toolchain.frontend")
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith(module_prefix):
            continue
        module = importlib.import_module(f"toolchain.frontend.{info.name}")
        for value in vars(module).values():
            if isinstance(value, dict) and value and all(
                    isinstance(k, str) for k in value):
                keys |= {k for k in value if k.split(".", 1)[0] in dialects and callable(
                    value[k])}
    return keys


def _mlir_rows(names: list[str], dialect: str, converters: set[str],
               samples: dict[str, op_samples.Sample],
               reason: Callable[[str], str | None]) -> list[Row]:
    rows = []
    for op in names:
        full = f"{dialect}.{op}"
        supported = full in converters
        why = reason(op)
        sample = samples.get(op) if why is None else None
        types = measured_types(sample, full) if sample and supported else []
        why_not = "" if supported else (why or NOT_YET)
        rows.append(Row(op, supported, _types_text(supported, types, sample is not None),
                        why_not))
    return rows


def stablehlo_sections() -> list[Section]:
    converters = _converter_keys("stablehlo", ("stablehlo", "chlo"))

    def spec_reason(op: str) -> str | None:
        return SPEC_OPS[op].reason

    spec = _mlir_rows(sorted(SPEC_OPS), "stablehlo", converters, op_samples.STABLEHLO,
                      spec_reason)
    chlo = _mlir_rows([n.removeprefix("chlo.") for n in CHLO_OPS], "chlo", converters,
                      op_samples.CHLO, lambda op: CHLO_REFUSED.get(f"chlo.{op}"))
    return [
        Section("StableHLO", "Every op of the StableHLO specification, then the deprecated "
                "ones and the dynamic-shape helpers the dialect still has. An op with a "
                "reason in the last column cannot mean anything for a static-shape model on "
                "one core; every other op without a converter is missing work.", spec),
        Section("CHLO", "The CHLO ops JAX emits; each is mapped to the graph or decomposed "
                "into StableHLO-level graph ops by the importer.", chlo),
    ]


def core_section() -> Section:
    """The upstream MLIR ops the MLIR frontends read around the dialects' ops."""
    from toolchain.mlir.core_syntax import SYNTAX

    converters = _converter_keys("stablehlo", ("arith", "cf", "func", "builtin"))
    # Functions of several blocks: the importer's control-flow graphs, when present.
    with contextlib.suppress(ImportError, AttributeError):
        converters |= set(importlib.import_module("toolchain.frontend.cfg").BRANCHES)
    # The structure every model has: functions, returns and calls (inlined); a Shardy
    # mesh declaration is metadata the importer passes over.
    converters |= {"builtin.module", "func.func", "func.return", "func.call", "sdy.mesh"}
    rows = [Row(op, op in converters, "-" if op not in converters else "any",
                "" if op in converters else NOT_YET)
            for op in sorted(n for n in SYNTAX if "." in n)]
    return Section("MLIR structure and control flow", "Upstream MLIR ops around the "
                   "dialects' ops: modules, functions (calls are inlined), constants and "
                   "branches between blocks.", rows)


def tosa_section() -> Section | None:
    try:
        tosa = importlib.import_module("toolchain.frontend.tosa")
        syntax = importlib.import_module("toolchain.mlir.tosa_syntax")
    except ImportError:
        return None
    names = sorted(set(syntax.TOSA_OPS) | {k.removeprefix("tosa.") for k in tosa.CONVERTERS})
    refused = getattr(tosa, "UNSUPPORTED", {})
    converters = {k for k in tosa.CONVERTERS if k not in refused}
    rows = _mlir_rows(names, "tosa", converters, op_samples.TOSA,
                      lambda op: None)
    rows = [Row(r.op, r.supported, r.types, refused.get(f"tosa.{r.op}", r.why_not))
            for r in rows]
    return Section("TOSA", "TOSA 1.0 as current MLIR prints it; the refused ops name their "
                   "reason.", rows)


def tflite_section() -> Section:
    from toolchain.frontend.tflite.ops import OPS
    from toolchain.frontend.tflite.schema import OPERATORS

    rows = []
    for name in sorted(set(OPERATORS.values()) | set(OPS)):
        row = OPS.get(name)
        families = [f for f, conv in (("float32", row and row.float),
                                      ("int8", row and row.int8),
                                      ("int16x8", row and row.int16),
                                      ("int32", row and row.int32),
                                      ("int64", row and row.int64),
                                      ("bool", row and row.bool_),
                                      ("uint8", row and row.uint8),
                                      ("any", row and row.every)) if conv]
        # Any other custom operator runs the user's own kernel (--custom-op).
        why = "with --custom-op: your own C kernel and Python reference " \
            "(docs/custom-ops.md)" if name == "CUSTOM" else NOT_YET
        rows.append(Row(name, bool(families), " ".join(families),
                        "" if families else why))
    return Section("TFLite", "Every builtin operator of the TFLite schema, and the custom "
                   "operators minirt imports (CUSTOM:<code>: TFLite Micro's Signal library "
                   "and TFLite_Detection_PostProcess; "
                   "any other with --custom-op, docs/custom-ops.md). "
                   "Element types are the families an operator's row converts: float32 "
                   "models, int8 (quantized) models, int16x8 (int16 activations, int8 "
                   "weights; int16 for data movement), unquantized int32 and int64, bool; "
                   "any: one converter for every type the operator takes (CAST, the "
                   "Signal ops). tests/frontend/tflite/tflm_type_matrix.py lists the types "
                   "TFLite Micro's kernels take and why any of them is refused.", rows)


def onnx_section() -> Section | None:
    try:
        ops = importlib.import_module("toolchain.frontend.onnx.ops").OPS
        regional = importlib.import_module("toolchain.frontend.onnx.control").REGION_OPS
    except ImportError:
        return None
    types = {name: "float" + (", int8 (QDQ)" if row.int8 else "") for name, row in ops.items()}
    # Ops with bodies take whatever their bodies' ops take.
    types.update({name: "as its bodies' ops" for name in regional})
    rows = [Row(name, True, types[name]) for name in sorted(types)]
    return Section("ONNX", "The ONNX op types the importer's table takes (opset 13 and "
                   "later); any other op type is refused by name (a custom domain's runs "
                   "your own kernel with --custom-op, docs/custom-ops.md). Element types: "
                   "the float converter, and an int8 form for quantize/dequantize patterns.",
                   rows)


def sections() -> list[Section]:
    found = [*stablehlo_sections(), core_section(), tosa_section(), tflite_section(),
             onnx_section()]
    return [s for s in found if s is not None]


# ------------------------------------------------------------------------- the document


def render(all_sections: list[Section]) -> str:
    lines = [
        "# Operators",
        "",
        "Generated by `python -m toolchain.report.ops` from the frontends' op tables; do "
        "not edit (tests/report/test_ops_doc.py fails when this file is stale).",
        "",
        "An op is supported when its frontend has a converter for it. For MLIR ops the "
        "element types are measured: a small program using the op "
        "(toolchain/report/op_samples.py) goes through parse, import and verify once per "
        f"element type the parser reads ({', '.join(CANDIDATES)}), and the types that "
        "come through are listed; \"not measured\" marks a supported op without a sample.",
        "",
        "| frontend | ops | supported |",
        "|---|---|---|",
        *[f"| {s.title} | {len(s.rows)} | {sum(r.supported for r in s.rows)} |"
          for s in all_sections],
        "",
    ]
    for s in all_sections:
        lines += [f"## {s.title}", "", s.intro, "",
                  "| op | supported | element types | why not |", "|---|---|---|---|"]
        lines += [f"| `{r.op}` | {'yes' if r.supported else 'no'} | {r.types} | {r.why_not} |"
                  for r in s.rows]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, default=DOC)
    p.add_argument("--check", action="store_true",
                   help="exit 1 if the file is not what the tables give")
    args = p.parse_args(argv)
    text = render(sections())
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run python -m toolchain.report.ops",
                  file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
