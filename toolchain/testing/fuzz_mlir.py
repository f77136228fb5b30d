"""Structured edits of MLIR text for the parser fuzzer (bench/fuzz_parse.py).

Byte and token mutations mostly break the syntax, so they test the parser; these edits
keep the text well-formed and change what it means: an attribute's integer to -1, 0, a
huge value or the rank plus one, an entry dropped from or added to a dimension list, a
tensor dimension or element type changed, two operands swapped, a result dropped, an op
moved after its uses. They aim at the verifier and the type rules, which must refuse
such a model with a located error before the reference or a kernel meets it.

Each edit takes the model's bytes and a random generator and returns the edited bytes
and a one-line description; when the text has no place for the edit it returns the
bytes unchanged, saying so.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

__all__ = ["EDITS", "Edit"]

Edit = Callable[[bytes, random.Random], tuple[bytes, str]]

# `name = 3 : i64`, `index_vector_dim = 1`, `dimension = 0`: a named integer attribute.
_INT_ATTR = re.compile(rb"\b([a-z_]+) = (-?\d+)\b(?! *x)")
# `array<i64: 1, 2>` and `[1, 2]` (dimension lists, struct fields, pretty attributes).
_INT_LIST = re.compile(rb"(array<i(?:64|32|1): ?|\[)(-?\d+(?:, ?-?\d+)*)(>|\])")
_TENSOR = re.compile(rb"tensor<((?:\d+x)*)([a-z][a-z0-9]*)>")
_ELEMENT = re.compile(rb"(?<=[x<])(f16|bf16|f32|f64|i1|i8|i16|i32|i64|ui8|ui32)(?=>)")
_ELEMENT_TYPES = (b"f16", b"bf16", b"f32", b"f64", b"i1", b"i8", b"i32", b"i64", b"ui8",
                  b"complex<f32>", b"index")
# An op's operand list in pretty or generic form: `op %a, %b` / `"op"(%a, %b)`.
_OPERANDS = re.compile(rb"(%[\w.$-]+(?:#\d+)?)((?:, ?%[\w.$-]+(?:#\d+)?)+)")
_RESULT_DEF = re.compile(rb"^( *)(%[\w.$-]+(?::\d+)?) = ", re.M)
_VALUE = re.compile(rb"%[\w.$-]+")
_STRUCT = re.compile(rb"#stablehlo\.(conv|gather|scatter|dot)<")
_CONV_LAYOUT = re.compile(rb"\[([bf0-9io, ]+)\]x\[([bf0-9io, ]+)\]->\[([bf0-9io, ]+)\]")
_DENSE_SPLAT = re.compile(rb"dense<(-?\d+(?:\.\d+)?)>")


def _pick(rng: random.Random, pattern: re.Pattern[bytes], data: bytes,
          ) -> re.Match[bytes] | None:
    sites = list(pattern.finditer(data))
    return rng.choice(sites) if sites else None


def _line_no(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _edited(edit: str, data: bytes, span: tuple[int, int], new: bytes, detail: str
            ) -> tuple[bytes, str]:
    """`data` with `span` replaced by `new`, and the edit's one-line description."""
    start, end = span
    return data[:start] + new + data[end:], f"{edit}: line {_line_no(data, start)}: {detail}"


def _line_rank(data: bytes, offset: int) -> int:
    """The rank of the first tensor type on the line at `offset` (0 when none): an
    attribute that names a dimension is most often about that tensor."""
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    m = _TENSOR.search(data, start, end if end >= 0 else len(data))
    return m.group(1).count(b"x") if m else 0


def _hostile_int(rng: random.Random, rank: int, old: int) -> int:
    """A value a careless or hostile user might write for a dimension or a size."""
    return rng.choice([-1, 0, rank, rank + 1, old + 1, -old - 1, 1 << 31, (1 << 62) + 1])


