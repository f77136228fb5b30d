"""The whole build: model file -> verified graph -> Program -> objects -> firmware.

Everything is written into a staging directory beside the output directory and swapped
into place only when every step succeeded (link/out_dir.py), so a failed or interrupted
build leaves nothing half-written behind.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolchain.codegen.image import StateImage, emit_image_object
from toolchain.emu.cycles import CycleEstimate
from toolchain.emu.device_link import DEFAULT_BAUD, DeviceLink, describe_status
from toolchain.emu.diagnose import BUDGET_EXIT, BUDGET_STATUS
from toolchain.emu.profile import Profile, ProfileProbe, profile_layout
from toolchain.emu.run import run_image, verified_elf
from toolchain.emu.stack import (
    STACK_ALIGN,
    StackProbe,
    measure_stack,
    stack_probe,
    stack_reservation,
    stack_reserved,
)
from toolchain.graph.ir import Graph
from toolchain.graph.pinned_inputs import value_digest
from toolchain.link.asm_kernels import link_kernels
from toolchain.link.build import (
    VERIFY_DIR,
    ImageTooLarge,
    LinkError,
    LinkResult,
    compiler_helpers_library,
    enlarged_board,
    link_firmware,
    runtime_c_dir,
    tool_versions,
    write_images,
)
from toolchain.link.build_result import BuildResult, StackSizing
from toolchain.link.custom_ops import compile_custom_kernels, custom_op_failure, custom_ops_of
from toolchain.link.device import DEFAULT_HARNESS, check_harness
from toolchain.link.object_cache import tool_answer
from toolchain.link.out_dir import (
    MANIFEST_FILE,
    check_out_dir,
    file_sha256,
    read_manifest,
    staged_build,
)
from toolchain.loader import UsageError, load_graph
from toolchain.module.contract import ImageContract, image_contract
from toolchain.module.format import DEFAULT_BOOT_CHECK, crc_cflags
from toolchain.module.from_program import image_kernels, module_from_program
from toolchain.module.io_buffers import decode_outputs, encode_inputs
from toolchain.module.io_buffers import module_outputs as module_outputs  # re-exported
from toolchain.module.reader import read_module
from toolchain.passes import (
    QuantizeOptions,
    complex_io,
    fold_affine,
    fold_constants,
    lower_complex,
    lower_linalg,
    lower_random,
    merge_equal_constants,
    quantize_int8,
    quantize_weights,
)
from toolchain.report.layers import DISPATCHES_FILE, layers_json, read_layers
from toolchain.report.size import COMPONENT_LABELS, SizeReport, size_report_from_files
from toolchain.schedule import Program, schedule
from toolchain.schedule.depthwise_records import store_depthwise_records
from toolchain.schedule.fewout_records import store_fewout_records
from toolchain.schedule.first_layer_records import store_first_layer_records
from toolchain.schedule.optimize import DEFAULT_OPTIMIZE, OPTIMIZE_MODES, optimize_weights
from toolchain.schedule.pad_channels import (
    missed_staged_pointwise,
    pad_int8_channels,
    pointwise_backup,
)
from toolchain.schedule.pad_channels16 import pad_int16_channels
from toolchain.schedule.pad_helium import window_pads
from toolchain.schedule.sub_byte import pack_sub_byte_constants
from toolchain.schedule.tap_rest import gather_tap_rests
from toolchain.schedule.window_rows import merge_window_rows
from toolchain.target import Board, load_board
from toolchain.target.descriptors import Target
from toolchain.timings import stage
from toolchain.tree_digest import SOURCE_SUFFIXES, tree_sha256
from toolchain.tunedb import database as tuning


def prepare_graph(graph: Graph, quantize: QuantizeOptions | None = None) -> Graph:
    """The graph the firmware computes: folded, weights stored as `quantize` says.
    The reference run on this graph is what --check compares the firmware with.
    `--quantize int8` rewrites the whole graph into integers (passes/ptq.py)."""
    merge_equal_constants(fold_affine(fold_constants(graph)))
    options = quantize or QuantizeOptions()
    if options.mode == "int8":
        return quantize_int8(graph, options)
    return quantize_weights(graph, options)


def lower_for_backends(graph: Graph) -> Graph:
    """The prepared graph (in place) with the ops no backend compiles rewritten into
    ones they do: complex tensors into pairs of real ones, rng_bit_generator into integer
    ops, cholesky / triangular_solve / the training batch norms into loops and reductions.
    This runs after the graph --check runs on, which keeps numpy's complex arithmetic,
    reference/rng.py and reference/linalg.py as the oracles."""
    return lower_random(lower_complex(lower_linalg(graph)))


@dataclass
class CompiledImage:
    """What code generation makes of a graph for one target, before any link: the
    schedule, the packed module, the image's contract with it and the one object holding
    every dispatch and the mrt_image* symbols (toolchain/codegen/image.py)."""

    program: Program
    module: bytes
    contract: ImageContract
    obj: bytes


def schedule_for_target(graph: Graph, target: Target, leave_staged: bool = False,
                        flash_records: bool = True) -> Program:
    """The Program of a prepared graph for `target`, before its weights are paired or
    its window rows merged: the graph lowered for the backends and, on targets with
    word-packed int8 steps, its odd input channel counts padded to whole words
    (schedule/pad_channels.py; `leave_staged`: but not the pointwise layers the im2col
    kernel stages itself). `flash_records`: whether microkernel records may be bound in
    flash (not under --optimize size; schedule/program.py `schedule`)."""
    graph = lower_for_backends(graph)
    padded = pad_int8_channels(graph, target, leave_staged, flash_records) | \
        window_pads(graph, target, flash_records) | pad_int16_channels(graph, target)
    return schedule(graph, target=target, materialize=frozenset(padded),
                    flash_records=flash_records)


def schedule_for_board(graph: Graph, board: Board,
                       optimize: str = DEFAULT_OPTIMIZE) -> Program:
    """The Program of a prepared graph for `board`: scheduled for its target, with the
    weights its packed int8 steps read pre-extended as --optimize `optimize` says
    (schedule/optimize.py, schedule/paired.py) and its sub-byte constants (int4
    weights) bit-packed (schedule/sub_byte.py)."""
    target = board.target_info
    # Pointwise layers over channels that are not whole words go unpadded to the im2col
    # kernel where it can take them (first_layer_records.takes_pointwise; not under
    # `size`, which binds no records). Should it refuse one after all (its flash room,
    # its epilogue), the graph is scheduled again, as it was, with every pad: unpadded,
    # the packed steps ran 1.5x slower (schedule/pad_channels.py).
    backup = pointwise_backup(graph, target) if optimize != "size" else None
    room = OPTIMIZE_MODES[optimize].paired_room
    records = optimize != "size"  # `size` binds no records in flash
    program = schedule_for_target(graph, target, leave_staged=backup is not None,
                                  flash_records=records)
    declined: set = set()  # the ops the tuning database sends to the tile search
    for attempt in (1, 2):
        # Before the window rows are merged, which would rewrite the kernels they take;
        # the few-output layers first: a first layer of 3 channels to 1-7 outputs is theirs.
        store_fewout_records(program, target, room(program, board), declined)
        store_first_layer_records(program, target, room(program, board), declined)
        if attempt == 2 or backup is None or not missed_staged_pointwise(program):
            break
        for f in dataclasses.fields(Graph):  # the caller's graph is the one scheduled
            setattr(graph, f.name, getattr(backup, f.name))
        program = schedule_for_target(graph, target, flash_records=records)
    merge_window_rows(program, target)
    # Before the optimize choice, so that its weight bytes and flash room count the
    # sub-byte constants at their packed size.
    pack_sub_byte_constants(program)
    optimize_weights(program, board, optimize)
    # After the weights are paired and interleaved: it reorders them (schedule/tap_rest.py).
    gather_tap_rests(program, target)
    store_depthwise_records(program, target, lambda: room(program, board))
    return program


def compile_image(graph: Graph, board: Board, quantize: QuantizeOptions | None = None,
                  log=print, optimize: str = DEFAULT_OPTIMIZE,
                  tuning_db: str | Path | None = None) -> CompiledImage:
    """Prepares `graph` (in place, prepare_graph), schedules it and generates its module
    and object for `board`'s target, trading flash and speed as `optimize` says
    (schedule/optimize.py), with the tuned schedules of the user database `tuning_db`
    and the shipped defaults (tunedb/database.py). Refuses up front a model too large
    for any link of the board's kind (_check_fits)."""
    target = board.target_info
    with stage("passes"):
        prepare_graph(graph, quantize)
    # The tuner's session when it is the one building, else the build's own.
    session = tuning.current_session() or tuning.Session.for_build(tuning_db)
    with tuning.build_session(session), stage("schedule"):
        program = schedule_for_board(graph, board, optimize)
    log(f"minirt-build: {len(program.steps)} dispatches, arena {program.arena_size} B, "
        f"{len(program.constants)} constants")
    _check_fits(program, board)
    with stage("module"):
        module = module_from_program(program, target.name)
        kernels = image_kernels(program)
        contract = image_contract(program, module, target.target_id)
        # The module must fit the code it is linked with: a disagreement here is a
        # compiler bug, caught now rather than as a firmware that refuses to load.
        read_module(module, image=contract)
    asm: dict[str, str] = {}  # per-layer assembly kernels, joined (link/asm_kernels.py)
    with tuning.build_session(session):  # the code generator schedules the other dispatches
        obj = link_kernels(target, emit_image_object(
            kernels, module, contract, program.arena_size, target,
            [s.schedule for s in program.steps], state_image(graph, module), asm_out=asm), asm)
    for line in session.used_lines():  # said, and kept for the size report
        log(f"minirt-build: {line}")
    program.tuned = [{"key": key, **used} for key, used in session.used.items()]
    return CompiledImage(program, module, contract, obj)


