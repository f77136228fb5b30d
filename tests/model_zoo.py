"""Where the shared model zoo lives (`shared/models` beside the repository).

A plain module, not conftest, so test files can import it: several conftest.py files
in this tree would clash under the one module name `conftest`.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO / ".." / "shared" / "models"
MISSING_REASON = f"shared model folder not found ({MODELS_DIR.resolve()}); it lives beside the repo"


def have_models() -> bool:
    return (MODELS_DIR / "jax").is_dir()


def jax_models() -> list[Path]:
    return sorted((MODELS_DIR / "jax").glob("*.mlir")) if have_models() else []


def shared_models() -> list[Path]:
    if not have_models():
        return []
    seed = MODELS_DIR / "seed.mlir"
    return ([seed] if seed.exists() else []) + jax_models()
