"""Fixtures for emulator tests: one tiny image per board, built from the link test
doubles (tests/link/doubles) and cached for the session."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.link import LinkResult, link_firmware
from toolchain.target import Board, load_board
from toolchain.target.host_cpu import native_refusal

DOUBLES = Path(__file__).resolve().parents[1] / "link" / "doubles"


def _tools_for(board: Board) -> list[str]:
    return ["clang", "ld.lld", board.simulation.qemu]


@pytest.fixture(scope="session")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Board, Path]]:
    cache: dict[str, tuple[Board, Path]] = {}

    def build(name: str) -> tuple[Board, Path]:
        if name not in cache:
            board = load_board(name)
            if board.simulation.native and native_refusal(board):
                pytest.skip(native_refusal(board))
            missing = [t for t in _tools_for(board) if shutil.which(t) is None]
            if missing:
                pytest.skip(f"missing tools: {', '.join(missing)}")
            result: LinkResult = link_firmware(
                board,
                [],
                tmp_path_factory.mktemp(f"fw-{name}"),
                runtime_parts=("platform", "harness"),
                extra_sources=[DOUBLES / "core_double.c", DOUBLES / "image_double.c"],
                extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"],
            )
            cache[name] = (board, result.elf)
        return cache[name]

    return build
