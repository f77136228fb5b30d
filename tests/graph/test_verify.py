"""The graph verifier: each op family's type rule, and whole-graph checks."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.diagnostics import CompileError
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_graph, verify_node
from toolchain.types import TensorType, dtype


def t(*shape: int | None, dt: str = "f32") -> TensorType:
    return TensorType(tuple(shape), dtype(dt))


def check(op: str, ins: list[TensorType], outs: list[TensorType], **attrs) -> str | None:
    g = Graph("g")
    node = g.add(op, [g.add_input(x) for x in ins], outs, attrs)
    err = verify_node(node)
    return None if err is None else err.message


CONV = dict(strides=(1, 1), padding=((0, 0), (0, 0)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
            input_batch=0, input_feature=3, input_spatial=(1, 2), kernel_input=2,
            kernel_output=3, kernel_spatial=(0, 1), output_batch=0, output_feature=3,
            output_spatial=(1, 2), feature_group_count=1, batch_group_count=1, dtype="f32")
RW = dict(kind="maximum", window=(2, 2), strides=(2, 2), base_dilations=(1, 1),
          window_dilations=(1, 1), padding=((0, 0), (0, 0)))
GATHER = dict(offset_dims=(1,), collapsed_slice_dims=(0,), operand_batching_dims=(),
              start_indices_batching_dims=(), start_index_map=(0,), index_vector_dim=1,
              slice_sizes=(1, 3))
DOT = dict(lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,), dtype="f32")

# (id, op, inputs, outputs, attrs, None or an error substring)
RULES = [
    # elementwise
    ("add-ok", "add", [t(4), t(4)], [t(4)], {}, None),
    ("add-shape", "add", [t(4), t(8)], [t(4)], {}, "operand 1 has shape 8 but operand 0 has 4"),
    ("add-dtype", "add", [t(4), t(4, dt="i32")], [t(4)], {}, "element type i32"),
    ("exp-int", "exponential", [t(4, dt="i32")], [t(4, dt="i32")], {}, "not supported by"),
    ("and-float", "and", [t(4), t(4)], [t(4)], {}, "not supported by"),
    ("not-bool", "not", [t(4, dt="i1")], [t(4, dt="i1")], {}, None),
    ("is-finite", "is_finite", [t(4)], [t(4, dt="i1")], {}, None),
    ("is-finite-result", "is_finite", [t(4)], [t(4)], {}, "declared 'tensor<4xf32>'"),
    ("compare-ok", "compare", [t(3), t(3)], [t(3, dt="i1")], {"direction": "GT"}, None),
    ("compare-dir", "compare", [t(3), t(3)], [t(3, dt="i1")], {"direction": "XX"},
     "unknown comparison direction"),
    ("select-pred", "select", [t(3), t(3), t(3)], [t(3)], {}, "predicate must be i1"),
    ("select-scalar-pred", "select", [t(dt="i1"), t(3), t(3)], [t(3)], {}, None),
    ("select-branches", "select", [t(3, dt="i1"), t(3), t(4)], [t(3)], {}, "branches differ"),
    ("clamp-scalar-bounds", "clamp", [t(), t(3), t()], [t(3)], {}, None),
    ("clamp-bad-bound", "clamp", [t(2), t(3), t()], [t(3)], {}, "clamp's min"),
    ("convert", "convert", [t(3)], [t(3, dt="i8")], {"dtype": "i8"}, None),
    # shape ops
    ("broadcast-ok", "broadcast_in_dim", [t(1, 3)], [t(2, 4, 3)], {"dims": (0, 2),
                                                                   "shape": (2, 4, 3)}, None),
    ("broadcast-size", "broadcast_in_dim", [t(4)], [t(4, 3)], {"dims": (1,), "shape": (4, 3)},
     "cannot broadcast"),
    ("broadcast-rank", "broadcast_in_dim", [t(4)], [t(4, 3)], {"dims": (0, 1), "shape": (4, 3)},
     "do not match operand rank"),
    ("broadcast-range", "broadcast_in_dim", [t(4)], [t(4)], {"dims": (1,), "shape": (4,)},
     "out of range"),
    ("reshape-ok", "reshape", [t(2, 6)], [t(3, 4)], {"shape": (3, 4)}, None),
    ("reshape-count", "reshape", [t(4)], [t(5)], {"shape": (5,)}, "changes the element count"),
    ("transpose-ok", "transpose", [t(2, 3)], [t(3, 2)], {"permutation": (1, 0)}, None),
    ("transpose-len", "transpose", [t(2, 3)], [t(3, 2)], {"permutation": (1,)},
     "permutation length"),
    ("reverse-range", "reverse", [t(2)], [t(2)], {"dims": (1,)}, "out of range"),
    ("concat-ok", "concatenate", [t(2, 3), t(4, 3)], [t(6, 3)], {"dimension": 0}, None),
    ("concat-shape", "concatenate", [t(2, 3), t(4, 2)], [t(6, 3)], {"dimension": 0},
     "does not fit concatenation"),
    ("concat-dim", "concatenate", [t(2)], [t(2)], {"dimension": 1}, "out of range"),
    ("slice-ok", "slice", [t(10)], [t(3)], {"start": (1,), "limit": (8,), "strides": (3,)},
     None),
    ("slice-oob", "slice", [t(4)], [t(4)], {"start": (1,), "limit": (5,), "strides": (1,)},
     "out of bounds"),
    ("pad-ok", "pad", [t(3), t()], [t(6)], {"low": (2,), "high": (-1,), "interior": (1,)}, None),
    ("pad-interior", "pad", [t(3), t()], [t(3)], {"low": (0,), "high": (0,), "interior": (-1,)},
     "interior padding must be >= 0"),
    ("pad-value", "pad", [t(3), t(1)], [t(3)], {"low": (0,), "high": (0,), "interior": (0,)},
     "must be a scalar"),
    ("iota-dim", "iota", [], [t(2, 3, dt="i32")], {"dimension": 2, "shape": (2, 3),
                                                    "dtype": "i32"}, "iota dimension"),
    # contractions
    ("dot-ok", "dot_general", [t(2, 3), t(3, 5)], [t(2, 5)], DOT, None),
    ("dot-sizes", "dot_general", [t(2, 3), t(4, 5)], [t(2, 5)], DOT,
     "lhs dim 1 (size 3) does not match rhs dim 0 (size 4)"),
    ("dot-batch", "dot_general", [t(7, 2, 3), t(7, 3, 5)], [t(7, 2, 5)],
     {**DOT, "lhs_batch": (0,), "rhs_batch": (0,), "lhs_contract": (2,), "rhs_contract": (1,)},
     None),
    ("dot-counts", "dot_general", [t(2, 3), t(3, 5)], [t(2, 5)], {**DOT, "rhs_contract": ()},
     "as many lhs as rhs"),
    ("dot-mixed", "dot_general", [t(2, 3), t(3, 5, dt="i8")], [t(2, 5)], DOT, "mix float"),
    ("conv-ok", "convolution", [t(1, 8, 8, 3), t(3, 3, 3, 4)], [t(1, 6, 6, 4)], CONV, None),
    ("conv-features", "convolution", [t(1, 8, 8, 3), t(3, 3, 2, 4)], [t(1, 6, 6, 4)], CONV,
     "input features (3) != kernel input features (2)"),
    ("conv-groups", "convolution", [t(1, 8, 8, 4), t(3, 3, 1, 4)], [t(1, 6, 6, 4)],
     {**CONV, "feature_group_count": 4}, None),
    ("conv-both-groups", "convolution", [t(2, 8, 8, 4), t(3, 3, 1, 4)], [t(1, 6, 6, 4)],
     {**CONV, "feature_group_count": 4, "batch_group_count": 2}, "bad group counts"),
    ("conv-stride0", "convolution", [t(1, 8, 8, 3), t(3, 3, 3, 4)], [t(1, 6, 6, 4)],
     {**CONV, "strides": (0, 1)}, "strides [0, 1] must be positive"),
    ("conv-rank", "convolution", [t(1, 8, 3), t(3, 3, 3, 4)], [t(1, 6, 6, 4)], CONV,
     "inconsistent ranks"),
    # reductions
    ("reduce-ok", "reduce", [t(2, 3), t()], [t(2)], {"kind": "add", "dims": (1,)}, None),
    ("reduce-init", "reduce", [t(2, 3), t(1)], [t(2)], {"kind": "add", "dims": (1,)},
     "init value must be a scalar"),
    ("reduce-kind", "reduce", [t(2, 3), t()], [t(2)], {"kind": "xor", "dims": (1,)},
     "unsupported reduction"),
    ("reduce-dims", "reduce", [t(2, 3), t()], [t(2)], {"kind": "add", "dims": (1, 1)},
     "repeat a dimension"),
    ("rw-ok", "reduce_window", [t(4, 4), t()], [t(2, 2)], RW, None),
    ("rw-rank", "reduce_window", [t(4, 4, 1), t()], [t(2, 2, 1)], RW,
     "window has 2 entries for 3 dimensions"),
    ("rw-dilation0", "reduce_window", [t(4, 4), t()], [t(2, 2)],
     {**RW, "base_dilations": (0, 1)}, "base_dilations [0, 1] must be positive"),
    ("conv-kernel-dims-repeat", "convolution", [t(1, 8, 8, 3), t(3, 3, 3, 4)],
     [t(1, 6, 6, 4)], {**CONV, "kernel_spatial": (0, 0)}, "kernel dimensions [2, 3, 0, 0] "
     "repeat a dimension"),
    ("conv-negative-output-dim", "convolution", [t(1, 8, 8, 3), t(3, 3, 3, 4)],
     [t(1, 6, 6, 4)], {**CONV, "output_spatial": (1, -2)}, "out of range for rank 4"),
    ("conv-padding-short", "convolution", [t(1, 8, 8, 3), t(3, 3, 3, 4)], [t(1, 6, 6, 4)],
     {**CONV, "padding": ((0, 0),)}, "padding must be 2 [low, high] pairs"),
    ("rw-init", "reduce_window", [t(4, 4), t(dt="i32")], [t(2, 2)], RW, "init must be"),
    # gather, batch norm
    ("gather-ok", "gather", [t(5, 3), t(2, 1, dt="i32")], [t(2, 3)], GATHER, None),
    ("gather-float-idx", "gather", [t(5, 3), t(2, 1)], [t(2, 3)], GATHER, "must be integers"),
    ("gather-sizes", "gather", [t(5, 3), t(2, 1, dt="i32")], [t(2, 3)],
     {**GATHER, "slice_sizes": (1, 4)}, "exceed the operand"),
    ("gather-collapsed", "gather", [t(5, 3), t(2, 1, dt="i32")], [t(2, 3)],
     {**GATHER, "slice_sizes": (2, 3)}, "collapsed dims must have slice size 1"),
    ("gather-negative-batching", "gather", [t(5, 3), t(2, 1, dt="i32")], [t(2, 3)],
     {**GATHER, "operand_batching_dims": (-1,), "start_indices_batching_dims": (0,)},
     "out of range for rank 2"),
    ("gather-batching-unpaired", "gather", [t(2, 5, 3), t(2, 1, dt="i32")], [t(2, 3)],
     {**GATHER, "collapsed_slice_dims": (1,), "start_index_map": (1,),
      "operand_batching_dims": (0,), "slice_sizes": (1, 1, 3)},
     "gather batching dims do not pair up"),
    ("gather-index-vector-dim", "gather", [t(5, 3), t(2, 1, dt="i32")], [t(2, 3)],
     {**GATHER, "index_vector_dim": 3}, "index_vector_dim 3 out of range"),
    ("gather-unsorted-offsets", "gather", [t(5, 3, 4), t(2, 1, dt="i32")], [t(2, 4, 3)],
     {**GATHER, "offset_dims": (2, 1), "slice_sizes": (1, 3, 4)}, "must be sorted"),
    ("bn-ok", "batch_norm_inference", [t(1, 4, 2)] + [t(2)] * 4, [t(1, 4, 2)],
     {"epsilon": 1e-3, "feature_index": 2}, None),
    ("bn-features", "batch_norm_inference", [t(1, 4, 2)] + [t(4)] * 4, [t(1, 4, 2)],
     {"epsilon": 1e-3, "feature_index": 2}, "operand 1 must be a 1-D f32 tensor of 2"),
    # generic checks
    ("arity", "add", [t(4)], [t(4)], {}, "'add' takes 2 operands, got 1"),
    ("variadic-empty", "concatenate", [], [t(4)], {"dimension": 0}, "needs at least one"),
    ("missing-attr", "reshape", [t(4)], [t(4)], {}, "lacks attribute 'shape'"),
    ("unknown-op", "frobnicate", [t(4)], [t(4)], {}, "unknown graph op 'frobnicate'"),
    ("dynamic", "abs", [t(None, 4)], [t(None, 4)], {}, "dynamic shape"),
    ("result-count", "abs", [t(4)], [t(4), t(4)], {}, "has 2 results, expected 1"),
    ("result-dtype", "abs", [t(4)], [t(4, dt="f16")], {}, "result 0 is declared"),
]


@pytest.mark.parametrize("op, ins, outs, attrs, error", [r[1:] for r in RULES],
                         ids=[r[0] for r in RULES])
def test_rule(op: str, ins, outs, attrs, error: str | None) -> None:
    got = check(op, ins, outs, **attrs)
    if error is None:
        assert got is None
    else:
        assert got is not None and error in got, got


def test_constant_takes_its_declared_type() -> None:
    assert check("constant", [], [t(2)], value=np.zeros(2, np.float32)) is None


def test_verify_graph_lists_every_bad_node() -> None:
    g = Graph("g")
    a = g.add_input(t(4))
    g.add("add", [a, g.add_input(t(8))], [t(4)])
    bad2 = g.add("reshape", [a], [t(5)], {"shape": (5,)})
    g.outputs = [bad2.output]
    with pytest.raises(CompileError) as info:
        verify_graph(g)
    messages = [info.value.message] + [n.message for n in info.value.notes]
    assert len(messages) == 2
    assert "operand 1 has shape 8" in messages[0] and "element count" in messages[1]


def test_verify_graph_use_before_definition_and_undefined_output() -> None:
    g = Graph("g")
    a = g.add_input(t(4))
    orphan = Tensor(t(4))
    g.add("abs", [orphan], [t(4)])
    g.outputs = [a, Tensor(t(4))]
    with pytest.raises(CompileError) as info:
        verify_graph(g)
    messages = [info.value.message] + [n.message for n in info.value.notes]
    assert any("before it is defined" in m for m in messages)
    assert any("graph output is never defined" in m for m in messages)


def test_verify_graph_accepts_a_good_graph() -> None:
    g = Graph("g")
    a = g.add_input(t(2, 3))
    n = g.add("transpose", [a], [t(3, 2)], {"permutation": (1, 0)})
    m = g.add("abs", [n.output], [t(3, 2)])
    g.outputs = [m.output, a]
    verify_graph(g)


def test_tensors_beyond_the_module_format_are_refused() -> None:
    """A buffer is bound by a 30-bit offset: a 40 GB tensor used to reach the packer
    (PackError) or numpy (MemoryError) instead of a located error."""
    assert check("abs", [t(2**15, 2**13)], [t(2**15, 2**13)]) is None  # exactly 1 GiB
    message = check("abs", [t(2**15, 2**13 + 1)], [t(2**15, 2**13 + 1)])
    assert message is not None and "takes 1073872896 bytes" in message
    assert "limited to 1073741824 bytes" in message


def test_ranks_beyond_numpy_are_refused() -> None:
    assert check("abs", [t(*[1] * 64)], [t(*[1] * 64)]) is None
    message = check("abs", [t(*[1] * 65)], [t(*[1] * 65)])
    assert message is not None and "65 dimensions" in message and "at most 64" in message


def test_verify_graph_checks_arguments_too() -> None:
    g = Graph("g")
    a = g.add_input(t(100_000, 100_000))
    g.outputs = [a]
    with pytest.raises(CompileError, match="argument 0: 'tensor<100000x100000xf32>' takes "
                                           "40000000000 bytes"):
        verify_graph(g)
