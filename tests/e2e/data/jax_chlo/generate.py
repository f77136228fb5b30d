"""Writes the JAX fixtures of tests/e2e/test_jax_chlo.py (run with JAX installed; the
committed files were written by JAX 0.10.2 / jaxlib 0.10.2 on CPU):

    python tests/e2e/data/jax_chlo/generate.py

Each fixture is the StableHLO JAX exports (`jax.jit(f).lower(...).as_text()`, the pretty
form, unchanged) and an .npz with its inputs and JAX's outputs (`input_i`, `output_i`).

- var.mlir: jnp.var over the last axis and a layer norm written with it (chlo.square);
- gelu.mlir: jax.nn.gelu(approximate=False) (chlo.erfc) and lax.erf (chlo.erf);
- special.mlir: the lax special functions that lower to CHLO (lgamma, digamma, erf_inv,
  bessel_i1e, igamma's zeta and polygamma, nextafter, top_k, the inverse trigonometric
  and hyperbolic functions), on values inside each function's domain.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

HERE = Path(__file__).resolve().parent


def export(name: str, f, *args) -> None:
    text = jax.jit(f).lower(*args).as_text()
    (HERE / f"{name}.mlir").write_text(f"// JAX {jax.__version__}: tests/e2e/data/jax_chlo/"
                                       f"generate.py\n{text}")
    outs = jax.jit(f)(*args)
    outs = outs if isinstance(outs, tuple | list) else [outs]
    arrays = {f"input_{i}": np.asarray(a) for i, a in enumerate(args)}
    arrays.update({f"output_{i}": np.asarray(o) for i, o in enumerate(outs)})
    np.savez(HERE / f"{name}.npz", **arrays)


def var(x, g, b):
    """jnp.var, and the layer norm the issue's held-out model writes with it."""
    v = jnp.var(x, axis=-1)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    norm = (x - mean) * lax.rsqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5) * g + b
    return v, norm


def gelu(x):
    return jax.nn.gelu(x, approximate=False), lax.erf(x)


def special(x, u, p, n, q):
    return (lax.lgamma(x), lax.digamma(x), lax.erf_inv(u), lax.bessel_i1e(x),
            lax.zeta(p, q), lax.polygamma(n, q), lax.nextafter(x, u), jnp.tan(x),
            jnp.arcsin(u), jnp.arccos(u), jnp.arctan(x), jnp.sinh(x), jnp.cosh(x),
            jnp.arcsinh(x), jnp.arccosh(p), jnp.arctanh(u), *lax.top_k(x, 3))


def main() -> None:
    rng = np.random.default_rng(0)
    f32 = np.float32
    x = rng.standard_normal((4, 16)).astype(f32) * 3
    export("var", var, x, rng.standard_normal(16).astype(f32),
           rng.standard_normal(16).astype(f32))
    export("gelu", gelu, rng.standard_normal((4, 16)).astype(f32) * 3)
    xs = (rng.uniform(0.1, 8.0, (2, 8)) * rng.choice([1, -1], (2, 8))).astype(f32)
    u = rng.uniform(-0.95, 0.95, (2, 8)).astype(f32)
    p = rng.uniform(1.2, 9.0, (2, 8)).astype(f32)
    n = rng.integers(1, 4, (2, 8)).astype(f32)
    q = rng.uniform(0.5, 6.0, (2, 8)).astype(f32)
    export("special", special, xs, u, p, n, q)


if __name__ == "__main__":
    main()
