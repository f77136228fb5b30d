"""The structured MLIR edits for the parser fuzzer (toolchain/testing/fuzz_mlir.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.graph.verify import verify_graph
from toolchain.mlir.parser import parse_bytes
from toolchain.testing.fuzz_mlir import EDITS

ROOT = Path(__file__).resolve().parents[2]
SEED = (ROOT / "tests" / "testing" / "data" / "fuzz_mlir_seed.mlir").read_bytes()


@pytest.mark.parametrize("name", sorted(EDITS))
def test_each_edit_changes_the_text_and_says_how_in_one_line(name: str) -> None:
    changed = 0
    for i in range(20):
        data, what = EDITS[name](SEED, random.Random(i))
        assert what.startswith(f"{name}: ") and "\n" not in what
        changed += data != SEED
    assert changed >= 10, f"{name} changed the seed only {changed} times in 20"


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_is_a_function_of_its_input_and_generator(name: str) -> None:
    assert EDITS[name](SEED, random.Random(7)) == EDITS[name](SEED, random.Random(7))


def test_an_edit_without_a_site_returns_the_text_unchanged() -> None:
    text = b"func.func @main() {\n  return\n}\n"
    for name, edit in EDITS.items():
        data, what = edit(text, random.Random(0))
        assert data == text, name


def test_specific_edits() -> None:
    rng = random.Random(3)
    data, what = EDITS["struct_kind"](SEED, rng)
    assert b"#stablehlo.gather<" not in data and "-> #stablehlo." in what
    data, _ = EDITS["drop_result"](b'  %t = "a.b"(%s) : (tensor<f32>) -> tensor<f32>\n', rng)
    assert data == b'  "a.b"(%s) : (tensor<f32>) -> ()\n'
    data, _ = EDITS["move_op"](b"  %a = x\n  %b = y %a\n", rng)
    assert data == b"  %b = y %a\n  %a = x\n"


def test_edited_seeds_end_in_a_located_error_or_a_graph() -> None:
    # A small run over the repo's seeds (bench/fuzz_parse.py runs thousands): every
    # edited model is refused with a located error or verifies.
    seeds = [ROOT / "examples" / "seed.mlir", *sorted((ROOT / "bench" / "fuzz_parse_seeds")
                                                     .glob("*.mlir"))]
    texts = [p.read_bytes() for p in seeds]
    for i in range(60):
        rng = random.Random(i)
        data, what = EDITS[sorted(EDITS)[i % len(EDITS)]](rng.choice(texts), rng)
        try:
            verify_graph(import_module(parse_bytes(data, "fuzz.mlir")))
        except CompileError as e:
            assert e.loc is not None, what
