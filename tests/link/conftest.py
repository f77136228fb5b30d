"""Fixtures for link tests: a tiny image from the test doubles (no runtime_c/core)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.link import LinkResult, link_firmware
from toolchain.target import Board

DOUBLES = Path(__file__).resolve().parent / "doubles"


def _link_double(board: Board, out_dir: Path, extra_sources: tuple[Path, ...] = ()) -> LinkResult:
    """Links harness + platform + doubles (+ extra sources) for ``board``."""
    return link_firmware(
        board,
        [],
        out_dir,
        runtime_parts=("platform", "harness"),
        extra_sources=[DOUBLES / "core_double.c", DOUBLES / "image_double.c", *extra_sources],
        extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"],
    )


@pytest.fixture
def link_double() -> Callable[..., LinkResult]:
    """``link_double(board, out_dir, extra_sources=())`` (a fixture, so test modules in
    other directories need not import this conftest)."""
    return _link_double
