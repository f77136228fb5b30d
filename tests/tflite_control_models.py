"""`.tflite` models with IF and WHILE (subgraphs called by index), for the control-flow
tests: written with tflite_state_models.build_subgraphs (subgraph 0 the entry), each
returned with inputs that take every branch / run the loop 0, 1 and several times.

- `if_model(dtype, const_cond=None)`: IF(c, x, y) whose then branch adds and else branch
  subtracts or multiplies (float32, int8, int16); quantized branches declare their own
  quantization for the values they are handed (TFLite Micro copies the bytes). With
  `const_cond`, the condition is a constant in the file.
- `while_model(dtype)`: WHILE over (i, n, x, acc): `i < n` (n a model input, so the trip
  count is known at run time only), the body `i + 1`, `acc = acc * x + x` (float) or an
  int8 requantizing ADD of x into acc.
- `nested_model()`: a WHILE whose body holds an IF on `i > 2`: acc + i or acc * 2
  (int32), so the branch taken changes between iterations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tflite_models import OPTIONS_TABLE, Op, Tensor
from tflite_state_models import Subgraph, build_subgraphs

for _op, _table in {"IF": "IfOptions", "WHILE": "WhileOptions", "LESS": None,
                    "GREATER": None, "CONCATENATION": "ConcatenationOptions"}.items():
    OPTIONS_TABLE.setdefault(_op, _table)

SHAPE = (2, 3)


def _act(dtype: str, name: str, shape: tuple[int, ...] = SHAPE, scale: float = 0.05,
         zero_point: int = -3) -> Tensor:
    if dtype == "int8":
        return Tensor(shape, "int8", scale=scale, zero_point=zero_point, name=name)
    if dtype == "int16":  # 16x8: symmetric, TFLite's scales of a few hundred µ
        return Tensor(shape, "int16", scale=scale / 64, zero_point=0, name=name)
    return Tensor(shape, dtype, name=name)


def _binary(opcode: str, dtype: str, name: str, quant: tuple[tuple[float, int], ...],
            const: np.ndarray | None = None) -> Subgraph:
    """A subgraph of one binary operator on its two inputs (or on input 0 and `const`),
    its tensors quantized as `quant` gives (a, b, out) for int8."""
    (sa, za), (sb, zb), (so, zo) = quant
    a = _act(dtype, f"{name}_a", scale=sa, zero_point=za)
    b = _act(dtype, f"{name}_b", scale=sb, zero_point=zb)
    out = _act(dtype, f"{name}_out", scale=so, zero_point=zo)
    if const is None:
        return Subgraph([Op(opcode, [a, b], [out])], [a, b], [out], name=name)
    c = _act(dtype, f"{name}_c", scale=sb, zero_point=zb)
    c.data = const
    return Subgraph([Op(opcode, [a, c], [out])], [a, b], [out], name=name)


def if_model(dtype: str, const_cond: bool | None = None) -> bytes:
    """IF(c, x, y) -> out: then x + y, else x * constant (int8) or x - y (float32,
    int16)."""
    c = Tensor((1,), "bool", name="c")
    if const_cond is not None:
        c.data = np.array([const_cond])
    x = _act(dtype, "x")
    y = _act(dtype, "y", scale=0.07, zero_point=5)
    out = _act(dtype, "out", scale=0.1, zero_point=2)
    # The branches see x and y with scales of their own, and write their own.
    then = _binary("ADD", dtype, "then", ((0.04, -1), (0.08, 4), (0.12, 0)))
    if dtype == "int8":
        k = np.arange(-40, 80, 20).reshape(SHAPE).astype(np.int8)
        orelse = _binary("MUL", dtype, "else", ((0.05, -3), (0.02, 0), (0.09, -7)), k)
    else:
        orelse = _binary("SUB", dtype, "else", ((0.06, 0), (0.05, 0), (0.11, 0)))
    inputs = [x, y] if const_cond is not None else [c, x, y]
    main = Subgraph([Op("IF", [c, x, y], [out], {"then_subgraph_index": 1,
                                                   "else_subgraph_index": 2})],
                    inputs, [out])
    return build_subgraphs([main, then, orelse])


def if_inputs(dtype: str, seed: int, const_cond: bool | None = None) -> list[list[np.ndarray]]:
    """Input sets of if_model: the condition true and false (or the constant's)."""
    rng = np.random.default_rng(seed)
    if dtype in ("int8", "int16"):
        info = np.iinfo(dtype)
        xy = [rng.integers(info.min, int(info.max) + 1, SHAPE).astype(dtype)
              for _ in range(2)]
    else:
        xy = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2)]
    if const_cond is not None:
        return [xy]
    return [[np.array([flag]), *xy] for flag in (True, False)]


def _counter_cond(dtype: str) -> Subgraph:
    """(i, n, x, acc) -> i < n; x and acc declared with quantization of its own."""
    i, n = Tensor((1,), "int32", name="i"), Tensor((1,), "int32", name="n")
    x, acc = _act(dtype, "x", (4,), 0.3, 0), _act(dtype, "acc", (4,), 0.02, 9)
    more = Tensor((1,), "bool", name="more")
    return Subgraph([Op("LESS", [i, n], [more])], [i, n, x, acc], [more], name="cond")


