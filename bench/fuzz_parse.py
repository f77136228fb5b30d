"""Fuzzes the model front ends: load + import + verify of mutated models (`make fuzz-parse`).

Three formats, each with its seeds, its mutations and its loader (FORMATS):
- .mlir: the shared models (../shared/models/**/*.mlir), the repo's StableHLO examples
  and fuzz seeds; text mutations (byte flips, token deletion, duplication, swaps and
  replacement by a token of the same kind from any seed, truncation, splicing two
  files, deep nesting, huge numbers) plus toolchain.testing.fuzz_mlir's structured edits;
- .tflite: the shared models (**/*.tflite) and small models built by tests/tflite_models.py;
  toolchain.testing.fuzz_tflite's structured edits (hostile scales, zero points, shapes,
  indices, options, ...);
- .onnx: the shared models (**/*.onnx) and toolchain.testing.fuzz_onnx's seed models;
  its structured edits.
A format whose edits module is missing keeps its text mutations, if any, or is skipped
with a note. Model files named on the command line join their format's seeds. Each input
picks a format, a seed of it, and applies one to three mutations. Input N of a run
depends only on --seed and N (`--replay N` prints it), whatever the job count.

Every input must end in a located error (a CompileError with a file:line:col, or naming
the file for a flatbuffer or protobuf, which has no lines) or a verified graph: anything
else is a failure, be it a Python exception, an error without a location, an input over
the per-input CPU-time limit (a hang) or over the memory limit. Writes
bench/results/fuzz_parse.json and fuzz_parse.md (per format: inputs, outcomes, failures,
the mutations that ran); exits 1 on any failure.

    python bench/fuzz_parse.py [MODEL.mlir|.tflite|.onnx ...] [--count 100000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.diagnostics import CompileError  # noqa: E402
from toolchain.frontend import import_module  # noqa: E402
from toolchain.graph.verify import verify_graph  # noqa: E402
from toolchain.loader import UsageError, load_graph  # noqa: E402
from toolchain.mlir.parser import parse_bytes  # noqa: E402

SHARED = ROOT.parent / "shared" / "models"
# Seeds always present: a fresh checkout fuzzes these even without the shared models. The
# frontend tests' models hold the ops (tuples, composite, einsum, reduce_precision, CHLO,
# complex) that no exported model has, so their syntax gets mutated too.
REPO_SEEDS = [ROOT / "examples" / "seed.mlir",
              *(p for folder in ("bench/fuzz_models", "bench/fuzz_parse_seeds",
                                 "tests/frontend/data")
                for p in sorted((ROOT / folder).glob("*.mlir")))]
RESULTS = ROOT / "bench" / "results"

# A hang is a CPU-time overrun (not wall time: the machine may be busy with other jobs).
DEFAULT_TIMEOUT_S = 10.0
# Address space per worker: a constant may take 1 GiB (the parser's limit), plus the
# interpreter, numpy and the copies import makes.
DEFAULT_MEMORY_MB = 4096


# ---------------------------------------------------------------------------- seeds


@dataclass(frozen=True)
class Seed:
    name: str
    data: bytes
    weight: float  # how often it is picked within its format: cheap seeds more often
    format: str = ".mlir"


# A hex blob longer than this is cut to its first element (a splat of the same type),
# so the big shared models parse in milliseconds; the originals stay in the corpus too.
_HEX_BLOB = re.compile(rb'dense<"0x([0-9A-Fa-f]{2,})">( : tensor<(?:[0-9?]+x)*([a-z0-9]+)>)')
_BYTES = {b"f16": 2, b"bf16": 2, b"f32": 4, b"f64": 8, b"i1": 1, b"i8": 1, b"i16": 2,
          b"i32": 4, b"i64": 8, b"ui8": 1, b"ui16": 2, b"ui32": 4, b"ui64": 8}


def compact(data: bytes) -> bytes:
    """`data` with every long dense hex blob replaced by a splat of its first element."""
    def one(m: re.Match[bytes]) -> bytes:
        size = _BYTES.get(m.group(3))
        if size is None or len(m.group(1)) <= 2 * size * 4:
            return m.group(0)
        return b'dense<"0x' + m.group(1)[: 2 * size] + b'">' + m.group(2)

    return _HEX_BLOB.sub(one, data)


def _built_tflite_seeds() -> list[tuple[str, bytes]]:
    """Small int8 and float models built by the tests' writer: fast inputs that exist
    without the shared models."""
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np
    from tflite_models import Tensor, single_op_model

    rng = np.random.default_rng(0)
    x = Tensor((1, 6, 6, 3), "int8", scale=0.05, zero_point=-3)
    w = Tensor((4, 3, 3, 3), "int8", scale=[0.01, 0.02, 0.03, 0.04], zero_point=[0] * 4,
               data=rng.integers(-127, 128, (4, 3, 3, 3)), name="w")
    b = Tensor((4,), "int32", scale=[0.0005, 0.001, 0.0015, 0.002], zero_point=[0] * 4,
               data=rng.integers(-999, 999, (4,)), name="b")
    dw = Tensor((1, 3, 3, 3), "int8", scale=[0.01, 0.02, 0.03], zero_point=[0] * 3,
                quantized_dimension=3, data=rng.integers(-127, 128, (1, 3, 3, 3)))
    db = Tensor((3,), "int32", scale=[0.0005] * 3, zero_point=[0] * 3, data=np.zeros(3))
    fw = Tensor((5, 108), "int8", scale=0.02, zero_point=0,
                data=rng.integers(-127, 128, (5, 108)))
    fx = Tensor((1, 108), "int8", scale=0.05, zero_point=-3)
    pool = dict(padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    models = {
        "conv_int8": single_op_model(
            "CONV_2D", [x, w, b], [Tensor((1, 6, 6, 4), "int8", scale=0.1, zero_point=5)],
            padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU"),
        "depthwise_int8": single_op_model(
            "DEPTHWISE_CONV_2D", [x, dw, db],
            [Tensor((1, 4, 4, 3), "int8", scale=0.1, zero_point=0)],
            padding="VALID", stride_w=1, stride_h=1, depth_multiplier=1),
        "fully_connected_int8": single_op_model(
            "FULLY_CONNECTED", [fx, fw, None],
            [Tensor((1, 5), "int8", scale=0.2, zero_point=1)]),
        "avg_pool_int8": single_op_model(
            "AVERAGE_POOL_2D", [x], [Tensor((1, 3, 3, 3), "int8", scale=0.05,
                                            zero_point=-3)], **pool),
        "add_int8": single_op_model(
            "ADD", [x, Tensor((1, 6, 6, 3), "int8", scale=0.07, zero_point=2)],
            [Tensor((1, 6, 6, 3), "int8", scale=0.1, zero_point=0)]),
        "softmax_int8": single_op_model(
            "SOFTMAX", [fx], [Tensor((1, 108), "int8", scale=1 / 256, zero_point=-128)],
            beta=1.0),
        "conv_float": single_op_model(
            "CONV_2D", [Tensor((1, 5, 5, 2), "float32"),
                        Tensor((3, 3, 3, 2), "float32", data=rng.normal(size=(3, 3, 3, 2))),
                        Tensor((3,), "float32", data=np.ones(3))],
            [Tensor((1, 3, 3, 3), "float32")], padding="VALID", stride_w=1, stride_h=1),
    }
    return [(f"tests/tflite_models.py:{k}", v) for k, v in models.items()]


def _seed_name(p: Path) -> str:
    return (str(p.relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else
            f"../{p.relative_to(ROOT.parent)}" if p.resolve().is_relative_to(ROOT.parent)
            else str(p))


def load_seeds(extra: list[Path], use_shared: bool = True) -> tuple[list[Seed], list[str]]:
    """The corpus of the formats that can be fuzzed, and notes on what was left out."""
    notes: list[str] = []
    paths = list(REPO_SEEDS)
    if use_shared:
        if SHARED.is_dir():
            paths += sorted(p for suffix in FORMATS for p in SHARED.rglob("*" + suffix))
        else:
            notes.append(f"shared models skipped: {SHARED} is absent")
    paths += extra
    active = mutations_by_format(notes)
    seeds: list[Seed] = []
    if ".tflite" in active:
        seeds += [Seed(name, data, 1.0, ".tflite") for name, data in _built_tflite_seeds()]
    if ".onnx" in active:
        # No shared model is ONNX: the fuzzer's own small models over the importer's ops
        # (Conv, Gemm, QDQ and QLinear ops, shape chains, sizes from constants).
        from toolchain.testing.fuzz_onnx import seed_models

        seeds += [Seed(f"toolchain/testing/fuzz_onnx.py:{name}", data, 1.0, ".onnx")
                  for name, data in seed_models().items()]
    for p in paths:
        fmt = p.suffix if p.suffix in FORMATS else ".mlir"
        if fmt not in active:
            continue
        data = p.read_bytes()
        if fmt != ".mlir":
            # Flatbuffers and protobufs read fast: size matters less than for text.
            seeds.append(Seed(_seed_name(p), data, 1.0 / max(1.0, len(data) / 65536), fmt))
            continue
        small = compact(data)
        # Weight by cost: parsing time grows with size.
        seeds.append(Seed(_seed_name(p), small, 1.0 / max(1.0, len(small) / 4096)))
        if small != data:
            seeds.append(Seed(_seed_name(p) + " (full)", data,
                              0.02 / max(1.0, len(data) / 4096)))
    return seeds, notes


# ---------------------------------------------------------------------------- mutations

# Roughly MLIR's tokens: enough to cut, copy and swap meaningful pieces.
_TOKEN = re.compile(
    rb'"(?:[^"\\\n]|\\.)*"|[%@^#!][\w$.\-]+|[-+]?0x[0-9A-Fa-f]+|[-+]?[0-9]+(?:\.[0-9]*)?'
    rb"(?:[eE][-+]?[0-9]+)?|[A-Za-z_][\w$.]*|->|\S")
_NUMBER = re.compile(rb"[-+]?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)")
_SPECIAL = b'%@^#!"(){}[]<>:,=-+x0123456789?*.\n '
_HUGE = [b"18446744073709551616", b"-9223372036854775809", b"1" + b"0" * 400,
         b"0x" + b"F" * 300, b"1e999", b"-1e-999", b"99999999999999999999",
         b"2147483648", b"4294967296", b"65536", b"0", b"-1", b"1" * 5000]
_OPENERS = [b"(", b"[", b"{", b"<", b"tensor<", b"!quant.uniform<", b"dense<[",
            b'"test.op"() ({\n', b"(%a = %b) : ", b"array<i64: "]


def _tokens(data: bytes) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN.finditer(data)]


def flip_byte(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    i = rng.randrange(len(data))
    if rng.random() < 0.5:
        new = bytes([data[i] ^ (1 << rng.randrange(8))])
    else:
        new = bytes([rng.choice(_SPECIAL)])
    return data[:i] + new + data[i + 1:], f"byte {i} -> {new!r}"


def delete_token(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    toks = _tokens(data)
    if not toks:  # e.g. a truncation left only blanks
        return flip_byte(rng, data, seeds)
    a, b = rng.choice(toks)
    return data[:a] + data[b:], f"delete {data[a:b][:30]!r} at {a}"


def duplicate_token(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    toks = _tokens(data)
    if not toks:  # e.g. a truncation left only blanks
        return flip_byte(rng, data, seeds)
    a, b = rng.choice(toks)
    n = rng.choice([1, 1, 2, 8])
    return data[:b] + data[a:b] * n + data[b:], f"repeat {data[a:b][:30]!r} at {a} x{n}"


def swap_tokens(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    toks = _tokens(data)
    if not toks:  # e.g. a truncation left only blanks
        return flip_byte(rng, data, seeds)
    i = rng.randrange(len(toks))
    # Mostly neighbours (plausible typos), sometimes anywhere.
    j = min(len(toks) - 1, i + rng.randint(1, 3)) if rng.random() < 0.7 else \
        rng.randrange(len(toks))
    if i == j:
        return data, "swap nothing"
    (a, b), (c, d) = sorted([toks[i], toks[j]])
    return (data[:a] + data[c:d] + data[b:c] + data[a:b] + data[d:],
            f"swap {data[a:b][:20]!r} at {a} with {data[c:d][:20]!r} at {c}")


def replace_token(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    """A token replaced by one of the same kind (op name, value, type word, number...)
    from any seed: still plausible text, often wrong semantics for the importer."""
    toks = _tokens(data)
    if not toks:  # e.g. a truncation left only blanks
        return flip_byte(rng, data, seeds)
    a, b = rng.choice(toks)
    old = data[a:b]
    donor = rng.choice(seeds).data
    cands = [donor[c:d] for c, d in _tokens(donor)[:20000]
             if donor[c:d] != old and _kind(donor[c:d]) == _kind(old)]
    new = rng.choice(cands) if cands else rng.choice(_HUGE)
    return data[:a] + new + data[b:], f"replace {old[:20]!r} at {a} by {new[:20]!r}"


def _kind(tok: bytes) -> str:
    """Which tokens may stand in for each other: numbers, words, sigil names (`%x`,
    `@f`, `#a`, `!t`, `^bb`) by sigil, strings, punctuation."""
    c = tok[:1]
    if c.isdigit() or (c in b"+-" and tok[1:2].isdigit()):
        return "number"
    if c.isalpha() or c == b"_":
        return "word"
    if c in b'%@^#!"':
        return c.decode()
    return "punct"


def truncate(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    i = rng.randrange(len(data) + 1)
    return data[:i], f"truncate at {i}"


def splice(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    other = rng.choice(seeds)
    lines, olines = data.split(b"\n"), other.data.split(b"\n")
    i, j = rng.randrange(len(lines) + 1), rng.randrange(len(olines) + 1)
    return (b"\n".join(lines[:i] + olines[j:]),
            f"lines ..{i} + {other.name} lines {j}..")


def nest_deeply(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    i = rng.randrange(len(data) + 1)
    opener = rng.choice(_OPENERS)
    n = rng.choice([70, 200, 1000, 20000])
    closer = {b"(": b")", b"[": b"]", b"{": b"}", b"<": b">"}.get(opener[-1:], b"")
    close = closer * n if rng.random() < 0.5 else b""
    return data[:i] + opener * n + close + data[i:], f"nest {opener!r} x{n} at {i}"


def huge_number(rng: random.Random, data: bytes, seeds: list[Seed]) -> tuple[bytes, str]:
    nums = [m.span() for m in _NUMBER.finditer(data)]
    if not nums:
        return flip_byte(rng, data, seeds)
    a, b = rng.choice(nums)
    new = rng.choice(_HUGE)
    return data[:a] + new + data[b:], f"number at {a} -> {new[:24]!r}"


MUTATIONS: dict[str, Callable[[random.Random, bytes, list[Seed]], tuple[bytes, str]]] = {
    "flip_byte": flip_byte, "delete_token": delete_token, "duplicate_token": duplicate_token,
    "swap_tokens": swap_tokens, "replace_token": replace_token, "truncate": truncate,
    "splice": splice, "nest_deeply": nest_deeply, "huge_number": huge_number,
}


Mutation = Callable[[random.Random, bytes, list[Seed]], tuple[bytes, str]]
Edit = Callable[[bytes, random.Random], tuple[bytes, str]]


@dataclass(frozen=True)
class Format:
    """One model format: where its structured edits live, whether the text mutations
    apply, and how an input is loaded and judged."""

    edits_module: str  # a module exporting EDITS: dict[str, Edit]
    text_mutations: bool
    classify: Callable[[bytes], tuple[str, str]]


def _as_mutation(edit: Edit) -> Mutation:
    return lambda rng, data, seeds: edit(data, rng)


_MUTATIONS_BY_FORMAT: dict[str, dict[str, Mutation]] = {}
_FORMAT_NOTES: list[str] = []


def mutations_by_format(notes: list[str] | None = None) -> dict[str, dict[str, Mutation]]:
    """The mutations of every format that can be fuzzed (a format whose edits module is
    absent keeps its text mutations, or is left out with a note)."""
    if not _MUTATIONS_BY_FORMAT:
        for suffix, fmt in FORMATS.items():
            table: dict[str, Mutation] = dict(MUTATIONS) if fmt.text_mutations else {}
            try:
                edits = importlib.import_module(fmt.edits_module).EDITS
            except ModuleNotFoundError as e:
                if e.name != fmt.edits_module:
                    raise
                _FORMAT_NOTES.append(f"{fmt.edits_module} is absent: {suffix} " +
                                     ("gets text mutations only" if table else
                                      "seeds skipped"))
                edits = {}
            table.update({name: _as_mutation(e) for name, e in edits.items()})
            if table:
                _MUTATIONS_BY_FORMAT[suffix] = table
    if notes is not None:
        notes.extend(_FORMAT_NOTES)
    return _MUTATIONS_BY_FORMAT


def make_input(seeds: list[Seed], run_seed: int, index: int) -> tuple[bytes, Seed, list[str]]:
    """Input `index` of a run: the mutated bytes, its seed, the mutations. The format is
    picked first, so each gets its share whatever its number of seeds."""
    rng = random.Random(f"{run_seed}:{index}")
    formats = sorted({s.format for s in seeds})
    fmt = rng.choice(formats)
    pool = [s for s in seeds if s.format == fmt]
    seed = rng.choices(pool, weights=[s.weight for s in pool])[0]
    mutations = mutations_by_format()[fmt]
    data = seed.data
    steps = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(list(mutations))
        if not data:
            break
        try:
            data, what = mutations[kind](rng, data, seeds)
        except Exception as e:  # noqa: BLE001 - an edit that cannot read an edited model
            what = f"not applied ({type(e).__name__})"
        steps.append(f"{kind}: {what}")
    return data, seed, steps


# ---------------------------------------------------------------------------- one input


@dataclass
class Result:
    index: int
    outcome: str  # graph, located, unlocated, exception, timeout, memory
    seconds: float
    seed: str
    mutations: list[str]
    detail: str = ""  # the error message, or the traceback's last lines
    format: str = ".mlir"


class _Timeout(BaseException):
    """Raised in a worker at the CPU-time limit (a BaseException: no `except Exception`
    in the code under test can swallow it)."""


def _on_timer(signum: int, frame: object) -> None:
    raise _Timeout()


def classify(data: bytes, name: str = "fuzz.mlir") -> tuple[str, str]:
    """(outcome, detail) of parse + import + verify of `data`."""
    try:
        graph = import_module(parse_bytes(data, name))
        verify_graph(graph)
        return "graph", ""
    except CompileError as e:
        errors = [e, *e.notes]
        if any(err.loc is None for err in errors):
            bad = next(err for err in errors if err.loc is None)
            return "unlocated", bad.message[:300]
        return "located", f"{e.loc}: {e.message}"[:300]
    except MemoryError:
        return "memory", "MemoryError"
    except RecursionError:
        return "exception", _trace()
    except Exception:  # noqa: BLE001 - a crash is exactly what this looks for
        return "exception", _trace()


_TMP: dict[str, Path] = {}


def classify_file(data: bytes, suffix: str) -> tuple[str, str]:
    """(outcome, detail) of loading `data` as a model file with `suffix` (.tflite,
    .onnx), through the same loader as minirt-build: its errors name the file, which
    is their location (a flatbuffer or protobuf has no lines)."""
    if "dir" not in _TMP:
        _TMP["dir"] = Path(tempfile.mkdtemp(prefix="fuzz_parse_"))
    path = _TMP["dir"] / f"fuzz{suffix}"
    path.write_bytes(data)
    try:
        graph = load_graph(path)
        verify_graph(graph)
        return "graph", ""
    except (CompileError, UsageError) as e:
        text = str(e)
        lines = text.splitlines() or [""]
        if getattr(e, "loc", None) is None and not all(
                line.startswith(f"{path}: ") for line in lines):
            return "unlocated", text[:300]
        return "located", text[:300]
    except MemoryError:
        return "memory", "MemoryError"
    except Exception:  # noqa: BLE001 - a crash is exactly what this looks for
        return "exception", _trace()


FORMATS: dict[str, Format] = {
    ".mlir": Format("toolchain.testing.fuzz_mlir", True, lambda data: classify(data)),
    ".tflite": Format("toolchain.testing.fuzz_tflite", False,
                      lambda data: classify_file(data, ".tflite")),
    ".onnx": Format("toolchain.testing.fuzz_onnx", False,
                    lambda data: classify_file(data, ".onnx")),
}


def _trace() -> str:
    lines = traceback.format_exc().strip().splitlines()
    return "\n".join(lines[-7:])


def run_input(seeds: list[Seed], run_seed: int, index: int, timeout: float) -> Result:
    """Generates and judges input `index`, with a CPU-time limit."""
    data, seed, steps = make_input(seeds, run_seed, index)
    start = time.process_time()
    if timeout:
        signal.signal(signal.SIGPROF, _on_timer)
        signal.setitimer(signal.ITIMER_PROF, timeout)
    try:
        outcome, detail = FORMATS[seed.format].classify(data)
    except _Timeout:
        outcome, detail = "timeout", f"over {timeout} s of CPU time"
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_PROF, 0)
    return Result(index, outcome, time.process_time() - start, seed.name, steps, detail,
                  seed.format)


# ---------------------------------------------------------------------------- the run

_WORKER: dict = {}


def _init_worker(extra: list[str], use_shared: bool, run_seed: int, timeout: float,
                 memory_mb: int) -> None:
    if memory_mb:
        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _WORKER.update(seeds=load_seeds([Path(p) for p in extra], use_shared)[0],
                   run_seed=run_seed, timeout=timeout)


def _work(index: int) -> Result:
    return run_input(_WORKER["seeds"], _WORKER["run_seed"], index, _WORKER["timeout"])


PASSING = ("graph", "located")


@dataclass
class Summary:
    count: int
    seed: int
    jobs: int
    seconds: float
    outcomes: dict[str, int]
    failures: list[dict]
    slowest: list[dict]
    peak_rss_mb: float
    corpus: list[str]
    notes: list[str] = field(default_factory=list)
    # Per format: inputs, outcomes, failures, and how often each mutation ran.
    formats: dict[str, dict] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_limit_mb: int = DEFAULT_MEMORY_MB
    commit: str = ""  # the checkout fuzzed (and whether it had uncommitted changes)


def run(count: int, run_seed: int = 0, jobs: int = 1, extra: list[Path] | None = None,
        use_shared: bool = True, timeout: float = DEFAULT_TIMEOUT_S,
        memory_mb: int = DEFAULT_MEMORY_MB, progress: bool = False) -> Summary:
    """Fuzzes `count` inputs on `jobs` processes (1: in this process, without the memory
    limit) and sums them up."""
    extra = extra or []
    seeds, notes = load_seeds(extra, use_shared)
    commit = checkout()
    start = time.perf_counter()
    results: list[Result] = []

    def collect(it: Iterator[Result]) -> None:
        for r in it:
            results.append(r)
            if progress and len(results) % 2000 == 0:
                bad = sum(x.outcome not in PASSING for x in results)
                print(f"fuzz_parse: {len(results)}/{count}, {bad} failures, "
                      f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

    if jobs <= 1:
        collect(run_input(seeds, run_seed, i, timeout) for i in range(count))
    else:
        ctx = get_context("fork")
        with ctx.Pool(jobs, _init_worker, ([str(p) for p in extra], use_shared, run_seed,
                                           timeout, memory_mb)) as pool:
            collect(pool.imap_unordered(_work, range(count), chunksize=50))
    results.sort(key=lambda r: r.index)
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    failures = [asdict(r) for r in results if r.outcome not in PASSING]
    formats = {}
    for fmt, table in mutations_by_format().items():
        mine = [r for r in results if r.format == fmt]
        ran = Counter(step.split(":", 1)[0] for r in mine for step in r.mutations)
        formats[fmt] = {"inputs": len(mine), "outcomes": dict(Counter(r.outcome for r in mine)),
                        "failures": sum(r.outcome not in PASSING for r in mine),
                        "mutations": {k: ran[k] for k in table}}
    slowest = [asdict(r) for r in sorted(results, key=lambda r: -r.seconds)[:10]]
    return Summary(count, run_seed, jobs, round(time.perf_counter() - start, 1),
                   dict(Counter(r.outcome for r in results)), failures, slowest,
                   round(peak, 1), [s.name for s in seeds], notes, formats, timeout_s=timeout,
                   memory_limit_mb=memory_mb if jobs > 1 else 0, commit=commit)


def checkout() -> str:
    """The commit being fuzzed, marked when the work tree differs from it."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    head = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "toolchain", "bench")
    return f"{head} (with uncommitted changes)" if head and dirty else head


