"""The neutral graph model that the GUI, the CLI and every job share.

Nothing here knows about Qt or TensorRT: a :class:`GraphModel` is plain data
built by :func:`splitscope.engine.onnxio.graph.graph_from_onnx` and filled in by the split.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitscope.engine.model.nodes import NO_BODIES, Node, Nodes, Role, Source, Status
from splitscope.engine.model.rows import Edges, Rows, kahn_order, link_nodes
from splitscope.engine.model.tensors import DTYPE_SIZES, Dim, Tensor, Tensors, size_in_bytes
from splitscope.engine.model.weights import Initializer, Initializers

__all__ = [  # re-exported: the nodes, the tensors and the arrays live in modules of their own
    "DTYPE_SIZES",
    "NO_BODIES",
    "Dim",
    "Edges",
    "Initializer",
    "Initializers",
    "Node",
    "Nodes",
    "Role",
    "Rows",
    "Source",
    "Status",
    "Tensor",
    "Tensors",
    "kahn_order",
    "link_nodes",
    "size_in_bytes",
]


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
    nodes: Nodes
    tensors: Tensors
    inputs: list[str]
    outputs: list[str]
    initializers: Initializers
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

    def slot_rows(self) -> tuple[array[int], array[int]]:
        """Every node's input and output slots (:attr:`Nodes.in_off`, :attr:`Nodes.out_off`) as rows of
        :attr:`tensors` (-1: an omitted input, or a name the tensors lack): the nodes' own rows when they index these
        tensors' names, as a loaded graph's do (and a copy of them, as a body's view has)."""
        nodes, names = self.nodes, self.tensors.names
        if names.extends(nodes.tensor_names):
            return nodes.in_rows, nodes.out_rows
        table, get = nodes.tensor_names, names.get

        def remap(rows: array[int]) -> array[int]:
            return array("i", [-1 if r < 0 or (t := get(table[r])) is None else t for r in rows])

        return remap(nodes.in_rows), remap(nodes.out_rows)

    def read_rows(self, i: int, ins: array[int]) -> list[int]:
        """Node ``i``'s inputs then the outer tensors its bodies read, as rows of :attr:`tensors` (``ins``: the input
        rows of :meth:`slot_rows`; none of the omitted or unknown)."""
        nodes = self.nodes
        rows = [r for r in ins[nodes.in_off[i] : nodes.in_off[i + 1]] if r >= 0]
        extra = nodes.implicit.get(i)
        if extra:
            get = self.tensors.names.get
            rows += [r for name in extra if (r := get(name)) is not None]
        return rows

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
    nodes: Sequence[int]
    """Its nodes' indices, ascending (an ``array('i')``: a 200k-node engine was 200k integers to free)."""
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
    parser_subgraphs: list[Sequence[int]] = field(default_factory=list)
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

    @property
    def nodes(self) -> Nodes:
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
        return sum(v for v in self.graph.nodes.values("flops") if v is not None)
