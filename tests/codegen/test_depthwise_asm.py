"""A depthwise 3x3 layer's own assembly tiles (codegen/depthwise_asm.py) and the per-layer
assembly kernels that carry them (codegen/asm_kernels.py, link/asm_kernels.py).

Under QEMU, bit for bit against the reference and TFLite Micro (tests/depthwise_models.py
run_depthwise): 1-3 output channels take them always, 4-13 where the --optimize mode's
flash room takes their code (not under `size`), multipliers 1 and 2, on every DSP board,
SAME (both pad columns' products folded into the bias) and VALID, odd sizes, one row
and one column, rows written out and rows of more tiles than UNROLL_TILES (a loop over
the inner columns), top-down and bottom-up.
Then the mechanism: the object's cache key covers the text and the target's flags, an
assembler error is one paragraph naming the kernel and line (the CLI's error, no
traceback), and --gc-sections drops a kernel nothing calls.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from depthwise_models import reverse_row_pairs, run_depthwise
from elftools.elf.elffile import ELFFile
from llvmlite import ir
from tflite_models import build_model, int8_layer_op

from toolchain.cli import build as build_cli
from toolchain.codegen import asm_kernels, depthwise_asm
from toolchain.codegen.depthwise_pairs import QUAD_TAILS_SYMBOL, QUAD_TAILS_X2_SYMBOL
from toolchain.kernel.form import Kernel
from toolchain.link import asm_kernels as link_asm
from toolchain.link.build import _lld
from toolchain.loader import load_graph
from toolchain.loops.depthwise import (
    ASM_ROOM_CHANNELS,
    ASM_TILE_BYTES,
    asm_code_bytes,
    asm_tiles,
    row_pair_plan,
)
from toolchain.pipeline import prepare_graph
from toolchain.schedule import schedule
from toolchain.target import load_target

DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]

# (h, w, channels, multiplier, kh, kw, stride, dilation, padding)
LAYERS = [(h, w, c, m, 3, 3, 1, 1, pad)
          for h, w, c, m, pad in ((19, 6, 1, 1, "SAME"), (10, 10, 2, 1, "SAME"),
                                  (19, 6, 3, 1, "SAME"), (10, 10, 3, 1, "VALID"),
                                  (13, 7, 1, 1, "VALID"), (11, 5, 2, 1, "SAME"),
                                  (9, 1, 3, 1, "SAME"), (1, 9, 2, 1, "SAME"),
                                  (14, 2, 1, 1, "SAME"), (7, 13, 1, 1, "SAME"),
                                  (6, 9, 3, 1, "SAME"), (17, 3, 2, 1, "VALID"),
                                  (10, 10, 4, 1, "SAME"), (9, 5, 2, 2, "SAME"),
                                  (19, 6, 1, 2, "SAME"), (7, 5, 1, 2, "VALID"),
                                  (10, 10, 1, 2, "SAME"))]


def _layer_kernels(symbols: set[str]) -> set[str]:
    return {s for s in symbols if s.startswith(f"{depthwise_asm.STEM}_")}


@pytest.mark.parametrize("board", DSP_BOARDS)
def test_exact_on_every_dsp_board(board: str, tmp_path: Path) -> None:
    """1-4 output channels (1 -> 2 and 2 -> 4 too) by their own tiles, one output column
    (records per column) by the tails kernel, all bit-exact."""
    symbols = run_depthwise(LAYERS, board, tmp_path, seed=61)
    assert _layer_kernels(symbols)
    assert QUAD_TAILS_SYMBOL in symbols
    # (one output column: records per column are the row's, the tails kernel's)
    only_few = [layer for layer in LAYERS if layer[2] * layer[3] <= 3 and layer[1] > 1]
    few = run_depthwise(only_few, board, tmp_path / "few", seed=62)
    assert _layer_kernels(few) and not {QUAD_TAILS_SYMBOL, QUAD_TAILS_X2_SYMBOL} & few


# 4-13 output channels whose records run over the row (12 words a column and channel
# within ROW_RECORDS_BYTES): their own tiles where the flash room takes their code (any
# board's under auto: bench programs have no other constants), odd counts, both sweep
# sizes, SAME and VALID, a multiplier of 2, columns written out and looped.
MORE = [(h, w, c, m, 3, 3, 1, 1, pad)
        for h, w, c, m, pad in ((10, 10, 4, 1, "SAME"), (10, 10, 5, 1, "SAME"),
                                (10, 10, 8, 1, "SAME"), (19, 6, 13, 1, "SAME"),
                                (19, 6, 7, 1, "VALID"), (11, 5, 9, 1, "SAME"),
                                (9, 4, 11, 1, "VALID"), (10, 10, 4, 2, "SAME"),
                                (9, 5, 3, 2, "SAME"), (6, 2, 13, 1, "SAME"))]


def test_more_channels_exact_where_the_room_takes_them(tmp_path: Path) -> None:
    """4-13 channels by their own tiles under `auto` (no tails kernel), bit-exact on
    cortex-m4; under `size` (no room) the shared tails kernel, bit-exact too."""
    symbols = run_depthwise(MORE, "cortex-m4", tmp_path / "auto", seed=64)
    assert _layer_kernels(symbols)
    assert not {QUAD_TAILS_SYMBOL, QUAD_TAILS_X2_SYMBOL} & symbols
    small = run_depthwise(MORE, "cortex-m4", tmp_path / "size", seed=64, optimize="size")
    assert not _layer_kernels(small)


def test_the_room_decides_past_three_channels(tmp_path: Path) -> None:
    """Up to ASM_CHANNELS channels take the tiles with no room; 4-13 only where
    asm_code_bytes fits the room, none past ASM_ROOM_CHANNELS whatever the room."""
    rng = np.random.default_rng(7)
    ops, xs, ys = [], [], []
    for i, c in enumerate((3, 8, 14)):
        op, x, y = int8_layer_op(rng, "depthwise", 10, 6, c, c, 3, 3, 1, 1,
                                 padding="SAME", name=f"L{i}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "dw.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    program = schedule(prepare_graph(load_graph(path)), target=load_target("cortex-m4"))
    few, eight, many = [s.kernel for s in program.steps
                        if isinstance(s.kernel, Kernel) and s.kernel.combine is not None]
    plans = [row_pair_plan(k) for k in (few, eight, many)]
    assert asm_tiles(few, plans[0], True, 0)
    need = asm_code_bytes(eight, plans[1])
    # 10x6 over 8: 6 columns, 4 inner ones looped (3 written out), 4-row calls of 2
    # rotations and a 2-row remainder
    assert need == ASM_TILE_BYTES * 3 * 8 * 3
    assert not asm_tiles(eight, plans[1], True, need - 1)
    assert asm_tiles(eight, plans[1], True, need)
    assert not asm_tiles(eight, plans[1], False, need)  # row pairs: no tiles
    assert not asm_tiles(many, plans[2], True, sys.maxsize)
    assert ASM_ROOM_CHANNELS == 13


def test_exact_bottom_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bottom-up (a result placed above its operand): the remainder's tile first."""
    reverse_row_pairs(monkeypatch)
    symbols = run_depthwise(LAYERS, "cortex-m4", tmp_path, seed=63)
    assert _layer_kernels(symbols)


