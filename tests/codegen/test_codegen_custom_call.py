"""codegen/custom_call.py: the descriptor struct the generated code fills is laid out
exactly as the C compiler lays out mrt_custom_tensor_t on every target (checked by
clang's own static assertions), and the dispatch's IR calls the kernel with the ABI's
six arguments and reports a non-zero status."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from llvmlite import binding as llvm

from toolchain.codegen import TargetInfo
from toolchain.codegen.custom_call import TENSOR, emit_custom_call
from toolchain.graph.custom_ops import CustomOp
from toolchain.kernel.custom_call import CustomCall
from toolchain.link.build import c_flags, runtime_c_dir
from toolchain.target import load_target
from toolchain.types import QuantParams, TensorType, dtype

FIELDS = ("data", "dims", "rank", "type", "count", "scale", "zero_point")


@pytest.mark.parametrize("name", ["cortex-m0plus", "cortex-m4", "riscv32", "x86-64",
                                  "aarch64"])
def test_struct_layout_is_the_c_compiler_s(name: str, tmp_path: Path) -> None:
    if shutil.which("clang") is None:
        pytest.skip("clang not installed")
    info = TargetInfo.load(name)
    td = llvm.create_target_data(info.data_layout)
    size = TENSOR.get_abi_size(td)
    offsets = [TENSOR.get_element_offset(td, i) for i in range(len(FIELDS))]
    checks = "\n".join(f"_Static_assert(offsetof(mrt_custom_tensor_t, {f}) == {o}, \"{f}\");"
                       for f, o in zip(FIELDS, offsets))
    src = tmp_path / "layout.c"
    src.write_text("#include <stddef.h>\n#include \"mrt_custom_op.h\"\n"
                   f"_Static_assert(sizeof(mrt_custom_tensor_t) == {size}, \"size\");\n"
                   f"{checks}\n")
    resource = subprocess.run(["clang", "-print-resource-dir"], capture_output=True,
                              text=True, check=True).stdout.strip()
    proc = subprocess.run(["clang", *c_flags(load_target(name)), "-isystem",
                           f"{resource}/include", "-I", str(runtime_c_dir() / "include"),
                           "-fsyntax-only", str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_dispatch_ir_calls_the_kernel_and_reports_failure() -> None:
    op = CustomOp("ClipScale", Path("/k.c"), "clip_scale", Path("/r.py"), "clip_scale")
    q = QuantParams(dtype("i8"), dtype("f32"), (0.25,), (-3,))
    x = TensorType((2, 3), dtype("i8"), q)
    call = CustomCall("d0_custom_clip_scale", op, (x,), (x,), b"\x07\x08", 5)
    module = TargetInfo.load("cortex-m4").new_module()
    emit_custom_call(module, call)
    text = str(module)
    assert 'declare i32 @"clip_scale"(ptr %".1", i32 %".2", ptr %".3", i32 %".4", ptr' \
        in text
    assert '%"in", i32 1, ' in text and '%"out", i32 1, [2 x i8]* @"d0_custom_clip_scale.' \
        'options", i32 2)' in text  # counts, options and their size
    assert 'c"\\07\\08"' in text  # the options, as stored
    assert "[i32 2, i32 3]" in text  # the dims
    assert "store float 0x3fd0000000000000" in text  # scale 0.25
    assert "store i32 -3" in text  # zero point
    assert 'call void @"mrt_custom_op_failed"(i32 5, i32 %"status")' in text  # the ordinal
    llvm.parse_assembly(text).verify()
