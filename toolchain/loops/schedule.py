"""The loop schedule of one dispatch: how its Kernel's domain becomes loops.

The Kernel (kernel/form.py) says what each output element is; a LoopSchedule says in
which order and shape the loops compute it, in the spirit of Halide's split of
algorithm and schedule. Code generation (codegen/emit.py, codegen/nest.py) follows it;
the result is the same whatever the schedule, up to the rounding of float sums (the
reduction order, and FMA's single rounding of x*y+acc).

A schedule is one or more `Nest`s, each a loop nest over (a phase of) the domain:

- `order`: the parallel dims, outermost first; `reduction`: the reduced dims that stay
  loops, outermost first (the others are unrolled: `unroll`).
- `blocks`: register blocking (unroll-and-jam) of parallel dims: with (3, 4), each pass
  over the reduction computes 4 consecutive outputs along dim 3, so a value they share
  (a weight, an input pixel) is loaded once and reused from a register. Extents that
  are no multiple of the factor end with one smaller tile.
- `interior`: for a dim whose loads are bounds-checked (a padded window), the range
  [lo, hi) of its values where every tap of the window is inside the operand. The
  interior runs with no bounds checks and affine addresses (a loop-invariant base plus
  constant offsets); the border, the rest of the dim, keeps the checks.
- `phases`: a transposed convolution (lhs_dilation m > 1) computes each output residue
  modulo m on its own, with only the taps that meet a real input element, so the zeros
  the dilation inserts are never multiplied.
- `vector`: lanes the innermost loop is meant for (0: scalar code); in a float
  reduction, the lanes its tile's outputs along the result's last dim are blocked in
  whole vectors of (loops/cost.py `FloatLanes`, which LLVM's SLP vectorizer makes
  vector FMAs of).
- `partials`: the reduction order. With P > 1 each output folds into P partial sums
  (by the innermost reduction loop's index modulo P), added at the end; a float sum's
  rounding error grows with the length of its chain, and the chains are independent
  (the loop is also unrolled P times).
- `dot`: an int8 sum of products runs its innermost reduced dim 4 elements at a time
  with the target's packed instructions of that kind (codegen/dot.py: `dsp` is SXTB16 +
  SMLAD), where both operands are contiguous, aligned and need no bounds check; the
  vector kinds (codegen/dot_vector.py: `neon`, `sdot`, `avx2`, `mve`) 16 at a time,
  from any address. `lanes`: the tile's outputs along a parallel dim both int8
  operands are contiguous in (a depthwise convolution's channels) are computed 16 at a
  time in the lanes of vector accumulators.
- `reverse`: the parallel tiles run in the reverse of that order (every parallel loop
  counts down, a border around its interior runs its high side first; the points of a
  tile keep their order). The result is the same; what changes is which input bytes
  are still unread when a store happens, which lets a result start above an operand it
  overlaps instead of below it (schedule/overlap.py).
- `stage`: the packed dim's input values of a pixel are paired once (runtime_c's
  mrt_pair_s8, into a stack buffer) before the loop over its output-channel tiles,
  whose microkernel calls then read them with one LDRD a step instead of a word and
  two SXTB16 (codegen/dot_ukernel.py). The number of pixels staged together: 1, or 2
  for the 2x4 microkernel (two pixels, blocked by 2 in their dim, whose inputs are
  staged interleaved, against weights with their rows interleaved: `Kernel.interleaved`).
- `row_pairs`: an int8 depthwise window of 3 rows, stride 1 along them, computed for
  two output rows at a time with its taps' rows paired in SMLAD: per column of the
  window, the input of rows (y-1, y) against the weights (w0, w1) for row y, and of
  rows (y+1, y+2) against (w1, w2) for row y+1, each row's third tap a SMLABB / SMLABT
  of one input against a half of the same weight words (codegen/depthwise_pairs.py,
  loops/depthwise.py).
- `im2col`: an int8 convolution over 1-4 input channels whose every output pixel's
  window is staged once and dotted with all output channels by one microkernel call a
  layer (codegen/first_layers.py, schedule/first_layer_records.py).
- `depthwise5`: an int8 depthwise 5x5 window of stride 1, two output rows a call of its
  microkernel over staged pairs of rows (loops/depthwise5.py, codegen/depthwise5.py).
- `depthwise16`: a 16x8 depthwise 3x3 window of stride 1 or 2, one call of its microkernel
  a layer over staged pairs of rows (loops/depthwise16.py, codegen/depthwise16.py).
- `fewout`: an int8 convolution to 1-7 output channels whose input rows are staged once
  and computed two pixels x two channels a tile by one runtime call a layer
  (codegen/fewout.py, schedule/fewout_records.py).
- `tap_rest`: a two-pixel staged window whose taps are 16 channels of which the last 3
  are zero weights (13 input channels padded to 16): each tap's first 12 channels are
  staged, then every tap's 13th together, 4 a step (schedule/tap_rest.py,
  runtime_c's mrt_pair2w3r_s8): 30 steps for a 3x3 window where 36 carried 3/16 zeros.
- `fma` (whole schedule): float multiply-adds of the reduction are fused
  (`llvm.fmuladd`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LoopSchedule", "Nest", "Phase"]


@dataclass(frozen=True)
class Phase:
    """Output dim `dim` restricted to `factor * i + residue`; reduced dim `tap` to the
    taps `first + step * t` that read real elements (no inserted zero) there."""

    dim: int
    factor: int
    residue: int
    tap: int
    first: int
    step: int

    def __str__(self) -> str:
        return (f"d{self.dim}={self.factor}*i+{self.residue} "
                f"d{self.tap}={self.first}+{self.step}*t")


@dataclass(frozen=True)
class Nest:
    """One loop nest: see the module doc for each field."""

    domain: tuple[int, ...]
    n_parallel: int
    order: tuple[int, ...]
    reduction: tuple[int, ...] = ()
    unroll: tuple[int, ...] = ()
    blocks: tuple[tuple[int, int], ...] = ()
    interior: tuple[tuple[int, int, int], ...] = ()
    phases: tuple[Phase, ...] = ()
    vector: int = 0
    partials: int = 1
    dot: str = ""
    reverse: bool = False
    stage: int = 0
    row_pairs: bool = False
    im2col: bool = False
    depthwise5: bool = False
    fewout: bool = False
    tap_rest: bool = False
    depthwise16: bool = False

    def block(self, dim: int) -> int:
        """The register-blocking factor of parallel dim `dim` (1: not blocked)."""
        return dict(self.blocks).get(dim, 1)

    def interior_of(self, dim: int) -> tuple[int, int] | None:
        """[lo, hi) of the unchecked interior of `dim`, or None when it is not split."""
        for d, lo, hi in self.interior:
            if d == dim:
                return lo, hi
        return None

    def format(self) -> str:
        """One line: `loops d1 d2 d3x4 | d6 unroll d4 d5 interior d1[1,24) ...`."""
        par = " ".join(f"d{d}" + (f"x{self.block(d)}" if self.block(d) > 1 else "")
                       + f"<{self.domain[d]}>" for d in self.order)
        red = " ".join(f"d{d}<{self.domain[d]}>" for d in self.reduction)
        parts = [f"loops {par or '-'}"]
        if red:
            parts.append(f"| {red}")
        if self.unroll:
            parts.append("unroll " + " ".join(f"d{d}<{self.domain[d]}>" for d in self.unroll))
        if self.interior:
            parts.append("interior " + " ".join(f"d{d}[{lo},{hi})"
                                                for d, lo, hi in self.interior))
        if self.phases:
            parts.append("phase " + ", ".join(str(p) for p in self.phases))
        if self.partials > 1:
            parts.append(f"partials {self.partials}")
        if self.dot:
            parts.append(f"dot {self.dot}")
        if self.vector:
            parts.append(f"vector {self.vector}")
        if self.reverse:
            parts.append("reverse")
        if self.stage:
            parts.append("staged" if self.stage == 1 else f"staged x{self.stage}")
        if self.row_pairs:
            parts.append("row pairs")
        if self.im2col:
            parts.append("im2col")
        if self.depthwise5:
            parts.append("depthwise 5x5 pairs")
        if self.fewout:
            parts.append("fewout")
        if self.tap_rest:
            parts.append("tap rests gathered")
        if self.depthwise16:
            parts.append("depthwise 16x8 pairs")
        return " ".join(parts)


@dataclass(frozen=True)
class LoopSchedule:
    """The loop nests of one dispatch (one nest unless the kernel is split by phase)."""

    kernel: str
    nests: tuple[Nest, ...]
    fma: bool = False

    def format(self) -> str:
        """The dispatch's name, then one indented line per nest."""
        head = f"{self.kernel}:" + (" fma" if self.fma else "")
        return "\n".join([head] + [f"  {n.format()}" for n in self.nests])