def test_columns_written_out_or_looped() -> None:
    """Up to UNROLL_TILES tiles a call each column's code is written out; past it the
    inner columns loop, the pad columns' outside the loop; the edges skip their pad
    column's loads and products."""
    inner = (0, 1, 2)
    short = depthwise_asm.tile_body(4, ("r5", "r6", "r7"), [3], 6,
                                    [(1, 2), *[inner] * 4, (0, 1)])
    assert "bne" not in short and short.count("ssat") == 6 * 4
    # a multiplier of 2: the first output channel reads its input channel's words again
    twice = depthwise_asm.tile_body(2, ("r5", "r6", "r7"), [3, 4], 2, [(0, 1, 2)], 2)
    assert twice.count("ldm r0, ") == 1 and twice.count("ldm r0!") == 1
    assert "add r1, r0, #12" in twice
    wide = depthwise_asm.tile_body(4, ("r5", "r6", "r7"), [3, 4], 20,
                                   [(1, 2), *[inner] * 8, (0, 1)])
    assert "bne 1b" in wide and wide.count("ssat") == 3 * 2 * 4
    edge = depthwise_asm.tile_body(1, ("r5", "r6", "r7"), [5], 0, [(1,)])
    assert edge.count("smlad") == 1 and "r0!" not in edge and "r4!" not in edge


