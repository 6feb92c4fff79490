"""The shapes in force: every tensor's concrete shape at the values given for the model's symbolic dims.

ONNX shape inference on a model with symbolic inputs loses most spatial dims: a stride-2 Conv on a
``height`` input gives an unnamed dim, and costs downstream would be guessed. Here the inputs' symbolic
dims are fixed to their values and chains of constants folded (:func:`fixed_model`), then inference runs
again (:mod:`splitscope.engine.onnxio.shapes`), so every tensor it can type gets its real shape. Where it
cannot (past an op it does not know), the expressions exporters write as dim names
(``floor(height/2 - 1/2) + 1``) are evaluated (:func:`splitscope.engine.dims.expr.eval_dim`).

A dim with no value is never taken as 1 silently: :func:`classify_dims` sorts the inputs' dims into
batch-like ones (1 by default, said in a note), ones a hint the model carries gives (exporter metadata),
and the rest, which the caller must ask for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING

import onnx
from onnx import AttributeProto
from splitscope.engine.dims.expr import eval_dim
from splitscope.engine.dims.names import ANONYMOUS, batch_like, input_dim_name, suggest_value  # noqa: F401
from splitscope.engine.onnxio.fold_ops import FOLD_ELEMENTS

if TYPE_CHECKING:
    import numpy as np


def input_dims(graph: onnx.GraphProto) -> list[tuple[str, int, str]]:
    """(input, axis, dim name) of every symbolic or unnamed dim of the real inputs, in order."""
    inits = {i.name for i in graph.initializer}
    out = []
    for vi in graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            out.append((vi.name, k, input_dim_name(vi.name, k, d.dim_param)))
    return out


# --- which dims need a value -------------------------------------------------------------------------------


@dataclass
class DimPlan:
    """The dims of a model's inputs sorted by where their value comes from."""

    values: dict[str, int] = field(default_factory=dict)
    """Every dim with a value: given, from a hint, or batch-like at 1."""
    given: list[str] = field(default_factory=list)
    hinted: dict[str, str] = field(default_factory=dict)
    """dim: where its value came from."""
    defaulted: list[str] = field(default_factory=list)
    """Batch-like dims taken as 1."""
    missing: list[str] = field(default_factory=list)
    """Dims with no value (height, width, sequence, ...): the caller must ask for them."""
    where: dict[str, str] = field(default_factory=dict)
    """dim: the input and axis it sits on (``x axis 2``)."""

    def notes(self) -> list[str]:
        out = []
        if self.defaulted:
            out.append(f"{', '.join(f'{d}=1' for d in self.defaulted)}: batch-like, not given, taken as 1")
        for d, why in self.hinted.items():
            out.append(f"{d}={self.values[d]} from {why}")
        return out

    places: dict[str, tuple[int, int]] = field(default_factory=dict)
    """dim: (axis, rank of the input) where it first sits."""

    def example(self) -> str:
        """A command-line example naming the missing dims, each with a typical value for its place."""
        return " ".join(f"--dim {d}={suggest_value(d, *self.places.get(d, (-1, 0)))}" for d in self.missing)


def classify_dims(model: onnx.ModelProto, given: Mapping[str, int] | None) -> DimPlan:
    """Sort the inputs' symbolic dims: given, hinted by the model's metadata, batch-like (1), or missing."""
    given = dict(given or {})
    plan = DimPlan()
    seen: dict[str, int] = {}
    rank: dict[str, int] = {}
    for inp, axis, name in input_dims(model.graph):
        if name not in seen:
            seen[name] = axis
            plan.where[name] = f"{inp} axis {axis}"
            rank[name] = _rank(model.graph, inp)
            plan.places[name] = (axis, rank[name])
    hints = _metadata_hints(model, seen, rank)
    for name, axis in seen.items():
        if name in given:
            plan.values[name] = int(given[name])
            plan.given.append(name)
        elif name in hints:
            plan.values[name], plan.hinted[name] = hints[name]
        elif batch_like(name, axis, rank.get(name, 2)):
            plan.values[name] = 1
            plan.defaulted.append(name)
        else:
            plan.missing.append(name)
    for name, v in given.items():  # values for dims inside the graph (expressions' names) are kept too
        plan.values.setdefault(name, int(v))
    return plan


