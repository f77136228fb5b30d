"""State that survives an inference, on firmware under QEMU: the streaming test model
(tests/tflite_state_models.py: two resource variables set by a CALL_ONCE init
subgraph, a SPLIT_V (or STRIDED_SLICE) / CONCATENATION ring buffer, int8 and float)
runs 30 steps with two resets in one emulator run of its stream image, step for step
like TFLite Micro's interpreter (invoked and reset the same way) and the reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_state_models import RESETS, TflmStream, assert_same, stream_inputs, streaming_model

from toolchain.pipeline import build_model, run_firmware
from toolchain.report.size import size_report
from toolchain.stream import reference_stream, run_firmware_stream

pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                    reason="tflite-micro is not installed")


@pytest.mark.parametrize("board, dtype, cut", [
    ("cortex-m4", "int8", "SPLIT_V"), ("cortex-m4", "float32", "SPLIT_V"),
    ("x86-64", "int8", "SPLIT_V"), ("x86-64", "float32", "SPLIT_V"),
    ("riscv32", "int8", "SPLIT_V"), ("cortex-m4", "int8", "STRIDED_SLICE"),
])
def test_stream_matches_tflite_micro_step_by_step(board: str, dtype: str, cut: str,
                                                  tmp_path: Path) -> None:
    path = tmp_path / f"stream_{dtype}.tflite"
    path.write_bytes(streaming_model(dtype, cut=cut))
    result = build_model(path, board, tmp_path / "fw", log=lambda _: None)
    steps = [[x] for x in stream_inputs(dtype)]
    run = run_firmware_stream(result.board, result.out_dir, steps, result.graph,
                              resets=RESETS, log=lambda _: None)
    want_ref = reference_stream(result.graph, steps, frozenset(RESETS))
    tflm = TflmStream(path.read_bytes())
    for k, (got, ref, x) in enumerate(zip(run.outputs, want_ref, steps, strict=True)):
        if k in RESETS:
            tflm.reset()
        assert_same(got, tflm.step(x), k)
        assert_same(got, ref, k)
    # The ring (12 elements) and the sum (3) each take a 16-byte aligned slot of the
    # state region, its own RAM component beside the arena: 32 B in int8, 64 B in float.
    assert size_report(result).ram["state"] == {"int8": 32, "float32": 64}[dtype]


def test_a_single_run_is_the_first_step(tmp_path: Path) -> None:
    """minirt-run without --stream on a stateful model: one inference from the boot
    state (the stream image reads mrt.in alone)."""
    path = tmp_path / "stream_int8.tflite"
    path.write_bytes(streaming_model("int8"))
    result = build_model(path, "cortex-m4", tmp_path / "fw", log=lambda _: None)
    x = stream_inputs("int8", 1)
    run = run_firmware(result.board, result.out_dir, x, result.graph, log=lambda _: None)
    assert_same(run.outputs, TflmStream(path.read_bytes()).step(x), 0)
    assert np.asarray(run.instructions) > 0
