"""Every real board builds the seed model, its image is laid out for the board's
memories (vector table or entry where the chip starts, every section inside a memory),
and its code runs under QEMU from the files that are flashed (.bin and .hex): on
QEMU's model of the board, as the very image on a sibling, or relinked for the sibling.
A model too big for a real board's memories fails with the one-line budget error."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from toolchain import pipeline
from toolchain.cli import build as build_cli
from toolchain.emu.run import run_image
from toolchain.link.build import VERIFY_DIR
from toolchain.link.images import layout_problems
from toolchain.loader import load_graph, random_inputs
from toolchain.module.reader import read_module
from toolchain.reference import run_graph
from toolchain.target import Board, load_board

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"
REAL = ["nucleo-l4r5zi", "netduinoplus2", "nrf52840dk", "stm32f746g-disco",
        "feather-m4-express", "hifive1"]
# minirt-run --check's bounds for float outputs (toolchain/cli/run.py says why).
RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """minirt-build of the seed model for a board, once per module."""
    cache: dict[str, tuple[Board, Path]] = {}

    def get(name: str) -> tuple[Board, Path]:
        if name not in cache:
            board = load_board(name)
            if shutil.which(board.simulation.qemu) is None:
                pytest.skip(f"{board.simulation.qemu} not installed")
            out = tmp_path_factory.mktemp(name) / "fw"
            assert build_cli.main([str(SEED), "--board", name, "-o", str(out)]) == 0
            cache[name] = (board, out)
        return cache[name]

    return get


@pytest.mark.parametrize("name", REAL)
def test_image_is_laid_out_for_the_board(name: str, built) -> None:  # type: ignore[no-untyped-def]
    board, out = built(name)
    elf = out / "firmware.elf"
    assert layout_problems(elf, board) == []
    with elf.open("rb") as f:
        image = ELFFile(f)
        entry = image["e_entry"]
        for sec in image.iter_sections():
            if sec["sh_flags"] & SH_FLAGS.SHF_ALLOC and sec["sh_size"]:
                start, end = sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]
                assert any(o <= start and end <= e for _, o, e in board.regions), sec.name
    blob = (out / "firmware.bin").read_bytes()
    if board.target_info.llvm_triple.startswith("thumb"):
        # What the core (or the UF2 bootloader) reads at the flash origin.
        sp, reset = struct.unpack_from("<II", blob)
        assert sp == board.ram.end and reset == entry
        assert reset & 1 and board.flash.origin <= reset < board.flash.end
    else:  # the HiFive1 boot loader jumps to 0x20400000
        assert entry == board.flash.origin == 0x20400000
    record = json.loads((out / "size.json").read_text())["images"]
    assert int(record["bin"]["base"], 16) == board.flash.origin
    assert record["verify"]["mode"] == board.verify_mode
    assert ("uf2" in record) == (name == "feather-m4-express")
    assert (out / VERIFY_DIR).is_dir() == (board.verify_mode == "relink")


@pytest.mark.parametrize("name", REAL)
def test_flashed_files_run_under_qemu(name: str, built) -> None:  # type: ignore[no-untyped-def]
    board, out = built(name)
    graph = pipeline.prepare_graph(load_graph(SEED))
    inputs = random_inputs(graph, seed=3)
    want = run_graph(graph, inputs)
    module = read_module((out / "model.mrt").read_bytes())
    raw = pipeline.encode_inputs(module.inputs, inputs)
    results = {}
    for boot in (None, out / "firmware.bin", out / "firmware.hex"):
        run = run_image(board, out / "firmware.elf", raw, boot=boot)
        assert run.exit_code == 0, run.diagnosis
        got = pipeline.decode_outputs(module.outputs, run.outputs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
        results[run.image.name] = (run.outputs, run.instructions)
        if board.verify_mode == "relink":
            assert run.image.parent == (out / VERIFY_DIR).resolve()
        else:  # the very files that are flashed
            assert run.image == (boot or out / "firmware.elf").resolve()
    assert len(set(results.values())) == 1, results


def test_relinked_copy_is_the_same_code(built) -> None:  # type: ignore[no-untyped-def]
    """nucleo-l4r5zi's sibling copy differs from the flashed image only by addresses:
    the same functions with the same sizes."""
    _, out = built("nucleo-l4r5zi")

    def sizes(elf: Path) -> dict[str, int]:
        with elf.open("rb") as f:
            symtab = ELFFile(f).get_section_by_name(".symtab")
            return {s.name: s["st_size"] for s in symtab.iter_symbols()
                    if s["st_info"]["type"] == "STT_FUNC"}

    real, copy = sizes(out / "firmware.elf"), sizes(out / VERIFY_DIR / "firmware.elf")
    assert real == copy and "mrt_module_execute" in real


BIG_IO = """\
func.func @main(%a: tensor<NxNxf32>) -> tensor<NxNxf32> {
  %0 = stablehlo.tanh %a : tensor<NxNxf32>
  return %0 : tensor<NxNxf32>
}
"""


@pytest.mark.parametrize(("name", "side"), [("hifive1", 64), ("nrf52840dk", 256)])
def test_too_big_for_the_real_memory(name: str, side: int, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """I/O buffers of 2 x side^2 f32: 32 KB against hifive1's 16 KB DTIM, 512 KB
    against the nRF52840's 256 KB of RAM (both fit the emulated siblings' 4 MB)."""
    model = tmp_path / "big.mlir"
    model.write_text(BIG_IO.replace("N", str(side)))
    rc = build_cli.main([str(model), "--board", name, "-o", str(tmp_path / "fw")])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert rc == 2 and len(errors) == 1, err
    assert f"the model for board {name} does not fit" in errors[0]
    assert "RAM" in errors[0]
    assert not (tmp_path / "fw").exists()
