"""The parser fuzzer (bench/fuzz_parse.py): `make test` runs a seeded sample of it.

Every mutated model must end in a verified graph or a located error; the full run of
100,000 inputs is `make fuzz-parse` (results in bench/results/fuzz_parse.md).
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

from toolchain.mlir.parser import parse_bytes

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fuzz_parse.py"
_spec = importlib.util.spec_from_file_location("fuzz_parse_bench", BENCH)
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz  # dataclasses look their module up while it loads
_spec.loader.exec_module(fuzz)

# 4 x 600 inputs, spread over the test workers: about 20 s of CPU in all.
CHUNKS, PER_CHUNK = 4, 600


@pytest.fixture(scope="module")
def seeds() -> list:
    return fuzz.load_seeds([])[0]


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_sample_ends_in_graphs_or_located_errors(seeds: list, chunk: int) -> None:
    results = [fuzz.run_input(seeds, 0, i, timeout=10.0)
               for i in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK)]
    failures = [(r.index, r.outcome, r.mutations, r.detail) for r in results
                if r.outcome not in fuzz.PASSING]
    assert failures == []
    # The sample reaches past the parser: some inputs still import and verify.
    assert any(r.outcome == "graph" for r in results)


def test_inputs_depend_only_on_the_run_seed_and_index(seeds: list) -> None:
    a = fuzz.make_input(seeds, 7, 123)
    assert a == fuzz.make_input(seeds, 7, 123)
    assert a != fuzz.make_input(seeds, 7, 124)


@pytest.mark.parametrize("name", sorted(fuzz.MUTATIONS))
def test_every_mutation_changes_the_text(seeds: list, name: str) -> None:
    rng = random.Random(name)
    seed = next(s for s in seeds if s.name.endswith("control_flow.mlir"))
    changed = [fuzz.MUTATIONS[name](rng, seed.data, seeds)[0] != seed.data for _ in range(20)]
    assert sum(changed) >= 15


def test_compacted_seeds_still_parse(seeds: list) -> None:
    for s in seeds:
        if s.format == ".mlir":  # the corpus holds .tflite seeds too
            parse_bytes(s.data, s.name)  # raises on a broken seed


def test_crashes_and_unlocated_errors_are_failures(monkeypatch) -> None:
    def boom(data: bytes, name: str):
        raise KeyError("x")

    monkeypatch.setattr(fuzz, "parse_bytes", boom)
    outcome, detail = fuzz.classify(b"")
    assert outcome == "exception" and "KeyError" in detail
    from toolchain.diagnostics import CompileError

    def unlocated(data: bytes, name: str):
        raise CompileError("no location")

    monkeypatch.setattr(fuzz, "parse_bytes", unlocated)
    assert fuzz.classify(b"")[0] == "unlocated"


def test_a_hang_is_cut_at_the_cpu_time_limit(seeds: list, monkeypatch) -> None:
    def spin(*args):
        while True:
            pass

    # Input 0 may be of any format: every format's judge spins.
    monkeypatch.setattr(fuzz, "classify", spin)
    monkeypatch.setattr(fuzz, "classify_file", spin)
    result = fuzz.run_input(seeds, 0, 0, timeout=0.3)
    assert result.outcome == "timeout" and result.seconds < 5


@pytest.mark.parametrize("name", sorted(fuzz.MUTATIONS))
def test_every_mutation_takes_a_text_without_tokens(seeds: list, name: str) -> None:
    # A truncation can leave only blanks; the token mutations then raised IndexError
    # (an --count 20000 run of `make fuzz-parse` stopped on one).
    for blank in (b" ", b"\n\n  \t", b"\x00"):
        data, what = fuzz.MUTATIONS[name](random.Random(0), blank, seeds)
        assert isinstance(data, bytes) and what
