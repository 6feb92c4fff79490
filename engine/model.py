"""The neutral graph model that the GUI, the CLI and every job share.

Nothing here knows about Qt or TensorRT: a :class:`GraphModel` is plain data
built by :func:`splitscope.engine.onnxio.graph.graph_from_onnx` and filled in by the split.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from splitscope.engine.dimexpr import eval_dim

Dim = int | str | None
"""One dimension: a number, a symbolic name, or None when unknown."""

# Bytes per element; sub-byte types count as fractions.
DTYPE_SIZES: dict[str, float] = {
    "FLOAT": 4,
    "UINT8": 1,
    "INT8": 1,
    "UINT16": 2,
    "INT16": 2,
    "INT32": 4,
    "INT64": 8,
    "STRING": 0,
    "BOOL": 1,
    "FLOAT16": 2,
    "DOUBLE": 8,
    "UINT32": 4,
    "UINT64": 8,
    "COMPLEX64": 8,
    "COMPLEX128": 16,
    "BFLOAT16": 2,
    "FLOAT8E4M3FN": 1,
    "FLOAT8E4M3FNUZ": 1,
    "FLOAT8E5M2": 1,
    "FLOAT8E5M2FNUZ": 1,
    "UINT4": 0.5,
    "INT4": 0.5,
    "FLOAT4E2M1": 0.5,
    "FLOAT8E8M0": 1,
    "UINT2": 0.25,
    "INT2": 0.25,
}


def size_in_bytes(numel: int, dtype: str | None) -> int:
    """Bytes of ``numel`` elements of ``dtype`` (sub-byte types packed, rounded up), in integers only:
    element counts from damaged or symbolic shapes can exceed what a float holds."""
    quarter_bytes = int(DTYPE_SIZES.get(dtype or "", 4) * 4)
    return -(-numel * quarter_bytes // 4)


class Status(str, Enum):
    """Where a node runs: inside a TensorRT engine, or outside it."""

    DELEGATE = "delegate"
    """TensorRT takes it (fusion, precision, autotuning)."""
    PLUGIN = "plugin"
    """TensorRT rejects it: it needs a TensorRT plugin or custom CUDA."""


class Role(str, Enum):
    """What a node does in the inference path."""

    COMPUTE = "compute"
    DATA_MOVEMENT = "data-movement"
    SHAPE = "shape"
    PRE_PROCESSING = "pre-processing"
    POST_PROCESSING = "post-processing"
    CONTROL_FLOW = "control-flow"


class Source(str, Enum):
    """Where a node's status came from."""

    PARSER = "parser"
    """The real TensorRT (or TensorRT-RTX) ONNX parser said so for this model."""
    TABLE = "table"
    """Predicted from the operator support table and static checks."""
    BUILDER = "builder"
    """A real build at the shapes in force rejected it, though the parser imports it (``runtime.verify``)."""


@dataclass(slots=True)
class Tensor:
    """A value in a graph: its type, shape and who makes and uses it."""

    name: str
    dtype: str | None = None
    shape: tuple[Dim, ...] | None = None
    producer: int | None = None
    consumers: list[int] = field(default_factory=list)
    is_input: bool = False
    is_output: bool = False
    is_initializer: bool = False
    at: tuple[int, ...] | None = None
    """The concrete shape at the dims in force (:mod:`splitscope.engine.onnxio.concrete`), where inference at
    those values could type it; None otherwise."""

    def numel(self, dims: dict[str, int] | None = None) -> int | None:
        """Element count at the dims in force: the concrete shape where known, else the symbolic shape with each
        dim looked up in ``dims`` (or, for an exporter's expression, evaluated there).

        Returns None when the shape is unknown or a dim has no value: a dim without a value is never taken as 1.
        """
        if self.at is not None:
            return math.prod(self.at)
        if self.shape is None:
            return None
        n = 1
        for d in self.shape:
            if isinstance(d, int):
                if d < 0:
                    return None
                n *= d
            elif isinstance(d, str):
                v = eval_dim(d, dims or {})
                if v is None:
                    return None
                n *= v
            else:
                return None
        return n

    def resolved(self, dims: dict[str, int] | None = None) -> tuple[int, ...] | None:
        """The shape at the dims in force (see :meth:`numel`), None when a dim is unknown."""
        if self.at is not None:
            return self.at
        if self.shape is None:
            return None
        out = []
        for d in self.shape:
            v = d if isinstance(d, int) and d >= 0 else eval_dim(d, dims or {}) if isinstance(d, str) else None
            if v is None:
                return None
            out.append(v)
        return tuple(out)

    def nbytes(self, dims: dict[str, int] | None = None) -> int | None:
        """Size in bytes (see :meth:`numel`), None when unknown."""
        n = self.numel(dims)
        if n is None or self.dtype is None:
            return None
        return size_in_bytes(n, self.dtype)

    @property
    def symbolic(self) -> bool:
        """Whether the shape has symbolic or unknown dimensions."""
        return self.shape is None or any(not isinstance(d, int) for d in self.shape)


