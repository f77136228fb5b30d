"""`minirt-build --emit library` of a model with an operator of the user's own
(docs/custom-ops.md): the archive holds the user's kernel, calls nothing outside, and
exports the failure record beside the entry points."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from toolchain.graph.custom_ops import custom_ops_by_code
from toolchain.library import build_library
from toolchain.loader import load_graph
from toolchain.target import load_board

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_op"


def test_library_holds_the_kernel_and_exports_the_failure_record(tmp_path: Path) -> None:
    missing = [t for t in ("clang", "ld.lld", "llvm-objcopy", "llvm-ar", "llvm-nm")
               if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    ops = custom_ops_by_code([f"SoftsignGain={EXAMPLE / 'kernel.c'},"
                              f"{EXAMPLE / 'reference.py'}"])
    graph = load_graph(EXAMPLE / "softsign.tflite", custom_ops=ops)
    out = tmp_path / "lib"
    build_library(graph, load_board("cortex-m4"), out, name="softsign",
                  model="softsign.tflite", log=lambda *_: None)
    nm = subprocess.run(["llvm-nm", str(out / "libminirt_softsign.a")], capture_output=True,
                        text=True, check=True).stdout
    symbols = [(p[-2], p[-1]) for p in (ln.split() for ln in nm.splitlines()) if len(p) >= 2]
    names = {name for _, name in symbols}
    exported = sorted(name for kind, name in symbols if kind.isupper())
    assert exported == ["mrt_custom_op_failure", "softsign_init", "softsign_run"]
    assert {"softsign_gain", "mrt_custom_op_failed"} <= names
    assert not [name for kind, name in symbols if kind in ("U", "w", "v")]
    assert (out / "mrt_custom_op.h").read_text() == \
        (ROOT / "runtime_c" / "include" / "mrt_custom_op.h").read_text()
