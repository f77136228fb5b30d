"""The size report: every byte of flash and RAM lands in exactly one component, the
components add up to the ELF's totals, and budgets are checked."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from toolchain.pipeline import BuildResult, build_model
from toolchain.report.size import (
    FLASH_COMPONENTS,
    RAM_COMPONENTS,
    SizeReport,
    SymbolSize,
    size_report,
    size_report_from_files,
)
from toolchain.target import Budgets, load_board

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed.mlir"
BOARDS = ["cortex-m4", "x86-64", "riscv32"]
SEED_FLASH_GOAL = 2048  # the whole cortex-m4 seed image: runtime, harness, startup, module

CONST_MODEL = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r = stablehlo.add %a, %c : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def _needs_tools(board: str) -> None:
    missing = [t for t in ("clang", "ld.lld") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuildResult]:
    cache: dict[str, BuildResult] = {}

    def build(board: str) -> BuildResult:
        if board not in cache:
            _needs_tools(board)
            out = tmp_path_factory.mktemp(f"seed-{board}") / "fw"
            cache[board] = build_model(SEED, board, out, log=lambda *a: None)
        return cache[board]

    return build  # type: ignore[return-value]


@pytest.mark.parametrize("board", BOARDS)
def test_components_add_up_to_the_elf(builds, board: str) -> None:
    build = builds(board)
    report = size_report(build)
    assert set(report.flash) == set(FLASH_COMPONENTS)
    assert set(report.ram) == set(RAM_COMPONENTS)
    assert sum(report.flash.values()) == report.flash_total == build.link.flash_used
    assert report.ram_static == build.link.ram_used
    assert sum(report.ram.values()) == report.ram_total == build.link.ram_used + report.stack
    # The reservation the build sized from its measured stack (a Linux board: its own).
    assert report.ram["stack"] == (build.stack.reserved if build.stack else
                                   build.board.stack_size)
    # Every byte is explained: runtime, dispatch and harness are all present.
    assert report.flash["other"] == 0 and report.ram["other"] == 0
    for comp in ("runtime", "dispatch", "schedule", "startup", "harness"):
        assert report.flash[comp] > 0, comp
    assert report.flash["schedule"] + report.flash["constants"] == len(build.module)
    assert report.ram["io"] >= 4 * 4 * 4 * 4  # three inputs and one output of 4x4 f32


@pytest.mark.parametrize("board", BOARDS)
def test_berkeley_columns_match_llvm_size(builds, board: str) -> None:
    if shutil.which("llvm-size") is None:
        pytest.skip("llvm-size is not installed")
    report = size_report(builds(board))
    out = subprocess.run(["llvm-size", "-B", str(builds(board).elf)], capture_output=True,
                         text=True, check=True).stdout.splitlines()[1].split()
    text, data, bss, dec, hexa = out[:5]
    b = report.berkeley
    assert (b["text"], b["data"], b["bss"], b["dec"]) == (int(text), int(data), int(bss), int(dec))
    assert report.to_json()["berkeley"]["hex"] == hexa



def test_seed_cortex_m4_fits_in_2k_flash(builds) -> None:
    report = size_report(builds("cortex-m4"))
    assert report.flash_total < SEED_FLASH_GOAL, "\n" + report.format_table(symbols=15)


def test_constants_are_split_from_the_schedule(tmp_path: Path) -> None:
    _needs_tools("x86-64")
    model = tmp_path / "addc.mlir"
    model.write_text(CONST_MODEL)
    build = build_model(model, "cortex-m4", tmp_path / "fw", log=lambda *a: None)
    report = size_report(build)
    # One 20-byte table entry + 16 bytes of pool data (4 f32).
    assert report.flash["constants"] == 20 + 16
    assert report.flash["schedule"] == len(build.module) - 36
    assert sum(report.flash.values()) == build.link.flash_used


def test_over_budget_lines(builds, tmp_path: Path) -> None:
    build = builds("cortex-m4")
    # The seed's RAM: 272 B static and its measured stack's reservation, 432 B.
    board = dataclasses.replace(build.board, budgets=Budgets(flash=100, ram=500))
    board = dataclasses.replace(board, target_info=build.board.target_info)
    report = size_report_from_files(build.link.elf, build.link.map, board)
    lines = report.over_budget
    assert len(lines) == 2
    assert lines[0].startswith("board cortex-m4: flash ") and "budget of 100 B" in lines[0]
    assert lines[1].startswith("board cortex-m4: RAM ") and "budget of 500 B" in lines[1]
    assert all("\n" not in line for line in lines)
    assert size_report(build).over_budget == []


def test_table_json_and_symbols(builds) -> None:
    build = builds("cortex-m4")
    report = size_report(build)
    table = report.format_table(symbols=5)
    first = table.splitlines()[0].split()
    assert first == ["component", "flash", "ram"]
    total = next(line for line in table.splitlines() if line.startswith("total"))
    assert "(budget 4,194,304 / 4,194,304)" in total
    assert re.search(r"^runtime\s+[\d,]+\s+\d+$", table, re.M)
    assert "text    data     bss     dec     hex" in table
    data = json.loads(json.dumps(report.to_json()))
    assert data["flash_total"] == build.link.flash_used and data["over_budget"] == []
    names = [s.name for s in report.symbols]
    assert "mrt_module_validate" in names and "main" in names
    sizes = [s.size for s in report.symbols]
    assert sizes == sorted(sizes, reverse=True)
    by_name = {s.name: s for s in report.symbols}
    assert by_name["mrt_module_validate"].component == "runtime"
    assert by_name["main"].component == "harness"
    assert by_name["mrt_cortex_m_vector_table"].component == "startup"
    assert by_name["mrt_image_module"].component == "schedule"


def test_cli_prints_the_table(builds, capsys) -> None:
    from toolchain.report.size import main

    build = builds("cortex-m4")
    assert main([str(build.out_dir), "--symbols", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("component") and "mrt_module_validate" in out


def test_load_board_budget_defaults() -> None:
    board = load_board("cortex-m4")
    assert board.budgets.flash > 0 and board.budgets.ram > 0


def _large_report() -> SizeReport:
    """A report of a megabyte model: numbers with seven and eight digits side by side."""
    flash = dict.fromkeys(FLASH_COMPONENTS, 0) | {"runtime": 3_000, "constants": 1_245_184}
    ram = dict.fromkeys(RAM_COMPONENTS, 0) | {"arena": 12_345_678, "stack": 600}
    return SizeReport(
        "big", flash, ram, flash_total=1_248_184, ram_static=12_345_678, stack=600,
        budget_flash=2_097_152, budget_ram=16_777_216, sections={},
        berkeley={"text": 1_248_184, "data": 0, "bss": 12_345_678, "dec": 13_593_862},
        symbols=[SymbolSize("weights", 1_245_184, "object", ".rodata", "constants",
                            flash_parts=(("constants", 1_245_184),))])


def test_numbers_of_a_megabyte_and_more_stay_apart() -> None:
    """Every cell of every table is its own whitespace-separated field, and reads back
    as the number it was (a 1,245,184 B column once ran into its neighbour: "01 245 184")."""
    report = _large_report()
    table = report.format_table(symbols=1)
    lines = table.splitlines()
    assert lines[0].split() == ["component", "flash", "ram"]
    assert re.search(r"^constants +1,245,184 +0$", table, re.M)
    assert re.search(r"^arena +0 +12,345,678$", table, re.M)
    total = next(line for line in lines if line.startswith("total"))
    assert total.split() == ["total", "1,248,184", "12,346,278", "(budget", "2,097,152",
                             "/", "16,777,216)"]
    berkeley = lines[lines.index(next(x for x in lines if x.split()[:1] == ["text"])) + 1]
    assert berkeley.split() == ["1248184", "0", "12345678", "13593862", "cf6d06"]
    assert re.search(r"^ +1,245,184 +constants +\.rodata +weights$", table, re.M)
    budget = report.format_budget_table(symbols=1)
    assert budget.splitlines()[0] == ("board big: flash budget 2,097,152 B, RAM budget "
                                      "16,777,216 B")
    assert re.search(r"^constants +1,245,184 +59\.38 % +0 +0\.00 %$", budget, re.M)
    assert re.search(r"^arena +0 +0\.00 % +12,345,678 +73\.59 %$", budget, re.M)
    assert re.search(r"^ +1,245,184 +59\.38 % +flash +constants +weights$", budget, re.M)
