"""JAX exports with regions and control flow, as JAX 0.10.2 writes them (pretty form,
tests/e2e/data/jax/generate.py): jnp.argmax, jnp.sort, lax.fori_loop, lax.cond,
lax.switch, lax.scan (not unrolled), x.at[i].set(v), a max pool's gradient
(select_and_scatter), and a GRU cell scanned over time with an argmax readout. Each
runs with `minirt-run --check` on cortex-m4, riscv32, aarch64 and x86-64, and its
outputs match JAX's own like numpy.isclose(rtol=1e-5, atol=1e-6) (integers exactly):
the bound --check holds the firmware to, which the reference meets against JAX on every
shared model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.e2e.jax_fixture import BOARDS, run_jax_export

DATA = Path(__file__).resolve().parent / "data" / "jax"


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", ["regions", "gru"])
def test_jax_export_runs_on_board(name: str, board: str, tmp_path: Path, capsys) -> None:
    jax_out, got = run_jax_export(DATA, name, board, tmp_path, capsys)
    for key in got.files:
        want = jax_out[key]
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got[key], want, rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(got[key], want, err_msg=key)