def state_image(graph: Graph, module: bytes) -> StateImage:
    """The state region's contents (codegen/image.py): each state slot's boot and reset
    values in its buffer layout (encode_inputs), the module's last inputs."""
    n = len(graph.states)
    if not n:
        return StateImage()
    slots = read_module(module).inputs[-n:]
    return StateImage(tuple(encode_inputs([sig], [s.initial])
                            for sig, s in zip(slots, graph.states)),
                      tuple(encode_inputs([sig], [s.reset])
                            for sig, s in zip(slots, graph.states)))


class DoesNotFit(ImageTooLarge):
    """The image does not fit the board's memories. `report` is its size report from a
    link against enlarged memories (with the board's own budgets), which says what
    overflows by how much."""

    def __init__(self, message: str, report: SizeReport) -> None:
        super().__init__(message)
        self.report = report


# The largest --max-cycles: the runtime counts cycles in 64 bits.
MAX_CYCLES_LIMIT = (1 << 63) - 1


def budget_cflags(board: Board, max_cycles: int | None) -> tuple[str, ...]:
    """The runtime C flags that compile a cycle budget of `max_cycles` into an image for
    `board` (none without a budget: the image is then byte for byte what it was).
    UsageError, naming the option, on a board whose platform has no cycle counter the
    runtime reads (runtime_c/platform: SysTick on Cortex-M, mcycle on RISC-V, rdtsc on
    x86-64 Linux) or for a budget outside 1 .. 2^63 - 1."""
    if max_cycles is None:
        return ()
    if not 1 <= max_cycles <= MAX_CYCLES_LIMIT:
        raise UsageError(f"--max-cycles must be between 1 and {MAX_CYCLES_LIMIT}, got "
                         f"{max_cycles}")
    parts = set(board.platform)
    counted = bool(parts & {"cortex_m", "riscv"}) or (
        "linux" in parts and board.target_info.llvm_triple.startswith("x86_64"))
    if not counted:
        raise UsageError(f"--max-cycles: board {board.identifier} has no cycle counter the "
                         "runtime reads (it counts on Cortex-M, RISC-V and x86-64 boards)")
    return (f"-DMRT_MAX_CYCLES={max_cycles}ull",)