def write_results(summary: Summary, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    record = {**asdict(summary), "python": platform.python_version(),
              "cpus": os.cpu_count()}
    (out / "fuzz_parse.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        "# Front-end fuzz (`make fuzz-parse`)",
        "",
        f"{summary.count} mutated models (seed {summary.seed}, {summary.jobs} jobs, "
        f"{summary.seconds} s): load + import + verify of each"
        + (f", at commit {summary.commit}." if summary.commit else "."),
        "",
        "| outcome | inputs |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(summary.outcomes.items())],
        "",
        f"Failures (anything but a verified graph or a located error): "
        f"**{len(summary.failures)}**. Limits: {summary.timeout_s} s of CPU time and "
        f"{summary.memory_limit_mb} MB of address space per input's process; peak "
        f"resident memory {summary.peak_rss_mb} MB.",
        "",
        "| format | inputs | outcomes | failures |",
        "|---|---|---|---|",
        *[f"| {fmt} | {f['inputs']} | "
          f"{', '.join(f'{k} {v}' for k, v in sorted(f['outcomes'].items()))} | "
          f"{f['failures']} |" for fmt, f in summary.formats.items()],
        "",
        *[f"Mutations of {fmt} (times run): "
          f"{', '.join(f'{k} {v}' for k, v in f['mutations'].items())}.\n"
          for fmt, f in summary.formats.items()],
        f"Corpus ({len(summary.corpus)}): {', '.join(summary.corpus)}.",
        *[f"\nNote: {n}." for n in summary.notes],
        "",
        "Slowest inputs (CPU seconds):",
        "",
        "| input | seconds | outcome | seed | mutations |",
        "|---|---|---|---|---|",
        *[f"| {s['index']} | {s['seconds']:.3f} | {s['outcome']} | {s['seed']} | "
          f"{'; '.join(s['mutations'])[:120].replace('|', '/')} |" for s in summary.slowest],
        "",
    ]
    for f in summary.failures[:20]:
        lines += [f"Failure {f['index']} ({f['outcome']}, seed {f['seed']}): "
                  f"{'; '.join(f['mutations'])}", "", "```", f["detail"], "```", ""]
    (out / "fuzz_parse.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", type=Path,
                   help="more seed models (.mlir, .tflite, .onnx)")
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help="CPU seconds per input (default %(default)s)")
    p.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB)
    p.add_argument("--no-shared", action="store_true", help="leave out ../shared/models")
    p.add_argument("--replay", type=int, metavar="N", help="print input N and judge it")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    for m in args.models:
        if not m.is_file():
            print(f"fuzz_parse: {m}: no such file", file=sys.stderr)
            return 2
    if args.replay is not None:
        seeds, _ = load_seeds(args.models, not args.no_shared)
        data, seed, steps = make_input(seeds, args.seed, args.replay)
        sys.stdout.buffer.write(data)
        print(f"\n// seed {seed.name}; {'; '.join(steps)}", file=sys.stderr)
        print("//", FORMATS[seed.format].classify(data), file=sys.stderr)
        return 0
    summary = run(args.count, args.seed, args.jobs, args.models, not args.no_shared,
                  args.timeout, args.memory_mb, progress=True)
    write_results(summary, args.out)
    print(f"fuzz_parse: {summary.count} inputs in {summary.seconds} s: {summary.outcomes}; "
          f"{len(summary.failures)} failures; results in {args.out}/fuzz_parse.md",
          file=sys.stderr)
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
