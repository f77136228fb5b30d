"""What a build depends on (its stamp), when a build directory may be reused or
replaced, and models refused before code generation because they cannot fit."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolchain import pipeline
from toolchain.link.build import LinkError
from toolchain.loader import UsageError, load_graph
from toolchain.passes import QuantizeOptions
from toolchain.target import load_board

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "examples" / "seed.mlir"


def _edited(tmp_path: Path, kind: str, name: str, **changes) -> Path:
    """A copy of a bundled descriptor with some fields changed (same file name, so the
    same identifier)."""
    data = yaml.safe_load((REPO / kind / f"{name}.yaml").read_text())
    data.update(changes)
    folder = tmp_path / kind
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _stamp(board, **kw) -> dict:
    return pipeline.build_stamp(SEED, board, kw.pop("entry", "main"), kw.pop("quantize", None))


def test_stamp_covers_board_and_target_contents(tmp_path: Path) -> None:
    """A board given by path with the bundled board's name used to share its stamp."""
    bundled = load_board("cortex-m4")
    base = _stamp(bundled)
    assert _stamp(load_board("cortex-m4")) == base
    bigger_stack = load_board(_edited(tmp_path, "boards", "cortex-m4", stack_size=0x8000))
    assert bigger_stack.identifier == bundled.identifier
    assert _stamp(bigger_stack) != base
    target = _edited(tmp_path, "targets", "cortex-m4", features="+dsp,+hwdiv,+strict-align")
    other_target = load_board(_edited(tmp_path, "boards", "cortex-m4", target=str(target)))
    assert other_target.target_info.name == "cortex-m4"
    assert _stamp(other_target) != base


def test_stamp_covers_every_option() -> None:
    board = load_board("cortex-m4")
    stamps = [_stamp(board), _stamp(board, entry="other"),
              _stamp(board, quantize=QuantizeOptions("fp16")),
              _stamp(board, quantize=QuantizeOptions("int8-weights", 64)),
              _stamp(board, quantize=QuantizeOptions("int8-weights", 65))]
    assert len({repr(s) for s in stamps}) == len(stamps)


@pytest.mark.parametrize("what", ["clang", "ld.lld", "llvmlite", "sources"])
def test_stamp_covers_tools_and_sources(what: str, monkeypatch, tmp_path: Path) -> None:
    board = load_board("x86-64")
    base = _stamp(board)
    if what in ("clang", "ld.lld"):
        real = pipeline.tool_versions()
        monkeypatch.setattr(pipeline, "tool_versions",
                            lambda: {**real, what: real[what] + " (patched)"})
    elif what == "llvmlite":
        import llvmlite
        monkeypatch.setattr(llvmlite, "__version__", llvmlite.__version__ + ".post1")
    else:
        real_tree = pipeline._tree_sha256
        monkeypatch.setattr(pipeline, "_tree_sha256",
                            lambda root: real_tree(root) + ("x" if root.name == "runtime_c"
                                                            else ""))
    assert _stamp(board) != base


def test_reuse_needs_the_same_stamp_and_untouched_artifacts(tmp_path: Path) -> None:
    board = load_board("x86-64")
    stamp = _stamp(board)
    out = tmp_path / "fw"
    pipeline.compile_graph(load_graph(SEED), board, out, log=lambda _: None, stamp=stamp)
    assert pipeline.up_to_date(out, stamp)
    assert not pipeline.up_to_date(out, _stamp(board, entry="x"))
    elf = (out / "firmware.elf").read_bytes()
    (out / "firmware.elf").write_bytes(elf[:-1] + bytes([elf[-1] ^ 1]))
    assert not pipeline.up_to_date(out, stamp)
    (out / "firmware.elf").write_bytes(elf)
    assert pipeline.up_to_date(out, stamp)
    (out / "model.mrt").unlink()
    assert not pipeline.up_to_date(out, stamp)


def test_out_dir_must_be_a_new_empty_or_build_directory(tmp_path: Path) -> None:
    pipeline.check_out_dir(tmp_path / "new" / "fw")
    (tmp_path / "empty").mkdir()
    pipeline.check_out_dir(tmp_path / "empty")
    (tmp_path / "file").write_text("mine")
    with pytest.raises(UsageError, match="file: exists and is not a directory"):
        pipeline.check_out_dir(tmp_path / "file")
    with pytest.raises(UsageError, match="file is not a directory"):
        pipeline.check_out_dir(tmp_path / "file" / "fw")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"not a minirt build \(it holds notes.txt"):
        pipeline.check_out_dir(tmp_path / "docs")
    # compile_graph refuses too, and leaves the user's file alone.
    with pytest.raises(UsageError):
        pipeline.compile_graph(load_graph(SEED), load_board("x86-64"), tmp_path / "docs",
                               log=lambda _: None)
    assert (tmp_path / "docs" / "notes.txt").read_text() == "mine"