def link_image(board: Board, objects: list[Path], out_dir: Path, log=print,
               cflags: Sequence[str] = (), harness: str = DEFAULT_HARNESS) -> LinkResult:
    """link_firmware (the runtime compiled with `cflags` too); when the image does not fit
    the board's memories, links the same objects again against enlarged ones (in
    out_dir/oversized), logs that size table and raises DoesNotFit naming each memory
    that overflows and by how much. The caller owns out_dir and removes it on failure:
    nothing of the oversized image is kept."""
    try:
        return link_firmware(board, objects, out_dir, extra_cflags=cflags, harness=harness)
    except ImageTooLarge:
        pass
    # Linked for its size table only (the build fails): no images.
    big = link_firmware(enlarged_board(board, objects), objects, out_dir / "oversized",
                        extra_cflags=cflags, harness=harness, images=False)
    report = size_report_from_files(big.elf, big.map, board, helpers=big.helpers)
    log(f"minirt-build: the image does not fit board {board.identifier}; its size, from a "
        "link against enlarged memories:")
    log(report.format_table())
    problems = []
    for memory, used, region, components in (
            ("FLASH", report.flash_total, board.flash, report.flash),
            ("RAM", report.ram_total, board.ram, report.ram)):
        if used > region.length:
            parts = ", ".join(f"{COMPONENT_LABELS[k]} {v} B" for k, v in components.items() if v)
            problems.append(f"it overflows {memory} by {used - region.length} bytes (needs "
                            f"{used} B of {region.length} B: {parts})")
    # Worded like _check_fits and the linker's own overflow errors (link.build).
    raise DoesNotFit(f"the model for board {board.identifier} does not fit the board's "
                     "memory: " + "; ".join(problems or report.over_budget), report)