@dataclass(slots=True)
class Initializer:
    """A weight: shape and size only; the data stays on disk until a job needs it."""

    name: str
    dtype: str
    dims: tuple[int, ...]
    nbytes: int
    external: bool = False


NO_BODIES: Mapping[str, Graph] = MappingProxyType({})
"""The bodies of a node that has none (read-only, shared)."""


@dataclass(slots=True)
class Node:
    """One ONNX node with its split verdict."""

    index: int
    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, Any] = field(default_factory=dict)
    scope: tuple[str, ...] = ()
    subgraphs: Mapping[str, Graph] = field(default_factory=lambda: NO_BODIES)
    """Its bodies (If/Loop/Scan), by attribute; one shared empty mapping for the many nodes without."""
    function: Graph | None = None
    flops: int | None = None
    bytes: int | None = None
    status: Status = Status.DELEGATE
    role: Role = Role.COMPUTE
    reason: str = ""
    source: Source = Source.TABLE
    implicit_inputs: Sequence[str] = ()
    """Outer-scope tensors its bodies read (If/Loop/Scan): inputs in all but name (a list where there are any)."""
    table_status: Status | None = None
    """What the support table predicted, kept to measure agreement with the parser."""
    parser_status: Status | None = None
    """What the parser said (None when it was not asked or could not verify the node)."""
    defect: str = ""
    """Why the node is malformed ONNX (:mod:`splitscope.engine.onnxio.validate`), '' when it is not."""
    cause: str = ""
    """For a plugin node: why it needs custom work, in a few words (:mod:`splitscope.engine.split.remedies`)."""
    remedy: str = ""
    """For a plugin node: the fix that removes most such nodes."""

    @property
    def all_inputs(self) -> list[str]:
        """Explicit inputs, then the outer-scope tensors its bodies read."""
        return [*self.inputs, *self.implicit_inputs] if self.implicit_inputs else self.inputs

    @property
    def label(self) -> str:
        """Name to show and report: the node's name, or ``#N`` when it has none."""
        return self.name or f"#{self.index}"

    @property
    def is_custom_domain(self) -> bool:
        """Whether the op lives outside the standard ONNX domains."""
        return self.domain not in ("", "ai.onnx", "ai.onnx.ml")


class Rows:
    """Rows of node indices in two flat arrays (compressed sparse rows): row ``i`` is
    ``targets[offsets[i]:offsets[i + 1]]``, an ``array('i')`` whose items are plain ints. Two blocks of memory for a
    whole graph, where a list per node made 400k lists of a 200k-node model's predecessors and successors."""

    __slots__ = ("offsets", "targets")

    def __init__(self, offsets: array[int], targets: array[int]) -> None:
        self.offsets = offsets
        self.targets = targets

    def __getitem__(self, i: int) -> array[int]:
        return self.targets[self.offsets[i] : self.offsets[i + 1]]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __iter__(self) -> Iterator[array[int]]:
        o, t = self.offsets, self.targets
        for i in range(len(o) - 1):
            yield t[o[i] : o[i + 1]]

    def count(self, i: int) -> int:
        """The length of row ``i``."""
        return self.offsets[i + 1] - self.offsets[i]


class Edges:
    """The distinct (producer, consumer) pairs of a graph and the tensors between each, in flat arrays: edge ``k``
    is ``src[k] -> dst[k]`` carrying ``names[offsets[k]:offsets[k + 1]]`` (in the consumer's input order). Read it
    as the mapping it replaces: ``items()`` gives ``((u, v), names)``, iterating gives ``(u, v)``."""

    __slots__ = ("dst", "names", "offsets", "src")

    def __init__(self, src: array[int], dst: array[int], offsets: array[int], names: list[str]) -> None:
        self.src, self.dst, self.offsets, self.names = src, dst, offsets, names

    def __len__(self) -> int:
        return len(self.src)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.src, self.dst, strict=True)

    def items(self) -> Iterator[tuple[tuple[int, int], list[str]]]:
        o, names = self.offsets, self.names
        for k, (u, v) in enumerate(zip(self.src, self.dst, strict=True)):
            yield (u, v), names[o[k] : o[k + 1]]


