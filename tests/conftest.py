"""Shared test helpers: where the shared model zoo lives, and skipping when it is absent.

The models are not part of the repository; they sit in `shared/models` beside it. A
test that needs them takes the `models_dir` fixture, or one of the parametrized
`shared_model` (seed + JAX models) / `jax_model` (JAX models with .npz) arguments,
and is skipped with a clear reason on a checkout without that folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models, jax_models, shared_models


@pytest.fixture(scope="session", autouse=True)
def _object_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Builds cache compiled runtime objects (toolchain/link/object_cache.py) in the
    user's cache directory; the tests keep theirs in a temporary one, shared by the
    session (its own subprocesses included), unless MINIRT_CACHE_DIR says where."""
    if os.environ.get("MINIRT_CACHE_DIR"):
        yield
        return
    os.environ["MINIRT_CACHE_DIR"] = str(tmp_path_factory.mktemp("minirt-cache"))
    try:
        yield
    finally:
        os.environ.pop("MINIRT_CACHE_DIR", None)


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
