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


def _is_device_image(elf) -> bool:  # type: ignore[no-untyped-def]
    """Whether the ELF is a device image (--harness device: it has a UART driver)."""
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return bool(symtab is not None and symtab.get_symbol_by_name("mrt_uart_init"))


def _run_device(job: FlashJob, inputs: bytes, outputs: tuple) -> str:
    """A device image under QEMU: its UART on a pty, one inference on zero inputs."""
    from toolchain.emu.device_link import DeviceLink
    from toolchain.emu.device_qemu import qemu_serving
    from toolchain.pipeline import decode_outputs

    job.say(f"booting {job.build.elf} (the device image) under QEMU ({_where(job)}), its UART "
            "on a pty")
    try:
        with (qemu_serving(job.board, job.build.elf) as pty,
              DeviceLink(pty, timeout=job.board.simulation.timeout) as link):
            reply = link.infer(inputs)
    except EmuError as e:
        raise FlashFailed(str(e)) from None
    print(f"device: status {reply.status}", file=job.out)
    if reply.status != 0:
        raise FlashFailed(f"the device image answered status {reply.status}")
    with np.printoptions(precision=6, threshold=16, linewidth=100):
        for i, array in enumerate(decode_outputs(outputs, reply.outputs)):
            print(f"output_{i}: {array.dtype} {list(array.shape)} {array.reshape(-1)}",
                  file=job.out)
    print(f"cycles: {reply.cycles} (one inference, zero inputs; QEMU's clock)", file=job.out)
    return "QEMU booted the device image and it answered over its UART"


def run(job: FlashJob) -> str:
    """Boots the image and reports what the harness returned (FlashFailed unless ok)."""
    from toolchain.pipeline import decode_outputs  # numpy-heavy: only when running

    (step,) = plan(job)
    inputs, outputs = _inputs(job)
    if _is_device_image(job.build.elf):
        return _run_device(job, inputs, outputs)
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
