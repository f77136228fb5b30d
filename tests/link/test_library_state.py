"""A model with state as a library (library/sources.py): the state lives in the
library, each <name>_run starts from what the previous one left, <name>_reset_state
returns it to its reset values; step for step like the reference and TFLite Micro."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from tflite_state_models import TflmStream, assert_same, stream_inputs, streaming_model

from toolchain.frontend.tflite.importer import load_tflite
from toolchain.library.build import build_library
from toolchain.reference.state import run_stream
from toolchain.target import load_board

STEPS, RESET = 8, 5

MAIN = """
#include <stdio.h>
#include "stream.h"
static const int8_t xs[%(steps)d][4] = {%(xs)s};
int main(void) {
  int8_t y[3], acc[3];
  for (int k = 0; k < %(steps)d; k++) {
    if (k == %(reset)d && stream_reset_state() != 0) return 1;
    if (stream_run(xs[k], y, acc) != 0) return 2;
    printf("%%d %%d %%d %%d %%d %%d\\n", y[0], y[1], y[2], acc[0], acc[1], acc[2]);
  }
  return 0;
}
"""


def test_library_keeps_state_and_resets_it(tmp_path: Path) -> None:
    if shutil.which("cc") is None:
        pytest.skip("no host C compiler (cc)")
    model = tmp_path / "stream.tflite"
    model.write_bytes(streaming_model("int8"))
    lib = tmp_path / "lib"
    build_library(load_tflite(model), load_board("x86-64"), lib, name="stream",
                  model="stream.tflite", log=lambda *_: None)
    header = (lib / "stream.h").read_text()
    assert "int stream_reset_state(void);" in header and "STREAM_IN1" not in header
    xs = stream_inputs("int8", STEPS)
    main = tmp_path / "main.c"
    main.write_text(MAIN % {"steps": STEPS, "reset": RESET,
                            "xs": ", ".join("{" + ", ".join(map(str, x.ravel())) + "}"
                                            for x in xs)})
    exe = tmp_path / "app"
    proc = subprocess.run(["cc", "-std=c11", "-no-pie", "-I", str(lib), str(main),
                           str(lib / "libminirt_stream.a"), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = [np.array(line.split(), dtype=np.int8) for line in out.stdout.splitlines()]
    graph = load_tflite(model)
    ref = run_stream(graph, [[x] for x in xs], frozenset({RESET}))
    tflm = TflmStream(model.read_bytes())
    for k, row in enumerate(rows):
        if k == RESET:
            tflm.reset()
        got = [row[:3].reshape(1, 3), row[3:].reshape(1, 3)]
        assert_same(got, ref[k], k)
        assert_same(got, tflm.step([xs[k]]), k)
    assert len(rows) == STEPS