def while_model(dtype: str) -> bytes:
    """WHILE over (i, n, x, acc) (module docstring); outputs the final i and acc."""
    n_in = Tensor((1,), "int32", name="n")
    i0 = Tensor((1,), "int32", name="i0", data=np.array([0]))
    x_in, acc_in = _act(dtype, "x", (4,)), _act(dtype, "acc0", (4,), 0.1, 1)
    outs = [Tensor((1,), "int32", name="i_final"), Tensor((1,), "int32", name="n_final"),
            _act(dtype, "x_final", (4,)), _act(dtype, "acc_final", (4,), 0.1, 1)]
    main = Subgraph([Op("WHILE", [i0, n_in, x_in, acc_in], outs,
                        {"cond_subgraph_index": 1, "body_subgraph_index": 2})],
                    [n_in, x_in, acc_in], [outs[0], outs[3]])
    cond = _counter_cond(dtype)
    i, n = Tensor((1,), "int32", name="i"), Tensor((1,), "int32", name="n")
    one = Tensor((1,), "int32", name="one", data=np.array([1]))
    i1 = Tensor((1,), "int32", name="i1")
    x, acc = _act(dtype, "x", (4,)), _act(dtype, "acc", (4,), 0.1, 1)
    acc1 = _act(dtype, "acc1", (4,), 0.1, 1)
    ops: list[Op] = [Op("ADD", [i, one], [i1])]
    if dtype == "int8":
        ops.append(Op("ADD", [acc, x], [acc1]))
    else:
        prod = _act(dtype, "prod", (4,))
        ops += [Op("MUL", [acc, x], [prod]), Op("ADD", [prod, x], [acc1])]
    body = Subgraph(ops, [i, n, x, acc], [i1, n, x, acc1], name="body")
    return build_subgraphs([main, cond, body])


def while_inputs(dtype: str, seed: int) -> list[list[np.ndarray]]:
    """Input sets of while_model running the loop 0, 1 and 5 times."""
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        x = rng.integers(-20, 20, (4,)).astype(np.int8)
        acc = rng.integers(-128, 128, (4,)).astype(np.int8)
    else:
        x = rng.uniform(-0.9, 0.9, (4,)).astype(np.float32)
        acc = rng.standard_normal((4,)).astype(np.float32)
    return [[np.array([n], np.int32), x, acc] for n in (0, 1, 5)]


def nested_model() -> bytes:
    """WHILE over (i, n, acc) int32 whose body holds IF(i > 2): acc + i, else acc * 2."""
    def ints(name: str, shape: tuple[int, ...] = (1,), data: Any = None) -> Tensor:
        return Tensor(shape, "int32", name=name, data=data)

    n_in, acc_in = ints("n"), ints("acc0", (3,))
    i0 = ints("i0", data=np.array([0]))
    outs = [ints("i_final"), ints("n_final"), ints("acc_final", (3,))]
    main = Subgraph([Op("WHILE", [i0, n_in, acc_in], outs,
                        {"cond_subgraph_index": 1, "body_subgraph_index": 2})],
                    [n_in, acc_in], [outs[2]])
    ci, cn, cacc, more = ints("i"), ints("n"), ints("acc", (3,)), Tensor((1,), "bool")
    cond = Subgraph([Op("LESS", [ci, cn], [more])], [ci, cn, cacc], [more], name="cond")
    bi, bn, bacc = ints("i"), ints("n"), ints("acc", (3,))
    two = ints("two", data=np.array([2]))
    big, i1, acc1 = Tensor((1,), "bool", name="big"), ints("i1"), ints("acc1", (3,))
    body = Subgraph([
        Op("GREATER", [bi, two], [big]),
        Op("IF", [big, bi, bacc], [acc1], {"then_subgraph_index": 3,
                                          "else_subgraph_index": 4}),
        Op("ADD", [bi, ints("one", data=np.array([1]))], [i1]),
    ], [bi, bn, bacc], [i1, bn, acc1], name="body")
    ti, tacc, tout = ints("i"), ints("acc", (3,)), ints("sum", (3,))
    then = Subgraph([Op("ADD", [tacc, ti], [tout])], [ti, tacc], [tout], name="then")
    ei, eacc, eout = ints("i"), ints("acc", (3,)), ints("twice", (3,))
    orelse = Subgraph([Op("MUL", [eacc, ints("k", data=np.array([2]))], [eout])],
                      [ei, eacc], [eout], name="else")
    return build_subgraphs([main, cond, body, then, orelse])


def nested_inputs(seed: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    acc = rng.integers(-1000, 1000, (3,)).astype(np.int32)
    return [[np.array([n], np.int32), acc] for n in (0, 2, 6)]


def growing_body_model() -> bytes:
    """WHILE whose body concatenates its value with itself: a shape change minirt
    refuses (TFLite Micro's own arena cannot grow it either)."""
    x_in, out = Tensor((2,), "float32", name="x"), Tensor((2,), "float32", name="y")
    main = Subgraph([Op("WHILE", [x_in], [out], {"cond_subgraph_index": 1,
                                                "body_subgraph_index": 2})], [x_in], [out])
    cx, more = Tensor((2,), "float32", name="x"), Tensor((1,), "bool", name="more",
                                                      data=np.array([False]))
    cond = Subgraph([], [cx], [more], name="cond")
    bx, grown = Tensor((2,), "float32", name="x"), Tensor((4,), "float32", name="grown")
    body = Subgraph([Op("CONCATENATION", [bx, bx], [grown], {"axis": 0})], [bx], [grown],
                    name="body")
    return build_subgraphs([main, cond, body])
