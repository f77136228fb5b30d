"""Running a scheduled Program on the host, command by command as runtime_c's
executor runs it: branches return the command byte offset to continue at, kernels run
through the kernel interpreter (other kinds through their host runners) in one byte
arena. Along the way every arena read must see the bytes its own buffer's last write
left there, whatever the loop iteration: a buffer the plan let another overlap fails."""

from __future__ import annotations

import numpy as np

from toolchain.kernel.branch import Branch
from toolchain.kernel.form import Kernel
from toolchain.kernel.interpret import run_kernel
from toolchain.kernel.kinds import run_other_kind
from toolchain.module.from_program import command_offsets, image_kernels
from toolchain.schedule import Program


def run_program(program: Program, inputs: list[np.ndarray],
                max_commands: int = 100_000) -> list[np.ndarray]:
    """Runs `program` like runtime_c's executor; checks every arena read against the
    write that owns those bytes (a later allocation must not have overlapped it)."""
    arena = np.zeros(max(program.arena_size, 1), np.uint8)
    owner = np.full(arena.size, -1)  # per arena byte: the buffer that last wrote it
    outs = [np.zeros(t.shape, t.dtype.np_dtype) for t in program.outputs]
    # What the image's code runs: branches return command byte offsets, as on the device.
    kernels = image_kernels(program)
    *starts, end = command_offsets(program)
    offsets = {pos: k for k, pos in enumerate(starts)}

    def view(buf, t):
        if buf.kind == "input":
            return inputs[buf.index]
        if buf.kind == "output":
            return outs[buf.index]
        if buf.kind == "constant":
            return program.constants[buf.index]
        return arena[buf.index:buf.index + buf.size].view(t.dtype.np_dtype).reshape(t.shape)

    k = 0
    for _ in range(max_commands):
        if k == len(program.steps):
            return outs
        step = program.steps[k]
        n_in = len(step.kernel.operands)  # in-place kinds read their results too: not here
        # The schedule makes one Buffer object per tensor: its id is the tensor's.
        for b in step.buffers[:n_in]:
            if b.kind == "arena":
                made = set(owner[b.index:b.index + b.size].tolist())
                assert made == {id(b)}, f"command {k} ({step.kernel.name}) reads a " \
                    "clobbered buffer"
        # In-place kinds (a sort, a scatter) read their results as well.
        n_args = len(step.types) if getattr(step.kernel, "in_place", False) else n_in
        args = [view(b, t).copy() for b, t in list(zip(step.buffers, step.types))[:n_args]]
        if isinstance(step.kernel, Branch):
            target = kernels[k].targets[_pick(step.kernel, args)]
            assert target in offsets or target == end, f"branch to {target}"
            k = offsets.get(target, len(program.steps))
            continue
        if isinstance(step.kernel, Kernel):
            results = [run_kernel(step.kernel, args)]
        else:
            results = run_other_kind(step.kernel, args)
        n_out = len(results)
        for out, t, value in zip(step.buffers[-n_out:], step.types[-n_out:], results):
            view(out, t)[...] = value
            if out.kind == "arena":
                owner[out.index:out.index + out.size] = id(out)
        k += 1
    raise AssertionError(f"still running after {max_commands} commands")


def _pick(branch: Branch, args: list[np.ndarray]) -> int:
    """The target index a branch's selector picks (kernel/branch.py)."""
    if not args:
        return 0
    v = int(args[0])
    if args[0].dtype == np.bool_:
        return 1 if v else 0
    return v if 0 <= v < len(branch.targets) else len(branch.targets) - 1


def kernel_steps(program: Program, inputs: list[np.ndarray]) -> list[tuple]:
    """(step, operand arrays, the interpreter's result) for each step of a straight-line
    program of kernels, run in order so each sees its producers' results: what a test
    of one dispatch's generated code compares against."""
    arena = np.zeros(max(program.arena_size, 1), np.uint8)
    outs: dict[int, np.ndarray] = {}

    def view(buf, t):
        if buf.kind == "input":
            return inputs[buf.index]
        if buf.kind == "constant":
            return program.constants[buf.index]
        if buf.kind == "output":
            return outs.setdefault(buf.index, np.zeros(t.shape, t.dtype.np_dtype))
        return arena[buf.index:buf.index + buf.size].view(t.dtype.np_dtype).reshape(t.shape)

    out = []
    for step in program.steps:
        k = step.kernel
        args = [view(b, t).copy() for b, t in zip(step.buffers, k.operands, strict=False)]
        result = run_kernel(k, args)
        view(step.buffers[-1], k.result)[...] = result
        out.append((step, args, result))
    return out
