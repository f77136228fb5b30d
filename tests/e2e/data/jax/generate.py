"""Writes the JAX fixtures of tests/e2e/test_jax_regions.py (run with JAX installed;
the committed files were written by JAX 0.10.2 / jaxlib 0.10.2 on CPU):

    python tests/e2e/data/jax/generate.py

Each fixture is the StableHLO JAX exports (`jax.jit(f).lower(...).as_text()`, the pretty
form, unchanged) and an .npz with its inputs and JAX's outputs (`input_i`, `output_i`).

- regions.mlir: jnp.argmax, jnp.sort, lax.fori_loop, lax.cond, lax.switch, lax.scan (not
  unrolled), x.at[i].set(v) and the gradient of a max pool (select_and_scatter) in one
  function;
- gru.mlir: a GRU cell scanned over 6 time steps (lax.scan), then jnp.argmax of a
  readout: the shape of the held-out GRU model.
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
    (HERE / f"{name}.mlir").write_text(f"// JAX {jax.__version__}: tests/e2e/data/jax/"
                                       f"generate.py\n{text}")
    outs = jax.jit(f)(*args)
    outs = outs if isinstance(outs, tuple | list) else [outs]
    arrays = {f"input_{i}": np.asarray(a) for i, a in enumerate(args)}
    arrays.update({f"output_{i}": np.asarray(o) for i, o in enumerate(outs)})
    np.savez(HERE / f"{name}.npz", **arrays)


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (3, 3), (2, 2), "SAME")


def regions(x, p, k, v, i):
    """Every construct of issue 9's list that lowers to a region, on small shapes."""
    amax = jnp.argmax(x, axis=1)
    srt = jnp.sort(x, axis=1)
    fori = lax.fori_loop(0, 5, lambda j, c: c * 0.5 + x[j % 3], x[0])
    cond = lax.cond(p, lambda y: y + 1.0, lambda y: y * 2.0, x)
    switch = lax.switch(k, [lambda y: y - 1.0, lambda y: jnp.tanh(y), lambda y: -y], x)
    carry, stacked = lax.scan(lambda c, row: (c + row, c * row), jnp.zeros(5, x.dtype), x)
    updated = x.at[i].set(v)
    pool_grad = jax.grad(lambda y: (max_pool(y) * jnp.arange(6.0).reshape(2, 3)).sum())(x)
    return amax, srt, fori, cond, switch, carry, stacked, updated, pool_grad


def gru(xs, h0, wx, wh, b, wo):
    """A GRU cell over the time steps of xs, then the argmax of a linear readout."""
    def cell(h, x):
        gx = x @ wx + b
        gh = h @ wh
        n = h.shape[-1]
        r = jax.nn.sigmoid(gx[:n] + gh[:n])
        z = jax.nn.sigmoid(gx[n:2 * n] + gh[n:2 * n])
        c = jnp.tanh(gx[2 * n:] + r * gh[2 * n:])
        h = (1 - z) * c + z * h
        return h, h

    h, hs = lax.scan(cell, h0, xs)
    logits = hs @ wo
    return jnp.argmax(logits, axis=-1), h


def main() -> None:
    rng = np.random.default_rng(0)
    f32 = np.float32
    x = rng.standard_normal((3, 5)).astype(f32)
    export("regions", regions, x, np.bool_(False), np.int32(1),
           rng.standard_normal(5).astype(f32), np.int32(2))
    steps, inputs, hidden, classes = 6, 4, 8, 5
    export("gru", gru, rng.standard_normal((steps, inputs)).astype(f32),
           np.zeros(hidden, f32), (rng.standard_normal((inputs, 3 * hidden)) * 0.5).astype(f32),
           (rng.standard_normal((hidden, 3 * hidden)) * 0.5).astype(f32),
           (rng.standard_normal(3 * hidden) * 0.1).astype(f32),
           rng.standard_normal((hidden, classes)).astype(f32))


if __name__ == "__main__":
    main()
