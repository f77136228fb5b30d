"""Which attributes of an op are inherent (MLIR "properties"), per op.

MLIR stores an op's own attributes (a compare's direction, a slice's bounds) as
properties, printed `<{...}>` in generic form, and any other attribute (`mhlo.sharding`,
`jax.result_info`) in the attribute dictionary. When it reads a registered op it moves
inherent attributes found in the dictionary into the properties, so `{dimension = 0}`
and `<{dimension = 0}>` give one op. The parser does the same with this table, written
from the op definitions of the StableHLO spec (openxla.org/stablehlo/spec), StableHLO's
deprecated and dynamic ops, CHLO, and the builtin, func, arith and cf ops.
"""

from __future__ import annotations

_RESULT_ACCURACY = ("result_accuracy",)
_COLLECTIVE = ("replica_groups", "channel_handle", "use_global_device_ids")
_CONV_WINDOW = ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                "window_reversal", "dimension_numbers", "feature_group_count",
                "batch_group_count", "precision_config")

_STABLEHLO: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "iota": ("iota_dimension",),
    "dynamic_iota": ("iota_dimension",),
    **{op: _RESULT_ACCURACY for op in (
        "cbrt", "cosine", "exponential", "exponential_minus_one", "log", "log_plus_one",
        "logistic", "rsqrt", "sine", "sqrt", "tan", "tanh")},
    "infeed": ("infeed_config", "layout"),
    "outfeed": ("outfeed_config",),
    "send": ("channel_handle", "is_host_transfer", "source_target_pairs"),
    "recv": ("channel_handle", "is_host_transfer", "source_target_pairs"),
    "all_gather": ("all_gather_dim", *_COLLECTIVE),
    "all_reduce": _COLLECTIVE,
    "reduce_scatter": ("scatter_dimension", *_COLLECTIVE),
    "all_to_all": ("split_dimension", "concat_dimension", "split_count", "replica_groups",
                   "channel_handle"),
    "collective_broadcast": ("replica_groups", "channel_handle", "has_dynamic_root"),
    "collective_reduce": (*_COLLECTIVE, "has_dynamic_root"),
    "collective_permute": ("source_target_pairs", "channel_handle"),
    "cross-replica-sum": ("replica_groups",),
    "async_start": ("called_computation", "execution_thread"),
    "reduce": ("dimensions",),
    "get_tuple_element": ("index",),
    "compare": ("comparison_direction", "compare_type"),
    "slice": ("start_indices", "limit_indices", "strides"),
    "dynamic_slice": ("slice_sizes",),
    "batch_norm_grad": ("epsilon", "feature_index"),
    "batch_norm_inference": ("epsilon", "feature_index"),
    "batch_norm_training": ("epsilon", "feature_index"),
    "broadcast": ("broadcast_sizes",),
    "broadcast_in_dim": ("broadcast_dimensions",),
    "dynamic_broadcast_in_dim": ("broadcast_dimensions", "known_expanding_dimensions",
                                 "known_nonexpanding_dimensions"),
    "cholesky": ("lower",),
    "concatenate": ("dimension",),
    "composite": ("name", "composite_attributes", "decomposition", "version"),
    "convolution": _CONV_WINDOW,
    "dynamic_conv": _CONV_WINDOW,
    "custom_call": ("call_target_name", "has_side_effect", "backend_config", "api_version",
                    "called_computations", "operand_layouts", "result_layouts",
                    "output_operand_aliases", "result_tilings"),
    "dot": ("precision_config",),
    "dot_general": ("dot_dimension_numbers", "precision_config", "algorithm"),
    "einsum": ("einsum_config",),
    "unary_einsum": ("einsum_config",),
    "fft": ("fft_type", "fft_length"),
    "gather": ("dimension_numbers", "slice_sizes", "indices_are_sorted"),
    "dynamic_gather": ("dimension_numbers", "indices_are_sorted"),
    "get_dimension_size": ("dimension",),
    "set_dimension_size": ("dimension",),
    "map": ("dimensions",),
    "scatter": ("scatter_dimension_numbers", "indices_are_sorted", "unique_indices"),
    "select_and_scatter": ("window_dimensions", "window_strides", "padding"),
    "sort": ("dimension", "is_stable"),
    "reverse": ("dimensions",),
    "pad": ("edge_padding_low", "edge_padding_high", "interior_padding"),
    "transpose": ("permutation",),
    "triangular_solve": ("left_side", "lower", "unit_diagonal", "transpose_a"),
    "reduce_window": ("window_dimensions", "window_strides", "base_dilations",
                      "window_dilations", "padding"),
    "torch_index_select": ("dim", "batch_dims"),
    "rng": ("rng_distribution",),
    "rng_bit_generator": ("rng_algorithm",),
    "reduce_precision": ("exponent_bits", "mantissa_bits"),
}

_CHLO_BROADCAST = """add and atan2 complex divide maximum minimum multiply next_after or
polygamma power remainder shift_left shift_right_arithmetic shift_right_logical subtract
xor zeta""".split()  # noqa: SIM905

_CHLO: dict[str, tuple[str, ...]] = {
    **{f"broadcast_{op}": ("broadcast_dimensions",) for op in _CHLO_BROADCAST},
    "broadcast_compare": ("broadcast_dimensions", "comparison_direction", "compare_type"),
    "constant": ("value",),
    "constant_like": ("value",),
    "ragged_dot": ("ragged_dot_dimension_numbers", "precision_config"),
    "top_k": ("k", "is_stable"),
    "scan": ("dimension", "scan_dim_size", "is_reverse", "is_associative",
             "resultSegmentSizes"),
}

_CORE: dict[str, tuple[str, ...]] = {
    "builtin.module": ("sym_name", "sym_visibility"),
    "func.func": ("sym_name", "function_type", "sym_visibility", "arg_attrs", "res_attrs",
                  "no_inline"),
    "func.call": ("callee", "arg_attrs", "res_attrs", "no_inline"),
    "arith.constant": ("value",),
    "cf.assert": ("msg",),
    "cf.switch": ("case_values", "case_operand_segments"),
}

INHERENT: dict[str, frozenset[str]] = {
    **{f"stablehlo.{op}": frozenset(names) for op, names in _STABLEHLO.items()},
    **{f"chlo.{op}": frozenset(names) for op, names in _CHLO.items()},
    **{op: frozenset(names) for op, names in _CORE.items()},
}

# Every op with several variadic operand groups records their sizes as a property.
_ALWAYS = frozenset({"operandSegmentSizes"})


def inherent_attributes(op_name: str) -> frozenset[str]:
    """The names of `op_name`'s inherent attributes (empty for unknown ops, whose
    attributes stay where the text put them, apart from segment sizes)."""
    return INHERENT.get(op_name, frozenset()) | _ALWAYS


__all__ = ["INHERENT", "inherent_attributes"]
