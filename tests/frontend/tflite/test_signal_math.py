"""signal_math.py's integer blocks on their own: Sqrt64 against its closed form
(isqrt, rounded up when the remainder exceeds the root, clamped as the library's
Sqrt32 / Sqrt64 clamp), on the boundaries where an unrolled bit-by-bit root would slip:
squares, squares +- 1, root + remainder edges, 2**32 and 2**64 - 1."""

from __future__ import annotations

from math import isqrt

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.signal_fft import radices
from toolchain.frontend.tflite.signal_math import IntBuilder, sqrt64
from toolchain.graph.ir import Graph
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype


def _closed_form(n: int) -> int:
    root = isqrt(n)
    limit = 0xFFFF if n < 1 << 32 else 0xFFFFFFFF
    return root + 1 if n - root * root > root and root != limit else root


def _values() -> np.ndarray:
    out = {0, 1, 2, 3, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, (1 << 64) - 1, (1 << 63)}
    for r in (1, 2, 255, 65535, 65536, (1 << 31) - 1, 1 << 31, (1 << 32) - 1):
        for n in (r * r - 1, r * r, r * r + r, r * r + r + 1, r * r + 2 * r):
            if 0 <= n < 1 << 64:
                out.add(n)
    rng = np.random.default_rng(5)
    out.update(int(v) >> int(s) for v, s in zip(rng.integers(0, 1 << 63, 2000),
                                                rng.integers(0, 63, 2000)))
    return np.array(sorted(out), dtype=np.uint64)


def test_sqrt64_matches_its_closed_form() -> None:
    values = _values()
    graph = Graph("sqrt")
    x = graph.add_input(TensorType(values.shape, dtype("ui64")), "x")
    ctx = OpContext(None, None, graph, lambda i: x)  # type: ignore[arg-type]
    graph.outputs.append(sqrt64(IntBuilder(ctx), x))
    got = run_graph(graph, [values])[0]
    want = np.array([_closed_form(int(v)) for v in values], dtype=np.uint64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (values[bad[:5]], got[bad[:5]], want[bad[:5]])


def test_kiss_fft_factors_powers_of_two_as_it_does() -> None:
    assert radices(256) == [4, 4, 4, 4]
    assert radices(128) == [4, 4, 4, 2]
    assert radices(2) == [2]
