"""Target and board descriptors: every shipped file loads, and bad files fail with a
one-line error naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolchain.target import (
    DescriptorError,
    list_boards,
    list_targets,
    load_board,
    load_target,
)

EXPECTED_IDS = {
    "x86-64": 1,
    "aarch64": 2,
    "riscv32": 3,
    "riscv32-nofpu": 4,
    "cortex-m0plus": 5,
    "cortex-m3": 6,
    "cortex-m4": 7,
    "cortex-m7": 8,
    "cortex-m33": 9,
    "cortex-m55": 10,
}


def test_all_targets_load_with_the_agreed_ids() -> None:
    names = list_targets()
    assert set(EXPECTED_IDS) <= set(names)
    ids = {name: load_target(name).target_id for name in names}
    assert {n: ids[n] for n in EXPECTED_IDS} == EXPECTED_IDS
    assert len(set(ids.values())) == len(ids), "target ids must be unique"


def test_cortex_m4_target_fields() -> None:
    t = load_target("cortex-m4")
    assert t.triple == "thumbv7em-none-eabihf"
    assert t.cpu == "cortex-m4"
    assert t.float_abi == "hard"
    assert t.capabilities.fpu == "sp" and t.capabilities.dsp
    assert "-mfpu=fpv4-sp-d16" in t.cflags
    assert t.compiler_helpers.library == "libgcc"


def test_riscv_targets_use_rust_names_and_llvm_triples() -> None:
    fpu = load_target("riscv32")
    nofpu = load_target("riscv32-nofpu")
    assert fpu.triple == "riscv32imafc-unknown-none-elf" and fpu.abi == "ilp32f"
    assert nofpu.triple == "riscv32imac-unknown-none-elf" and nofpu.abi == "ilp32"
    assert fpu.llvm_triple == nofpu.llvm_triple == "riscv32-unknown-none-elf"
    assert nofpu.capabilities.fpu == "none"


@pytest.mark.parametrize("name", ["x86-64", "aarch64", "riscv32", "cortex-m4"])
def test_required_boards_load(name: str) -> None:
    board = load_board(name)
    assert board.identifier == name
    assert board.target_info.name == board.target
    assert board.flash.length > 0 and board.ram.length > 0
    assert board.simulation.qemu.startswith("qemu-")


def test_every_board_loads() -> None:
    for name in list_boards():
        assert load_board(name).identifier == name


def test_every_target_has_a_board() -> None:
    assert {load_board(b).target for b in list_boards()} == set(list_targets())


# --------------------------------------------------------------------------- errors


def _write_board(tmp_path: Path, name: str, edit) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(load_board("cortex-m4").path.read_text())
    data["identifier"] = name
    edit(data)
    path = tmp_path / "boards" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def _error(path: Path) -> str:
    with pytest.raises(DescriptorError) as info:
        load_board(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_key(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d.update(colour="blue"))
    assert _error(path).startswith("boards/x.yaml: field 'colour': unknown field")


def test_unknown_nested_key(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d["ram"].update(size=4))
    assert _error(path).startswith("boards/x.yaml: field 'ram.size': unknown field")


def test_missing_field(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d.pop("flash"))
    assert _error(path) == "boards/x.yaml: field 'flash': missing required field"


def test_missing_nested_field(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d["simulation"].pop("qemu"))
    assert _error(path) == "boards/x.yaml: field 'simulation.qemu': missing required field"


def test_wrong_type(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d["ram"].update(length="64K"))
    assert _error(path) == "boards/x.yaml: field 'ram.length': expected an integer"


def test_bool_is_not_an_integer(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d.update(stack_size=True))
    assert _error(path) == "boards/x.yaml: field 'stack_size': expected an integer"


def test_bad_choice(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d["simulation"].update(mode="kernel"))
    assert "field 'simulation.mode': expected one of 'system', 'user'" in _error(path)


def test_list_item_type(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d["simulation"].update(args=["-s", 3]))
    assert _error(path) == "boards/x.yaml: field 'simulation.args[1]': expected a string"


def test_unknown_target(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d.update(target="z80"))
    message = _error(path)
    assert message.startswith("boards/x.yaml: field 'target': unknown target 'z80'")


def test_identifier_must_match_file_name(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d.update(identifier="y"))
    assert "field 'identifier': must match the file name 'x'" in _error(path)


def test_overlapping_regions(tmp_path: Path) -> None:
    path = _write_board(tmp_path, "x", lambda d: d["ram"].update(origin=d["flash"]["origin"]))
    assert "field 'ram': overlaps the flash region" in _error(path)


def test_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "boards" / "x.yaml"
    path.parent.mkdir()
    path.write_text("identifier: [unclosed\n")
    assert _error(path).startswith("boards/x.yaml: invalid YAML")


def test_unknown_board_name() -> None:
    with pytest.raises(DescriptorError, match="unknown board 'no-such-board'"):
        load_board("no-such-board")


def test_target_unknown_key(tmp_path: Path) -> None:
    data = yaml.safe_load(load_target("riscv32").path.read_text())
    data["capabilities"]["rvv"] = True
    path = tmp_path / "targets" / "riscv32.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DescriptorError) as info:
        load_target(path)
    assert str(info.value).startswith("targets/riscv32.yaml: field 'capabilities.rvv': unknown")


def test_descriptors_are_frozen() -> None:
    board = load_board("riscv32")
    with pytest.raises(AttributeError):
        board.stack_size = 1  # type: ignore[misc]


def test_fast_yaml_parser_reads_every_descriptor_as_safe_load_does() -> None:
    """parse_yaml uses libyaml's parser when PyYAML has it; each bundled descriptor must
    come out exactly as yaml.safe_load reads it (values and their types)."""
    import yaml

    from toolchain.target.descriptors import parse_yaml

    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "boards").glob("*.yaml")) + sorted((root / "targets").glob("*.yaml"))
    assert files
    for f in files:
        text = f.read_text(encoding="utf-8")
        fast, slow = parse_yaml(text), yaml.safe_load(text)
        assert fast == slow and repr(fast) == repr(slow), f.name


def test_invalid_yaml_is_reported_by_the_pure_python_parser(tmp_path: Path) -> None:
    """The error of a document libyaml refuses is the pure-Python parser's, with its line."""
    path = tmp_path / "boards" / "x.yaml"
    path.parent.mkdir()
    path.write_text("identifier: x\narch: [unclosed\n")
    # (libyaml would say "did not find expected ',' or ']'")
    assert _error(path) == ("boards/x.yaml: invalid YAML (line 3): expected ',' or ']', "
                            "but got '<stream end>'")
