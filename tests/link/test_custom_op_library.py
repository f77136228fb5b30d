"""`minirt-build --emit library` of a model with an operator of the user's own
(docs/custom-ops.md): the archive holds the user's kernel, calls nothing outside, and
exports the failure record and the (weak) failure hook beside the entry points."""

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
    assert exported == ["mrt_custom_op_failed", "mrt_custom_op_failure", "softsign_init",
                        "softsign_run"]
    # The failure hook is weak: a firmware's own definition replaces it.
    assert ("W", "mrt_custom_op_failed") in symbols
    assert "softsign_gain" in names
    assert not [name for kind, name in symbols if kind in ("U", "w", "v")]
    assert (out / "mrt_custom_op.h").read_text() == \
        (ROOT / "runtime_c" / "include" / "mrt_custom_op.h").read_text()


APP = r"""
#include <stdint.h>
#include <stdio.h>
#include "softsign.h"
#include "mrt_custom_op.h"

static uint32_t seen_ordinal = 99;
static int32_t seen_status;

#ifdef OWN_HOOK /* replaces the library's weak hook */
void mrt_custom_op_failed(uint32_t ordinal, int32_t status) {
  seen_ordinal = ordinal;
  seen_status = status;
}
#endif

int main(void) {
  static float in0[SOFTSIGN_IN0_ELEMENTS], out0[SOFTSIGN_OUT0_ELEMENTS];
  int status = softsign_run(in0, out0);
  printf("%d %u %d %u\n", status, seen_ordinal, seen_status, mrt_custom_op_failure.failed);
  return 0;
}
"""


def test_a_firmware_s_own_failure_hook_replaces_the_default(tmp_path: Path) -> None:
    """A hosted program linking the library of a model whose kernel fails (returns 4):
    its own mrt_custom_op_failed is called with the ordinal and the status, and the
    default's record stays untouched; without its own, the default records the failure
    (the run itself returns MRT_OK either way)."""
    if shutil.which("clang") is None or shutil.which("llvm-ar") is None:
        pytest.skip("not installed: clang, llvm-ar")
    data = Path(__file__).resolve().parents[1] / "e2e" / "data" / "custom_op"
    ops = custom_ops_by_code([f"SoftsignGain={data / 'failing.c'},"
                              f"{EXAMPLE / 'reference.py'}"])
    out = tmp_path / "lib"
    build_library(load_graph(EXAMPLE / "softsign.tflite", custom_ops=ops),
                  load_board("x86-64"), out, name="softsign", model="softsign.tflite",
                  log=lambda *_: None)
    (tmp_path / "app.c").write_text(APP)

    def run(*flags: str) -> list[str]:
        exe = tmp_path / "app"
        subprocess.run(["clang", "-O1", "-no-pie", *flags, "-I", str(out),
                        str(tmp_path / "app.c"), str(out / "libminirt_softsign.a"),
                        "-o", str(exe)], check=True)
        return subprocess.run([str(exe)], capture_output=True, text=True,
                              check=True).stdout.split()

    assert run("-DOWN_HOOK") == ["0", "0", "4", "0"]
    assert run() == ["0", "99", "0", "1"]
