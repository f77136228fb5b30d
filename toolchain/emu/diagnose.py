"""Explains how a firmware run ended, from its exit status and fault record.

The images print nothing (every message would cost flash on every microcontroller
build); the harness exits with a code and a fault handler leaves raw registers in
the fault file (FAULT_FILE). This table is the other half of runtime_c/harness/harness.h,
runtime_c/include/minirt.h and runtime_c/platform/common/mrt_platform_util.h.
"""

from __future__ import annotations

import struct

FAULT_FILE = "mrt.fault"  # MRT_PLATFORM_FAULT_FILE in runtime_c/include/mrt_platform.h
FAULT_EXIT = 139

# mrt_status_t (minirt.h)
STATUS = {
    1: "argument error (a null pointer or a buffer too small)",
    2: "module truncated",
    3: "bad module magic",
    4: "unsupported module version",
    5: "module built for another target",
    6: "module CRC mismatch",
    7: "malformed module (an offset or binding out of range)",
    8: "the module does not fit this image's code (I/O sizes, commands or layout differ "
       "from what it was built for)",
    9: "over the cycle budget the image was built with (--max-cycles)",
}
# MRT_HARNESS_EXIT_* (runtime_c/harness/harness.h)
HARNESS = {
    16: "cannot open mrt.in",
    17: "mrt.in is shorter than the model's inputs",
    18: "mrt.in is longer than the model's inputs",
    19: "cannot create mrt.out",
    20: "writing mrt.out failed",
    21: "mrt.fb is not a valid feedback table (a stream image: runtime_c/harness/stream.c)",
}
RUN_BASE = 32  # MRT_HARNESS_EXIT_RUN_BASE: the run failed with status code - 32
BUDGET_STATUS = 9  # MRT_ERR_BUDGET
BUDGET_EXIT = RUN_BASE + BUDGET_STATUS  # the runtime stopped the inference (--max-cycles)
_FAULT_FIELDS = {1: ("Cortex-M fault", ("pc", "lr", "ipsr", "cfsr", "hfsr")),
                 2: ("RISC-V trap", ("mcause", "mepc", "mtval"))}


def decode_fault(record: bytes) -> str:
    """`HardFault pc=0x... lr=0x...` from the words a fault handler wrote."""
    words = struct.unpack(f"<{len(record) // 4}I", record[: len(record) // 4 * 4])
    if not words or words[0] not in _FAULT_FIELDS:
        return f"fault (unreadable record of {len(record)} bytes)"
    title, names = _FAULT_FIELDS[words[0]]
    if words[0] == 1 and len(words) > 3 and words[3] & 0x1FF == 3:
        title = "HardFault"
    fields = " ".join(f"{n}=0x{v:08x}" for n, v in zip(names, words[1:]))
    return f"{title} {fields}"


def describe_exit(code: int, fault: bytes | None = None) -> str:
    """One line saying why a run ended with `code`."""
    if code == 0:
        return "ok"
    if code == FAULT_EXIT:
        return decode_fault(fault) if fault else "CPU fault (no fault record)"
    if code in STATUS:
        return f"loading the module failed: {STATUS[code]} (status {code})"
    if code in HARNESS:
        return HARNESS[code]
    if code == BUDGET_EXIT:
        return f"inference stopped: {STATUS[BUDGET_STATUS]} (status {BUDGET_STATUS})"
    if RUN_BASE < code < RUN_BASE + 16 and code - RUN_BASE in STATUS:
        return f"running the module failed: {STATUS[code - RUN_BASE]} (status {code - RUN_BASE})"
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit status {code}"
