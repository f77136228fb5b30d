"""The packed module format (.mrt): what the runtime loads and runs.

A module holds a versioned header, the I/O signature, the command list (dispatch
ordinal + bindings) and an aligned constant pool. docs/module-format.md is the spec;
runtime_c/core/module.c is the C loader that validates it.

    from toolchain.module import Binding, Command, TensorSig, pack_module, read_module

    data = pack_module("cortex-m4", inputs, outputs, constants, commands, arena_size)
    module = read_module(data, target="cortex-m4")
    print(dump_module(data))
"""

from toolchain.module.contract import (
    BindingNeed,
    CommandNeed,
    ImageContract,
    image_contract,
    layout_crc,
    program_needs,
)
from toolchain.module.dump import dump_module
from toolchain.module.format import BindingKind, DType, Status, target_id, target_ids
from toolchain.module.pack import (
    Binding,
    Command,
    ConstantEntry,
    PackError,
    PoolLayout,
    QuantParams,
    TensorSig,
    constant_binding,
    layout_constant_pool,
    pack_module,
)
from toolchain.module.reader import Module, ModuleFormatError, PlacedConstant, read_module

__all__ = [
    "target_ids",
    "Binding",
    "BindingNeed",
    "CommandNeed",
    "ImageContract",
    "image_contract",
    "layout_crc",
    "program_needs",
    "BindingKind",
    "Command",
    "ConstantEntry",
    "DType",
    "Module",
    "ModuleFormatError",
    "PackError",
    "PlacedConstant",
    "PoolLayout",
    "QuantParams",
    "Status",
    "TensorSig",
    "constant_binding",
    "dump_module",
    "layout_constant_pool",
    "pack_module",
    "read_module",
    "target_id",
]