def _rank(graph: onnx.GraphProto, name: str) -> int:
    vi = next((v for v in graph.input if v.name == name), None)
    return len(vi.type.tensor_type.shape.dim) if vi is not None else 0


def _metadata_hints(
    model: onnx.ModelProto, dims: Mapping[str, int], rank: Mapping[str, int]
) -> dict[str, tuple[int, str]]:
    """Values an exporter wrote down: Ultralytics' ``imgsz`` ([h, w]) for the spatial axes of an image input."""
    meta = {p.key: p.value for p in model.metadata_props}
    out: dict[str, tuple[int, str]] = {}
    raw = meta.get("imgsz")
    if raw:
        try:
            size = json.loads(raw.replace("(", "[").replace(")", "]"))
        except ValueError:
            size = None
        if isinstance(size, int):
            size = [size, size]
        if isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size):
            for name, axis in dims.items():
                if rank.get(name) == 4 and axis in (2, 3):
                    out[name] = (size[axis - 2], "the model's metadata (imgsz)")
    return out


# --- inference at the dims in force --------------------------------------------------------------------------


def _clear_inferred(g: onnx.GraphProto, outputs: bool) -> None:
    """Drop what an exporter wrote as intermediate shapes (symbolic expressions), in bodies too."""
    del g.value_info[:]
    if outputs:
        for o in g.output:
            if o.type.HasField("tensor_type"):
                o.type.tensor_type.ClearField("shape")
    for n in g.node:
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                _clear_inferred(a.g, True)
            elif a.type == AttributeProto.GRAPHS:
                for sg in a.graphs:
                    _clear_inferred(sg, True)


_NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
_FOLD_LIMIT = 1500  # nodes the reference evaluator runs per model (the ops of fold_ops, numpy, are not counted)
_FOLD_ELEMENTS = FOLD_ELEMENTS


_BODY_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
"""The standard ops with graph attributes (a custom-domain op's attributes are looked at too)."""


def _constant_value(n: onnx.NodeProto) -> object | None:
    """A Constant's value: its TensorProto (converted by :func:`_value` when a node needs it: most are weights that
    none does) or a small array; None when it is too large or external."""
    import numpy as np

    for a in n.attribute:
        try:
            if a.name == "value" and a.type == AttributeProto.TENSOR:
                if a.t.data_location == onnx.TensorProto.EXTERNAL or math.prod(a.t.dims) > _FOLD_ELEMENTS:
                    return None
                return a.t
            if a.name == "value_int":
                return np.array(a.i, np.int64)
            if a.name == "value_ints":
                return np.array(list(a.ints), np.int64)
            if a.name == "value_float":
                return np.array(a.f, np.float32)
            if a.name == "value_floats":
                return np.array(list(a.floats), np.float32)
        except Exception:  # noqa: BLE001 - exotic dtypes: not folded
            return None
    return None


@dataclass
class FoldBudget:
    """What folding may still spend, shared by every graph and every pass of one model: nodes evaluated
    (tried, folded or not) and the nodes already found not to fold (never tried again)."""

    left: int = _FOLD_LIMIT
    refused: set[str] = field(default_factory=set)


@dataclass
class FoldState:
    """One graph's folding carried from pass to pass (:func:`~splitscope.engine.onnxio.shapes.infer_concrete`
    folds the same graph after each inference): the values known, the nodes there is nothing more to do with, and
    the tensors whose value can never be known (fed by a real input, a custom op or a node that does not fold), so
    that a later pass looks only at what the last one's shapes can still fold."""

    known: dict[str, object] = field(default_factory=dict)
    pending: list[int] | None = None
    """Indices of the nodes still to look at (None before the first pass: all)."""
    never: set[str] = field(default_factory=set)


