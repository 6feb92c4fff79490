"""Valid random inputs: integer inputs drawn within what they index, masks as masks, positions as ranges.

Fixed integer ranges (``[0, 8)``, as other tools draw) break exactly the models users bring: a token id past
an embedding table's rows, an attention mask of random integers, a sample rate the model compares with a
constant. Here each integer or boolean input is traced to what it feeds (through casts and reshapes) and gets
a rule, said in one line and kept in the JSON:

- it indexes a table (Gather / GatherElements / GatherND / OneHot / Embedding): drawn in ``[0, size)`` of the
  indexed axis (the smallest such size when it indexes several);
- it is named like an attention mask: 0/1, ones with a padded tail (every other row; the last quarter of one
  row);
- it is named like position ids: ``0 .. n-1`` along its last axis;
- it is compared with a constant (``Equal(sr, 16000)``): that constant;
- otherwise integers in ``[0, 8)``, booleans at random.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

_PASS = {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand", "Transpose", "Slice", "Concat"}
_MASK = re.compile(r"(?i)(attention_?mask|attn_?mask|input_?mask|(^|_)mask$|padding_?mask)")
_POSITION = re.compile(r"(?i)(position_?ids|pos_?ids|positions)$")


@dataclass(frozen=True, slots=True)
class InputRule:
    """How one input's random values are drawn."""

    kind: str
    """``index``, ``mask``, ``position``, ``constant``, ``normal``, ``small-int`` or ``bool``."""
    high: int = 8
    value: float = 0.0
    why: str = ""

    def text(self) -> str:
        return self.why


def _shape_of(graph: onnx.GraphProto, name: str) -> list[int] | None:
    for init in graph.initializer:
        if init.name == name:
            return list(init.dims)
    for vi in (*graph.input, *graph.value_info):
        if vi.name == name and vi.type.HasField("tensor_type"):
            dims = vi.type.tensor_type.shape.dim
            return [d.dim_value if d.HasField("dim_value") else -1 for d in dims]
    return None


def _const_value(graph: onnx.GraphProto, producers: dict[str, onnx.NodeProto], name: str) -> np.ndarray | None:
    for init in graph.initializer:
        if init.name == name:
            try:
                return numpy_helper.to_array(init)
            except Exception:  # noqa: BLE001 - external or exotic: no value
                return None
    node = producers.get(name)
    if node is not None and node.op_type == "Constant":
        for a in node.attribute:
            if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                try:
                    return numpy_helper.to_array(a.t)
                except Exception:  # noqa: BLE001
                    return None
            if a.name == "value_int":
                return np.array(a.i)
            if a.name == "value_float":
                return np.array(a.f)
    return None


_INTS = frozenset(
    {
        onnx.TensorProto.INT64,
        onnx.TensorProto.INT32,
        onnx.TensorProto.INT16,
        onnx.TensorProto.INT8,
        onnx.TensorProto.UINT8,
        onnx.TensorProto.UINT16,
        onnx.TensorProto.UINT32,
        onnx.TensorProto.UINT64,
    }
)


def input_rules(model: onnx.ModelProto) -> dict[str, InputRule]:
    """A rule for each real input of ``model`` (main graph; bodies that read an input count through the node
    that owns them)."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    producers: dict[str, onnx.NodeProto] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
        for o in n.output:
            producers[o] = n
    rules: dict[str, InputRule] = {}
    for vi in g.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        elem = vi.type.tensor_type.elem_type
        is_int, is_bool = elem in _INTS, elem == onnx.TensorProto.BOOL
        by_name = _rule_by_name(vi.name, elem, is_int, is_bool)
        if by_name is not None:
            rules[vi.name] = by_name
        elif not (is_int or is_bool):
            rules[vi.name] = InputRule("normal", why="floats from a standard normal")
        else:
            rules[vi.name] = _rule_by_use(g, vi.name, consumers, producers, is_bool)
    return rules


def _rule_by_name(name: str, elem: int, is_int: bool, is_bool: bool) -> InputRule | None:
    """An attention mask or position ids, known by the input's name and type; None otherwise."""
    if _MASK.search(name) and (is_int or is_bool or elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)):
        return InputRule("mask", why="attention mask by its name: 1s with a padded tail (0s) on every other row")
    if is_int and _POSITION.search(name):
        return InputRule("position", why="position ids by their name: 0 .. n-1 along the last axis")
    return None


