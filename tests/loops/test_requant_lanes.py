"""Which layers keep TFLite's requantization unfolded for Helium's vector steps
(loops/requant_lanes.py) and which pads are written out (schedule/pad_helium.py), on
kws_ref_model's kernels: the decisions of the scheduler, without QEMU (the exactness
of the code they lead to is tests/codegen/test_requant_helium.py's)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR

from toolchain.kernel.form import Apply, Expr, Load, postorder, rewrite, with_children
from toolchain.loader import load_graph
from toolchain.loops.access import lane_dim
from toolchain.loops.requant_lanes import MAX_EXPONENT, keeps_vector_requant, match_requant
from toolchain.pipeline import lower_for_backends, prepare_graph, schedule_for_target
from toolchain.schedule.pad_helium import window_pads
from toolchain.target import load_target

KWS = MODELS_DIR / "mlperf_tiny" / "kws_ref_model.tflite"


@pytest.fixture(scope="module")
def kws_graph():
    if not KWS.is_file():
        pytest.skip(f"{KWS} is absent ({MISSING_REASON})")
    return prepare_graph(load_graph(KWS))


def _requant_ops(k) -> set[str]:
    return {e.op for e in postorder(k.epilogue) if isinstance(e, Apply)} \
        if k.epilogue is not None else set()


def _conv_kernels(program):
    return [s.kernel for s in program.steps
            if "convolution" in getattr(s.kernel, "name", "") and s.kernel.is_reduction]


def test_helium_keeps_the_two_steps_where_it_runs_them_in_vectors(kws_graph) -> None:
    m55 = _conv_kernels(schedule_for_target(kws_graph, load_target("cortex-m55")))
    m4 = _conv_kernels(schedule_for_target(kws_graph, load_target("cortex-m4")))
    assert len(m55) == len(m4) == 9
    # The depthwise layers (25x5 over 64 channels) go to the DSP row-pair kernel, whose
    # 4-row tiles beat the lanes (loops/rules.py `_lanes_beat_row_pairs`): folded.
    depthwise = [k for k in m55 if lane_dim(k) is not None]
    assert len(depthwise) == 4
    for k in depthwise:
        assert "rounding_divide_by_pot" not in _requant_ops(k), k.name
    for k in m55:  # the other convolutions: 64 output channels in fours
        if k in depthwise:
            continue
        assert match_requant(k) is not None, k.name
        (s,) = [e.args[1] for e in postorder(k.epilogue)
                if isinstance(e, Apply) and e.op == "rounding_divide_by_pot"]
        assert isinstance(s, Load) and s.bounds == (0, MAX_EXPONENT), k.name
    for k in m4:  # folded into the 64-bit form (kernel/requant.py)
        assert "rounding_divide_by_pot" not in _requant_ops(k), k.name


def test_an_exponent_out_of_range_folds_as_usual(kws_graph) -> None:
    target = load_target("cortex-m55")
    m55 = schedule_for_target(kws_graph, target)
    k = _conv_kernels(m55)[2]  # the first pointwise layer, unfolded
    exponent = next(e.args[1] for e in postorder(k.epilogue)
                    if isinstance(e, Apply) and e.op == "rounding_divide_by_pot")
    unbounded = dataclasses.replace(k, epilogue=_strip_bounds(k.epilogue))
    good = np.full(64, 5)
    bad = good.copy()
    bad[7] = MAX_EXPONENT + 1  # VRSHL would not round as rounding_divide_by_pot does

    def constants(values):
        return lambda i: values if i == exponent.operand else None

    assert keeps_vector_requant(unbounded, target, constants(good)) is not None
    assert keeps_vector_requant(unbounded, target, constants(bad)) is None
    assert keeps_vector_requant(unbounded, load_target("cortex-m4"), constants(good)) is None


def _strip_bounds(e: Expr) -> Expr:
    def fn(x: Expr, kids: tuple[Expr, ...]) -> Expr:
        x = with_children(x, kids)
        return dataclasses.replace(x, bounds=None) if isinstance(x, Load) else x
    return rewrite(e, fn)


def test_the_first_layers_pad_is_written_out_on_helium_only(kws_graph) -> None:
    graph = lower_for_backends(kws_graph)
    pads = window_pads(graph, load_target("cortex-m55"))
    conv = next(n for n in graph.nodes if n.op == "convolution")
    assert conv.inputs[0].producer.op == "pad" and pads == {id(conv.inputs[0])}
    assert window_pads(graph, load_target("cortex-m4")) == set()