_TEXT = "\tmov r0, #{n}\n\tbx lr"


def _kernels(n: int) -> dict[str, str]:
    module = ir.Module()
    asm_kernels.declare(module, "mrt_test_kernel", _TEXT.format(n=n), [])
    return asm_kernels.kernels_of(module)


def test_a_changed_constant_assembles_again(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The object's key covers the kernel's text and the target's flags: a different
    immediate is another symbol and another object; the same text and target come from
    the cache without running the assembler."""
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(tmp_path))
    m4, m7 = load_target("cortex-m4"), load_target("cortex-m7")
    first = link_asm.assemble_kernels(m4, _kernels(3))
    assert set(_kernels(3)) != set(_kernels(4))
    runs: list[list[str]] = []
    real = subprocess.run

    def counted(cmd, *args, **kwargs):
        runs.append(cmd)
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(link_asm.subprocess, "run", counted)
    assert link_asm.assemble_kernels(m4, _kernels(3)) == first and not runs
    other = link_asm.assemble_kernels(m4, _kernels(4))
    assert other != first and len(runs) == 1
    link_asm.assemble_kernels(m7, _kernels(3))  # the target's flags differ
    assert len(runs) == 2 and "-mcpu=cortex-m7" in runs[-1]
    assert len(list((tmp_path / "codegen").rglob("*.o"))) == 3


def test_assembler_error_is_one_paragraph(tmp_path: Path) -> None:
    """The kernel, its line and the assembler's message; no traceback."""
    module = ir.Module()
    asm_kernels.declare(module, "mrt_bad_kernel", "\tmov r0, #1\n\tsmlad r0, r1\n\tbx lr", [])
    kernels = asm_kernels.kernels_of(module)
    with pytest.raises(link_asm.AsmKernelError) as e:
        link_asm.assemble_kernels(load_target("cortex-m4"), kernels)
    text = str(e.value)
    assert "\n" not in text and "mrt_bad_kernel_" in text and "smlad r0, r1" in text


def test_assembler_error_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A build whose layer's tiles do not assemble ends with the CLI's one-line error."""
    def broken(*args, **kwargs) -> str:
        return "\tpush {r4-r11, lr}\n\tnot_an_instruction r0\n\tpop {r4-r11, pc}"

    run_depthwise(LAYERS[:1], "cortex-m4", tmp_path / "ok", seed=64)  # writes the model
    monkeypatch.setattr(depthwise_asm, "tile_body", broken)
    model = tmp_path / "ok" / "dw.tflite"
    code = build_cli.main([str(model), "--board", "cortex-m4", "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "per-layer kernel mrt_dw3_layer_" in err and "not_an_instruction" in err


def test_unused_kernels_are_dropped(tmp_path: Path) -> None:
    """Each kernel in its own section: a link with --gc-sections keeps the called one."""
    module = ir.Module()
    for n in (1, 2):
        asm_kernels.declare(module, f"mrt_gc{n}", _TEXT.format(n=n), [])
    kernels = asm_kernels.kernels_of(module)
    called = next(s for s in kernels if s.startswith("mrt_gc1_"))
    target = load_target("cortex-m4")
    main = {"main": f"\t.globl main\n\t.section .text.main,\"ax\",%progbits\n\t.thumb\n"
                    f"\t.thumb_func\nmain:\n\tb {called}\n"}
    joined = link_asm.link_kernels(target, link_asm.assemble_kernels(target, main), kernels)
    (tmp_path / "joined.o").write_bytes(joined)
    subprocess.run([_lld(), "--gc-sections", "-e", "main", "-o", "out.elf", "joined.o"],
                   cwd=tmp_path, check=True, capture_output=True)
    with open(tmp_path / "out.elf", "rb") as f:
        names = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    assert called in names and not any(s.startswith("mrt_gc2_") for s in names)
