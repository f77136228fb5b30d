"""ESP32-C3-DevKitM-1 and ESP32-C6-DevKitC-1: memory maps from Espressif's manuals, the
seed model and MLPerf Tiny's keyword spotter built within the boards' budgets, images
laid out for the ROM loader (code at the instruction-bus address on the C3, constants at
data-bus addresses), the ESP image passing esptool's reader, and the relinked copy
computing the reference's numbers under QEMU on the RV32IMC / RV32IMAC sibling."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from elftools.elf.elffile import ELFFile
from esptool_info import esptool_image_info

from toolchain import pipeline
from toolchain.cli import build as build_cli
from toolchain.emu.run import run_image
from toolchain.link.esp_image import load_segments, read_esp_image
from toolchain.link.images import layout_problems
from toolchain.link.script import linker_script
from toolchain.loader import load_graph, random_inputs
from toolchain.module.reader import read_module
from toolchain.reference import run_graph
from toolchain.target import DescriptorError, load_board
from toolchain.target.esp import ESP_CHIPS

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"
MLPERF = REPO / ".." / "shared" / "models" / "mlperf_tiny"
KWS = MLPERF / "kws_ref_model.tflite"
VWW = MLPERF / "vww_96_int8.tflite"
KB = 1024
ESP = ["esp32c3-devkitm-1", "esp32c6-devkitc-1"]

# board: (chip, target, sibling, image in SRAM, code offset, RAM, esptool chip, flash size)
# C3: SRAM1 0x3FC80000 (data bus) = 0x40380000 (instruction bus), ours up to the ROM's
# stack at 0x3FCDC710; C6: HP SRAM 0x40800000 on both buses, ours up to 0x4087C610.
EXPECTED = {
    "esp32c3-devkitm-1": ("ESP32-C3", "riscv32imc", "riscv32imc", (0x3FC80000, 256 * KB),
                          0x700000, (0x3FCC0000, 0x3FCDC710 - 0x3FCC0000), "esp32c3", "4MB"),
    "esp32c6-devkitc-1": ("ESP32-C6", "riscv32-nofpu", "riscv32-nofpu", (0x40800000, 352 * KB),
                          0, (0x40858000, 0x4087C610 - 0x40858000), "esp32c6", "8MB"),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """minirt-build of a model for a board, once per module."""
    cache: dict[tuple[str, Path], Path] = {}

    def get(name: str, model: Path = SEED) -> Path:
        if (name, model) not in cache:
            if shutil.which(load_board(name).simulation.qemu) is None:
                pytest.skip(f"{load_board(name).simulation.qemu} not installed")
            out = tmp_path_factory.mktemp(name) / "fw"
            assert build_cli.main([str(model), "--board", name, "-o", str(out)]) == 0
            cache[name, model] = out
        return cache[name, model]

    return get


@pytest.mark.parametrize("name", ESP)
def test_descriptor_is_the_manuals(name: str) -> None:
    board = load_board(name)
    chip, target, sibling, image, offset, ram, esp_chip, size = EXPECTED[name]
    assert (board.chip, board.target, board.sibling.identifier) == (chip, target, sibling)
    assert (board.flash.origin, board.flash.length) == image
    assert board.instruction_bus_offset == offset
    assert (board.ram.origin, board.ram.length) == ram
    assert (board.budgets.flash, board.budgets.ram) == (image[1], ram[1])
    (method,) = board.flash_methods
    assert (method.method, method.chip, method.flash_size) == ("esptool", esp_chip, size)
    assert ESP_CHIPS[esp_chip].rom_load_offset == 0  # where ESP-IDF's bootloader goes
    # QEMU models neither chip: the same objects run relinked on the virt sibling.
    assert board.verify_mode == "relink"
    assert board.relinked_for_sibling().instruction_bus_offset == 0


def test_rv32imc_sibling_has_no_atomics() -> None:
    board = load_board("riscv32imc")
    assert "+a" not in board.target_info.features and "-march=rv32imc" in board.target_info.cflags
    assert "rv32,a=false,f=false,d=false" in board.simulation.args


def test_c3_code_runs_on_the_instruction_bus() -> None:
    script = linker_script(load_board("esp32c3-devkitm-1"))
    assert "CODE  (rx)  : ORIGIN = 0x40380000, LENGTH = 0x40000" in script
    assert "} > CODE AT > FLASH" in script
    c6 = linker_script(load_board("esp32c6-devkitc-1"))
    assert "CODE" not in c6 and "} > FLASH\n" in c6


@pytest.mark.parametrize("name", ESP)
def test_seed_image_is_laid_out_for_the_rom_loader(name: str, built) -> None:  # type: ignore[no-untyped-def]
    board, out = load_board(name), built(name)
    elf = out / "firmware.elf"
    assert layout_problems(elf, board) == []
    code = board.flash.origin + board.instruction_bus_offset
    with elf.open("rb") as f:
        image = ELFFile(f)
        assert image["e_entry"] == code
        text, rodata = image.get_section_by_name(".text"), image.get_section_by_name(".rodata")
        assert text["sh_addr"] == code
        # Constants at data-bus addresses inside the image, after the code's bytes.
        assert board.flash.origin + text["sh_size"] <= rodata["sh_addr"] < board.flash.end
    esp = read_esp_image((out / "firmware.esp.bin").read_bytes())
    assert esp.entry == code and esp.chip_id == ESP_CHIPS[board.flash_methods[0].chip].image_chip_id
    # What the ROM copies: the ELF's loaded bytes at their run addresses, padded to words.
    assert [(s.address, s.data) for s in esp.segments] == [
        (s.address, s.data + bytes(-len(s.data) % 4)) for s in load_segments(elf)]
    record = json.loads((out / "size.json").read_text())["images"]
    assert record["esp"]["file"] == "firmware.esp.bin" and record["esp"]["offset"] == "0x0"
    assert record["verify"] == {**record["verify"], "on": board.sibling.identifier,
                                "mode": "relink"}
    flashed = json.loads((out / "build.json").read_text())["flash"]["files"]
    assert "firmware.esp.bin" in flashed


@pytest.mark.parametrize("name", ESP)
def test_esptool_reads_the_seed_image(name: str, built) -> None:  # type: ignore[no-untyped-def]
    board, out = load_board(name), built(name)
    info = esptool_image_info(out / "firmware.esp.bin")
    code = board.flash.origin + board.instruction_bus_offset
    assert f"Entry point: {code:#010x}" in info, info
    for seg in read_esp_image((out / "firmware.esp.bin").read_bytes()).segments:
        assert f"{seg.address:#010x}" in info, info
    assert "(valid)" in info.split("Checksum:")[1].splitlines()[0]
    assert "(valid)" in info.split("Validation hash:")[1].splitlines()[0]


@pytest.mark.parametrize("name", ESP)
def test_relinked_copy_computes_the_reference(name: str, built) -> None:  # type: ignore[no-untyped-def]
    board, out = load_board(name), built(name)
    graph = pipeline.prepare_graph(load_graph(SEED))
    inputs = random_inputs(graph, seed=5)
    want = run_graph(graph, inputs)
    module = read_module((out / "model.mrt").read_bytes())
    run = run_image(board, out / "firmware.elf", pipeline.encode_inputs(module.inputs, inputs))
    assert run.exit_code == 0, run.diagnosis
    assert run.image.parent == (out / "verify").resolve()
    for got, ref in zip(pipeline.decode_outputs(module.outputs, run.outputs), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("name", "model"), [(n, KWS) for n in ESP] + [(ESP[1], VWW)])
def test_mlperf_model_fits_and_matches_tflite_micro(name: str, model: Path, built) -> None:  # type: ignore[no-untyped-def]
    """MLPerf Tiny's int8 keyword spotter on both, its visual wake words model (338 KB) on
    the C6: within the board's budgets, and the relinked copy's outputs are TFLite
    Micro's to the bit (the shared fixture's)."""
    if not model.is_file():
        pytest.skip(f"shared model not found ({model.resolve()}); it lives beside the repo")
    board, out = load_board(name), built(name, model)
    size = json.loads((out / "size.json").read_text())
    assert size["over_budget"] == []
    assert size["flash_total"] <= board.budgets.flash and size["ram_total"] <= board.budgets.ram
    assert (out / "firmware.esp.bin").stat().st_size < board.budgets.flash
    fixture = np.load(model.with_suffix(".npz"))
    module = read_module((out / "model.mrt").read_bytes())
    x = fixture["input_0_0"]
    run = run_image(board, out / "firmware.elf", pipeline.encode_inputs(module.inputs, [x]))
    assert run.exit_code == 0, run.diagnosis
    (got,) = pipeline.decode_outputs(module.outputs, run.outputs)
    np.testing.assert_array_equal(got, fixture["output_0_0"])


def test_visual_wake_words_does_not_fit_the_c3(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """338 KB of image against the C3's 256 KB: one line naming the board and FLASH."""
    if not VWW.is_file():
        pytest.skip(f"shared model not found ({VWW.resolve()}); it lives beside the repo")
    rc = build_cli.main([str(VWW), "--board", ESP[0], "-o", str(tmp_path / "fw")])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert rc == 2 and len(errors) == 1
    assert f"the model for board {ESP[0]} does not fit the board's memory: it overflows FLASH" \
        in errors[0]
    assert not (tmp_path / "fw").exists()