def compile_graph(graph: Graph, board: Board, out_dir: Path, log=print,
                  stamp: dict | None = None,
                  quantize: QuantizeOptions | None = None,
                  finish: Callable[[BuildResult], None] | None = None,
                  max_cycles: int | None = None,
                  boot_check: str = DEFAULT_BOOT_CHECK,
                  harness: str = DEFAULT_HARNESS, stream: bool = False,
                  optimize: str = DEFAULT_OPTIMIZE,
                  tuning_db: str | Path | None = None) -> BuildResult:
    """Builds firmware for `graph` into `out_dir`, which is replaced only on success
    and only when a build may replace it (link/out_dir.py). The graph is rewritten in
    place by prepare_graph. `stamp` (build_stamp) is recorded in the build's manifest,
    for up_to_date. `finish`, when given, is called with the finished build while it
    is still in its staging directory, to add files of its own (size.json) that the
    manifest then lists. A model that does not fit the board raises DoesNotFit after
    logging its size table (link_image). With `max_cycles` the runtime stops an
    inference that runs past that many cycles (budget_cflags); `boot_check` picks the
    runtime's CRC code (module/format.py BOOT_CHECKS: "fast" links 4 KB of tables);
    `harness` "device" builds the image that serves inferences over the board's UART
    (docs/device.md), whose stack is the board's stack_size (it never exits, so QEMU
    cannot measure it as it measures the semihosting image's). With `stream`, or for a
    model with state, the harness runs step after step on one state (toolchain/stream.py;
    runtime_c/harness/stream.c). `optimize` trades flash and instructions
    (schedule/optimize.py OPTIMIZE_MODES); `tuning_db` is the user tuning database
    (tunedb/database.py)."""
    out_dir = Path(out_dir)
    check_out_dir(out_dir)
    check_harness(board, harness)
    cflags = budget_cflags(board, max_cycles)
    image = compile_image(graph, board, quantize, log, optimize, tuning_db)
    cflags += crc_cflags(boot_check)
    if image.program.state_count and harness != DEFAULT_HARNESS:
        raise UsageError(f"--harness {harness}: the model keeps state between inferences, "
                         "which only the semihosting image's stream harness carries yet")
    if stream or image.program.state_count:
        # runtime_c/harness/stream.c: steps on one state (minirt-run --stream)
        cflags += ("-DMRT_STREAM",)
    record = {"stamp": stamp} if stamp else {}
    with staged_build(out_dir, record, log=log) as tmp:
        (tmp / "model.mrt").write_bytes(image.module)
        (tmp / "dispatch.o").write_bytes(image.obj)
        (tmp / DISPATCHES_FILE).write_text(dispatches_json(image.program))
        objects = [tmp / "dispatch.o", *compile_custom_kernels(
            board.target_info, custom_ops_of(image.program), tmp / "custom")]
        if harness == DEFAULT_HARNESS:
            link, stack = _link_sized(board, objects, tmp, image.module, graph, log, cflags)
        else:
            link, stack = link_image(board, objects, tmp, log, cflags, harness), None
        if finish is not None:
            finish(BuildResult(tmp, board, graph, image.program, image.module, link, stack))
        # The board and what minirt-flash reads, for it to check (flash/build_dir.py).
        record["flash"] = flash_record(tmp, board)
    link = _moved(link, tmp, out_dir)
    return BuildResult(out_dir, board, graph, image.program, image.module, link, stack)


def _measuring_inputs(module: bytes, graph: Graph) -> bytes:
    """The inputs of the stack-measuring run: minirt-run's default ones (seed 0), so a
    model whose loops depend on its inputs ends as it does there."""
    from toolchain.loader import random_inputs

    signature = read_module(module).inputs
    signature = signature[:len(signature) - len(graph.states)]
    try:
        return encode_inputs(signature, random_inputs(graph, 0))
    except (ValueError, TypeError):  # inputs the graph's types cannot draw: zeros
        return bytes(sum(s.byte_size for s in signature))


# The least stack worth measuring with when the board's default does not fit: a run
# needs a few frames (reset handler, harness, dispatch loop); below this the image is
# reported as not fitting without a run.
MIN_TRIAL_STACK = 256


def _link_sized(board: Board, objects: list[Path], out: Path, module: bytes, graph: Graph,
                log, cflags: Sequence[str]) -> tuple[LinkResult, StackSizing | None]:
    """The image linked with its stack sized from a run under QEMU (_size_stack); the
    runtime compiled with `cflags` too. The first link writes no images: when the
    measured stack differs from the board's, only the relink's are kept."""
    try:
        link = link_firmware(board, objects, out, extra_cflags=cflags, images=False)
    except ImageTooLarge:
        link, board = _link_in_stack_room(board, objects, out, module, graph, log, cflags)
    return _size_stack(board, link, out, module, graph, log)


def _link_in_stack_room(board: Board, objects: list[Path], out: Path, module: bytes,
                        graph: Graph, log, cflags: Sequence[str]) -> tuple[LinkResult, Board]:
    """A board's stack_size is only a default for bare-metal images, which reserve the
    depth measured under QEMU plus a margin. When that default is all that keeps an
    image out of RAM (hifive1's 4 KB beside a 12 KB arena), the image is linked
    with the stack RAM has room for and measured; it is kept when its measured
    reservation fits there. Otherwise link_image reports it with the stack it needs (the
    measured reservation, or the default when no run told): DoesNotFit and its table."""
    needed = board
    trial = _board_with_stack_room(board, objects, out, cflags)
    if trial is not None:
        try:
            link = link_firmware(trial, objects, out, extra_cflags=cflags)
        except ImageTooLarge:
            link = None
        if link is not None:
            log(f"minirt-build: the board's {board.stack_size} B stack leaves no room in "
                f"RAM; measuring the stack with the {trial.stack_size} B there is")
            # A failed run (perhaps overflowing the trial stack into .bss) tells nothing.
            use, _ = measure_stack(trial, link.elf, _measuring_inputs(module, graph))
            if use is not None:
                needed = dataclasses.replace(board, stack_size=stack_reservation(use.depth))
                if needed.stack_size <= trial.stack_size:
                    return link, trial
    return link_image(needed, objects, out, log, cflags), needed


