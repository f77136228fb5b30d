"""The tuner tests' environment: no user tuning database unless a test gives one (the
layer they tune is in tests/tune_models.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_user_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests decide which user database a build reads."""
    monkeypatch.delenv("MINIRT_TUNING_DB", raising=False)