def link_nodes(
    nodes: list[Node], producer_of: Callable[[str], int | None], all_inputs: bool = True
) -> tuple[Rows, Rows, Edges, int | None]:
    """Predecessors, successors and the tensors of each edge of ``nodes`` (their inputs' producers by
    ``producer_of``; with ``all_inputs``, the outer tensors their bodies read too), and the first node that reads its
    own output (a cycle of one), or None."""
    p_off, p_tgt = array("i", [0]), array("i")
    src, dst, e_off, names = array("i"), array("i"), array("i", [0]), []
    for node in nodes:
        v = node.index
        mine: dict[int, list[str]] = {}  # this node's producers, first seen first, and what each gives it
        for name in node.all_inputs if all_inputs else node.inputs:
            u = producer_of(name)
            if u is None:
                continue
            if u == v:
                return _no_rows(len(nodes)), _no_rows(len(nodes)), Edges(src, dst, e_off, names), v
            got = mine.get(u)
            if got is None:
                mine[u] = [name]
            else:
                got.append(name)
        for u, given in mine.items():
            p_tgt.append(u)
            src.append(u)
            dst.append(v)
            names.extend(given)
            e_off.append(len(names))
        p_off.append(len(p_tgt))
    succs = _successors(src, dst, len(nodes))
    return Rows(p_off, p_tgt), succs, Edges(src, dst, e_off, names), None


def _no_rows(n: int) -> Rows:
    return Rows(array("i", bytes(4 * (n + 1))), array("i"))


def _successors(src: array[int], dst: array[int], n: int) -> Rows:
    """Each node's consumers, in the order the edges were found (by consumer index): a stable counting sort."""
    if not src:
        return _no_rows(n)
    s = np.frombuffer(src, dtype=np.int32)
    d = np.frombuffer(dst, dtype=np.int32)
    by = np.argsort(s, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(s, minlength=n), out=offsets[1:])
    return Rows(array("i", offsets.tobytes()), array("i", d[by].astype(np.int32).tobytes()))


