"""Weights wherever a model keeps them: initializers, ``Constant`` nodes (every weight of Paddle's opset-11
exports), and constants reached through Identity / Cast / Reshape / Transpose / Unsqueeze / Squeeze / Flatten
chains; a ``DequantizeLinear`` of a constant is a weight already quantized.

:func:`hoist` makes them initializers of the same names (a ``Constant`` node's value moved, a chain of constants
folded with numpy), so that everything that writes a model (Q/DQ, FP16/BF16 casts) finds every weight in one
place, and it says where each one came from. The values are unchanged, bit for bit, and so are the names the
rest of the graph reads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

CHAIN_OPS = frozenset({"Identity", "Cast", "Reshape", "Transpose", "Unsqueeze", "Squeeze", "Flatten"})
SOURCES = ("initializer", "constant", "folded", "quantized")
"""Where a weight lives: an initializer, a ``Constant`` node, a chain of ops over constants folded here, or the
output of a ``DequantizeLinear`` of constants (already quantized: left as it is)."""


@dataclass(slots=True)
class WeightSources:
    """What :func:`hoist` found: the source of each constant tensor the graph reads, by name."""

    source: dict[str, str] = field(default_factory=dict)

    def counts(self, names: list[str] | set[str] | None = None) -> dict[str, int]:
        """How many of ``names`` (all when None) came from each source."""
        keys = self.source if names is None else [n for n in names if n in self.source]
        c = Counter(self.source[n] for n in keys)
        return {s: c[s] for s in SOURCES if c[s]}


def _constant_value(n: onnx.NodeProto) -> np.ndarray | None:
    """The value of a ``Constant`` node (``value`` or one of the scalar/list attributes); None for a sparse one."""
    for a in n.attribute:
        if a.name == "value":
            return numpy_helper.to_array(a.t)
        if a.name == "value_float":
            return np.array(a.f, np.float32)
        if a.name == "value_floats":
            return np.array(list(a.floats), np.float32)
        if a.name == "value_int":
            return np.array(a.i, np.int64)
        if a.name == "value_ints":
            return np.array(list(a.ints), np.int64)
    return None


def _attr(n: onnx.NodeProto, name: str, default: object = None) -> object:
    for a in n.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _fold(n: onnx.NodeProto, args: list[np.ndarray | None]) -> np.ndarray | None:
    """``n`` (one of :data:`CHAIN_OPS`) evaluated on constant inputs, with ONNX's semantics; None where it cannot
    be (an input missing, a shape that does not fit)."""
    x = args[0]
    if x is None:
        return None
    op = n.op_type
    try:
        if op == "Identity":
            return x
        if op == "Cast":
            to = int(_attr(n, "to"))  # type: ignore[arg-type]
            return x.astype(helper.tensor_dtype_to_np_dtype(to))
        if op == "Transpose":
            perm = _attr(n, "perm")
            return np.transpose(x, list(perm) if perm is not None else None)  # type: ignore[arg-type]
        if op == "Flatten":
            axis = int(_attr(n, "axis", 1))  # type: ignore[arg-type]
            axis = axis + x.ndim if axis < 0 else axis
            return x.reshape(int(np.prod(x.shape[:axis])), -1)
        if op == "Reshape":
            if len(args) < 2 or args[1] is None:
                return None
            shape = [int(d) for d in args[1].ravel()]
            if not _attr(n, "allowzero", 0):
                shape = [x.shape[k] if d == 0 else d for k, d in enumerate(shape)]
            return x.reshape(shape)
        if op in ("Unsqueeze", "Squeeze"):
            axes = _attr(n, "axes")
            if axes is None and len(args) > 1 and args[1] is not None:
                axes = [int(a) for a in args[1].ravel()]
            if op == "Squeeze":
                return np.squeeze(x, tuple(axes)) if axes else np.squeeze(x)  # type: ignore[arg-type]
            out = x
            rank = x.ndim + len(axes or [])  # type: ignore[arg-type]
            for a in sorted(int(a) + rank if int(a) < 0 else int(a) for a in axes or []):  # type: ignore[union-attr]
                out = np.expand_dims(out, a)
            return out
    except (ValueError, TypeError, IndexError):
        return None
    return None


@dataclass(slots=True)
class _Scan:
    """One pass over a main graph: what :func:`hoist` moves and what :func:`constant_values` reads."""

    found: WeightSources
    values: dict[str, np.ndarray]
    keep: list[onnx.NodeProto]
    added: list[onnx.TensorProto]
    folded_from: set[str]


def _scan(g: onnx.GraphProto) -> _Scan:
    outputs = {o.name for o in g.output}
    by_name = {t.name: t for t in g.initializer}
    scan = _Scan(WeightSources({t.name: "initializer" for t in g.initializer}), {}, [], [], set())
    values, source = scan.values, scan.found.source

    def value(name: str) -> np.ndarray | None:
        if name in values:
            return values[name]
        t = by_name.get(name)
        if t is None or t.data_location == onnx.TensorProto.EXTERNAL:
            return None
        values[name] = numpy_helper.to_array(t)
        return values[name]

    for n in g.node:
        out = n.output[0] if len(n.output) == 1 else ""
        if n.op_type == "Constant" and out and out not in outputs:
            v = _constant_value(n)
            if v is not None:
                values[out] = v
                scan.added.append(_tensor(n, v, out))
                source[out] = "constant"
                continue
        if n.op_type in CHAIN_OPS and out and out not in outputs and n.input and all(i in source for i in n.input if i):
            v = _fold(n, [value(i) if i else None for i in n.input])
            if v is not None and np.issubdtype(v.dtype, np.floating):
                values[out] = v
                scan.added.append(numpy_helper.from_array(v, out))
                source[out] = "folded"
                scan.folded_from.update(i for i in n.input if i)
                continue
        if n.op_type == "DequantizeLinear" and out and n.input and n.input[0] in source:
            source[out] = "quantized"
        scan.keep.append(n)
    return scan


def hoist(model: onnx.ModelProto) -> WeightSources:
    """Move every constant of ``model``'s main graph into its initializers, in place (see the module docstring);
    returns the source of each constant tensor. A ``Constant`` whose output is a graph output stays a node, and so
    does a chain whose result is not a floating-point tensor (shape arithmetic is left to the graph)."""
    g = model.graph
    scan = _scan(g)
    if scan.added:
        del g.node[:]
        g.node.extend(scan.keep)
        g.initializer.extend(scan.added)
        if model.ir_version < 4:  # IR < 4 lists every initializer as a graph input too
            g.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in scan.added)
        _drop_unused(g, scan.folded_from - {o.name for o in g.output})
    return scan.found


def constant_values(model: onnx.ModelProto, names: list[str]) -> dict[str, np.ndarray]:
    """The values of those of ``names`` that are weights, wherever they live (the sources :func:`hoist` finds),
    read without changing ``model``; a name computed at run time is left out."""
    scan = _scan(model.graph)
    by_name = {t.name: t for t in model.graph.initializer}
    out: dict[str, np.ndarray] = {}
    for name in names:
        if name in scan.values:
            out[name] = scan.values[name]
        elif name in by_name and by_name[name].data_location != onnx.TensorProto.EXTERNAL:
            out[name] = numpy_helper.to_array(by_name[name])
    return out


def _tensor(n: onnx.NodeProto, v: np.ndarray, name: str) -> onnx.TensorProto:
    """The ``Constant``'s own tensor where it has one (its exact type: bfloat16, float8 stay as they are)."""
    for a in n.attribute:
        if a.name == "value":
            t = onnx.TensorProto()
            t.CopyFrom(a.t)
            t.name = name
            return t
    return numpy_helper.from_array(v, name)


def _drop_unused(g: onnx.GraphProto, candidates: set[str]) -> None:
    """The ``candidates`` (the inputs of folded chains) that nothing reads any more, bodies of If/Loop/Scan
    included, from the initializers (and, for IR < 4, the graph inputs that list them)."""
    read = {i for n in g.node for i in n.input} | {o.name for o in g.output}

    def body_reads(graph: onnx.GraphProto) -> None:
        for n in graph.node:
            read.update(n.input)
            for a in n.attribute:
                for b in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
                    body_reads(b)

    body_reads(g)
    unused = [t for t in g.initializer if t.name in candidates and t.name not in read]
    if unused:
        names = {t.name for t in unused}
        kept = [t for t in g.initializer if t.name not in names]
        del g.initializer[:]
        g.initializer.extend(kept)
        inputs = [i for i in g.input if i.name not in names]
        if len(inputs) != len(g.input):
            del g.input[:]
            g.input.extend(inputs)
