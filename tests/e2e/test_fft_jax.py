"""FFT and complex arithmetic exported from JAX (JAX 0.10.2, pretty form,
tests/e2e/data/jax_fft/generate.py): an audio front-end's spectrogram (`jnp.fft.rfft`
of Hann-windowed frames, power and log), and fft / ifft / irfft / fft2 / rfft on
lengths 8, 12, 7 and 17 with complex multiply, divide, exp, log, sqrt, abs and sign.
Each runs with `minirt-run --check` on cortex-m4, riscv32, aarch64 and x86-64, and
matches JAX's own outputs:

- transforms and complex values: |got - jax| <= 1e-5 * max|jax| + 1e-6 per output,
  the normwise FFT bound of tests/passes/test_fft.py (a few eps * log2(n) * ||x||)
  with room for JAX's own f32 rounding; we measured at most 2.4e-6 (the spectrogram's
  bins, max|X| ~ 25);
- the log power spectrum: power + 1e-6 compared relatively, rtol 1e-3 — log amplifies
  the absolute error of the smallest bins (power ~ 1e-4, where 2e-6 of spectrum error is
  a 2e-4 change of the log; measured 2.2e-4 absolute).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.e2e.jax_fixture import BOARDS, run_jax_export

DATA = Path(__file__).resolve().parent / "data" / "jax_fft"


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", ["spectrogram", "fft_ops"])
def test_jax_fft_runs_on_board(name: str, board: str, tmp_path: Path, capsys) -> None:
    jax_out, got = run_jax_export(DATA, name, board, tmp_path, capsys)
    assert sorted(got.files) == sorted(k for k in jax_out.files if k.startswith("output_"))
    for key in got.files:
        want, have = jax_out[key], got[key]
        assert have.dtype == want.dtype and have.shape == want.shape, key
        if name == "spectrogram" and key == "output_0":  # log(power + 1e-6)
            np.testing.assert_allclose(np.exp(have), np.exp(want), rtol=1e-3, err_msg=key)
            continue
        bound = 1e-5 * np.max(np.abs(want)) + 1e-6
        assert np.max(np.abs(have - want)) <= bound, key
