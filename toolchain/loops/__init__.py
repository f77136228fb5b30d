"""The loop stage: Kernel + target -> LoopSchedule (how the kernel's domain becomes loops).

- schedule.py: the LoopSchedule / Nest / Phase types and their printed form;
- rules.py: `choose_schedule(kernel, target)`, from the target's capabilities;
- tables.py: what each SIMD instruction set, dot step and code budget offers a tile;
- cost.py: the instruction model a tile is costed with, and the registers it must fit;
- access.py: what the rules read off a kernel's loads (dims, offsets, word packing,
  the interior where no bounds check fails);
- affine.py: affine forms and intervals of index expressions, used to prove loads in
  bounds and to simplify index arithmetic;
- phases.py: transposed convolutions split by output phase; the kernel each nest computes.

Code generation (toolchain/codegen) takes a kernel with its schedule.
"""

from toolchain.loops.phases import nest_kernel, phases_of
from toolchain.loops.rules import choose_schedule, interior_ranges
from toolchain.loops.schedule import LoopSchedule, Nest, Phase

__all__ = ["LoopSchedule", "Nest", "Phase", "choose_schedule", "interior_ranges", "nest_kernel",
           "phases_of"]
