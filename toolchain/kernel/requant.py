"""Folded int8 requantization: TFLite's two rounding steps as one 64-bit add and shift.

The graph (and so the numpy reference that `--check` compares with) keeps TFLite's
`rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, M), s) + zp`. Per
output that is a 64-bit product, a nudge chosen by sign, a division toward zero, the
saturation test, then a mask, a remainder and a threshold for the rounding shift by a
per-channel exponent read at run time: ~20 instructions on Armv7E-M. When M, s and zp
are constants this module rewrites a kernel's epilogue into the equivalent

    y = hi32(x * M + K[c] + sign(x) * 2**31) >> (s - 1)
    K[c] = 2**30 + 2**(s+30) + zp * 2**(31+s)                   (per channel, at build time)

with sign(x) = x >> 31 (0 or -1). When every s >= 2 the low word of K is 2**30, so
K + sign(x) * 2**31 needs no carry: its words are (K_hi + sign(x), 2**30 | (x's top bit))
and on Armv7-M the whole is AND/BFI, ADD, one SMLAL onto that pair and one ASR (and the
SSAT of the clamp), against ~20 instructions for TFLite's two steps.

Why it is exact, for M in [0, 2**31) (never INT32_MIN, so SRDHM cannot saturate) and
t = x * M:
- SRDHM(x, M) = (t + (t >= 0 ? 2**30 : 1 - 2**30)) / 2**31, truncated, equals
  q = floor((t + 2**30) / 2**31) for every t (codegen/emit.py's _srdhm says why);
- RDBP(q, s) for s >= 1 rounds half away from zero: floor((q + 2**(s-1) - [q < 0]) / 2**s).
  [q < 0] may be read as [x < 0]: with M >= 0 they differ only where q = 0 and x < 0,
  and there both give floor((2**(s-1) - 1 or 2**(s-1)) / 2**s) = 0;
- nested floors fold, floor((floor(a / 2**31) + c) / 2**s) = floor((a + c * 2**31) / 2**(31+s))
  for an integer c, and adding zp * 2**(31+s) before the floor adds zp after it.
So y = floor((t + 2**30 + 2**(s+30) - [x < 0] * 2**31 + zp * 2**(31+s)) / 2**(31+s)), and
since 31 + s >= 32 that is the high word shifted by s - 1. tests/kernel/test_requant.py
checks the identity exhaustively on small ranges and on random and extreme int32 x.

A kernel qualifies only when the fold is exact for every int32 x: every s in [1, 31]
(a channel with s = 0 or a left shift keeps TFLite's steps, as does the whole kernel),
every M in [0, 2**31), and the 64-bit sum and the int32 result cannot overflow (zp
large against a large s could; then zp alone is added after the shift). Decided per
kernel at build time from the constants.

The per-channel values the folded form reads (the bias of `acc + bias`, M, K's high
word, s - 1) go into one i32 record per channel, so an output's loads share one address
(LDM / LDRD with immediate offsets) instead of one address computation per table; a
value every channel shares is an immediate, except M (see _Folder.fold).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from toolchain.kernel.form import (
    INDEX,
    Acc,
    Apply,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    postorder,
    rewrite,
    with_children,
)
from toolchain.types import TensorType, dtype

__all__ = ["fold_requantization", "folded_constants", "folded_reference"]

I32, I64, U32 = dtype("i32"), dtype("i64"), dtype("ui32")
SRDHM, RDBP = "saturating_rounding_doubling_high_mul", "rounding_divide_by_pot"
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1

# The fewest output channels and reduction steps for which a layer's one multiplier is
# read per channel where the target asks for it (_Folder._long_and_wide).
SPREAD_MIN_CHANNELS, SPREAD_MIN_STEPS = 16, 32

# What a constant operand of the kernel holds (None: not a constant).
ConstantOf = Callable[[int], "np.ndarray | None"]


def folded_constants(multiplier: int, exponent: int, zero_point: int) -> int | None:
    """K for one channel (module docstring), or None when the fold is not exact for
    every int32 x: M outside [0, 2**31), s outside [1, 31], or a 64-bit sum or int32
    result that could overflow."""
    m, s, zp = int(multiplier), int(exponent), int(zero_point)
    if not (0 <= m <= _I32_MAX and 1 <= s <= 31):
        return None
    k = (1 << 30) + (1 << (s + 30)) + zp * (1 << (31 + s))
    low = _I32_MIN * m + k - (1 << 31)  # the extremes of x * M + K + sign(x) * 2**31
    high = _I32_MAX * m + k
    if low < _I64_MIN or high > _I64_MAX:
        return None
    if (low >> (31 + s)) < _I32_MIN or (high >> (31 + s)) > _I32_MAX:
        return None
    return k


def folded_reference(x: np.ndarray, multiplier: int, exponent: int, zero_point: int
                     ) -> np.ndarray:
    """The folded form in numpy int64 (what the rewritten kernel computes), for tests:
    hi32(x * M + K + sign(x) * 2**31) >> (s - 1)."""
    k = folded_constants(multiplier, exponent, zero_point)
    if k is None:
        raise ValueError(f"requantization (M={multiplier}, s={exponent}, zp={zero_point}) "
                         "does not fold")
    x = np.asarray(x, dtype=np.int64)
    total = x * np.int64(multiplier) + np.int64(k) + ((x >> 31) << 31)
    return ((total >> 32).astype(np.int32) >> (exponent - 1)).astype(np.int32)


def _values(e: Expr, constant_of: ConstantOf) -> np.ndarray | int | None:
    """A Const's value, a constant operand's array for a load of it, else None."""
    if isinstance(e, Const) and e.dtype.kind == "i":
        return int(e.value)
    if isinstance(e, Load) and e.pad is None and e.valid is None:
        arr = constant_of(e.operand)
        return None if arr is None else np.asarray(arr, dtype=np.int64)
    return None


def _pattern(e: Expr) -> tuple[Expr, Expr, Expr] | None:
    """(x, M, s) when `e` is rounding_divide_by_pot(srdhm(x, M), s) on i32."""
    if not (isinstance(e, Apply) and e.op == RDBP and e.dtype == I32):
        return None
    inner, s = e.args
    if not (isinstance(inner, Apply) and inner.op == SRDHM and inner.dtype == I32):
        return None
    return inner.args[0], inner.args[1], s


def _zero_point_add(e: Expr) -> tuple[Expr, int] | None:
    """(the rounding shift, zp) when `e` is `rdbpot(srdhm(...)) + zp` with zp a Const."""
    if not (isinstance(e, Apply) and e.op == "add" and e.dtype == I32):
        return None
    for a, b in (e.args, e.args[::-1]):
        if _pattern(a) is not None and isinstance(b, Const):
            return a, int(b.value)
    return None


class _Folder:
    """Builds the folded expression for one matched site, collecting the constant
    operands it adds to the kernel."""

    def __init__(self, kernel: Kernel, constant_of: ConstantOf, per_channel: bool = False
                 ) -> None:
        self.kernel = kernel
        # Whether a layer's shared loaded fields are still read per output channel.
        self.per_channel = per_channel
        # In a reduction's epilogue, M and K's low word are loaded even when every
        # channel shares them (see fold); in an element-wise body they are immediates.
        self.load_shared = kernel.is_reduction
        self.constant_of = constant_of
        self.new: list[tuple[TensorType, np.ndarray]] = []
        self.folds = 0

    def fold(self, site: Expr, zp: int, x: Expr) -> Expr | None:
        """The folded form of `site` (= rdbpot(srdhm(_, M), s)) + zp, over the already
        rewritten `x`; None when it does not qualify."""
        _, m_expr, s_expr = _pattern(site)
        m, s = _values(m_expr, self.constant_of), _values(s_expr, self.constant_of)
        if m is None or s is None:
            return None
        # The per-channel arrays: both loads at one index, or one of them a scalar.
        loads = [e for e, v in ((m_expr, m), (s_expr, s)) if not isinstance(v, int)]
        if len(loads) == 2 and (loads[0].index != loads[1].index
                                or np.shape(m) != np.shape(s)):
            return None
        shape = np.shape(m) if not isinstance(m, int) else np.shape(s)
        index = loads[0].index if loads else ()
        if not loads and self.load_shared and self.per_channel and self._long_and_wide():
            # One M and s for the layer: its loaded fields (M, K's low word) are read per
            # output channel all the same. At one index LLVM hoists both loads out of
            # every loop, and the two values live across the reduction loop; on a core
            # with 14 registers and no DSP microkernel (cortex-m3) that loop of 8 MLA
            # accumulators then spilled two of them every step (ad01_int8's 128x128
            # layers 2.87 -> 3.83 instructions a MAC). A load at the output channel's
            # index stays in the epilogue, as with per-channel quantization.
            last = self.kernel.n_parallel - 1
            shape, index = (self.kernel.domain[last],), (Index(last),)
        m_arr = np.broadcast_to(np.asarray(m, dtype=np.int64), shape)
        s_arr = np.broadcast_to(np.asarray(s, dtype=np.int64), shape)
        # A dead channel (M = 0: TFLite's multiplier for a zero scale, with s = 0) gives
        # zp whatever s is, folded too (K's terms stay below 2**(31+s)): give it another
        # channel's s, so the fields stay shared where they were.
        live = s_arr[m_arr != 0]
        s_arr = np.where(m_arr == 0, int(live.max()) if live.size and live.max() >= 1 else 1,
                         s_arr)
        pairs = list(zip(m_arr.ravel().tolist(), s_arr.ravel().tolist(), strict=True))
        ks = [folded_constants(mi, si, zp) for mi, si in pairs]
        after = 0  # a zero point that would overflow K is added after the shift
        if zp and any(k is None for k in ks):
            ks, after = [folded_constants(mi, si, 0) for mi, si in pairs], zp
        if any(k is None for k in ks):
            return None
        k_arr = np.asarray(ks, dtype=np.int64).reshape(shape)
        self.folds += 1
        # Every per-channel value in one record per channel (one i32 table [..., fields]):
        # the loads of an output share one address and differ by an immediate offset.
        fields: list[np.ndarray] = []

        def field(values: np.ndarray, load: bool = False) -> Expr:
            """One per-channel value: a field of the record, or an immediate when every
            channel has the same (unless `load`)."""
            values = np.broadcast_to(values, shape)
            if not load and np.all(values == values.ravel()[0]):
                return Const(int(values.ravel()[0]), I32)
            fields.append(values.astype(np.int64))
            return Load(len(self.kernel.operands) + len(self.new),
                        (*index, Const(len(fields) - 1, INDEX)))

        x = self._bias_into(x, index, shape, field)
        # M is read from memory even when every channel shares it: LLVM turns a product
        # by a constant into UMLAL + MUL (it does not see the sign extension) and hoists
        # the constant out of the loops, into a register the reduction then spills for.
        m_load = field(m_arr, load=self.load_shared)
        k_low_values = k_arr % (1 << 32)
        k_high = field(k_arr >> 32)
        shift = field(s_arr - 1)
        if isinstance(shift, Load):
            # Every s is in [1, 31] (folded_constants): with the bound LLVM drops the
            # `and 31` below, one instruction per output. The same bound for every
            # kernel keeps identical dispatches' code identical (codegen/image.py).
            shift = replace(shift, bounds=(0, 30))
        wide_x = Apply("convert", (x,), I64)
        product = Apply("multiply", (wide_x, Apply("convert", (m_load,), I64)), I64)
        sign = Apply("shift_right_arithmetic", (x, Const(31, I32)), I32)  # 0 or -1
        top = Apply("and", (x, Const(_I32_MIN, I32)), I32)  # [x < 0] * 2**31 as a word
        if np.all(k_low_values == 1 << 30):  # every s >= 2
            # K + sign * 2**31 needs no carry between its words: the low word is
            # 2**30 | (x's top bit), the high one K_high + sign.
            # 2**30 is read from the record too: as an immediate LLVM kept it in a
            # register across the reduction loop (for a BFI), which then spilled.
            pair = (Apply("add", (k_high, sign), I32),
                    Apply("or", (top, field(k_low_values, load=self.load_shared)), I32))
        elif np.all(k_low_values == 3 << 30):  # every s = 1
            # 3 * 2**30 - [x < 0] * 2**31: 2**30 | (the top bit of ~x), carry-free too.
            flipped = Apply("xor", (top, Const(_I32_MIN, I32)), I32)
            pair = (k_high, Apply("or", (flipped, Const(1 << 30, I32)), I32))
        else:  # both kinds of channel: K's low word per channel and a 64-bit add
            k_low = field(((k_low_values + (1 << 31)) % (1 << 32)) - (1 << 31))
            sign_term = Apply("shift_left", (Apply("convert", (sign,), I64), Const(31, I64)),
                              I64)
            pair = None
        if fields:
            record = np.stack(fields, axis=-1).astype(np.int32)
            self.new.append((TensorType(tuple(record.shape), I32), record))
        if pair is None:
            low64 = Apply("convert", (Apply("convert", (k_low,), U32),), I64)
            k = Apply("add", (Apply("shift_left", (Apply("convert", (k_high,), I64),
                                                   Const(32, I64)), I64), low64), I64)
            offset = Apply("add", (k, sign_term), I64)
        else:
            high_word, low_word = pair
            offset = Apply("or", (
                Apply("shift_left", (Apply("convert", (high_word,), I64), Const(32, I64)), I64),
                Apply("convert", (Apply("convert", (low_word,), U32),), I64)), I64)
        # The product is accumulated onto the offset's two words: one SMLAL on Armv7-M.
        total = Apply("add", (product, offset), I64)
        high = Apply("convert", (Apply("shift_right_arithmetic", (total, Const(32, I64)), I64),),
                     I32)
        if isinstance(shift, Const):
            out = high if shift.value == 0 else \
                Apply("shift_right_arithmetic", (high, shift), I32)
        else:
            # Every amount is in [0, 30]: `and 31` lets LLVM drop the out-of-range guard
            # the generic shift carries (one AND instead of a compare and a select).
            masked = Apply("and", (shift, Const(31, I32)), I32)
            out = Apply("shift_right_arithmetic", (high, masked), I32)
        return Apply("add", (out, Const(after, I32)), I32) if after else out

    def _long_and_wide(self) -> bool:
        """Whether the reduction has at least SPREAD_MIN_CHANNELS output channels (so
        the loop holds 8 accumulators: fewer leave registers free for the hoisted
        values) and SPREAD_MIN_STEPS steps (so a spill a step costs more than the 2
        loads an output the table does): on cortex-m3 ad01_int8's 128 -> 8 and 8 -> 128
        layers, kws_ref_model's 64 -> 12 and the sweep's 16 -> 32 to 31 -> 32 were
        slower read per channel (32 -> 32 and up 0.246-0.264 -> 0.300-0.329 MAC a
        instruction)."""
        k = self.kernel
        if not k.n_parallel:
            return False
        steps = int(np.prod(k.domain[k.n_parallel:], dtype=np.int64))
        return k.domain[k.n_parallel - 1] >= SPREAD_MIN_CHANNELS and \
            steps >= SPREAD_MIN_STEPS

    def _bias_into(self, x: Expr, index: tuple[Expr, ...], shape: tuple[int, ...],
                   field: Callable[[np.ndarray], Expr]) -> Expr:
        """x = acc + bias[c] with the bias a constant read at the requantization's own
        index: the bias becomes a field of the record too."""
        if not (index and isinstance(x, Apply) and x.op == "add" and x.dtype == I32):
            return x
        for pos, arg in enumerate(x.args):
            if isinstance(arg, Load) and arg.index == index and arg.pad is None \
                    and arg.valid is None:
                values = self.constant_of(arg.operand)
                if values is not None and np.shape(values) == shape \
                        and np.asarray(values).dtype == np.int32:
                    args = list(x.args)
                    args[pos] = field(np.asarray(values, dtype=np.int64))
                    return Apply("add", tuple(args), I32)
        return x


def fold_requantization(kernel: Kernel, constant_of: ConstantOf, per_channel: bool = False
                        ) -> tuple[Kernel, list[tuple[TensorType, np.ndarray]]]:
    """`kernel` with each qualifying requantization folded (module docstring): in a
    reduction's epilogue, or anywhere in an element-wise kernel's body (an int8 add
    rescales both inputs and its sum so). Also the constant operands the folded form
    adds, to bind after the kernel's existing ones in order. Unchanged (and no new
    operands) when nothing qualifies. `per_channel`: a layer's one multiplier is still
    read at the output channel's index (a table of it), not once (_Folder.fold)."""
    folder = _Folder(kernel, constant_of, per_channel)
    if kernel.epilogue is not None:
        changes = {"epilogue": _fold_root(kernel.epilogue, folder)}
    elif not kernel.is_reduction:
        changes = {"body": _fold_root(kernel.body, folder)}
    else:
        return kernel, []
    if not folder.folds:
        return kernel, []
    operands = kernel.operands + tuple(t for t, _ in folder.new)
    folded = replace(kernel, operands=operands, **changes)
    folded, made = _merged_biases(folded, constant_of, len(kernel.operands), folder.new)
    return _bias_into_init(folded), folder.new + made


