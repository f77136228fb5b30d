"""The whole build: model file -> verified graph -> Program -> objects -> firmware.

Everything is written into a fresh temporary directory beside the output directory and
moved into place only when every step succeeded, so a failed build leaves nothing
half-written behind.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolchain.codegen.image import emit_image_object
from toolchain.graph.ir import Graph
from toolchain.link.build import LinkResult, link_firmware
from toolchain.loader import load_graph
from toolchain.module.contract import image_contract
from toolchain.module.from_program import module_from_program
from toolchain.module.pack import TensorSig
from toolchain.module.reader import read_module
from toolchain.passes import QuantizeOptions, fold_affine, fold_constants, quantize_weights
from toolchain.schedule import Program, schedule
from toolchain.target import Board, load_board
from toolchain.types import bf16_bits, bf16_from_bits, round_to_bf16


@dataclass
class BuildResult:
    out_dir: Path
    board: Board
    graph: Graph
    program: Program
    module: bytes
    link: LinkResult

    @property
    def elf(self) -> Path:
        return self.out_dir / "firmware.elf"


def prepare_graph(graph: Graph, quantize: QuantizeOptions | None = None) -> Graph:
    """The graph the firmware computes: folded, weights stored as `quantize` says.
    The reference run on this graph is what --check compares the firmware with."""
    fold_affine(fold_constants(graph))
    return quantize_weights(graph, quantize or QuantizeOptions())


def compile_graph(graph: Graph, board: Board, out_dir: Path, log=print,
                  stamp: dict | None = None,
                  quantize: QuantizeOptions | None = None) -> BuildResult:
    """Builds firmware for `graph` into `out_dir` (replaced only on success). The graph
    is rewritten in place by prepare_graph."""
    target = board.target_info
    prepare_graph(graph, quantize)
    program = schedule(graph)
    log(f"minirt-build: {len(program.steps)} dispatches, arena {program.arena_size} B, "
        f"{len(program.constants)} constants")
    module = module_from_program(program, target.name)
    kernels = [s.kernel for s in program.steps]
    contract = image_contract(program, module, target.target_id)
    # The module must fit the code it is linked with: a disagreement here is a compiler
    # bug, caught now rather than as a firmware that refuses to load.
    read_module(module, image=contract)
    obj = emit_image_object(kernels, module, contract, program.arena_size, target)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        (tmp / "model.mrt").write_bytes(module)
        if stamp:
            (tmp / STAMP_FILE).write_text(json.dumps(stamp, indent=2) + "\n")
        (tmp / "dispatch.o").write_bytes(obj)
        link = link_firmware(board, [tmp / "dispatch.o"], tmp)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.replace(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    link = _moved(link, tmp, out_dir)
    return BuildResult(out_dir, board, graph, program, module, link)


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
                quantize: QuantizeOptions | None = None) -> BuildResult:
    """Loads `model` and builds it for board `board_name`."""
    board = load_board(board_name)
    graph = load_graph(model, entry)
    if out_dir is None:
        out_dir = default_build_dir(model, board)
    return compile_graph(graph, board, Path(out_dir), log,
                         build_stamp(model, board, entry, quantize), quantize)


STAMP_FILE = "build.json"
_ROOT = Path(__file__).resolve().parents[1]


def build_stamp(model: str | Path, board: Board, entry: str,
                quantize: QuantizeOptions | None = None) -> dict:
    """What a firmware depends on: the model's bytes, the board, the entry and the
    toolchain's own sources, so a stale build is never reused."""
    h = hashlib.sha256()
    for folder in ("toolchain", "runtime_c", "targets", "boards"):
        for f in sorted((_ROOT / folder).rglob("*")):
            if f.suffix in (".py", ".c", ".h", ".yaml", ".S"):
                h.update(f.relative_to(_ROOT).as_posix().encode())
                h.update(f.read_bytes())
    return {"model": str(model),
            "model_sha256": hashlib.sha256(Path(model).read_bytes()).hexdigest(),
            "board": board.identifier, "entry": entry, "toolchain": h.hexdigest(),
            "quantize": (quantize or QuantizeOptions()).__dict__}


def up_to_date(out_dir: Path, stamp: dict) -> bool:
    """True when `out_dir` holds a finished build with exactly this stamp."""
    try:
        old = json.loads((out_dir / STAMP_FILE).read_text())
    except (OSError, ValueError):
        return False
    return old == stamp and (out_dir / "firmware.elf").exists()


def default_build_dir(model: str | Path, board: Board) -> Path:
    return Path("build") / f"{Path(model).stem}-{board.identifier}"


# How each module element type sits in an I/O buffer (little-endian numpy dtypes), and
# the types whose host values are not those bytes: bf16 is held as float32 on the host.
_NUMPY = {"f32": "float32", "f16": "float16", "f64": "float64", "i8": "int8",
          "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
          "u32": "uint32", "u64": "uint64", "i1": "bool", "bf16": "uint16"}
_TO_BUFFER = {"bf16": lambda x: bf16_bits(round_to_bf16(np.asarray(x, dtype=np.float32)))}
_FROM_BUFFER = {"bf16": bf16_from_bits}


def module_outputs(module: bytes) -> tuple[TensorSig, ...]:
    """The output signature recorded in a module."""
    return read_module(module).outputs


def encode_inputs(signature: Sequence[TensorSig], arrays: Sequence[np.ndarray]) -> bytes:
    """The harness's input file: each array in its buffer layout, in signature order
    (bf16 as its bit patterns after rounding, i1 one byte per element, little-endian).
    Raises ValueError when the arrays do not match the signature."""
    if len(arrays) != len(signature):
        raise ValueError(f"the module takes {len(signature)} inputs, got {len(arrays)}")
    chunks = []
    for sig, x in zip(signature, arrays):
        x = np.asarray(x)
        if x.shape != sig.shape:
            raise ValueError(f"{sig.name} has shape {x.shape}, the module expects {sig.shape}")
        convert = _TO_BUFFER.get(sig.dtype.name)
        if convert is not None:
            x = convert(x)
        chunks.append(x.astype(np.dtype(_NUMPY[sig.dtype.name]).newbyteorder("<")).tobytes())
    return b"".join(chunks)


def decode_outputs(signature: tuple[TensorSig, ...], raw: bytes) -> list[np.ndarray]:
    """Splits the harness's output file into one array per output, as the host holds
    values of its type (bf16 as float32)."""
    outs, offset = [], 0
    for sig in signature:
        dt = np.dtype(_NUMPY[sig.dtype.name]).newbyteorder("<")
        n = sig.byte_size
        if offset + n > len(raw):
            raise ValueError(f"firmware wrote {len(raw)} output bytes, the signature needs "
                             f"{sum(s.byte_size for s in signature)}")
        x = np.frombuffer(raw[offset:offset + n], dtype=dt).reshape(sig.shape)
        x = x.astype(dt.newbyteorder("="))
        convert = _FROM_BUFFER.get(sig.dtype.name)
        outs.append(convert(x) if convert is not None else x)
        offset += n
    return outs
