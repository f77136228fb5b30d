"""Reports about a built firmware image: where its flash and RAM go.

The names below are imported lazily from ``toolchain.report.size`` so that
``python -m toolchain.report.size`` does not import the module twice.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "FLASH_COMPONENTS",
    "RAM_COMPONENTS",
    "MapSection",
    "SizeReport",
    "SymbolSize",
    "parse_map",
    "size_report",
    "size_report_from_files",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("toolchain.report.size"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
