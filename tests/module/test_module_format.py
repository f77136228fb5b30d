"""Python side of the module format: packer, reader, dump, and agreement with minirt.h."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from toolchain.module import (
    Binding,
    BindingKind,
    Command,
    ConstantEntry,
    DType,
    ModuleFormatError,
    PackError,
    QuantParams,
    Status,
    TensorSig,
    constant_binding,
    dump_module,
    layout_constant_pool,
    pack_module,
    read_module,
)
from toolchain.module import format as fmt

MINIRT_H = Path(__file__).resolve().parents[2] / "runtime_c" / "include" / "minirt.h"


def _program() -> dict:
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    q = np.array([-3, 0, 5, 127, -128], dtype=np.int8)
    consts = [
        ConstantEntry.from_array(w),
        ConstantEntry.from_array(q, dtype="f32", params=QuantParams((0.5,), (3,))),
        ConstantEntry.from_array(
            np.ones((2, 3), np.int8), "f32", QuantParams((0.1, 0.2), (0, 1), axis=0)
        ),
        ConstantEntry(b"\x01\x02", "u8", params=b"opaque"),
    ]
    ins = [TensorSig("x", "f32", (3, 4)), TensorSig("flag", DType.i1, ())]
    outs = [TensorSig("y", "f32", (3, 4)), TensorSig("long_output_name_é", "i64", (1, 0, 2))]
    cmds = [
        Command(0, [Binding.input(0, 48), constant_binding(consts, 0), Binding.arena(16, 48)]),
        Command(3, [Binding.arena(16, 48), constant_binding(consts, 1), Binding.output(0, 48)]),
        Command(1, []),
        Command(2, [Binding.input(1, 1), Binding.output(1, 0), constant_binding(consts, 3)]),
    ]
    return dict(inputs=ins, outputs=outs, constants=consts, commands=cmds, arena_size=64)


def test_round_trip() -> None:
    prog = _program()
    data = pack_module("cortex-m33", **prog)
    m = read_module(data, target="cortex-m33")
    assert m.target == "cortex-m33" and m.header.target_id == 9
    assert m.inputs == tuple(prog["inputs"]) and m.outputs == tuple(prog["outputs"])
    assert m.commands == tuple(prog["commands"])
    assert m.dispatch_count == 4 and m.header.arena_size == 64 and m.crc_ok
    assert [c.to_entry() for c in m.constants] == prog["constants"]
    assert m.constants[1].params == QuantParams((0.5,), (3,))
    assert m.constants[1].storage_dtype == DType.i8 and m.constants[1].dtype == DType.f32
    assert m.constants[3].params == b"opaque"
    # Repacking what the reader returns gives the same bytes.
    again = pack_module(
        m.header.target_id,
        m.inputs,
        m.outputs,
        [c.to_entry() for c in m.constants],
        m.commands,
        m.header.arena_size,
    )
    assert again == data


def test_layout_is_aligned_and_little_endian() -> None:
    prog = _program()
    data = pack_module("riscv32", **prog)
    h = read_module(data).header
    assert data[:4] == b"MiRT" and h.pool_offset % 16 == 0 and len(data) == h.total_size
    assert struct.unpack_from("<I", data, 8)[0] == zlib.crc32(data[12:])
    layout = layout_constant_pool(prog["constants"])
    assert all(off % 16 == 0 for off in layout.data_offsets)
    assert all(off % 16 == 0 for off in layout.params_offsets)
    m = read_module(data)
    for c, off in zip(m.constants, layout.data_offsets, strict=True):
        assert c.offset == off
        assert data[h.pool_offset + off : h.pool_offset + off + c.size] == c.data
    w = np.frombuffer(m.constants[0].data, "<f4")
    np.testing.assert_array_equal(w, np.arange(12, dtype=np.float32))


def test_constant_binding_matches_layout() -> None:
    consts = [ConstantEntry(b"abc", "u8"), ConstantEntry(b"\0" * 8, "f32")]
    assert constant_binding(consts, 0) == Binding(BindingKind.CONSTANT, 0, 3)
    assert constant_binding(consts, 1) == Binding(BindingKind.CONSTANT, 16, 8)


def test_seed_module_is_compact() -> None:
    """The 4x4 multiply-add as one fused command: the flash budget counts every byte
    (and the image holds all but the first 12 of them once more). 28 header + 4 records
    of 12 (head, two dims; the default names input_<i> / output_0 are not stored) + the
    command (head, four one-word input / output bindings), no padding before an empty
    pool."""
    ins = [TensorSig(f"input_{i}", "f32", (4, 4)) for i in range(3)]
    outs = [TensorSig("output_0", "f32", (4, 4))]
    cmd = Command(0, [*(Binding.input(i, 64) for i in range(3)), Binding.output(0, 64)])
    data = pack_module("cortex-m4", ins, outs, [], [cmd], 0)
    assert len(data) == 28 + 4 * 12 + 4 + 4 * 4 == 96
    m = read_module(data)
    assert [t.name for t in m.inputs + m.outputs] == ["input_0", "input_1", "input_2",
                                                      "output_0"]
    assert m.commands == (cmd,) and m.header.pool_offset == len(data)


def test_names_other_than_the_default_are_stored() -> None:
    """A tensor is stored without its name only when the name is the default one for
    its place: input_1 as the first input is stored, and reads back as itself."""
    ins = [TensorSig("input_1", "f32", (2,)), TensorSig("input_1", "f32", (2,))]
    data = pack_module("x86-64", ins, [], [], [], 0)
    m = read_module(data)
    assert [t.name for t in m.inputs] == ["input_1", "input_1"]
    rec0 = fmt.SIG_RECORD_HEAD.unpack_from(data, fmt.HEADER_SIZE)
    assert rec0[2] == len("input_1")  # the first record carries its name
    rec1 = fmt.SIG_RECORD_HEAD.unpack_from(data, fmt.HEADER_SIZE + 4 + 4 + 8)
    assert rec1[2] == 0  # the second is input_1 by default


def test_command_sizes_follow_the_binding_kinds() -> None:
    """Input and output bindings are one word (they cover their whole tensor); arena and
    constant bindings two (offset, size): fmt.command_size is what branch targets and the
    packer agree on."""
    prog = _program()
    data = pack_module("x86-64", **prog)
    m = read_module(data)
    sizes = [fmt.command_size(b.kind for b in c.bindings) for c in prog["commands"]]
    assert sizes == [4 + 4 + 8 + 8, 4 + 8 + 8 + 4, 4, 4 + 4 + 4 + 8]
    assert m.header.commands_size == sum(sizes)
    assert fmt.command_size(["input", "arena", "constant", "output"]) == 4 + 4 + 8 + 8 + 4


def test_dump_lists_header_sections_signature_commands_constants() -> None:
    data = pack_module("cortex-m4", **_program())
    text = dump_module(data)
    for needle in (
        "Header:",
        "magic          MiRT",
        "target         cortex-m4 (id 7)",
        "(ok)",
        "arena size     64 bytes",
        "Sections:",
        "signature",
        "commands",
        "constant_table",
        "constant_pool",
        "Signature: 2 inputs, 2 outputs",
        "tensor<3x4xf32>",
        "tensor<i1>",
        "Commands: 4",
        "dispatch 3",
        "input[0]:48B",
        "arena[+16]:48B",
        "const[+0]:48B",
        "Constants: 4",
        "f32 stored as i8",
        "scale=0.5 zp=3",
        "axis 0, 2 scale(s)",
        "params 6 bytes",
    ):
        assert needle in text, needle
    # Section sizes add up to the file.
    sizes = [
        int(line.split()[-1]) for line in text.splitlines() if re.match(r"  [a-z_]+ +0x0", line)
    ]
    assert sum(sizes) == len(data)


def test_dump_reports_crc_mismatch_instead_of_failing() -> None:
    data = bytearray(pack_module("cortex-m4", **_program()))
    data[-1] ^= 0x40  # a constant byte: structure still parses
    assert "MISMATCH" in dump_module(bytes(data))
    with pytest.raises(ModuleFormatError) as e:
        read_module(bytes(data))
    assert e.value.status == Status.CRC


def _refresh_crc(data: bytearray) -> bytes:
    struct.pack_into("<I", data, fmt.CRC_FIELD_OFFSET, zlib.crc32(data[fmt.CRC_START :]))
    return bytes(data)


def test_reader_status_codes() -> None:
    data = pack_module("aarch64", **_program())
    cases = {
        Status.TRUNCATED: data[:20],
        Status.MAGIC: b"XiRT" + data[4:],
        Status.VERSION: data[:4] + struct.pack("<H", 1) + data[6:],
        Status.CRC: data[:-1] + bytes([data[-1] ^ 1]),
    }
    for status, bad in cases.items():
        with pytest.raises(ModuleFormatError) as e:
            read_module(bad)
        assert e.value.status == status
    with pytest.raises(ModuleFormatError) as e:
        read_module(data, target="x86-64")
    assert e.value.status == Status.TARGET
    with pytest.raises(ModuleFormatError) as e:
        read_module(data[:-1])
    assert e.value.status == Status.TRUNCATED
    with pytest.raises(ModuleFormatError) as e:
        read_module(data + b"\0")
    assert e.value.status == Status.MALFORMED


def test_reader_checks_tool_metadata_and_strict_fields() -> None:
    data = pack_module("x86-64", **_program())
    m = read_module(data)
    table = m.constant_table_offset
    # A constant table entry past the pool (the C loader never reads the table).
    bad = bytearray(data)
    struct.pack_into("<I", bad, table, 1 << 20)
    with pytest.raises(ModuleFormatError, match="outside the pool"):
        read_module(_refresh_crc(bad))
    # Dims whose byte size leaves 32 bits: the compiler never pins such a structure.
    bad = bytearray(data)
    struct.pack_into("<I", bad, fmt.HEADER_SIZE + 4, 1 << 30)  # x is 3x4 f32
    fixed = _refresh_crc(bad)
    for strict in (True, False):
        with pytest.raises(ModuleFormatError, match="does not fit 32 bits") as e:
            read_module(fixed, strict=strict)
        assert e.value.status == Status.MALFORMED
    # Reserved signature bytes: only strict rejects them.
    bad = bytearray(data)
    bad[fmt.HEADER_SIZE + 3] = 1  # record 0's reserved byte
    fixed = _refresh_crc(bad)
    with pytest.raises(ModuleFormatError, match="reserved"):
        read_module(fixed)
    assert read_module(fixed, strict=False).inputs[0].byte_size == 48
    # Nonzero padding before the pool.
    pad_at = table + m.constant_table_size
    if pad_at < m.header.pool_offset:
        bad = bytearray(data)
        bad[pad_at] = 1
        with pytest.raises(ModuleFormatError, match="padding"):
            read_module(_refresh_crc(bad))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(arena_size=32), "arena"),
        (dict(commands=[Command(0, [Binding.input(2, 4)])]), "missing input"),
        (dict(commands=[Command(0, [Binding.output(0, 49)])]), "whole of"),
        (dict(commands=[Command(0, [Binding.output(0, 4)])]), "whole of"),
        (dict(commands=[Command(0, [Binding.constant(1000, 4)])]), "constant pool"),
        (dict(commands=[Command(0, [Binding.arena(0, 1)] * 17)]), "bindings"),
        (dict(commands=[Command(70000, [])]), "ordinal"),
        (dict(commands=[Command(0, [Binding.arena(1 << 30, 0)])]), "30 bits"),
        (dict(commands=[Command(0, [Binding.arena(4, 4)])]), "multiple of 8"),
        (dict(commands=[Command(0, [Binding.constant(20, 4)])]), "multiple of 8"),
        (dict(inputs=[TensorSig("a\0b", "f32", ())]), "NUL"),
        (dict(inputs=[TensorSig("", "f32", ())]), "1 to 255"),
        (dict(inputs=[TensorSig("x" * 256, "f32", ())]), "255"),
        (dict(inputs=[TensorSig("x", "f32", (-1,))]), "shape"),
    ],
)
def test_packer_rejects_what_the_loader_would(change: dict, message: str) -> None:
    prog = _program()
    prog.update(change)
    with pytest.raises(PackError, match=message):
        pack_module("x86-64", **prog)


def test_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown target"):
        pack_module("pdp-11", [], [], [], [], 0)
    with pytest.raises(ValueError, match="unknown dtype"):
        TensorSig("x", "f8", ())


def test_quant_params_blob() -> None:
    q = QuantParams((0.25, 0.5, 1.0), (-1, 0, 2), axis=1)
    blob = q.to_bytes()
    assert len(blob) == 8 + 3 * 8 and QuantParams.from_bytes(blob) == q
    with pytest.raises(ValueError):
        QuantParams.from_bytes(blob[:-1])
    with pytest.raises(PackError):
        QuantParams((0.1, 0.2), (0, 0))  # per-tensor takes one scale


def test_empty_module() -> None:
    data = pack_module("cortex-m0plus", [], [], [], [], 0)
    m = read_module(data)
    assert len(data) == 28 and m.header.pool_offset == 28
    assert "Commands: 0" in dump_module(data)


def _c_constants() -> dict[str, int]:
    text = MINIRT_H.read_text()
    values = {k: int(v, 0) for k, v in re.findall(r"#define (MRT_\w+) (0x[0-9A-Fa-f]+|\d+)u", text)}
    values |= {k: int(v) for k, v in re.findall(r"\b(MRT_\w+) = (\d+),", text)}
    values |= {k: values[v] for k, v in re.findall(r"\b(MRT_\w+) = (MRT_\w+),", text)}
    return values


def test_python_constants_match_minirt_h() -> None:
    c = _c_constants()
    assert c["MRT_MODULE_MAGIC"] == struct.unpack("<I", fmt.MAGIC)[0]
    assert c["MRT_MODULE_VERSION"] == fmt.VERSION
    assert c["MRT_MODULE_HEADER_SIZE"] == fmt.HEADER_SIZE == 28
    assert c["MRT_MODULE_CRC_START"] == fmt.CRC_START == fmt.CRC_FIELD_OFFSET + 4
    assert c["MRT_MODULE_ALIGN"] == fmt.POOL_ALIGN
    assert c["MRT_MAX_BINDINGS"] == fmt.MAX_BINDINGS
    for d in DType:
        assert c[f"MRT_DTYPE_{d.name.upper()}"] == d
    assert c["MRT_DTYPE_MAX"] == fmt.DTYPE_MAX
    for k in BindingKind:
        assert c[f"MRT_BINDING_{k.name}"] == k
    for name, tid in fmt.target_ids().items():
        assert c["MRT_TARGET_" + name.upper().replace("-", "_")] == tid
    for s in Status:
        assert c["MRT_OK" if s == Status.OK else f"MRT_ERR_{s.name}"] == s


def test_target_ids_come_from_the_descriptors_and_must_be_unique(monkeypatch) -> None:
    import dataclasses

    import toolchain.target as target_pkg
    from toolchain.target import DescriptorError, load_target

    assert fmt.target_id("cortex-m4") == load_target("cortex-m4").target_id
    m4 = load_target("cortex-m4")
    twin = dataclasses.replace(m4, name="cortex-m4-twin")
    monkeypatch.setattr(target_pkg, "list_targets", lambda: ["cortex-m4", "cortex-m4-twin"])
    monkeypatch.setattr(target_pkg, "load_target",
                        lambda n: twin if n == "cortex-m4-twin" else m4)
    # The descriptors themselves are read by _read_target_ids (target_ids keeps its
    # answer per descriptor files: the test below).
    with pytest.raises(DescriptorError, match="'target_id': 7 is already used"):
        fmt._read_target_ids()


def _targets_home(tmp_path: Path, monkeypatch) -> Path:
    """A MINIRT_HOME with a copy of the bundled targets/ (and a fresh user cache)."""
    import shutil

    from toolchain.target import targets_dir

    home = tmp_path / "home"
    shutil.copytree(targets_dir(), home / "targets")
    monkeypatch.setenv("MINIRT_HOME", str(home))
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(tmp_path / "cache"))
    return home


def test_target_ids_are_read_again_when_a_descriptor_changes(tmp_path: Path,
                                                             monkeypatch) -> None:
    import os

    import toolchain.target as target_pkg
    from toolchain.target import DescriptorError

    home = _targets_home(tmp_path, monkeypatch)
    reads = []
    real = target_pkg.load_target
    monkeypatch.setattr(target_pkg, "load_target", lambda n: reads.append(n) or real(n))
    fmt.target_ids.cache_clear()
    try:
        first = fmt.target_ids()
        assert first["cortex-m4"] == 7 and len(reads) == len(first)
        fmt.target_ids.cache_clear()
        assert fmt.target_ids() == first
        assert len(reads) == len(first)  # from the cache: no descriptor read
        # A descriptor that now clashes: read again, and refused.
        twin = home / "targets" / "cortex-m4-twin.yaml"
        twin.write_text((home / "targets" / "cortex-m4.yaml").read_text()
                        .replace("name: cortex-m4", "name: cortex-m4-twin"))
        old = twin.stat().st_mtime_ns - 60 * 10**9
        os.utime(twin, ns=(old, old))
        fmt.target_ids.cache_clear()
        with pytest.raises(DescriptorError, match="'target_id': 7 is already used"):
            fmt.target_ids()
    finally:
        fmt.target_ids.cache_clear()
