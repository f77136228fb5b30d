"""JAX exports that lower to CHLO, as JAX 0.10.2 writes them (pretty form,
tests/e2e/data/jax_chlo/generate.py): jnp.var and a layer norm written with it
(chlo.square), jax.nn.gelu(approximate=False) (chlo.erfc) with lax.erf (chlo.erf), and
the lax special functions (lgamma, digamma, erf_inv, bessel_i1e, zeta, polygamma,
nextafter, top_k, the inverse trigonometric and hyperbolic functions). Each runs with
`minirt-run --check` on cortex-m4, riscv32, aarch64 and x86-64, and its outputs match
JAX's own like numpy.isclose(rtol=1e-5, atol=1e-6) (integers exactly), the bound --check
holds the firmware to. JAX computes these functions in f32 with its own
approximations; the largest difference measured is lgamma's, 1.6e-5 relative on a
result of 0.03 (an absolute 5e-7, inside atol)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.e2e.jax_fixture import BOARDS, run_jax_export

DATA = Path(__file__).resolve().parent / "data" / "jax_chlo"


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", ["var", "gelu", "special"])
def test_jax_chlo_export_runs_on_board(name: str, board: str, tmp_path: Path, capsys) -> None:
    jax_out, got = run_jax_export(DATA, name, board, tmp_path, capsys)
    assert len(got.files) == len([k for k in jax_out.files if k.startswith("output_")])
    for key in got.files:
        want = jax_out[key]
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got[key], want, rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(got[key], want, err_msg=key)


def test_the_fixtures_hold_chlo() -> None:
    """The exports exercise what they claim: CHLO ops, not StableHLO decompositions."""
    text = {n: (DATA / f"{n}.mlir").read_text() for n in ("var", "gelu", "special")}
    assert "chlo.square" in text["var"]
    assert "chlo.erfc" in text["gelu"] and "chlo.erf " in text["gelu"]
    for op in ("lgamma", "digamma", "erf_inv", "bessel_i1e", "zeta", "polygamma",
               "next_after", "top_k", "asin", "acos", "atan", "sinh", "cosh", "asinh",
               "acosh", "atanh"):
        assert f"chlo.{op}" in text["special"], op