def _value(known: MutableMapping[str, object], name: str) -> np.ndarray | None:
    """The value of ``name`` in ``known``; an initializer is kept there as its TensorProto until a node needs it
    (most small weights never are), then converted once. None when unknown or not convertible."""
    import numpy as np
    from onnx import numpy_helper

    v = known.get(name)
    if isinstance(v, onnx.TensorProto):
        try:
            v = known[name] = numpy_helper.to_array(v)
        except Exception:  # noqa: BLE001 - exotic dtypes: not folded
            del known[name]
            return None
    return np.asarray(v) if v is not None else None


def _estimate(
    n: onnx.NodeProto, known: MutableMapping[str, object], shapes: Mapping[str, tuple[int, ...]]
) -> int | None:
    """Elements a node would make, before it is run: the ops that can blow a small input up (a
    ConstantOfShape of [seq, seq], an Expand, a Tile, a Range) from their inputs' values; others from the shape a
    pass found; None when nothing says."""
    import numpy as np

    def val(k: int) -> np.ndarray | None:
        return _value(known, n.input[k]) if len(n.input) > k and n.input[k] else None

    try:
        if n.op_type == "ConstantOfShape" and (v := val(0)) is not None:
            return int(np.prod(v.astype(np.float64)))
        if n.op_type == "Expand" and (x := val(0)) is not None and (v := val(1)) is not None:
            return int(np.prod(np.broadcast_shapes(x.shape, tuple(int(d) for d in v.reshape(-1)))))
        if n.op_type == "Tile" and (x := val(0)) is not None and (v := val(1)) is not None:
            return int(x.size * np.prod(v.astype(np.float64)))
        if n.op_type == "Range" and all((val(k) is not None) for k in range(3)):
            start, limit, delta = (float(np.asarray(val(k)).reshape(-1)[0]) for k in range(3))
            return int(max(0.0, math.ceil((limit - start) / delta))) if delta else None
    except (ValueError, TypeError, OverflowError):
        return _FOLD_ELEMENTS + 1  # inputs that do not even broadcast: not worth running
    outs = [shapes.get(o) for o in n.output if o]
    if outs and all(o is not None for o in outs):
        return max(math.prod(o) for o in outs if o is not None)
    return None


def fold_constants(
    g: onnx.GraphProto,
    opset: int,
    known: dict[str, object] | None = None,
    inferred: onnx.GraphProto | None = None,
    budget: FoldBudget | None = None,
    outer: Mapping[str, tuple[int, ...]] | None = None,
    state: FoldState | None = None,
) -> int:
    """Replace, in ``g`` (a copy), each node fed only by constants with a Constant of its value, so that shape
    inference sees the pads, shapes and scales that a chain of constants computes (ONNX's own data
    propagation stops at ConstantOfShape, Transpose and casts). With ``inferred`` (the same graph after a pass of
    inference at the dims in force), ``Shape`` and ``Size`` of a tensor it typed are constants too, so the chains
    that compute a Reshape's target from them fold on the next pass; each body is read with its own shapes (and
    its enclosing scopes'), never a sibling's. A node whose output would exceed 64k elements is not run.
    Recurses into bodies; returns nodes folded. ``state``: the same graph's folding from an earlier pass, carried
    on (a graph with bodies is looked at whole each time)."""
    return _Folder(g, opset, known, inferred, budget, outer, state).run()