def kahn_order(preds: Rows, succs: Rows) -> tuple[array[int], list[int]]:
    """A topological order (Kahn's, stable), and each node's in-degree left: nonzero on or after a cycle."""
    indeg = np.diff(np.frombuffer(preds.offsets, dtype=np.int32)).tolist()
    ready = deque(i for i, d in enumerate(indeg) if d == 0)
    order = array("i")
    while ready:
        i = ready.popleft()
        order.append(i)
        for s in succs[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    return order, indeg


@dataclass(slots=True)
class Adjacency:
    """Who feeds whom in one graph, derived once when the graph is built and used by every pass
    (roles, partitions, hierarchy, layout) instead of each rebuilding it; in flat arrays, not objects per node."""

    order: array[int]
    """A topological order of the nodes."""
    preds: Rows
    """Per node, the distinct nodes producing its inputs (body reads of If/Loop/Scan included), not itself."""
    succs: Rows
    """Per node, the distinct nodes reading its outputs."""
    edges: Edges
    """(producer, consumer) to the tensors between them, in the consumer's input order."""


@dataclass(slots=True)
class Graph:
    """A graph (the main one, an If/Loop/Scan body or a function body)."""

    name: str
    nodes: list[Node]
    tensors: dict[str, Tensor]
    inputs: list[str]
    outputs: list[str]
    initializers: dict[str, Initializer]
    constants: dict[str, list[Any]] = field(default_factory=dict)
    """Values of tiny initializers (shape vectors, axes, K, zero points), flattened."""
    path: str = ""
    """Where this graph sits: '' for the main graph, else ``node/attr`` segments."""
    adjacency: Adjacency | None = None
    """Set by the builder; see :class:`Adjacency`."""

    @property
    def adj(self) -> Adjacency:
        """The graph's adjacency (built by :func:`splitscope.engine.onnxio.graph.build_graph`)."""
        assert self.adjacency is not None, "graph built without adjacency"
        return self.adjacency

    def walk(self) -> list[tuple[Graph, Node]]:
        """Every node of this graph and of the graphs nested in it, depth first."""
        out: list[tuple[Graph, Node]] = []
        stack: list[Graph] = [self]
        while stack:
            g = stack.pop()
            for n in g.nodes:
                out.append((g, n))
                stack.extend(n.subgraphs.values())
                if n.function is not None:
                    stack.append(n.function)
        return out


@dataclass(slots=True)
class BoundaryTensor:
    """A tensor that crosses an engine-partition boundary, with its bytes per inference."""

    name: str
    bytes: int | None
    direction: str
    """``in`` (produced outside, consumed inside) or ``out``."""
    symbolic: bool = False


@dataclass(slots=True)
class Partition:
    """A connected run of delegate nodes that TensorRT would build as one engine."""

    index: int
    nodes: list[int]
    boundary_tensors: list[BoundaryTensor]
    flops: int = 0

    @property
    def boundary_bytes(self) -> int:
        """Sum of the known sizes of the tensors crossing this partition's boundary."""
        return sum(t.bytes or 0 for t in self.boundary_tensors)


@dataclass(slots=True)
class ParserInfo:
    """Which source decided the split."""

    name: str
    """``tensorrt``, ``tensorrt-rtx`` or ``table``."""
    version: str = ""
    target: str = ""
    """For the table: which parser it predicts (``tensorrt`` or ``tensorrt-rtx``)."""
    calls: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class GraphModel:
    """An analysed ONNX model."""

    path: Path | None
    graph: Graph
    ir_version: int
    opsets: dict[str, int]
    producer: str
    functions: dict[tuple[str, str], Graph] = field(default_factory=dict)
    partitions: list[Partition] = field(default_factory=list)
    """Engine partitions as TensorRT builds them: constant-only nodes are weights of their consumer."""
    parser_subgraphs: list[list[int]] = field(default_factory=list)
    """The parser's raw subgraphs (constant-only runs counted as their own), node indices each."""
    parser: ParserInfo = field(default_factory=lambda: ParserInfo("table"))
    warnings: list[str] = field(default_factory=list)
    dims: dict[str, int] = field(default_factory=dict)
    """The dims in force: a value for each symbolic dim of the inputs that has one (given, hinted by the model,
    or batch-like at 1); a dim without a value leaves the costs that need it unknown, never 1."""
    dim_notes: list[str] = field(default_factory=list)
    """Where values not given came from (``batch=1: batch-like, not given``; a metadata hint)."""
    missing_dims: list[str] = field(default_factory=list)
    """Symbolic dims of the inputs with no value: the costs that need them are unknown until given."""
    model_bytes: int = 0
    build: dict[str, Any] | None = None
    """What building each partition found (:class:`splitscope.engine.runtime.verify.BuildReport`), when asked."""
    metadata: dict[str, str] = field(default_factory=dict)
    """The model's own metadata (an exporter's task, image size, class names), each entry cut to 2000 characters."""
    assumed_shapes: set[str] = field(default_factory=set)
    """Tensors whose type and shape were assumed (custom-op outputs), not inferred."""
    preview: bool = False
    """A first view's model from the light pass (:mod:`splitscope.engine.split.preview`): structure and the
    table's answer per op only; the full model replaces it."""
    plugin_parser: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The real parser's answer with a generated plugin registered (the kernel workbench), by node label:
    :class:`splitscope.engine.kernel.plugin.ParserAnswer` as JSON. The planner uses it instead of its estimate."""
    kernels: list[dict[str, Any]] = field(default_factory=list)
    """The kernel workbench's results on this model (the report's "Custom work")."""
    generation: dict[str, Any] | None = None
    """A generation profile of this decoder (:mod:`splitscope.engine.runtime.generate`), for the report."""
    sweep: dict[str, Any] | None = None
    """A sweep over this model (:mod:`splitscope.engine.sweep`: its JSON), for the report."""

    @property
    def nodes(self) -> list[Node]:
        """Nodes of the main graph."""
        return self.graph.nodes

    @property
    def order(self) -> array[int]:
        """A topological order of the main graph's nodes."""
        return self.graph.adj.order

    @property
    def engine_graph(self) -> bool:
        """Whether this is a built engine's own graph (its layers as nodes), which gets no split analysis."""
        return "splitscope.engine_graph" in self.metadata

    def shapes_label(self) -> str:
        """The input shapes in force, for headlines and job names: ``images [1, 3, 320, 320]``; a dim without a
        value keeps its name."""
        parts = []
        for inp in self.graph.inputs:
            t = self.graph.tensors.get(inp)
            if t is None or t.shape is None:
                continue
            shape = [
                str(d)
                if isinstance(d, int)
                else str(self.dims[d])
                if isinstance(d, str) and d in self.dims
                else str(d or "?")
                for d in t.shape
            ]
            parts.append(f"{inp} [{', '.join(shape)}]")
        text = ", ".join(parts[:3]) + (f" and {len(parts) - 3} more inputs" if len(parts) > 3 else "")
        return text or "fixed shapes"

    def symbolic_dims(self) -> list[str]:
        """Names of the symbolic dimensions found in the main graph (not shape inference's ``unk__N``)."""
        seen: dict[str, None] = {}
        for t in self.graph.tensors.values():
            for d in t.shape or ():
                if isinstance(d, str) and not d.startswith("unk__"):
                    seen.setdefault(d)
        return list(seen)

    @property
    def boundary_bytes(self) -> int:
        """Bytes crossing all partition boundaries per inference (each tensor once)."""
        seen: dict[str, int] = {}
        for p in self.partitions:
            for t in p.boundary_tensors:
                seen[t.name] = t.bytes or 0
        return sum(seen.values())

    def total_flops(self) -> int:
        """FLOPs of the main graph (nested bodies are counted by their parent node)."""
        return sum(n.flops or 0 for n in self.graph.nodes)