def _constant_load(e: Expr, constant_of: ConstantOf, n_old: int,
                   new: list[tuple[TensorType, np.ndarray]]
                   ) -> tuple[tuple[Expr, ...], np.ndarray] | None:
    """(the index per element, the int32 values) an unpadded load of a constant reads:
    one of the kernel's own constant operands (its whole array), or a field of a record
    the fold made (`new`: the field's values, indexed without the field). None
    otherwise."""
    if not isinstance(e, Load) or e.pad is not None or e.valid is not None:
        return None
    if e.operand >= n_old:
        made = e.operand - n_old
        if made >= len(new) or not e.index or not isinstance(e.index[-1], Const):
            return None
        record = np.asarray(new[made][1])
        field = int(e.index[-1].value)
        if record.dtype != np.int32 or not 0 <= field < record.shape[-1]:
            return None
        return e.index[:-1], record[..., field]
    values = constant_of(e.operand)
    if values is None or np.asarray(values).dtype != np.int32:
        return None
    return e.index, np.asarray(values)


def _merged_biases(k: Kernel, constant_of: ConstantOf, n_old: int,
                   new: list[tuple[TensorType, np.ndarray]]
                   ) -> tuple[Kernel, list[tuple[TensorType, np.ndarray]]]:
    """An epilogue that reads the sum only as `(acc + a) + b`, a and b int32 constants
    read at one index (a may be a field of the fold's record: per-channel multipliers
    put the second bias there; TFLite's dense layers add the bias and the input zero point's
    correction as two tables), reads `acc + (a + b)` instead, one constant made here
    (appended to the operands, returned): wrapping int32 addition is associative, so
    every output is the same, and _bias_into_init then starts the sum from it (dense
    64 -> 10 on cortex-m4: a load and an add an output). Unchanged otherwise."""
    if k.epilogue is None or k.combine != "add" or k.acc_dtype != I32:
        return k, []
    nodes = postorder(k.epilogue)
    inner = [e for e in nodes if isinstance(e, Apply) and e.op == "add" and e.dtype == I32
             and any(isinstance(a, Acc) for a in e.args)]
    if len({id(e) for e in inner}) != 1:
        return k, []
    site = inner[0]
    outer = [e for e in nodes if isinstance(e, Apply) and any(a is site for a in e.args)]
    if len({id(e) for e in outer}) != 1 or outer[0].op != "add" or outer[0].dtype != I32:
        return k, []
    top = outer[0]
    a = next(x for x in site.args if not isinstance(x, Acc))
    b = top.args[1] if top.args[0] is site else top.args[0]
    ca, cb = _constant_load(a, constant_of, n_old, new), _constant_load(b, constant_of,
                                                                          n_old, new)
    if ca is None or cb is None or ca[0] != cb[0] or ca[1].shape != cb[1].shape:
        return k, []
    (index, va), (_, vb) = ca, cb
    total = (va.astype(np.int64) + vb.astype(np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)
    made = (TensorType(tuple(va.shape), I32), total.astype(np.int32))
    acc = next(x for x in site.args if isinstance(x, Acc))
    both = Apply("add", (acc, Load(len(k.operands), index)), I32)
    epilogue = rewrite(k.epilogue, lambda e, kids: both if e is top else with_children(e, kids))
    return replace(k, operands=k.operands + (made[0],), epilogue=epilogue), [made]


def _bias_into_init(k: Kernel) -> Kernel:
    """An integer sum whose epilogue reads the accumulator only as `acc + bias` (bias a
    load of the parallel point: the record's field) starts from the bias instead: the
    init loads it, the epilogue reads the accumulator as it is. Wrapping int32 addition
    is associative, so the sum is the same; each output saves its add (on cortex-m4 the
    bias load moves from the epilogue into the accumulator's set-up, where it replaces
    the zeroing)."""
    if k.epilogue is None or k.combine != "add" or k.acc_dtype != I32 or \
            not (isinstance(k.init, Const) and k.init.value == 0):
        return k
    adds = {id(e): e for e in postorder(k.epilogue)
            if isinstance(e, Apply) and e.op == "add" and e.dtype == I32
            and any(isinstance(a, Acc) for a in e.args)}
    accs = [e for e in postorder(k.epilogue) if isinstance(e, Acc)]
    if len(adds) != 1 or len(accs) != 1:
        return k
    (site,) = adds.values()
    bias = next(a for a in site.args if not isinstance(a, Acc))
    if not isinstance(bias, Load) or bias.pad is not None or bias.valid is not None or \
            any(isinstance(e, Index) and e.dim >= k.n_parallel for e in postorder(bias)):
        return k
    acc = accs[0]
    epilogue = rewrite(k.epilogue, lambda e, kids: acc if e is site else with_children(e, kids))
    return replace(k, init=bias, epilogue=epilogue)


def _fold_root(root: Expr, folder: _Folder) -> Expr:
    """`root` rebuilt with every qualifying site folded."""
    nodes = postorder(root)
    # A rounding shift whose only consumer is `+ zp` folds together with it.
    with_zp: dict[int, tuple[Expr, int]] = {}
    for e in nodes:
        hit = _zero_point_add(e)
        if hit is not None:
            with_zp[id(e)] = hit
    absorbed = {id(site) for site, _ in with_zp.values()}
    users: dict[int, int] = {}
    for e in nodes:
        for k in (e.args if isinstance(e, Apply) else ()):
            users[id(k)] = users.get(id(k), 0) + 1
    done: dict[int, Expr] = {}

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if id(e) in with_zp:
            site, zp = with_zp[id(e)]
            if users.get(id(site), 0) == 1:
                folded = folder.fold(site, zp, done[id(_pattern(site)[0])])
                if folded is not None:
                    return folded
        elif _pattern(e) is not None and not (id(e) in absorbed
                                              and users.get(id(e), 0) == 1):
            folded = folder.fold(e, 0, done[id(_pattern(e)[0])])
            if folded is not None:
                return folded
        return with_children(e, kids)

    def record(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        done[id(e)] = out = fn(e, kids)
        return out

    return rewrite(root, record)
