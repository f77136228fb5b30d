"""Writes the JAX fixtures of tests/e2e/test_fft_jax.py (run with JAX installed; the
committed files were written by JAX 0.10.2 / jaxlib 0.10.2 on CPU):

    python tests/e2e/data/jax_fft/generate.py

Each fixture is the StableHLO JAX exports (`jax.jit(f).lower(...).as_text()`, the pretty
form, unchanged) and an .npz with its inputs and JAX's outputs (`input_i`, `output_i`).

- spectrogram.mlir: an audio front-end, `jnp.fft.rfft` of 4 Hann-windowed frames of 64
  samples, then the power spectrum and its log (and the complex rfft itself);
- fft_ops.mlir: `jnp.fft.fft`, `ifft`, `irfft` and `fft2`, on lengths 8 (radix 2), 12
  (mixed radix), 7 (a DFT matrix) and 17 (Bluestein), and complex arithmetic
  (multiply, divide, exp, log, sqrt, abs, sign) on a complex64 input.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent


def export(name: str, f, *args) -> None:
    text = jax.jit(f).lower(*args).as_text()
    (HERE / f"{name}.mlir").write_text(f"// JAX {jax.__version__}: tests/e2e/data/jax_fft/"
                                       f"generate.py\n{text}")
    outs = jax.jit(f)(*args)
    outs = outs if isinstance(outs, tuple | list) else [outs]
    arrays = {f"input_{i}": np.asarray(a) for i, a in enumerate(args)}
    arrays.update({f"output_{i}": np.asarray(o) for i, o in enumerate(outs)})
    np.savez(HERE / f"{name}.npz", **arrays)


def spectrogram(frames):
    window = jnp.hanning(frames.shape[-1]).astype(frames.dtype)
    spectrum = jnp.fft.rfft(frames * window)
    power = jnp.real(spectrum * jnp.conj(spectrum))
    return jnp.log(power + 1e-6), spectrum


def fft_ops(z, w, r7, r17):
    return (jnp.fft.fft(z), jnp.fft.ifft(w), jnp.fft.irfft(z[:, :5], n=8),
            jnp.fft.fft2(w.reshape(3, 2, 6)), jnp.fft.rfft(r7), jnp.fft.fft(r17 + 0j),
            z[:, :4] * w[:, :4] / (z[:, 4:] + 1.5), jnp.exp(w), jnp.log(z), jnp.sqrt(w),
            jnp.abs(z), jnp.sign(w))


def main() -> None:
    rng = np.random.default_rng(7)
    t = np.arange(64) / 16000.0
    tones = np.sin(2 * np.pi * np.array([440.0, 1000.0, 2500.0, 6000.0])[:, None] * t)
    frames = (tones + 0.1 * rng.standard_normal((4, 64))).astype(np.float32)
    export("spectrogram", spectrogram, frames)

    def cplx(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(
            np.complex64)

    export("fft_ops", fft_ops, cplx(3, 8), cplx(3, 12),
           rng.standard_normal((2, 7)).astype(np.float32),
           rng.standard_normal((2, 17)).astype(np.float32))


if __name__ == "__main__":
    main()
