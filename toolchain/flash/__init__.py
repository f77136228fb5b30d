"""Writing a build into a board: the flash methods (pyOCD, OpenOCD, DFU, UF2 drive,
esptool, or QEMU for an emulated board) as a table, behind ``minirt-flash``."""

from toolchain.flash.build_dir import FlashBuild, open_build
from toolchain.flash.common import FlashFailed, FlashJob, Step
from toolchain.flash.methods import METHODS, Method, methods_for

__all__ = [
    "METHODS",
    "FlashBuild",
    "FlashFailed",
    "FlashJob",
    "Method",
    "Step",
    "methods_for",
    "open_build",
]
