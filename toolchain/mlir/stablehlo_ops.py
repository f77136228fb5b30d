"""Every StableHLO op, from the specification (openxla.org/stablehlo/spec, "Ops"),
with whether it can mean something in a static-shape model on one microcontroller.

The list is the spec's op sections, then the ops the dialect still has outside the
spec: the deprecated ones ("Deprecated Operations": broadcast, create_token,
cross-replica-sum, dot, einsum, torch_index_select, unary_einsum) and the dynamic-shape
helpers (real_dynamic_slice, set_dimension_size). An op with a `reason` has no meaning
for minirt's models whatever the frontend does; every other op is expected to have a
converter, and the op tables (docs/ops.md) list it as missing work if it has none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecOp:
    name: str
    origin: str  # "spec", "deprecated" or "dynamic" (the dialect's dynamic-shape helpers)
    reason: str | None = None  # why it cannot apply to a static single-device model


_COLLECTIVE = ("a collective across devices: a minirt model runs on one core, with no "
               "replicas or partitions to exchange data with")
_HOST_IO = ("host/device streaming through tokens: firmware has no host queue; inputs "
            "and outputs are the model's arguments and results")
_DYNAMIC = "its shapes are only known at run time; minirt compiles static shapes"
_ASYNC = "asynchronous execution across computations: minirt runs one command list in order"

SPEC_OPS: dict[str, SpecOp] = {op.name: op for op in [
    SpecOp("abs", "spec"),
    SpecOp("add", "spec"),
    SpecOp("after_all", "spec", _HOST_IO),
    SpecOp("all_gather", "spec", _COLLECTIVE),
    SpecOp("all_reduce", "spec", _COLLECTIVE),
    SpecOp("all_to_all", "spec", _COLLECTIVE),
    SpecOp("and", "spec"),
    SpecOp("async_done", "spec", _ASYNC),
    SpecOp("async_start", "spec", _ASYNC),
    SpecOp("atan2", "spec"),
    SpecOp("batch_norm_grad", "spec"),
    SpecOp("batch_norm_inference", "spec"),
    SpecOp("batch_norm_training", "spec"),
    SpecOp("bitcast_convert", "spec"),
    SpecOp("broadcast_in_dim", "spec"),
    SpecOp("case", "spec"),
    SpecOp("cbrt", "spec"),
    SpecOp("ceil", "spec"),
    SpecOp("cholesky", "spec"),
    SpecOp("clamp", "spec"),
    SpecOp("collective_broadcast", "spec", _COLLECTIVE),
    SpecOp("collective_permute", "spec", _COLLECTIVE),
    SpecOp("collective_reduce", "spec", _COLLECTIVE),
    SpecOp("compare", "spec"),
    SpecOp("complex", "spec"),
    SpecOp("composite", "spec"),
    SpecOp("concatenate", "spec"),
    SpecOp("constant", "spec"),
    SpecOp("convert", "spec"),
    SpecOp("convolution", "spec"),
    SpecOp("cosine", "spec"),
    SpecOp("count_leading_zeros", "spec"),
    SpecOp("custom_call", "spec", "a call into the exporting framework's runtime by a "
           "target name: its meaning lives outside the model"),
    SpecOp("divide", "spec"),
    SpecOp("dot_general", "spec"),
    SpecOp("dynamic_broadcast_in_dim", "spec"),
    SpecOp("dynamic_conv", "spec"),
    SpecOp("dynamic_gather", "spec"),
    SpecOp("dynamic_iota", "spec"),
    SpecOp("dynamic_pad", "spec"),
    SpecOp("dynamic_reshape", "spec"),
    SpecOp("dynamic_slice", "spec"),
    SpecOp("dynamic_update_slice", "spec"),
    SpecOp("exponential", "spec"),
    SpecOp("exponential_minus_one", "spec"),
    SpecOp("fft", "spec"),
    SpecOp("floor", "spec"),
    SpecOp("gather", "spec"),
    SpecOp("get_dimension_size", "spec"),
    SpecOp("get_tuple_element", "spec"),
    SpecOp("if", "spec"),
    SpecOp("imag", "spec"),
    SpecOp("infeed", "spec", _HOST_IO),
    SpecOp("iota", "spec"),
    SpecOp("is_finite", "spec"),
    SpecOp("log", "spec"),
    SpecOp("log_plus_one", "spec"),
    SpecOp("logistic", "spec"),
    SpecOp("map", "spec"),
    SpecOp("maximum", "spec"),
    SpecOp("minimum", "spec"),
    SpecOp("multiply", "spec"),
    SpecOp("negate", "spec"),
    SpecOp("not", "spec"),
    SpecOp("optimization_barrier", "spec"),
    SpecOp("or", "spec"),
    SpecOp("outfeed", "spec", _HOST_IO),
    SpecOp("pad", "spec"),
    SpecOp("partition_id", "spec"),
    SpecOp("popcnt", "spec"),
    SpecOp("power", "spec"),
    SpecOp("real", "spec"),
    SpecOp("recv", "spec", _HOST_IO),
    SpecOp("reduce", "spec"),
    SpecOp("reduce_precision", "spec"),
    SpecOp("reduce_scatter", "spec", _COLLECTIVE),
    SpecOp("reduce_window", "spec"),
    SpecOp("remainder", "spec"),
    SpecOp("replica_id", "spec"),
    SpecOp("reshape", "spec"),
    SpecOp("reverse", "spec"),
    SpecOp("rng", "spec"),
    SpecOp("rng_bit_generator", "spec"),
    SpecOp("round_nearest_afz", "spec"),
    SpecOp("round_nearest_even", "spec"),
    SpecOp("rsqrt", "spec"),
    SpecOp("scatter", "spec"),
    SpecOp("select", "spec"),
    SpecOp("select_and_scatter", "spec"),
    SpecOp("send", "spec", _HOST_IO),
    SpecOp("shift_left", "spec"),
    SpecOp("shift_right_arithmetic", "spec"),
    SpecOp("shift_right_logical", "spec"),
    SpecOp("sign", "spec"),
    SpecOp("sine", "spec"),
    SpecOp("slice", "spec"),
    SpecOp("sort", "spec"),
    SpecOp("sqrt", "spec"),
    SpecOp("subtract", "spec"),
    SpecOp("tan", "spec"),
    SpecOp("tanh", "spec"),
    SpecOp("transpose", "spec"),
    SpecOp("triangular_solve", "spec"),
    SpecOp("tuple", "spec"),
    SpecOp("uniform_dequantize", "spec"),
    SpecOp("uniform_quantize", "spec"),
    SpecOp("while", "spec"),
    SpecOp("xor", "spec"),
    # Deprecated ("Not in HLO"), still in the dialect and in older exports.
    SpecOp("broadcast", "deprecated"),
    SpecOp("create_token", "deprecated", _HOST_IO),
    SpecOp("cross-replica-sum", "deprecated", _COLLECTIVE),
    SpecOp("dot", "deprecated"),
    SpecOp("einsum", "deprecated"),
    SpecOp("torch_index_select", "deprecated"),
    SpecOp("unary_einsum", "deprecated"),
    # Dynamic-shape helpers of the dialect.
    SpecOp("real_dynamic_slice", "dynamic"),
    SpecOp("set_dimension_size", "dynamic", _DYNAMIC),
]}


__all__ = ["SPEC_OPS", "SpecOp"]
