"""Running firmware images under QEMU, with exact instruction counts from a TCG plugin."""

from toolchain.emu.plugin import PluginBuildError, build_plugin, cache_dir
from toolchain.emu.run import (
    BENCH_BEGIN,
    BENCH_END,
    EmuError,
    EmuTimeout,
    RunResult,
    bench_markers,
    qemu_command,
    run_image,
)

__all__ = [
    "BENCH_BEGIN",
    "BENCH_END",
    "EmuError",
    "EmuTimeout",
    "PluginBuildError",
    "RunResult",
    "bench_markers",
    "build_plugin",
    "cache_dir",
    "qemu_command",
    "run_image",
]
