"""Shared test helpers: where the shared model zoo lives, and skipping when it is absent.

The models are not part of the repository; they sit in `shared/models` beside it. A
test that needs them takes the `models_dir` fixture, or one of the parametrized
`shared_model` (seed + JAX models) / `jax_model` (JAX models with .npz) arguments,
and is skipped with a clear reason on a checkout without that folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models, jax_models, shared_models


@pytest.fixture
def models_dir() -> Path:
    if not have_models():
        pytest.skip(MISSING_REASON)
    return MODELS_DIR.resolve()


def _parametrize(metafunc: pytest.Metafunc, name: str, paths: list[Path]) -> None:
    if paths:
        metafunc.parametrize(name, [p.resolve() for p in paths], ids=[p.stem for p in paths])
    else:
        metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(
            reason=MISSING_REASON))], ids=["no-shared-models"])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "jax_model" in metafunc.fixturenames:
        _parametrize(metafunc, "jax_model", jax_models())
    if "shared_model" in metafunc.fixturenames:
        _parametrize(metafunc, "shared_model", shared_models())