def int_attr(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A named integer attribute set to -1, 0, the rank, rank+1 or a huge value."""
    m = _pick(rng, _INT_ATTR, data)
    if m is None:
        return data, "int_attr: no integer attribute"
    new = _hostile_int(rng, _line_rank(data, m.start()), int(m.group(2)))
    return _edited("int_attr", data, m.span(2), str(new).encode(),
                   f"{m.group(1).decode()} {m.group(2).decode()} -> {new}")


def list_entry(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An integer list (`array<i64: ...>`, `[...]`): one entry changed to a hostile
    value, dropped, duplicated or added."""
    m = _pick(rng, _INT_LIST, data)
    if m is None:
        return data, "list_entry: no integer list"
    items = [s.strip() for s in m.group(2).split(b",")]
    rank = _line_rank(data, m.start())
    k = rng.randrange(len(items))
    how = rng.choice(["change", "drop", "duplicate", "add"])
    if how == "change":
        items[k] = str(_hostile_int(rng, rank, int(items[k]))).encode()
    elif how == "drop":
        del items[k]
    elif how == "duplicate":
        items.insert(k, items[k])
    else:
        items.insert(k, str(rng.choice([0, 1, rank, rank + 1, -1])).encode())
    new = b", ".join(items)
    return _edited("list_entry", data, m.span(2), new,
                   f"{how} entry {k}: [{m.group(2).decode()}] -> [{new.decode()}]")


def tensor_dim(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One tensor type's shape: a dimension changed, dropped or added."""
    m = _pick(rng, _TENSOR, data)
    if m is None or not m.group(1):
        return data, "tensor_dim: no ranked tensor type"
    dims = m.group(1).split(b"x")[:-1]
    k = rng.randrange(len(dims))
    how = rng.choice(["change", "drop", "add"])
    if how == "change":
        dims[k] = str(rng.choice([0, 1, int(dims[k]) + 1, 1 << 20, 7])).encode()
    elif how == "drop":
        del dims[k]
    else:
        dims.insert(k, str(rng.choice([1, 2, 3])).encode())
    new = b"".join(d + b"x" for d in dims)
    return _edited("tensor_dim", data, m.span(1), new, f"{how} dim {k}: {m.group(0).decode()}"
                   f" -> tensor<{new.decode()}{m.group(2).decode()}>")


def element_type(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One tensor's element type replaced by another."""
    m = _pick(rng, _ELEMENT, data)
    if m is None:
        return data, "element_type: no element type"
    new = rng.choice([t for t in _ELEMENT_TYPES if t != m.group(1)])
    return _edited("element_type", data, m.span(), new,
                   f"{m.group(1).decode()} -> {new.decode()}")


def swap_operands(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Two operands of one op exchanged (types stay as written)."""
    m = _pick(rng, _OPERANDS, data)
    if m is None:
        return data, "swap_operands: no op with two operands"
    names = [m.group(1)] + [s.strip() for s in m.group(2).split(b",")[1:]]
    i, j = rng.sample(range(len(names)), 2)
    if names[i] == names[j]:
        return data, "swap_operands: the operands are the same value"
    names[i], names[j] = names[j], names[i]
    return _edited("swap_operands", data, m.span(), b", ".join(names),
                   f"operands {i} and {j}")


def drop_result(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An op's results removed: `%x = op(...) : (...) -> t` becomes `op(...)` with no
    result (its generic type says `-> ()`); its uses then name an undefined value unless
    another definition of the name is in scope."""
    m = _pick(rng, _RESULT_DEF, data)
    if m is None:
        return data, "drop_result: no op with a result"
    end = data.find(b"\n", m.end())
    end = len(data) if end < 0 else end
    line = data[m.end():end]
    arrow = line.rfind(b") -> ")
    if line.startswith(b'"') and arrow >= 0:  # generic form: its type names the results
        line = line[:arrow] + b") -> ()"
    return _edited("drop_result", data, (m.start(), end), m.group(1) + line,
                   f"{m.group(2).decode()} dropped")


def move_op(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An op defining a value moved after a later op of the same block that uses it (a
    use its definition no longer dominates), or before its own operands' definitions."""
    defs = list(_RESULT_DEF.finditer(data))
    if len(defs) < 2:
        return data, "move_op: fewer than two ops with results"
    a, b = sorted(rng.sample(range(len(defs)), 2))
    first, second = defs[a], defs[b]
    if data.count(b"^", first.start(), second.start()):  # another block: keep it simple
        return data, "move_op: the ops are in different blocks"
    line_a_end = data.find(b"\n", first.start())
    line_b_end = data.find(b"\n", second.start())
    if line_a_end < 0 or line_b_end < 0:
        return data, "move_op: an op on the last line"
    line_a = data[first.start():line_a_end + 1]
    moved = data[:first.start()] + data[line_a_end + 1:line_b_end + 1] + line_a + \
        data[line_b_end + 1:]
    return moved, (f"move_op: line {_line_no(data, first.start())} moved after line "
                   f"{_line_no(data, second.start())}")


def replace_operand(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One use of a value replaced by another value of the file (of another type, or
    defined later, or in another function)."""
    uses = [m for m in _VALUE.finditer(data)
            if not data[m.end():m.end() + 3].startswith((b" = ", b":", b" :"))]
    names = sorted({m.group(2) for m in _RESULT_DEF.finditer(data)})
    if not uses or not names:
        return data, "replace_operand: no value to replace"
    m = rng.choice(uses)
    new = rng.choice(names).split(b":")[0]
    return _edited("replace_operand", data, m.span(), new,
                   f"{m.group(0).decode()} -> {new.decode()}")


def struct_kind(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A dimension-numbers struct given another struct's name (a gather's on a
    convolution)."""
    m = _pick(rng, _STRUCT, data)
    if m is None:
        return data, "struct_kind: no dimension-numbers struct"
    new = rng.choice([k for k in (b"conv", b"gather", b"scatter", b"dot") if k != m.group(1)])
    return _edited("struct_kind", data, m.span(1), new,
                   f"#stablehlo.{m.group(1).decode()} -> #stablehlo.{new.decode()}")


def conv_layout(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A convolution layout `[b, 0, 1, f]x[...]->[...]`: two entries of one side swapped,
    one dropped or a spatial dimension added."""
    m = _pick(rng, _CONV_LAYOUT, data)
    if m is None:
        return data, "conv_layout: no convolution layout"
    side = rng.randrange(3)
    items = [s.strip() for s in m.group(side + 1).split(b",")]
    how = rng.choice(["swap", "drop", "add"])
    if how == "swap" and len(items) > 1:
        i, j = rng.sample(range(len(items)), 2)
        items[i], items[j] = items[j], items[i]
    elif how == "drop":
        del items[rng.randrange(len(items))]
    else:
        how = "add"
        spatial = [int(s) for s in items if s.isdigit()]
        items.append(str(max(spatial, default=-1) + 1).encode())
    new = b", ".join(items)
    return _edited("conv_layout", data, m.span(side + 1), new, f"{how} in layout {side}: "
                   f"[{m.group(side + 1).decode()}] -> [{new.decode()}]")


def dense_value(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A splat constant `dense<v>` (paddings, shapes, scalars) set to a hostile number."""
    m = _pick(rng, _DENSE_SPLAT, data)
    if m is None:
        return data, "dense_value: no splat constant"
    new = rng.choice([b"-1", b"0", b"2147483647", b"-2147483648", b"1000000"])
    if b"." in m.group(1):
        new = rng.choice([b"-1.0", b"0.0", b"1.0e+38", b"0x7FC00000", b"0x7F800000"])
    return _edited("dense_value", data, m.span(1), new,
                   f"{m.group(1).decode()} -> {new.decode()}")


EDITS: dict[str, Edit] = {
    "int_attr": int_attr,
    "list_entry": list_entry,
    "tensor_dim": tensor_dim,
    "element_type": element_type,
    "swap_operands": swap_operands,
    "drop_result": drop_result,
    "move_op": move_op,
    "replace_operand": replace_operand,
    "struct_kind": struct_kind,
    "conv_layout": conv_layout,
    "dense_value": dense_value,
}