def _board_with_stack_room(board: Board, objects: list[Path], out: Path,
                           cflags: Sequence[str]) -> Board | None:
    """`board` with its stack cut to the RAM left beside everything else, when the image
    is bare metal (its stack is measured), fits flash, and leaves at least
    MIN_TRIAL_STACK; else None."""
    if board.simulation is None or board.simulation.mode != "system":
        return None
    try:
        big = link_firmware(enlarged_board(board, objects), objects, out / "room",
                            extra_cflags=cflags, images=False)  # read for its sizes only
        report = size_report_from_files(big.elf, big.map, board, helpers=big.helpers)
    except ImageTooLarge:
        return None
    finally:
        shutil.rmtree(out / "room", ignore_errors=True)
    room = board.ram.length - (report.ram_total - report.ram.get("stack", 0))
    room = room // STACK_ALIGN * STACK_ALIGN
    if report.flash_total > board.flash.length or room < MIN_TRIAL_STACK:
        return None
    return dataclasses.replace(board, stack_size=room)


def _size_stack(board: Board, link: LinkResult, out: Path, module: bytes, graph: Graph,
                log) -> tuple[LinkResult, StackSizing | None]:
    """Measures the stack of the linked image under QEMU and relinks it with the
    measured depth plus a margin as its reservation (emu/stack.py says why that margin).
    A Linux board (the kernel provides its stack), a board whose emulator is not
    installed, and a run that fails keep the board's stack_size; so does nothing else."""
    with stage("stack (qemu)"):
        use, why = measure_stack(board, link.elf, _measuring_inputs(module, graph))
    if use is None:
        if board.simulation.mode == "system":
            log(f"minirt-build: stack not measured ({why}); reserving the board's "
                f"{board.stack_size} B")
        return write_images(link, board), None
    reserved = stack_reservation(use.depth)
    if reserved != board.stack_size:
        link = link_firmware(dataclasses.replace(board, stack_size=reserved), link.objects,
                             out, runtime_parts=())
    else:
        link = write_images(link, board)
    log(f"minirt-build: stack {use.depth} B measured under QEMU, {reserved} B reserved")
    return link, StackSizing(use.depth, reserved)


# Past this many bytes of RAM or flash the module format cannot hold a model (its
# offsets are 30 bits) and an enlarged link for a size table would be pointless.
_REPORTABLE_LIMIT = 1 << 30


def _check_fits(program: Program, board: Board) -> None:
    """Refuses, before code generation, a model too large for even the enlarged link
    that shows the size table of an image that does not fit (link_image): the module
    format may not hold such sizes at all. Smaller models that overflow the board go
    on, to the table and an exact error."""
    io = sum(t.num_elements * t.dtype.itemsize for t in program.inputs + program.outputs)
    ram = program.arena_size + io + board.stack_size
    flash = sum(np.asarray(c).nbytes for c in program.constants)
    if max(ram, flash) < _REPORTABLE_LIMIT:
        return
    # Worded like the link's own overflow errors (link.build), which say the same later.
    problems = []
    if ram > board.ram.length:
        problems.append(f"it overflows RAM by at least {ram - board.ram.length} bytes (arena "
                        f"{program.arena_size} B, I/O buffers {io} B, stack "
                        f"{board.stack_size} B; RAM {board.ram.length} B)")
    if flash > board.flash.length:
        problems.append(f"it overflows FLASH by at least {flash - board.flash.length} bytes "
                        f"(constants {flash} B; FLASH {board.flash.length} B)")
    if problems:
        raise LinkError(f"the model for board {board.identifier} does not fit the board's "
                        "memory: " + "; ".join(problems))


def _moved(link: LinkResult, old: Path, new: Path) -> LinkResult:
    def fix(p):
        if isinstance(p, Path) and p.is_relative_to(old):
            return new / p.relative_to(old)
        return p

    fields = {k: fix(v) for k, v in link.__dict__.items()}
    fields["objects"] = tuple(fix(p) for p in link.objects)
    return LinkResult(**fields)


