"""Complex sine, cosine, tan, tanh, expm1, log1p, logistic, rsqrt, cbrt, power, atan2,
maximum and minimum on cortex-m4 firmware (passes/complex_math.py), on graph inputs, with
--check against the reference (numpy's complex128, rounded once to complex64) and each
output held to numpy's own complex value: within 1e-5 of max(|want|, 1) (a few f32 ulps
of each real function the lowering uses, times the identities' few roundings;
tests/passes/test_complex_math.py sweeps a grid on the host at 2e-5 relative).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolchain.cli import run as run_cli

MODEL = Path(__file__).resolve().parent / "data" / "complex_math" / "complex_math.mlir"
Z = np.array([0.5 + 0.25j, -1.5 + 2j, 3 - 0.5j, -0.2 - 0.7j, 25 + 1j, 0.01 + 0j], np.complex64)
W = np.array([1 + 1j, 0.5 - 0.25j, -2 + 0.5j, 0.3 + 0j, 1 - 2j, 2 + 3j], np.complex64)


def _want() -> list[np.ndarray]:
    z, w = Z.astype(np.complex128), W.astype(np.complex128)
    lex_gt = (w.real > z.real) | ((w.real == z.real) & (w.imag > z.imag))
    return [np.sin(z), np.cos(z), np.tan(z), np.tanh(z), np.expm1(z), np.log(1 + z),
            1 / (1 + np.exp(-z)), 1 / np.sqrt(z), np.exp(np.log(z) / 3), z ** w,
            -1j * np.log((w + 1j * z) / np.sqrt(w * w + z * z)),
            np.where(lex_gt, w, z), np.where(lex_gt, z, w)]


def test_complex_math_on_cortex_m4(tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", input_0=Z, input_1=W)
    rc = run_cli.main([str(MODEL), "--board", "cortex-m4", "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    out = np.load(tmp_path / "out.npz")
    for k, want in enumerate(_want()):
        got = out[f"output_{k}"]
        got = got[..., 0] + 1j * got[..., 1] if not np.iscomplexobj(got) else got
        err = np.abs(got - want) / np.maximum(np.abs(want), 1.0)
        assert err.max() <= 1e-5, (k, got, want)
