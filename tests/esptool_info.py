"""Espressif's own reader of ESP images, for tests: ``esptool image-info`` as a subprocess.
A plain module, not conftest, so test files in several folders can import it."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest


def esptool_image_info(path: Path) -> str:
    """The output of ``esptool image-info PATH`` (``image_info`` before esptool 5), which
    must succeed; skips the test when esptool is not installed (the dev extra has it)."""
    try:
        major = int(importlib.metadata.version("esptool").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("esptool is not installed (pip install 'esptool>=4.7'; the dev extra has it)")
    command = "image-info" if major >= 5 else "image_info"
    proc = subprocess.run([sys.executable, "-m", "esptool", command, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout
