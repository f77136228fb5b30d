"""The folded int8 requantization (toolchain/kernel/requant.py).

The identity first, in numpy against TFLite's two steps as the reference executes them
(exhaustively on small x, on random and extreme int32 x, for every s and the edge
multipliers); then the kernel rewrite (which epilogues fold, which keep TFLite's
steps); then the generated code under QEMU on cortex-m4 (DSP: SMLAL + SSAT),
cortex-m3 (no DSP), riscv32 and x86-64, bit for bit against the reference, over the
cases where a wrong fold would show: s = 1, s = 31, negative x, x = -1 with M = 2**30,
ties, INT32_MIN / INT32_MAX, and a channel with a left shift.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from toolchain.emu.run import run_image
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph
from toolchain.kernel.form import Apply, Const, Kernel, Load, postorder
from toolchain.kernel.requant import RDBP, SRDHM, folded_constants, folded_reference
from toolchain.pipeline import compile_graph, decode_outputs, module_outputs
from toolchain.quant.build import INT8_MAX, INT8_MIN, requantize, rescale
from toolchain.reference import kernels as ref
from toolchain.reference import run_graph
from toolchain.schedule import schedule
from toolchain.target import load_board, load_target
from toolchain.types import TensorType, dtype

I32 = dtype("i32")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_NODE = SimpleNamespace()


def _tflite(x: np.ndarray, m: int, s: int, zp: int) -> np.ndarray:
    """TFLite's requantization as the reference executes it, without the clamp:
    rounding_divide_by_pot(srdhm(x, M), s) + zp (int64, so nothing wraps here)."""
    x = np.asarray(x, np.int32)
    q = ref._srdhm(_NODE, x, np.full_like(x, m))
    return ref._rdbpot(_NODE, q, np.full_like(x, s)).astype(np.int64) + zp


MULTIPLIERS = [1 << 30, (1 << 30) + 1, 1518500250, INT_MAX]  # QuantizeMultiplier's range
EDGES = np.array([INT_MIN, INT_MIN + 1, -(2**30) - 1, -(2**30), -3, -2, -1, 0, 1, 2, 3,
                  2**30, INT_MAX - 1, INT_MAX], np.int32)


@pytest.mark.parametrize("m", MULTIPLIERS)
def test_fold_is_exact_for_every_exponent(m: int) -> None:
    rng = np.random.default_rng(m % 1000)
    small = np.arange(-4096, 4097, dtype=np.int32)  # exhaustive: every tie of small s
    wide = rng.integers(INT_MIN, INT_MAX, 4000, dtype=np.int64, endpoint=True).astype(np.int32)
    x = np.concatenate([small, wide, EDGES])
    for s in range(1, 32):
        for zp in (-128, 0, 5, 127):
            if folded_constants(m, s, zp) is None:  # zp * 2**(31+s) too wide: added after
                got = folded_reference(x, m, s, 0).astype(np.int64) + zp
            else:
                got = folded_reference(x, m, s, zp)
            np.testing.assert_array_equal(got, _tflite(x, m, s, zp), err_msg=f"s={s} zp={zp}")


def test_fold_ties_and_the_sign_fix() -> None:
    # x = -1, M = 2**30: SRDHM gives 0 (the one x < 0 whose q is not negative); ties of
    # SRDHM (x * M = k * 2**31 + 2**30) and of the rounding shift, both signs.
    m = 1 << 30
    x = np.array([-1, 1, 3, -3, 5, -5, 6, -6, 7, -7, 2, -2], np.int32)
    for s in (1, 2, 3):
        np.testing.assert_array_equal(folded_reference(x, m, s, 0), _tflite(x, m, s, 0))
    # by hand: 5 * 2**30 / 2**31 = 2.5 -> 3 (SRDHM: ties up), then 3 / 2 = 1.5 -> 2 (away
    # from zero); -5 -> -2 -> -1
    assert folded_reference(np.array([5, -5, -1], np.int32), m, 1, 0).tolist() == [2, -1, 0]


def test_what_does_not_fold() -> None:
    assert folded_constants(1 << 30, 0, 0) is None  # s = 0: a plain SRDHM
    assert folded_constants(-(1 << 30), 3, 0) is None  # negative M: sign of q flips
    assert folded_constants(INT_MIN, 3, 0) is None  # SRDHM's saturating case
    assert folded_constants(1 << 30, 32, 0) is None
    # zp * 2**(31 + s) past the 64-bit sum: kept on TFLite's steps
    assert folded_constants(INT_MAX, 31, 127) is None
    assert folded_constants(INT_MAX, 20, 127) is not None
    assert folded_constants(1 << 30, 5, -3) == (1 << 30) + (1 << 35) - 3 * (1 << 36)
    # M = 0 folds for every s >= 1 and gives zp
    for s in (1, 2, 17, 31):
        assert folded_reference(EDGES, 0, s, 0).tolist() == [0] * len(EDGES)


def _graph(multipliers: list[int], shifts: list[int], zp: int) -> Graph:
    """x (i32, [N, C, 1]) summed over its last dim of one (so x is the accumulator), then
    two outputs: TFLite's requantization without the clamp (i32: every bit shows) and
    the usual int8 one (zero point, clamp to [-100, 127]: SSAT and one max)."""
    n, c = 16, len(multipliers)
    g = Graph("requant")
    b = GraphBuilder(g)
    x = g.add_input(TensorType((n, c, 1), I32))
    acc = b.op("reduce", [x, b.const(0, I32)], kind="add", dims=(2,))
    wide = rescale(b, acc, multipliers, shifts, axis=1)
    wide = b.op("add", [wide, b.splat(zp, I32, (n, c))])
    acc2 = b.op("reduce", [x, b.const(0, I32)], kind="add", dims=(2,))
    narrow = requantize(b, acc2, multipliers, shifts, axis=1, output_zp=zp, act_min=-100,
                        act_max=INT8_MAX)
    # element-wise (no reduction): the requantization is the kernel's body
    direct = rescale(b, x, multipliers, shifts, axis=1)
    direct = b.op("add", [direct, b.splat(zp, I32, (n, c, 1))])
    g.outputs = [wide, narrow, direct]
    return g


# channel: (M, shift as TFLite writes it: negative = right)
# (0, 0): a dead channel, as TFLite quantizes a zero scale; it gives zp for any s and folds
FOLDED = [(1 << 30, -1), (1 << 30, -31), (INT_MAX, -1), (1518500250, -7), ((1 << 30) + 1, -2),
          (0, 0), (INT_MAX, -20)]
LEFT = FOLDED[:-1] + [(1 << 30, 2)]  # one channel shifting left: the kernel keeps its steps


def _inputs(c: int) -> np.ndarray:
    x = np.concatenate([EDGES, [5, -5]]).astype(np.int32)  # 16 rows
    rows = np.resize(x, (c, 16)).T.copy()
    rows[:, 1::2] = np.roll(rows[:, 1::2], 3, axis=0)  # each channel sees every edge
    return rows.reshape(16, c, 1)


def _epilogue_ops(program) -> list[set[str]]:
    """The ops of each kernel's epilogue (of its body when it reduces nothing)."""
    return [{e.op for e in postorder(s.kernel.epilogue or s.kernel.body)
             if isinstance(e, Apply)}
            for s in program.steps if isinstance(s.kernel, Kernel)]