def _rule_by_use(
    g: onnx.GraphProto,
    name: str,
    consumers: dict[str, list[onnx.NodeProto]],
    producers: dict[str, onnx.NodeProto],
    is_bool: bool,
) -> InputRule:
    """An integer or boolean input's rule from what reads it (through shape-keeping ops): indices below the
    smallest size it indexes, a constant it is compared with, else small integers (or booleans)."""
    sizes: list[tuple[int, str]] = []
    constant: tuple[float, str] | None = None
    frontier, seen = [name], {name}
    while frontier:
        here = frontier.pop()
        for n in consumers.get(here, []):
            found = _index_size(g, producers, n, here)
            if found is not None:
                sizes.append(found)
            elif n.op_type == "Equal" and constant is None:
                other = n.input[1] if n.input[0] == here else n.input[0]
                value = _const_value(g, producers, other)
                if value is not None and value.size == 1:
                    v = value.reshape(-1)[0]
                    constant = (float(v), f"compared with {v} in '{n.name or n.output[0]}'")
            elif n.op_type in _PASS and n.input and n.input[0] == here:
                for o in n.output:
                    if o and o not in seen:
                        seen.add(o)
                        frontier.append(o)
    if sizes:
        size, where = min(sizes)
        return InputRule("index", high=size, why=f"indices in [0, {size}): it indexes {where}")
    if constant is not None:
        return InputRule("constant", value=constant[0], why=f"the value {constant[0]:g}: it is {constant[1]}")
    if is_bool:
        return InputRule("bool", why="booleans at random")
    return InputRule("small-int", why="integers in [0, 8): nothing in the graph bounds it")


def _index_size(
    g: onnx.GraphProto, producers: dict[str, onnx.NodeProto], n: onnx.NodeProto, name: str
) -> tuple[int, str] | None:
    """The size ``name`` indexes in node ``n`` (a Gather's axis, GatherND's first dim, OneHot's depth), and where;
    None when ``n`` does not index with it or the size is not known."""
    op = n.op_type
    if op in ("Gather", "GatherElements") and len(n.input) > 1 and n.input[1] == name:
        axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
        shape = _shape_of(g, n.input[0])
        if shape and -len(shape) <= axis < len(shape) and shape[axis] > 0:
            return shape[axis], f"{op} '{n.name or n.output[0]}' axis {axis} of '{n.input[0]}'"
    elif op == "GatherND" and len(n.input) > 1 and n.input[1] == name:
        shape = _shape_of(g, n.input[0])
        if shape and shape[0] > 0:
            return shape[0], f"GatherND '{n.name or n.output[0]}' of '{n.input[0]}'"
    elif op == "OneHot" and n.input and n.input[0] == name and len(n.input) > 1:
        depth = _const_value(g, producers, n.input[1])
        if depth is not None and depth.size == 1 and int(depth.reshape(-1)[0]) > 0:
            return int(depth.reshape(-1)[0]), f"OneHot '{n.name or n.output[0]}' depth"
    return None


def draw(rule: InputRule | None, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Values for one input by its rule (floats from a standard normal without one)."""
    kind = (
        rule.kind
        if rule is not None
        else ("normal" if dtype.kind == "f" else "bool" if dtype.kind == "b" else "small-int")
    )
    if kind == "normal":
        return rng.standard_normal(shape).astype(dtype)
    if kind == "index":
        return rng.integers(0, max(1, rule.high if rule else 8), size=shape).astype(dtype)
    if kind == "constant":
        return np.full(shape, rule.value if rule else 0, dtype=dtype)
    if kind == "mask":
        a = np.ones(shape, dtype=np.float64)
        if shape and shape[-1] > 1:
            rows = a.reshape(-1, shape[-1])
            n = shape[-1]
            if rows.shape[0] == 1:
                rows[0, n - max(1, n // 4) :] = 0  # one row: its last quarter is padding
            for r in range(1, rows.shape[0], 2):
                rows[r, max(1, n // 2) :] = 0  # every other row: its second half is padding
        return a.astype(dtype)
    if kind == "position":
        if not shape:
            return np.zeros(shape, dtype)  # a scalar position: the first
        return np.broadcast_to(np.arange(shape[-1]), shape).astype(dtype).copy()
    if kind == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(0, 8, size=shape).astype(dtype)
