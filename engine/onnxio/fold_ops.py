"""Numpy evaluations of the ONNX ops that shape arithmetic is made of (``Shape → Gather → Unsqueeze → Concat →
Reshape`` chains, slices of position tables, casts, integer division), for folding constants at the dims in force.

ONNX's reference evaluator runs any op, but builds an evaluator for each node (about a third of a millisecond): a
Hugging Face decoder of 300 layers has ten thousand such nodes, so folding them through it took seconds and a budget
had to stop it, leaving the shapes of most layers unknown. These take microseconds; an op that is not here, or one of
its inputs of a type these do not take, is left to the reference evaluator (:func:`evaluate` returns None). Each one
follows the operator's specification (and gives what the reference evaluator gives: tests/engine/test_fold_ops.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto

Arrays = Sequence[np.ndarray | None]
FOLD_ELEMENTS = 1 << 16
"""The largest output folded (as :mod:`~splitscope.engine.onnxio.concrete`'s limit): a larger one is never made."""


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        if a.type == AttributeProto.INT:
            out[a.name] = a.i
        elif a.type == AttributeProto.INTS:
            out[a.name] = list(a.ints)
        elif a.type == AttributeProto.FLOAT:
            out[a.name] = a.f
        elif a.type == AttributeProto.TENSOR:
            out[a.name] = a.t
        elif a.type == AttributeProto.STRING:
            out[a.name] = a.s.decode(errors="replace")
        else:
            raise _NotHere
    return out


class _NotHere(Exception):
    """An input or attribute these evaluations do not take: the reference evaluator runs the node."""


def _ints(v: np.ndarray | None) -> list[int]:
    if v is None or v.dtype.kind not in "iu":
        raise _NotHere
    return [int(x) for x in v.reshape(-1)]


def _axes(node_attrs: dict[str, Any], ins: Arrays, k: int) -> list[int] | None:
    """Axes from input ``k`` (newer opsets) or the ``axes`` attribute (older ones); None when neither gives any."""
    if len(ins) > k and ins[k] is not None:
        return _ints(ins[k])
    return node_attrs.get("axes")


def _identity(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    return [_need(ins, 0)]


def _need(ins: Arrays, k: int) -> np.ndarray:
    v = ins[k] if len(ins) > k else None
    if v is None:
        raise _NotHere
    return v


def _unsqueeze(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x = _need(ins, 0)
    axes = _axes(a, ins, 1)
    if axes is None:
        raise _NotHere
    rank = x.ndim + len(axes)
    norm = sorted(ax + rank if ax < 0 else ax for ax in axes)
    if len(set(norm)) != len(norm) or any(not 0 <= ax < rank for ax in norm):
        raise _NotHere
    out = x
    for ax in norm:
        out = np.expand_dims(out, ax)
    return [out]


def _squeeze(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x = _need(ins, 0)
    axes = _axes(a, ins, 1)
    if axes is None:
        return [np.squeeze(x)]
    norm = tuple(ax + x.ndim if ax < 0 else ax for ax in axes)
    if any(not 0 <= ax < x.ndim or x.shape[ax] != 1 for ax in norm):
        raise _NotHere
    return [np.squeeze(x, axis=norm)]


def _concat(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    xs = [v for v in ins if v is not None]
    if not xs or len(xs) != len(ins) or len({v.dtype for v in xs}) != 1:
        raise _NotHere
    return [np.concatenate(xs, axis=int(a.get("axis", 0)))]


def _cast(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x = _need(ins, 0)
    to = int(a.get("to", 0))
    if to not in _CASTABLE or x.dtype.kind not in "biuf":
        raise _NotHere
    dt = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
    if dt.kind in "iu" and x.dtype.kind == "f" and not np.isfinite(x).all():
        raise _NotHere  # what NaN or inf casts to is the platform's: left to the reference
    return [x.astype(dt)]


_CASTABLE = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.DOUBLE,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.INT8,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT64,
    onnx.TensorProto.UINT8,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.UINT32,
    onnx.TensorProto.UINT64,
    onnx.TensorProto.BOOL,
}


def _gather(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x, idx = _need(ins, 0), _need(ins, 1)
    axis = int(a.get("axis", 0))
    if idx.dtype.kind not in "iu" or not -x.ndim <= axis < x.ndim:
        raise _NotHere
    n = x.shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise _NotHere
    return [np.take(x, idx.astype(np.int64), axis=axis)]


def _slice(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x = _need(ins, 0)
    if len(ins) > 1:  # opset 10 and later: starts, ends, axes, steps as inputs
        starts, ends = _ints(_need(ins, 1)), _ints(_need(ins, 2))
        axes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
        steps = _ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    else:
        starts, ends = list(a.get("starts", [])), list(a.get("ends", []))
        axes = list(a.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    if not (len(starts) == len(ends) == len(axes) == len(steps)) or 0 in steps:
        raise _NotHere
    index: list[slice] = [slice(None)] * x.ndim
    for ax, s, e, st in zip(axes, starts, ends, steps, strict=True):
        ax = ax + x.ndim if ax < 0 else ax
        if not 0 <= ax < x.ndim:
            raise _NotHere
        d = x.shape[ax]
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
        index[ax] = slice(s, e if e >= 0 else None, st)
    return [x[tuple(index)].copy()]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], keep_type: bool = True) -> Callable[..., list]:
    def run(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
        x, y = _need(ins, 0), _need(ins, 1)
        if x.dtype != y.dtype or x.dtype.kind not in "biuf":
            raise _NotHere
        _fits(x, y)
        with np.errstate(all="ignore"):
            out = np.asarray(fn(x, y))
        return [out.astype(x.dtype, copy=False) if keep_type else out]

    return run


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":
        if (y == 0).any():
            raise _NotHere
        # Truncated toward zero, as the specification's integer division, in integers (a float64 quotient is wrong
        # past 2**53: INT64_MAX, the usual "to the end", came out negative)
        q = np.floor_divide(x, y)
        if x.dtype.kind == "i":
            q = q + ((np.remainder(x, y) != 0) & ((x < 0) ^ (y < 0))).astype(q.dtype)
        return q
    return np.divide(x, y)


def _fits(*arrays: np.ndarray) -> None:
    """Refuse (to the reference evaluator's size check) a broadcast past the folding limit before it is computed:
    a causal mask of a 32k sequence would be gigabytes."""
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise _NotHere from None
    if int(np.prod(shape, dtype=np.float64)) > FOLD_ELEMENTS:
        raise _NotHere


def _unary(fn: Callable[[np.ndarray], np.ndarray], kinds: str = "iuf") -> Callable[..., list]:
    def run(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
        x = _need(ins, 0)
        if x.dtype.kind not in kinds:
            raise _NotHere
        with np.errstate(all="ignore"):
            return [np.asarray(fn(x)).astype(x.dtype, copy=False)]

    return run


def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., list]:
    def run(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
        x, y = _need(ins, 0), _need(ins, 1)
        if x.dtype != y.dtype or x.dtype.kind not in "biuf":
            raise _NotHere
        _fits(x, y)
        return [np.asarray(fn(x, y))]

    return run


def _where(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    c, x, y = _need(ins, 0), _need(ins, 1), _need(ins, 2)
    if c.dtype != np.bool_ or x.dtype != y.dtype:
        raise _NotHere
    _fits(c, x, y)
    return [np.where(c, x, y)]


def _variadic(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., list]:
    def run(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
        xs = [v for v in ins if v is not None]
        if not xs or len(xs) != len(ins) or len({v.dtype for v in xs}) != 1 or xs[0].dtype.kind not in "iuf":
            raise _NotHere
        _fits(*xs)
        out = xs[0]
        for v in xs[1:]:
            out = fn(out, v)
        return [np.asarray(out)]

    return run


def _shape(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x = _need(ins, 0)
    start, end = int(a.get("start", 0)), a.get("end")
    return [np.array(x.shape[slice(start, None if end is None else int(end))], np.int64)]


def _size(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    return [np.array(_need(ins, 0).size, np.int64)]


def _reshape(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x, shape = _need(ins, 0), _ints(_need(ins, 1))
    if not a.get("allowzero", 0):  # a 0 copies the input's dim at that place
        if any(d == 0 and k >= x.ndim for k, d in enumerate(shape)):
            raise _NotHere
        shape = [x.shape[k] if d == 0 else d for k, d in enumerate(shape)]
    if shape.count(-1) > 1:
        raise _NotHere
    try:
        return [x.reshape(shape)]
    except ValueError:
        raise _NotHere from None


def _transpose(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x = _need(ins, 0)
    perm = a.get("perm")
    if perm is not None and sorted(perm) != list(range(x.ndim)):
        raise _NotHere
    return [np.transpose(x, perm).copy()]


def _expand(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    x, shape = _need(ins, 0), _ints(_need(ins, 1))
    try:
        out = np.broadcast_shapes(x.shape, tuple(shape))
    except ValueError:
        raise _NotHere from None
    if int(np.prod(out, dtype=np.float64)) > FOLD_ELEMENTS:
        raise _NotHere
    return [np.broadcast_to(x, out).copy()]


def _constant_of_shape(a: dict[str, Any], ins: Arrays) -> list[np.ndarray]:
    shape = _ints(_need(ins, 0))
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.float64)) > FOLD_ELEMENTS:
        raise _NotHere
    t = a.get("value")
    value = onnx.numpy_helper.to_array(t).reshape(-1) if t is not None else np.zeros(1, np.float32)
    if value.size != 1:
        raise _NotHere
    return [np.full(shape, value[0], dtype=value.dtype)]


_OPS: dict[str, Callable[[dict[str, Any], Arrays], list[np.ndarray]]] = {
    "Identity": _identity,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": _concat,
    "Cast": _cast,
    "Gather": _gather,
    "Slice": _slice,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Neg": _unary(np.negative, "if"),
    "Abs": _unary(np.abs),
    "Floor": _unary(np.floor, "f"),
    "Ceil": _unary(np.ceil, "f"),
    "Sqrt": _unary(np.sqrt, "f"),
    "Equal": _compare(np.equal),
    "Less": _compare(np.less),
    "Greater": _compare(np.greater),
    "LessOrEqual": _compare(np.less_equal),
    "GreaterOrEqual": _compare(np.greater_equal),
    "Not": _unary(np.logical_not, "b"),
    "Where": _where,
    "Min": _variadic(np.minimum),
    "Max": _variadic(np.maximum),
    "Shape": _shape,
    "Size": _size,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Expand": _expand,
    "ConstantOfShape": _constant_of_shape,
}
OPS = frozenset(_OPS)
"""The ops evaluated here (the rest go to the reference evaluator)."""


def evaluate(node: onnx.NodeProto, ins: Arrays) -> list[np.ndarray] | None:
    """The node's outputs from its inputs' values (None for an absent optional input), or None when this module
    does not evaluate it (its op, an input's type or an attribute): then the reference evaluator may."""
    fn = _OPS.get(node.op_type)
    if fn is None or node.domain not in ("", "ai.onnx"):
        return None
    try:
        return [np.asarray(o) for o in fn(_attrs(node), ins)]  # numpy gives a scalar for a 0-d result
    except _NotHere:
        return None
    except (ValueError, IndexError, TypeError, OverflowError, MemoryError):
        return None
