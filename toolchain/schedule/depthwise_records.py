"""The depthwise microkernels' flash records (3x3 row pairs, 5x5, 16x8), stored once
the weights have their final form (after --optimize pairs and interleaves them)."""

from __future__ import annotations

from collections.abc import Callable

from toolchain.schedule.depthwise5_records import store_depthwise5_records
from toolchain.schedule.depthwise16_records import store_depthwise16_records
from toolchain.schedule.program import Program
from toolchain.schedule.row_pair_records import store_row_pair_records
from toolchain.target.descriptors import Target

# Each takes the layers its own plan accepts and leaves the others alone, so the order
# only decides which kernel a layer both would take goes to (none overlap today).
STORES = (store_row_pair_records, store_depthwise5_records, store_depthwise16_records)


def store_depthwise_records(program: Program, target: Target,
                            room: Callable[[], int]) -> None:
    """Bind every depthwise layer a microkernel takes to its records in flash while they
    fit `room()`, the flash left, asked again after each kernel's records are placed."""
    for store in STORES:
        store(program, target, room())
