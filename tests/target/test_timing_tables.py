"""Board clocks and the per-core timing tables (targets/timing/*.yaml) are validated with
one-line errors naming the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolchain.target import DescriptorError, list_boards, list_targets, load_board, load_target
from toolchain.target.descriptors import CLOCK_HZ_RANGE
from toolchain.target.timing import Cost, load_timing, timing_dir


def test_every_board_states_a_plausible_clock() -> None:
    for name in list_boards():
        board = load_board(name)
        assert CLOCK_HZ_RANGE[0] <= board.clock_hz <= CLOCK_HZ_RANGE[1], name


def test_datasheet_clocks_and_wait_states() -> None:
    """Spot checks of the figures the board files cite (DS8626, RM0090 Table 10, RM0385
    Table 5; QEMU's own cpuclk for the MPS2 machines)."""
    f405 = load_board("netduinoplus2")
    assert (f405.clock_hz, f405.flash_wait_states) == (168_000_000, 5)
    assert f405.flash_cache  # the ART accelerator hides the wait states
    f746 = load_board("stm32f746g-disco")
    assert (f746.clock_hz, f746.flash_wait_states) == (216_000_000, 7)
    assert load_board("cortex-m4").clock_hz == 25_000_000
    assert load_board("nrf52840dk").clock_hz == 64_000_000


def test_every_table_loads_and_every_bare_metal_arm_target_has_one() -> None:
    for path in sorted(timing_dir().glob("*.yaml")):
        table = load_timing(path.stem)
        assert table.manual and table.costs["alu"].base == 1
    for name in list_targets():
        target = load_target(name)
        if target.os == "none" and target.llvm_triple.startswith("thumb"):
            assert target.timing, f"{name} has no timing table"


def _board(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(load_board("cortex-m4").path.read_text())
    data["identifier"] = "clocked"
    edit(data)
    path = tmp_path / "boards" / "clocked.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("edit", "words"), [
    (lambda d: d.pop("clock_hz"), "'clock_hz': missing required field"),
    (lambda d: d.update(clock_hz=168), "between 32000 and"),
    (lambda d: d.update(clock_hz="168 MHz"), "'clock_hz': expected an integer"),
    (lambda d: d.update(flash_wait_states=40), "'flash_wait_states': expected 0..15"),
])
def test_bad_clocks_are_refused(tmp_path: Path, edit, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DescriptorError) as info:
        load_board(_board(tmp_path, edit))
    assert words in str(info.value) and "clocked.yaml" in str(info.value)
    assert "\n" not in str(info.value)


def test_cost_forms() -> None:
    m4 = load_timing("cortex-m4")
    assert m4.cost("pop_pc") == Cost(1, 1, 1, per_reg=1, refills=1)
    assert m4.cost("pop_pc").cycles(regs=3, refill=2) == 6
    assert m4.cost("div").cycles(0, 2, "min") == 2
    assert m4.cost("div").cycles(0, 2, "max") == 12
    assert m4.refill == (1, 2, 3)
    with pytest.raises(DescriptorError, match="no timing for instruction class 'mve'"):
        m4.cost("mve")


@pytest.mark.parametrize(("text", "words"), [
    ("core: X\nmanual: Y\ncycles: {alu: 1, lod: 2}\n", "'cycles.lod': unknown instruction class"),
    ("core: X\nmanual: Y\ncycles: {alu: 1+Q}\n", "expected a sum of integers, N and P"),
    ("core: X\nmanual: Y\ncycles: {alu: {min: 3, max: 2, use: 2}}\n", "min <= use <= max"),
    ("core: X\ncycles: {alu: 1}\n", "'manual': missing required field"),
    ("core: X\nmanual: Y\ncycles: {alu: 1}\n", "'cycles.load': missing required field"),
])
def test_bad_tables_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                text: str, words: str) -> None:
    (tmp_path / "timing").mkdir()
    (tmp_path / "timing" / "bad.yaml").write_text(text)
    monkeypatch.setattr("toolchain.target.timing.targets_dir", lambda: tmp_path)
    with pytest.raises(DescriptorError) as info:
        load_timing("bad")
    assert words in str(info.value) and "bad.yaml" in str(info.value)


def test_unknown_table_lists_the_known_ones() -> None:
    with pytest.raises(DescriptorError, match="no timing table 'cortex-m99' .*cortex-m4"):
        load_timing("cortex-m99")