def test_which_kernels_fold() -> None:
    folded = schedule(_graph(*zip(*FOLDED), zp=-7))
    assert [SRDHM in ops or RDBP in ops for ops in _epilogue_ops(folded)] == [False] * 3
    kept = schedule(_graph(*zip(*LEFT), zp=-7))
    assert [SRDHM in ops for ops in _epilogue_ops(kept)] == [True] * 3
    # s = 0 on one channel (no rounding shift there): kept too
    zero = schedule(_graph([1 << 30, 1 << 30], [0, -3], zp=0))
    assert all(SRDHM in ops for ops in _epilogue_ops(zero))


def test_the_folded_shift_is_loaded_with_its_bounds() -> None:
    """The folded shift, s - 1 per channel, is loaded with bounds (0, 30): the code
    generator passes them to LLVM (!range), which then drops the `and 31` before the
    shift. Every value the record holds there is inside them (FOLDED has s = 1 and 31,
    and a dead channel)."""
    program = schedule(_graph(*zip(*FOLDED), zp=-7))
    seen = 0
    for step in program.steps:
        k = step.kernel
        for e in postorder(k.epilogue or k.body):
            if isinstance(e, Load) and e.bounds is not None:
                assert e.bounds == (0, 30)
                assert isinstance(e.index[-1], Const)
                record = np.asarray(program.constants[step.buffers[e.operand].index])
                values = record[..., int(e.index[-1].value)]
                assert values.min() >= 0 and values.max() <= 30
                assert {0, 30} <= set(values.ravel().tolist())
                seen += 1
    assert seen == 3


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m3", "riscv32", "x86-64"])
@pytest.mark.parametrize("channels", [FOLDED, LEFT], ids=["folded", "left-shift"])
def test_folded_requantization_on_the_board(board: str, channels, tmp_path) -> None:
    graph = _graph(*zip(*channels), zp=-7)
    x = _inputs(len(channels))
    b = load_board(board)
    build = compile_graph(graph, b, tmp_path / "fw", log=lambda _: None)
    run = run_image(b, build.elf, [x])
    assert run.exit_code == 0, run.stderr
    got = decode_outputs(module_outputs(build.module), run.outputs)
    want = run_graph(build.graph, [x])
    assert len(got) == 3
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[2][:, :, 0], got[0])  # body and epilogue agree
    # the i32 output is TFLite's arithmetic (independently of the graph), and spans the
    # range: INT32 extremes with s = 1 reach +-2**30
    m = np.array([mm for mm, _ in channels])
    expect = np.stack([_tflite(x[:, j, 0], int(m[j]), -sh, -7) if sh < 0 else None
                       for j, (_, sh) in enumerate(channels) if sh < 0], axis=1)
    right = [j for j, (_, sh) in enumerate(channels) if sh < 0]
    np.testing.assert_array_equal(got[0][:, right], expect)
    assert got[0].min() < -(2**29) and got[0].max() > 2**29
    assert got[1].min() == -100 and got[1].max() == INT8_MAX and INT8_MIN < -100


