"""Damaged .tflite files: truncated at 20 offsets, 100 random bytes flipped (seeded), and
100 more flips among the flatbuffer's structure (tables, vtables, offsets, vectors'
lengths: everything but the constants' data, where a flip only changes a weight).

Every case must end in a clean TFLiteError (one line per problem, `path: ...`) or in a
model that imports and verifies; those then run on the reference with random inputs
when that is cheap. Nothing may raise anything else, and no case may take long.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tflite
from model_zoo import MODELS_DIR
from tflite_models import Op, Tensor, build_model

from toolchain.frontend.tflite import TFLiteError, load_tflite
from toolchain.loader import host_memory, random_inputs
from toolchain.reference import run_graph

MLPERF = MODELS_DIR / "mlperf_tiny"
SHARED = ["ad01_fp32", "ad01_int8", "kws_ref_model", "kws_ref_model_float32",
          "pretrainedResnet", "pretrainedResnet_quant", "vww_96_float", "vww_96_int8"]
CHEAP_BYTES = 64 << 20  # reference runs of valid damaged models up to this much memory
SLOW = 5.0  # seconds: far above any case (they take milliseconds); a hang would exceed it


def built_model() -> bytes:
    """A small float model covering several operators, built here (no shared files)."""
    rng = np.random.default_rng(0)
    x = Tensor((1, 6, 6, 2), "float32", name="input")
    w = Tensor((3, 3, 3, 2), "float32", data=rng.standard_normal((3, 3, 3, 2)))
    b = Tensor((3,), "float32", data=rng.standard_normal(3))
    c, p = Tensor((1, 6, 6, 3), "float32"), Tensor((1, 3, 3, 3), "float32")
    r, fw = Tensor((1, 27), "float32"), Tensor((4, 27), "float32",
                                               data=rng.standard_normal((4, 27)))
    f, s = Tensor((1, 4), "float32"), Tensor((1, 4), "float32")
    shape = Tensor((2,), "int32", data=np.array([1, 27]))
    return build_model([
        Op("CONV_2D", [x, w, b], [c], {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                                        "fused_activation_function": "RELU"}),
        Op("MAX_POOL_2D", [c], [p], {"padding": "VALID", "stride_w": 2, "stride_h": 2,
                                     "filter_width": 2, "filter_height": 2}),
        Op("RESHAPE", [p, shape], [r], {"new_shape": [1, 27]}),
        Op("FULLY_CONNECTED", [r, fw, None], [f]),
        Op("SOFTMAX", [f], [s], {"beta": 1.0}),
    ], [x], [s])


def data_ranges(data: bytes) -> list[range]:
    """Where the constants' bytes lie (a flip there leaves a valid model)."""
    model = tflite.Model.GetRootAs(data, 0)
    ranges = []
    for i in range(model.BuffersLength()):
        buf = model.Buffers(i)
        n = buf.DataLength()
        if n:
            start = buf._tab.Vector(buf._tab.Offset(4))
            ranges.append(range(start, start + n))
    return ranges


def damaged(data: bytes, seed: int) -> list[tuple[str, bytes]]:
    """(label, bytes) of every damaged variant of `data`."""
    rng = random.Random(seed)
    cases = [(f"truncated at {n}", data[:n])
             for n in sorted({len(data) * k // 20 for k in range(20)})]
    in_data = set()
    for r in data_ranges(data):
        in_data.update(r)
    structure = [i for i in range(len(data)) if i not in in_data]
    for where, positions in (("", range(len(data))), ("structure ", structure)):
        for _ in range(100):
            pos = rng.choice(positions)
            spoiled = bytearray(data)
            spoiled[pos] = (spoiled[pos] + rng.randrange(1, 256)) % 256
            cases.append((f"{where}byte {pos} flipped", bytes(spoiled)))
    return cases


def check_damaged(data: bytes, tmp_path: Path, seed: int) -> dict[str, int]:
    """Runs every damaged variant; returns how many ended in each way."""
    path = tmp_path / "damaged.tflite"
    seen = {"format error": 0, "import error": 0, "valid": 0, "ran": 0}
    for label, bad in damaged(data, seed):
        path.write_bytes(bad)
        start = time.monotonic()
        try:
            graph = load_tflite(path)
        except TFLiteError as e:
            lines = e.render().splitlines()
            assert lines and all(line.startswith(f"{path}: ") for line in lines), (label, lines)
            if "not a valid TFLite model" in lines[0]:
                assert len(lines) == 1, (label, lines)
                seen["format error"] += 1
            else:
                seen["import error"] += 1
        else:
            seen["valid"] += 1
            if host_memory(graph, reference=True) <= CHEAP_BYTES:
                with np.errstate(all="ignore"):
                    outs = run_graph(graph, random_inputs(graph, seed=1))
                assert [o.shape for o in outs] == [t.type.shape for t in graph.outputs]
                seen["ran"] += 1
        assert time.monotonic() - start < SLOW, label
    return seen


def test_damaged_built_model(tmp_path: Path) -> None:
    seen = check_damaged(built_model(), tmp_path, seed=0)
    # Every kind of outcome occurs: the test exercises the error paths and the valid ones.
    assert seen["format error"] >= 20 and seen["import error"] > 0 and seen["ran"] > 0, seen


@pytest.mark.parametrize("name", SHARED)
def test_damaged_shared_models(name: str, tmp_path: Path) -> None:
    path = MLPERF / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"shared model {path} not found; ../shared/models lives beside the repo")
    seen = check_damaged(path.read_bytes(), tmp_path, seed=SHARED.index(name))
    assert seen["format error"] >= 19, seen  # truncation keeps at most the empty prefix


def _tool(tool: str, *args: str) -> subprocess.CompletedProcess:
    code = f"import sys; from toolchain.cli.{tool} import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


def test_damaged_model_in_a_real_process(tmp_path: Path) -> None:
    """The command-line tools, as a user runs them: one line on stderr, exit 2."""
    data = built_model()
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes(data[:len(data) // 2])
    flipped = tmp_path / "flipped.tflite"
    spoiled = bytearray(data)
    spoiled[4:8] = b"TFL4"
    flipped.write_bytes(bytes(spoiled))
    build = ["--board", "x86-64", "-o", str(tmp_path / "fw")]
    for tool, args, path in (("build", ["--dump-ir"], truncated),
                             ("run", ["--reference"], flipped), ("build", build, truncated)):
        done = _tool(tool, *args, str(path))
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith(f"{path}: not a valid TFLite model: "), line
    assert not (tmp_path / "fw").exists()
