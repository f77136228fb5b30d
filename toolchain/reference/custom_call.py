"""The reference of a `custom_call` node: the user's own Python function
(graph/custom_ops.py, docs/custom-ops.md).

The function is called as `fn(inputs, options, quant)`: the operands as numpy arrays
(stored values: int8 for an int8 tensor), the operator's options bytes, and the
(scale, zero point) of every operand then every result, None for an unquantized one.
It returns one array, or a list of them, one per result; each must have the result's
shape and a value its element type holds exactly, else the check would compare the
firmware with something the model never meant.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from toolchain.graph.custom_ops import CustomOp, CustomOpError, quant_of
from toolchain.graph.ir import Node
from toolchain.reference.table import KERNELS

# Loaded once per file content: a reference edited between two checks of one process
# (a notebook) is read again.
_LOADED: dict[tuple[Path, int, int], Any] = {}


def reference_function(op: CustomOp) -> Callable[..., Any]:
    """The user's reference function; CustomOpError when the file does not import or
    does not define it."""
    st = op.reference.stat()
    key = (op.reference, st.st_mtime_ns, st.st_size)
    module = _LOADED.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(
            f"minirt_custom_{op.reference.stem}", op.reference)
        if spec is None or spec.loader is None:
            raise CustomOpError(f"custom op {op.code}: {op.reference} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        # Its own helpers beside it import as they would when it runs as a script.
        sys.path.insert(0, str(op.reference.parent))
        try:
            spec.loader.exec_module(module)
        except Exception as e:  # the user's code: whatever it raises is theirs
            raise CustomOpError(f"custom op {op.code}: importing {op.reference} raised "
                                f"{type(e).__name__}: {_first_line(e)}") from None
        finally:
            sys.path.remove(str(op.reference.parent))
        _LOADED[key] = module
    fn = getattr(module, op.py_function, None)
    if not callable(fn):
        raise CustomOpError(f"custom op {op.code}: {op.reference} defines no function "
                            f"{op.py_function!r}")
    return fn


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"


def _checked(value: Any, t, op: CustomOp, k: int) -> np.ndarray:
    where = f"custom op {op.code}: {op.reference.name}:{op.py_function} result {k}"
    try:
        x = np.asarray(value)
    except Exception as e:
        raise CustomOpError(f"{where} is not an array ({_first_line(e)})") from None
    if x.shape != t.shape and x.size != t.num_elements:
        raise CustomOpError(f"{where} has shape {x.shape}; the model declares {t}")
    want = t.dtype.np_dtype
    if x.dtype != want:
        y = x.astype(want)
        if not np.array_equal(y.astype(x.dtype), x, equal_nan=x.dtype.kind == "f"):
            raise CustomOpError(f"{where} holds {x.dtype} values that {t.dtype} cannot "
                                "hold exactly")
        x = y
    return x.reshape(t.shape)


def run_custom_call(node: Node, *args: np.ndarray) -> list[np.ndarray]:
    """The results of the user's reference on `args`; CustomOpError when it raises or
    returns something the model's declared results cannot be."""
    op: CustomOp = node.attrs["op"]
    fn = reference_function(op)
    types = list(node.attrs["result_types"])
    quant = [quant_of(t.type) for t in node.inputs] + [quant_of(t) for t in types]
    try:
        out = fn([np.array(a) for a in args], bytes(node.attrs["options"]), quant)
    except Exception as e:  # the user's code
        raise CustomOpError(f"custom op {op.code}: {op.reference.name}:{op.py_function} "
                            f"raised {type(e).__name__}: {_first_line(e)}") from None
    outs = list(out) if isinstance(out, list | tuple) else [out]
    if len(outs) != len(types):
        raise CustomOpError(f"custom op {op.code}: {op.reference.name}:{op.py_function} "
                            f"returned {len(outs)} arrays; the model declares "
                            f"{len(types)} results")
    return [_checked(v, t, op, k) for k, (v, t) in enumerate(zip(outs, types))]


KERNELS["custom_call"] = run_custom_call

__all__ = ["reference_function", "run_custom_call"]