def build_model(model: str | Path, board_name: str, out_dir: str | Path | None = None,
                entry: str = "main", log=print,
                quantize: QuantizeOptions | None = None,
                boot_check: str = DEFAULT_BOOT_CHECK,
                optimize: str = DEFAULT_OPTIMIZE) -> BuildResult:
    """Loads `model` and builds it for board `board_name`."""
    board = load_board(board_name)
    with stage("load"):
        graph = load_graph(model, entry)
    if out_dir is None:
        out_dir = default_build_dir(model, board)
    check_out_dir(out_dir, model)
    with stage("stamp"):
        stamp = stamp_with(build_stamp(model, board, entry, quantize), {}, None, boot_check,
                           optimize=optimize)
    return compile_graph(graph, board, Path(out_dir), log, stamp, quantize,
                         boot_check=boot_check, optimize=optimize)


# The build's manifest (link/out_dir.py), which also holds its stamp.
STAMP_FILE = MANIFEST_FILE
# What minirt-run reads from a build directory; their hashes in the manifest make a
# deleted or overwritten artifact a stale build rather than a crash.
REUSED_ARTIFACTS = ("model.mrt", "firmware.elf", "dispatches.json")
# What minirt-flash reads from a build directory (the images it writes into a board, the
# ELF it checks them against, the linker script naming the board; also in verify/, the
# copy relinked for an emulated sibling): their hashes and the board are recorded in the
# stamp file's "flash" entry, and minirt-flash flashes nothing else.
FLASHED_FILES = ("firmware.elf", "firmware.bin", "firmware.bin.base", "firmware.hex",
                 "firmware.uf2", "firmware.esp.bin", "firmware.ld")


def flash_record(out_dir: Path, board: Board) -> dict:
    """The build record's ``flash`` entry: ``{"board": identifier, "files": {relative
    path: sha256}}`` for every FLASHED_FILES file the link wrote into ``out_dir``."""
    files = {}
    for sub in ("", f"{VERIFY_DIR}/"):
        for name in FLASHED_FILES:
            path = Path(out_dir) / f"{sub}{name}"
            if path.is_file():
                files[f"{sub}{name}"] = file_sha256(path)
    return {"board": board.identifier, "files": files}


# The image's dispatch functions in program order with their MACs (kernel form), which
# `minirt-run --profile` reads: the build's own program, never a second scheduling of a
# graph (the graph the build scheduled is rewritten in place by its passes). Its name is
# report/layers.py's DISPATCHES_FILE.


def dispatches_json(program: Program) -> str:
    """The dispatches file of a build: ``{"dispatches": [{"name", "macs", "label",
    "sources", ...}, ...]}``, a row per command in the model's own names
    (report/layers.py)."""
    return layers_json(program)


def read_dispatch_layers(out_dir: Path) -> dict[str, dict]:
    """The dispatches file's rows by dispatch function name (report/layers.py). Raises
    UsageError when it is missing or unreadable."""
    try:
        return {layer.function: layer.to_json()
                for layer in read_layers(Path(out_dir) / DISPATCHES_FILE)}
    except ValueError as e:
        raise UsageError(str(e)) from None


def read_dispatch_macs(out_dir: Path) -> dict[str, int]:
    """MACs by dispatch function name, from a build directory's dispatches file. Raises
    UsageError when it is missing or unreadable (a build older than the file)."""
    path = Path(out_dir) / DISPATCHES_FILE
    try:
        rows = json.loads(path.read_text())["dispatches"]
        return {str(r["name"]): int(r["macs"]) for r in rows}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path}: cannot read the build's dispatch list ({e}); rebuild "
                         "the model") from None


def _tree_sha256(root: Path) -> str:
    """SHA-256 over the relative path and bytes of every source file under `root`
    (tree_digest.SOURCE_SUFFIXES, not in __pycache__), in the order of their path
    components; the files unchanged since the last build are not read again."""
    return tree_sha256(root, SOURCE_SUFFIXES)


def stamp_with(stamp: dict, shapes: dict[str, tuple[int, ...]],
               max_cycles: int | None, boot_check: str = DEFAULT_BOOT_CHECK,
               harness: str = DEFAULT_HARNESS,
               values: dict[str, np.ndarray] | None = None,
               optimize: str = DEFAULT_OPTIMIZE) -> dict:
    """The build stamp with the input-shape and input-value pins, which change the
    compiled graph, the cycle budget, which changes the runtime, and the --optimize
    mode, which changes the schedule. Absent when not given (or the default), so a
    build made without them stays current."""
    if shapes:
        stamp["input_shapes"] = {k: list(v) for k, v in sorted(shapes.items())}
    if values:
        stamp["input_values"] = value_digest(values)
    if max_cycles is not None:
        stamp["max_cycles"] = max_cycles
    if boot_check != DEFAULT_BOOT_CHECK:
        stamp["boot_check"] = boot_check
    if harness != DEFAULT_HARNESS:
        stamp["harness"] = harness
    if optimize != DEFAULT_OPTIMIZE:
        stamp["optimize"] = optimize
    return stamp