def test_an_int8_sum_starts_from_its_bias(monkeypatch) -> None:
    """A folded int8 convolution reads its accumulator only as `acc + bias`: it starts
    the sum from the bias instead (its init loads the record's bias field) and the
    epilogue reads the accumulator as it is; the kernel computes the same integers as
    with the add (the kernel interpreter, on the window models' int8 convolutions)."""
    from window_models import int8_windows

    from toolchain.kernel import requant
    from toolchain.kernel.form import Acc
    from toolchain.kernel.interpret import run_kernel
    from toolchain.passes import fold_constants

    def kernels(program) -> list[Kernel]:
        return [s.kernel for s in program.steps if isinstance(s.kernel, Kernel)]

    def operands(program, step, x: np.ndarray) -> list[np.ndarray] | None:
        args = []
        for b in step.buffers[:len(step.kernel.operands)]:
            if b.kind == "input":
                args.append(x)
            elif b.kind == "constant":
                args.append(np.asarray(program.constants[b.index]))
            else:
                return None
        return args

    started = schedule(fold_constants(int8_windows()))
    monkeypatch.setattr(requant, "_bias_into_init", lambda k: k)
    added = schedule(fold_constants(int8_windows()))
    x = np.random.default_rng(5).integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)
    checked = 0
    for step, k0 in zip(started.steps, kernels(added), strict=True):
        k = step.kernel
        if not isinstance(k.init, Load):
            continue
        assert isinstance(k0.init, Const) and k0.init.value == 0
        assert not any(isinstance(e, Apply) and e.op == "add"
                       and any(isinstance(a, Acc) for a in e.args)
                       for e in postorder(k.epilogue))
        args = operands(started, step, x)
        if args is None:
            continue
        np.testing.assert_array_equal(run_kernel(k, args), run_kernel(k0, args))
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("per_channel,cin,cout", [(False, 64, 10), (False, 27, 10),
                                                  (False, 16, 5), (False, 9, 36),
                                                  (True, 27, 10), (True, 36, 9)])
def test_a_dense_sum_starts_from_both_its_biases(monkeypatch, tmp_path, per_channel: bool,
                                                 cin: int, cout: int) -> None:
    """TFLite's dense layers add two int32 tables to the sum (the bias, the input zero
    point's correction): the sum starts from their sum, one constant made at build
    time, and the epilogue adds nothing to the accumulator; the kernel computes the
    same integers as with the two adds (the kernel interpreter). With per-channel
    weights (as TFLite's converter writes some dense layers) one of them is a field of
    the fold's record."""
    from tflite_models import build_model, int8_layer_op

    from toolchain.frontend.tflite.importer import load_tflite
    from toolchain.kernel import requant
    from toolchain.kernel.form import Acc
    from toolchain.kernel.interpret import run_kernel
    from toolchain.passes import fold_constants

    rng = np.random.default_rng(cin * 100 + cout)
    op, xt, yt = int8_layer_op(rng, "dense", 1, 1, cin, cout, name="y")
    if per_channel:  # a scale per output row, the bias's scale with it
        w, bias = op.inputs[1], op.inputs[2]
        w.scale = list(rng.uniform(0.005, 0.02, cout))
        w.zero_point = [0] * cout
        bias.scale = [xt.scale * sc for sc in w.scale]
        bias.zero_point = [0] * cout
    path = tmp_path / "dense.tflite"
    path.write_bytes(build_model([op], [xt], [yt]))

    def dense_step(program):
        [step] = [s for s in program.steps if isinstance(s.kernel, Kernel)
                  and s.kernel.is_reduction]
        return step

    merged = schedule(fold_constants(load_tflite(path)))
    monkeypatch.setattr(requant, "_merged_biases", lambda k, c, n, new: (k, []))
    added = schedule(fold_constants(load_tflite(path)))
    step, step0 = dense_step(merged), dense_step(added)
    k, k0 = step.kernel, step0.kernel
    assert isinstance(k.init, Load)
    assert not any(isinstance(e, Apply) and e.op == "add"
                   and any(isinstance(a, Acc) for a in e.args) for e in postorder(k.epilogue))
    assert any(isinstance(e, Apply) and e.op == "add"
               and any(isinstance(a, Acc) for a in e.args) for e in postorder(k0.epilogue))
    for seed in range(3):
        x = np.random.default_rng(seed).integers(-128, 128, xt.shape).astype(np.int8)
        got = []
        for program, s in ((merged, step), (added, step0)):
            args = []
            for b in s.buffers[:len(s.kernel.operands)]:
                if b.kind == "input":
                    args.append(x)
                else:
                    assert b.kind == "constant"
                    args.append(np.asarray(program.constants[b.index]))
            got.append(run_kernel(s.kernel, args))
        np.testing.assert_array_equal(got[0], got[1])


