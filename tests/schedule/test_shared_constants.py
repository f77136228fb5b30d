"""Equal constants share one pool entry (schedule/program.py): an unrolled recurrence
repeats its per-dispatch parameters at every time step."""

from __future__ import annotations

import numpy as np
from recurrent_models import LstmCase, lstm_model

from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import schedule


def test_an_unrolled_lstm_stores_each_constant_once_and_computes_the_same(execute) -> None:
    model, x = lstm_model(LstmCase("int8", 2, 6, 5, 4))
    graph = import_model(read_model(model))
    inputs = [x, *(s.initial for s in graph.states)]  # the LSTM's state: its boot value
    want = run_graph(graph, inputs)[0]
    program = schedule(fold_constants(graph))  # no graph-level merge: the pool's alone
    keys = [(t, np.asarray(c).dtype.str, np.asarray(c).shape, np.asarray(c).tobytes())
            for c, t in zip(program.constants, program.constant_types, strict=True)]
    assert len(keys) == len(set(keys))
    bound = {b.index for step in program.steps for b in step.buffers if b.kind == "constant"}
    assert len(bound) < sum(b.kind == "constant" for step in program.steps
                            for b in step.buffers)  # some entries are read by many steps
    assert np.array_equal(execute(program, inputs)[0], want)