def helpers_sha256(path: Path) -> str:
    """The SHA-256 of the compiler-helper library (libgcc.a: 9.5 MB for Cortex-M4, 9 ms
    of CPU on every build), remembered in the user cache per its path, size and
    modification time, as the tools' versions are (link/object_cache.py tool_answer): a
    compiler package upgrade that changes the library changes those."""
    return tool_answer([str(path), "sha256"], lambda: (file_sha256(path), True))


def build_stamp(model: str | Path, board: Board, entry: str,
                quantize: QuantizeOptions | None = None) -> dict:
    """Everything a firmware depends on, so that a stale build is never reused: the
    model's bytes, every build option, the board and target descriptors' contents
    (a board given as a path may differ from the bundled one of the same name), the
    toolchain's and runtime's sources, the compiler-helper library, and the versions
    of clang, ld.lld, llvmlite / LLVM, numpy and Python."""
    import llvmlite
    import llvmlite.binding

    target = board.target_info
    try:
        helpers = compiler_helpers_library(target)
    except LinkError:
        helpers = None  # the build itself will say what is missing
    return {
        "model": str(model),
        # Which file it is, wherever the command runs: minirt-run rebuilds only a
        # build of its own model.
        "model_path": str(Path(model).resolve()),
        "model_sha256": file_sha256(Path(model)),
        "entry": entry,
        "quantize": dict((quantize or QuantizeOptions()).__dict__),
        "board": board.identifier,
        "board_descriptor_sha256": file_sha256(board.path),
        # A real board verified on an emulated sibling: its relinked copy and its QEMU
        # run depend on the sibling's descriptor too.
        "sibling_descriptor_sha256": file_sha256(board.sibling.path) if board.sibling else None,
        "target": target.name,
        "target_descriptor_sha256": file_sha256(target.path),
        "toolchain_sha256": _tree_sha256(Path(__file__).resolve().parent),
        "runtime_c_sha256": _tree_sha256(runtime_c_dir()),
        "compiler_helpers": None if helpers is None else {
            "path": str(helpers), "sha256": helpers_sha256(helpers)},
        "tools": {**tool_versions(), "llvmlite": llvmlite.__version__,
                  "llvm": ".".join(map(str, llvmlite.binding.llvm_version_info)),
                  "numpy": np.__version__, "python": sys.version},
    }


def up_to_date(out_dir: Path, stamp: dict) -> bool:
    """True when `out_dir` holds a finished build made with exactly this stamp, whose
    artifacts are still the bytes that build wrote."""
    out_dir = Path(out_dir)
    record = read_manifest(out_dir)
    if record is None or record.get("stamp") != stamp:
        return False
    files = record["files"]
    try:
        return all(name in files and file_sha256(out_dir / name) == files[name]
                   for name in REUSED_ARTIFACTS)
    except OSError:
        return False


def default_build_dir(model: str | Path, board: Board,
                      harness: str = DEFAULT_HARNESS) -> Path:
    """build/<model>-<board>, and -device for the device harness's image."""
    suffix = "" if harness == DEFAULT_HARNESS else f"-{harness}"
    return Path("build") / f"{Path(model).stem}-{board.identifier}{suffix}"


class FirmwareFailed(Exception):
    """The firmware ran but did not finish its inference: a fault, a non-zero exit, no
    outputs written, or a profile that does not match its build."""


class OverBudget(Exception):
    """The runtime stopped the inference: it ran past the --max-cycles budget."""


@dataclass
class FirmwareRun:
    """One inference of a build under QEMU: the outputs in the model's output order (a
    complex output as a complex array), the instructions retired by the inference, and
    with a profile the per-dispatch counts and the stack (measured, reserved)."""

    outputs: list[np.ndarray]
    instructions: int | None
    profile: Profile | None = None
    device_cycles: int | None = None  # counted by the device image (DWT, SysTick or mcycle)
    stack_used: int | None = None
    stack_reserved: int | None = None
    cycles: CycleEstimate | None = None  # estimated at the board's clock (emu/cycles.py)