def test_a_model_larger_than_the_board_is_refused_before_codegen(tmp_path: Path) -> None:
    """Two live 600 MB tensors: an arena past the module format's 30-bit offsets, which
    used to end in a PackError traceback; it is a board that is too small."""
    t = "tensor<12000x12500xf32>"
    model = tmp_path / "big.mlir"
    model.write_text(f"func.func @main(%a: {t}) -> {t} {{\n"
                     f"  %0 = stablehlo.exponential %a : {t}\n"
                     f"  %1 = stablehlo.exponential %0 : {t}\n"
                     f"  %2 = stablehlo.add %0, %1 : {t}\n"
                     f"  return %2 : {t}\n}}\n")
    with pytest.raises(LinkError, match=r"the model for board x86-64 does not fit the board's "
                                        r"memory: it overflows RAM by at least \d+ bytes \(arena "
                                        r"\d+ B, I/O buffers 1200000000 B, stack 65536 B; RAM "
                                        r"536870912 B\)"):
        pipeline.compile_graph(load_graph(model), load_board("x86-64"), tmp_path / "fw",
                               log=lambda _: None)
    assert list(tmp_path.iterdir()) == [model]


def test_tree_digest_is_pathlibs_sorted_walk(tmp_path: Path) -> None:
    """_tree_sha256 walks with os.scandir; its digest stays the one of the sorted
    pathlib walk it replaced (so earlier builds' stamps stay current): component order
    ("a/b" before "a-c"), no __pycache__, no descent through a linked directory."""
    from hashlib import sha256

    from toolchain.pipeline import _tree_sha256
    from toolchain.tree_digest import SOURCE_SUFFIXES as _SOURCE_SUFFIXES

    root = tmp_path / "tree"
    for rel in ("a/b.py", "a-c.py", "a/z/deep.c", "x.h", "notes.txt", "a/__pycache__/b.py",
                "boards/m4.yaml", "s.S", "link.ld"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "linked").symlink_to(root / "a", target_is_directory=True)

    h = sha256()
    for f in sorted(root.rglob("*")):
        if f.suffix in _SOURCE_SUFFIXES and "__pycache__" not in f.parts:
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
            h.update(sha256(f.read_bytes()).digest())
    assert _tree_sha256(root) == h.hexdigest()
    (root / "a" / "b.py").write_text("changed")
    assert _tree_sha256(root) != h.hexdigest()


def test_the_helper_library_digest_is_read_once_per_identity(tmp_path: Path,
                                                              monkeypatch) -> None:
    """libgcc.a (9.5 MB) is hashed once; a library whose size or modification time
    changes (a compiler upgrade) is hashed again."""
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(tmp_path / "cache"))
    library = tmp_path / "libgcc.a"
    library.write_bytes(b"!<arch>\n" + bytes(range(256)) * 64)
    read = []
    real = pipeline.file_sha256
    monkeypatch.setattr(pipeline, "file_sha256", lambda p: read.append(p) or real(p))
    first = pipeline.helpers_sha256(library)
    assert first == real(library)
    assert pipeline.helpers_sha256(library) == first
    assert len(read) == 1
    library.write_bytes(b"!<arch>\n" + bytes(range(256)) * 65)
    assert pipeline.helpers_sha256(library) == real(library) != first
    assert len(read) == 2


def test_the_stamp_records_the_helper_library_digest() -> None:
    board = load_board("cortex-m4")
    helpers = _stamp(board)["compiler_helpers"]
    if helpers is None:
        pytest.skip("no compiler-helper library for cortex-m4 here (arm-none-eabi-gcc)")
    assert helpers["sha256"] == pipeline.file_sha256(helpers["path"])


@pytest.mark.parametrize("tree", ["toolchain", "runtime_c"])
def test_the_stamp_digests_every_file_the_tree_ships(tree: str) -> None:
    """The stamp's tree digests read only tree_digest.SOURCE_SUFFIXES; a shipped file of another
    kind (the tuning defaults, toolchain/tunedb/defaults.json, which choose schedules)
    could change while a build directory made with the old one was reused as current."""
    import subprocess

    from toolchain.tree_digest import SOURCE_SUFFIXES as _SOURCE_SUFFIXES

    listed = subprocess.run(["git", "ls-files", "--", tree], cwd=REPO, capture_output=True,
                            text=True, check=False)
    if listed.returncode != 0 or not listed.stdout.strip():
        pytest.skip(f"{REPO} is not a git checkout: no list of the files {tree} ships")
    missed = [f for f in listed.stdout.splitlines() if Path(f).suffix not in _SOURCE_SUFFIXES]
    assert not missed, f"files the build stamp does not digest: {missed}"


def test_a_changed_tuning_default_changes_the_toolchain_digest(tmp_path: Path) -> None:
    root = tmp_path / "toolchain"
    (root / "tunedb").mkdir(parents=True)
    defaults = root / "tunedb" / "defaults.json"
    defaults.write_text('{"version": 1, "entries": {}}\n')
    before = pipeline._tree_sha256(root)
    defaults.write_text('{"version": 1, "entries": {"k": {}}}\n')
    assert pipeline._tree_sha256(root) != before