class _Folder:
    """One pass of :func:`fold_constants` over one graph: what it knows, what never folds, what a later pass may."""

    def __init__(
        self,
        g: onnx.GraphProto,
        opset: int,
        known: dict[str, object] | None,
        inferred: onnx.GraphProto | None,
        budget: FoldBudget | None,
        outer: Mapping[str, tuple[int, ...]] | None,
        state: FoldState | None,
    ) -> None:
        self.g, self.opset = g, opset
        self.budget = budget if budget is not None else FoldBudget()
        self.shapes: Mapping[str, tuple[int, ...]] = (
            LazyShapes(inferred, outer) if inferred is not None else dict(outer or {})
        )
        first = state is None or state.pending is None
        self.state = state if state is not None else FoldState(dict(known or {}))
        self.known, self.never = self.state.known, self.state.never
        if first:
            self._seed()
        self.twins = inferred.node if inferred is not None and len(inferred.node) == len(g.node) else None
        self.folded = 0
        self.later: list[int] = []  # the nodes a later pass may still fold

    def _seed(self) -> None:
        known, never = self.known, self.never
        for init in self.g.initializer:  # converted when a node needs them (_value)
            if init.data_location != onnx.TensorProto.EXTERNAL and math.prod(init.dims) <= _FOLD_ELEMENTS:
                known[init.name] = init
            elif init.name not in known:
                never.add(init.name)  # a large weight: what reads it never folds (its Shape does, below)
        never.update(vi.name for vi in self.g.input if vi.name not in known)

    def run(self) -> int:
        nodes = self.g.node
        for i in range(len(nodes)) if self.state.pending is None else self.state.pending:
            self._node(i, nodes[i])
        self.state.pending = self.later
        return self.folded

    def _node(self, i: int, n: onnx.NodeProto) -> None:
        op, standard = n.op_type, n.domain in ("", "ai.onnx")
        bodies = (
            [a for a in n.attribute if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS)]
            if op in _BODY_OPS or not standard
            else None
        )
        if bodies:
            self.later.append(i)
            self._bodies(i, bodies)
        elif not standard or op in _NO_FOLD:
            self.never.update(n.output)
        elif op == "Constant":
            value = _constant_value(n)
            if value is not None and n.output and n.output[0]:
                self.known[n.output[0]] = value
            else:
                self.never.update(n.output)
        elif not (op in ("Shape", "Size") and self._shape(i, n)):
            self._evaluate(i, n)

    def _bodies(self, i: int, bodies: list[onnx.AttributeProto]) -> None:
        """Fold inside each body of node ``i``, each read with its twin's shapes (the same body after inference)."""
        twin = {a.name: a for a in self.twins[i].attribute} if self.twins is not None else {}
        for a in bodies:
            mine = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
            other = twin.get(a.name)
            theirs = ([other.g] if a.type == AttributeProto.GRAPH else list(other.graphs)) if other else []
            for k, sg in enumerate(mine):
                inferred = theirs[k] if k < len(theirs) else None
                self.folded += fold_constants(sg, self.opset, self.known, inferred, self.budget, self.shapes)

    def _shape(self, i: int, n: onnx.NodeProto) -> bool:
        """Fold a ``Shape`` or ``Size`` of a typed tensor; False where it is left to the generic path (no input)."""
        import numpy as np
        from onnx import numpy_helper

        if n.output and n.output[0] in self.known:
            return True
        if not n.input:
            return False
        if n.input[0] not in self.shapes:
            self.later.append(i)  # its input may be typed by the next pass
            return True
        shape = self.shapes[n.input[0]]
        if n.op_type == "Size":
            value = np.array(math.prod(shape), np.int64)
        else:
            attrs = {a.name: a.i for a in n.attribute}
            start, end = attrs.get("start", 0), attrs.get("end", len(shape))
            value = np.array(shape[slice(start, end)], np.int64)
        self.known[n.output[0]] = value
        self.g.node[i].CopyFrom(
            onnx.helper.make_node("Constant", [], [n.output[0]], value=numpy_helper.from_array(value, n.output[0]))
        )
        self.folded += 1
        return True

    def _evaluate(self, i: int, n: onnx.NodeProto) -> None:
        """Run a node whose inputs are all known and small, and put Constants of its outputs in its place."""
        import numpy as np
        from onnx import numpy_helper

        known, never = self.known, self.never
        ins = [x for x in n.input if x]
        key = n.output[0] if n.output else ""
        if not n.input or key in self.budget.refused or any(x in never for x in ins):
            never.update(n.output)
            return
        if not all(x in known for x in ins):
            self.later.append(i)
            return
        values = {x: _value(known, x) for x in ins}
        if any(v is None for v in values.values()):
            never.update(n.output)
            return
        size = _estimate(n, known, self.shapes)
        outs, spent = (None, False) if size is not None and size > _FOLD_ELEMENTS else self._outputs(n, values)
        if not outs or any(not isinstance(o, np.ndarray) or o.size > _FOLD_ELEMENTS for o in outs):
            if not spent:
                self.budget.refused.add(key)
            never.update(n.output)
            return
        consts = []
        for name, value in zip(n.output, outs, strict=False):
            if not name:
                continue
            arr = np.asarray(value)
            known[name] = arr
            consts.append(onnx.helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
        if len(consts) == 1:
            self.g.node[i].CopyFrom(consts[0])
            self.folded += 1

    def _outputs(self, n: onnx.NodeProto, values: dict[str, np.ndarray | None]) -> tuple[Sequence[object] | None, bool]:
        """The node's outputs by numpy's rules, else by the reference evaluator on a budget (None: it does not run),
        and whether the budget was spent (then the node is not refused for good)."""
        from onnx.reference import ReferenceEvaluator
        from splitscope.engine.onnxio import fold_ops

        outs = fold_ops.evaluate(n, [values[x] if x else None for x in n.input])
        if outs is not None:
            return outs, False
        if self.budget.left <= 0:
            return None, True
        self.budget.left -= 1
        try:
            return list(ReferenceEvaluator(n, opsets={"": self.opset}).run(None, values)), False
        except Exception:  # noqa: BLE001 - best effort: a node the reference cannot run stays for inference
            return None, False


def fixed_model(
    model: onnx.ModelProto, dims: Mapping[str, int], budget: FoldBudget | None = None, state: FoldState | None = None
) -> onnx.ModelProto:
    """A copy of ``model`` whose inputs' symbolic dims are set to ``dims`` and whose inferred shapes are
    cleared, ready for shape inference at those values (its constant chains folded, into ``state``)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {i.name for i in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            v = eval_dim(input_dim_name(vi.name, k, d.dim_param), dims)
            if v is not None:
                d.dim_value = v
    _clear_inferred(m.graph, True)
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 17)
    fold_constants(m.graph, opset, budget=budget, state=state)
    return m


def concrete_shapes(g: onnx.GraphProto) -> dict[str, tuple[int, ...]]:
    """The fully known shapes of a graph's tensors (not its bodies')."""
    out: dict[str, tuple[int, ...]] = {}
    for vi in chain(g.input, g.value_info, g.output):
        shape = _concrete(vi)
        if shape is not None:
            out[vi.name] = shape
    return out


def _concrete(vi: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    tt = vi.type.tensor_type  # an empty message where the type is another kind: no shape below
    if not tt.HasField("shape"):
        return None
    dims = tt.shape.dim
    shape = tuple(d.dim_value for d in dims)
    if all(v > 0 for v in shape):
        return shape
    if any(v < 0 for v in shape) or any(
        v == 0 and not d.HasField("dim_value") for v, d in zip(shape, dims, strict=True)
    ):
        return None  # a 0 that is no value: a named or unknown dim
    return shape


class LazyShapes(Mapping[str, tuple[int, ...]]):
    """:func:`concrete_shapes` of ``g`` over ``outer`` (an enclosing graph's), each shape read from its value info only
    when asked for: folding asks for a few thousand of a large graph's tens of thousands."""

    def __init__(self, g: onnx.GraphProto, outer: Mapping[str, tuple[int, ...]] | None = None) -> None:
        self._infos = {vi.name: vi for vi in chain(g.input, g.value_info, g.output)}
        self._outer = outer or {}
        self._read: dict[str, tuple[int, ...] | None] = {}

    def __getitem__(self, name: str) -> tuple[int, ...]:
        if name not in self._read:
            vi = self._infos.get(name)
            self._read[name] = _concrete(vi) if vi is not None else None
        shape = self._read[name]
        if shape is None:
            return self._outer[name]
        return shape

    def __contains__(self, name: object) -> bool:
        try:
            self[name]  # type: ignore[index] - any key may be asked
        except KeyError:
            return False
        return True

    def _all(self) -> dict[str, tuple[int, ...]]:
        return {**self._outer, **{k: v for k in self._infos if (v := self.get(k)) is not None}}

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())