def run_firmware(board: Board, out_dir: Path, inputs: Sequence[np.ndarray], graph: Graph, *,
                 timeout: float | None = None, max_cycles: int | None = None,
                 profile: bool = False, model: str = "", log=print) -> FirmwareRun:
    """Runs the build in `out_dir` for `board` once under QEMU on `inputs` (already
    checked against `graph`, the graph the firmware computes). With `profile`, counts
    the instructions per dispatch too (MACs from the build's dispatches file).
    Raises OverBudget when the runtime stopped it over `max_cycles`, FirmwareFailed when
    it did not finish, EmuTimeout / EmuError when QEMU could not run it."""
    out_dir = Path(out_dir)
    module = read_module((out_dir / "model.mrt").read_bytes())
    runner = "natively" if board.simulation.native else \
        f"{board.simulation.qemu} {board.simulation.machine or ''}".rstrip()
    log(f"minirt-run: running on {board.identifier} ({runner})")
    probes: list[ProfileProbe | StackProbe] = []
    if profile:
        elf = verified_elf(board, out_dir / "firmware.elf")
        probes = [ProfileProbe(profile_layout(elf.parent / "firmware.map")),
                  stack_probe(board, elf)]
    n = len(graph.states)  # the state's slots are the image's own, not the caller's
    result = run_image(board, out_dir / "firmware.elf",
                       encode_inputs(module.inputs[:len(module.inputs) - n], inputs),
                       timeout=timeout, probes=probes)
    if result.exit_code == BUDGET_EXIT:
        raise OverBudget(f"inference stopped: over the cycle budget of {max_cycles} "
                         f"cycles (status {BUDGET_STATUS})")
    if result.exit_code != 0:
        custom = custom_op_failure(graph, result.exit_code)
        if custom is not None:
            raise FirmwareFailed(custom)
        extra = (result.console.strip() or result.stderr.strip())[-300:]
        raise FirmwareFailed(f"firmware exited with status {result.exit_code}: "
                             f"{result.diagnosis}" + (f" ({extra})" if extra else ""))
    if result.outputs is None:
        raise FirmwareFailed("firmware finished without writing its outputs")
    # A complex output arrives as its interleaved parts (passes/complex.py).
    run = FirmwareRun(complex_io(decode_outputs(module.outputs[:len(module.outputs) - n],
                                                result.outputs),
                                 graph.user_outputs), result.instructions, cycles=result.cycles)
    if profile:
        profile_probe, stack = probes
        run.profile = _profile_of(profile_probe, board, out_dir, model)  # type: ignore[arg-type]
        run.profile = run.profile.with_cycles(result.cycles,
                                              profile_probe.layout)  # type: ignore[union-attr]
        run.stack_used = stack.use.depth if stack.use else None  # type: ignore[union-attr]
        run.stack_reserved = stack_reserved(verified_elf(board, out_dir / "firmware.elf"))
    return run


# How long minirt-run --device waits for the device's answer when --timeout is not given.
DEVICE_TIMEOUT = 30.0


def run_device(board: Board, out_dir: Path, inputs: Sequence[np.ndarray], graph: Graph,
               port: str, *, timeout: float | None = None, max_cycles: int | None = None,
               log=print) -> FirmwareRun:
    """Runs one inference of the device image built in `out_dir` for `board` on the
    board on serial `port` (or its QEMU stand-in: emu/device_qemu.py), over the device
    protocol (docs/device.md). The device must hold this build's model: its input and
    output sizes are checked first. Raises OverBudget, FirmwareFailed, PortError when the
    port does not open, EmuTimeout when the device does not answer, EmuError
    (FrameError, DeviceFault) for a bad frame or a fault."""
    out_dir = Path(out_dir)
    module = read_module((out_dir / "model.mrt").read_bytes())
    data = encode_inputs(module.inputs, inputs)
    out_bytes = sum(s.byte_size for s in module.outputs)
    log(f"minirt-run: running on {board.identifier} over {port} (device image)")
    # The rate the board's image was built with (a QEMU pty ignores it).
    with DeviceLink(port, baud=board.uart.baud if board.uart else DEFAULT_BAUD,
                    timeout=DEVICE_TIMEOUT if timeout is None else timeout) as link:
        sizes = link.hello()
        if sizes != (len(data), out_bytes):
            raise FirmwareFailed(f"the device on {port} holds another model ({sizes[0]} input "
                                 f"and {sizes[1]} output bytes, this build {len(data)} and "
                                 f"{out_bytes}): flash {out_dir} to it (minirt-flash)")
        reply = link.infer(data)
    if reply.status == BUDGET_STATUS:
        raise OverBudget(f"inference stopped: over the cycle budget of {max_cycles} "
                         f"cycles (status {BUDGET_STATUS})")
    if reply.status != 0:
        raise FirmwareFailed(f"the device answered status {reply.status}: "
                             f"{describe_status(reply.status)}")
    outputs = complex_io(decode_outputs(module.outputs, reply.outputs), graph.outputs)
    return FirmwareRun(outputs, None, device_cycles=reply.cycles)


def _profile_of(probe: ProfileProbe, board: Board, out_dir: Path, model: str) -> Profile:
    """The profile of the run, MACs from the program the build scheduled (its
    dispatches file: the names are the image's own)."""
    profile = probe.profile(read_dispatch_macs(out_dir), board.identifier, model,
                            read_dispatch_layers(out_dir))
    unknown = [r.name for r in profile.rows if r.kind == "dispatch" and r.macs is None]
    if unknown:
        raise FirmwareFailed(f"{out_dir}: the image's dispatch {unknown[0]} is not in the "
                             "model's program (a stale build: rebuild it)")
    return profile