BAD = [
    ({"flash_methods": [{"method": "esptool"}]},
     "field 'flash_methods[0].chip': missing required field (method is esptool)"),
    ({"flash_methods": [{"method": "esptool", "chip": "esp8266"}]},
     "field 'flash_methods[0].chip': expected one of esp32c3, esp32c6, got 'esp8266'"),
    ({"flash_methods": [{"method": "esptool", "chip": "esp32c3", "flash_size": "3MB"}]},
     "field 'flash_methods[0].flash_size': expected one of 1MB"),
    ({"flash_methods": [{"method": "openocd", "config": ["x.cfg"], "chip": "esp32c3"}]},
     "field 'flash_methods[0].chip': does not apply to method 'openocd'"),
    ({"instruction_bus_offset": 0x40000},  # the code would land on the RAM
     "field 'instruction_bus_offset': puts the code at [0x3fcc0000, 0x3fd00000), over "
     "another memory"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_esp_fields_are_one_line(change: dict, message: str, tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "boards" / "esp32c3-devkitm-1.yaml").read_text())
    data.update(change)
    path = tmp_path / "boards" / "esp32c3-devkitm-1.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data))
    shutil.copy(REPO / "boards" / "riscv32imc.yaml", path.parent)
    with pytest.raises(DescriptorError) as err:
        load_board(path)
    assert "\n" not in str(err.value) and message in str(err.value), str(err.value)
