"""kernel/custom_call.py: a graph custom_call becomes one CustomCall dispatch over its
operands and declared results; its host evaluation is the user's reference; an element
type the C ABI has no code for is refused naming the operator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.graph.custom_ops import CustomOp, CustomOpError
from toolchain.graph.ir import Graph
from toolchain.kernel.custom_call import CustomCall, lower_custom_call
from toolchain.kernel.kinds import run_other_kind
from toolchain.types import TensorType, dtype

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_op"
OP = CustomOp("SoftsignGain", EXAMPLE / "kernel.c", "softsign_gain",
              EXAMPLE / "reference.py", "softsign_gain")


def _node(elem: str):
    g = Graph("g")
    t = TensorType((1, 4), dtype(elem))
    x = g.add_input(t)
    return g.add("custom_call", [x], [t], {"op": OP, "options": b"\x00\x00\x00\x40",
                                           "ordinal": 3, "result_types": (t,)})


def test_lowered_dispatch_and_its_host_run() -> None:
    call = lower_custom_call(_node("f32"))
    assert isinstance(call, CustomCall)
    assert (call.name, call.ordinal, call.options) == ("custom_softsign_gain", 3,
                                                       b"\x00\x00\x00\x40")
    assert call.binding_types == (TensorType((1, 4), dtype("f32")),) * 2
    x = np.array([[-3, -1, 0, 1]], np.float32)
    (y,) = run_other_kind(call, [x])
    np.testing.assert_array_equal(y, 2 * x / (1 + np.abs(x)))


def test_a_type_without_an_abi_code_is_refused() -> None:
    with pytest.raises(CustomOpError, match="custom op SoftsignGain tensor 0: element type "
                                            "bf16 has no code"):
        lower_custom_call(_node("bf16"))