def _dense_tflite(tmp_path, cin: int, cout: int):
    """A per-tensor int8 dense layer cin -> cout as TFLite writes it (a .tflite path) and
    its input tensor."""
    from tflite_models import build_model, int8_layer_op

    rng = np.random.default_rng(cin * 1000 + cout)
    op, xt, yt = int8_layer_op(rng, "dense", 1, 1, cin, cout, name="y")
    path = tmp_path / f"dense{cin}x{cout}.tflite"
    path.write_bytes(build_model([op], [xt], [yt]))
    return path, xt


@pytest.mark.parametrize("board,per_channel,records", [
    ("cortex-m3", True, True), ("cortex-m3", False, False), ("cortex-m0plus", False, True),
    ("cortex-m4", False, True), ("x86-64", False, True), ("riscv32", False, True)])
def test_a_shared_multiplier_is_read_per_channel_where_registers_are_few(
        tmp_path, board: str, per_channel: bool, records: bool) -> None:
    """A per-tensor dense layer's loaded M and K low word: at the output channel's index
    on cortex-m3 (at one index LLVM hoists them out of the reduction loop, which then
    spills accumulators), at a constant index elsewhere (loaded once: faster), and on
    cortex-m3 too under --optimize size (no flash records: the table is 2 words a
    channel, ad01_int8 +12 KB)."""
    from toolchain.frontend.tflite.importer import load_tflite
    from toolchain.kernel.form import Index
    from toolchain.passes import fold_constants

    path, _ = _dense_tflite(tmp_path, 128, 128)
    target = load_target(load_board(board).target)
    program = schedule(fold_constants(load_tflite(path)), target=target,
                       flash_records=records)
    [step] = [s for s in program.steps if isinstance(s.kernel, Kernel)
              and s.kernel.is_reduction]
    k = step.kernel
    made = len(k.operands) - 1  # the fold's record is the last operand it added
    record_loads = [e for e in postorder(k.epilogue) if isinstance(e, Load)
                    and step.buffers[e.operand].kind == "constant"
                    and np.asarray(program.constants[step.buffers[e.operand].index]).ndim
                    and e.operand <= made]
    assert record_loads
    indexed = [any(isinstance(i, Index) for i in e.index) for e in record_loads]
    assert all(indexed) if per_channel else not any(indexed)


@pytest.mark.parametrize("cin,cout", [(128, 128), (128, 40), (131, 24)])
def test_a_dense_layer_on_cortex_m3_keeps_its_accumulators_in_registers(
        tmp_path, cin: int, cout: int) -> None:
    """Per-tensor int8 dense layers on cortex-m3 (no DSP: LLVM's generic loop of 8 MLA
    accumulators, which uses all 14 registers): bit-exact against the reference, and at
    most 3.2 instructions a MAC for the 128x128 one (3.08 measured). A step of the loop is 17
    instructions of work for 8 MACs (1 input and 8 weight loads, 8 MLA) and 3-4 of loop,
    plus a few moves (24 measured): 3.08 a MAC with the epilogue. When the layer's one
    multiplier was loaded once, LLVM held it and the low word of the rounding constant
    across the loop, which then spilled two accumulators every step: 30 a step, 3.83 a
    MAC (ad01_int8's 128x128 layers: 46,993 -> 62,718 instructions)."""
    from toolchain.frontend.tflite.importer import load_tflite

    path, xt = _dense_tflite(tmp_path, cin, cout)
    graph = load_tflite(path)
    b = load_board("cortex-m3")
    build = compile_graph(graph, b, tmp_path / "fw", log=lambda _: None)
    for seed in range(2):
        x = np.random.default_rng(seed).integers(-128, 128, xt.shape).astype(np.int8)
        run = run_image(b, build.elf, [x])
        assert run.exit_code == 0, run.stderr
        got = decode_outputs(module_outputs(build.module), run.outputs)
        want = run_graph(build.graph, [x])
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    if cin == cout == 128:
        assert run.instructions is not None
        assert run.instructions <= 3.2 * cin * cout, run.instructions / (cin * cout)
