""""Flashing" an emulated board: QEMU boots the build's .bin (the file a device would
get, at its recorded base address) with all-zero inputs, and the harness's verdict is
reported: its exit status in words, the outputs it wrote and the instructions of one
inference. A real board verified on a sibling boots there: the very image, or the copy
relinked for the sibling (verify/) when the sibling does not map the board's memories."""

from __future__ import annotations

import numpy as np

from toolchain.emu.run import EmuError, boot_image, qemu_command, run_image
from toolchain.flash.common import FlashFailed, FlashJob, Step
from toolchain.module.reader import ModuleFormatError, read_module

__all__ = ["plan", "run"]


def _where(job: FlashJob) -> str:
    board = job.board
    machine = " ".join(filter(None, (board.simulation.qemu, board.simulation.machine)))
    if board.verify_mode == "self":
        return machine
    how = "the very image" if board.verify_mode == "image" else "relinked for it"
    return f"{machine}, sibling {board.sibling.identifier}, {how}"  # type: ignore[union-attr]


def plan(job: FlashJob) -> list[Step]:
    """The QEMU command line (without the instruction-counting plugin option)."""
    bin_path = job.build.checked(".bin")
    try:
        cmd = qemu_command(job.board, job.build.elf, boot=boot_image(bin_path))
    except EmuError as e:
        cmd = [job.board.simulation.qemu, f"<{e}>"]
    return [Step(tuple(cmd))]


def _inputs(job: FlashJob) -> tuple[bytes, tuple]:
    """All-zero inputs of the module's signature, and its output signature."""
    try:
        module = read_module((job.build.dir.parent if job.board.verify_mode == "relink"
                              else job.build.dir).joinpath("model.mrt").read_bytes())
    except (OSError, ModuleFormatError) as e:
        raise FlashFailed(f"model.mrt of the build cannot be read: {e}") from None
    return bytes(sum(s.byte_size for s in module.inputs)), module.outputs


def run(job: FlashJob) -> str:
    """Boots the image and reports what the harness returned (FlashFailed unless ok)."""
    from toolchain.pipeline import decode_outputs  # numpy-heavy: only when running

    (step,) = plan(job)
    inputs, outputs = _inputs(job)
    job.say(f"booting {job.build.checked('.bin')} under QEMU ({_where(job)})")
    job.show(step)
    try:
        result = run_image(job.board, job.build.elf, inputs, boot=job.build.checked(".bin"))
    except EmuError as e:
        raise FlashFailed(str(e)) from None
    print(f"harness: exit {result.exit_code} ({result.diagnosis})", file=job.out)
    if result.exit_code != 0:
        raise FlashFailed(f"the image booted from {result.image} exited with status "
                          f"{result.exit_code}: {result.diagnosis}")
    if result.outputs is None:
        raise FlashFailed("the image finished without writing its outputs")
    with np.printoptions(precision=6, threshold=16, linewidth=100):
        for i, array in enumerate(decode_outputs(outputs, result.outputs)):
            print(f"output_{i}: {array.dtype} {list(array.shape)} {array.reshape(-1)}",
                  file=job.out)
    print(f"instructions: {result.instructions} (one inference, zero inputs)", file=job.out)
    return f"QEMU booted {result.image.name} and the harness returned ok"  # type: ignore
