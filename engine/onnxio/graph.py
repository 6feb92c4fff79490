"""Build the neutral :class:`splitscope.engine.model.GraphModel` from a loaded ONNX model."""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto
from splitscope.engine.errors import CyclicGraphError, ModelDecodeError
from splitscope.engine.model import (
    Adjacency,
    Dim,
    Graph,
    GraphModel,
    Initializers,
    Node,
    Nodes,
    Tensor,
    Tensors,
    kahn_order,
    link_nodes,
)
from splitscope.engine.model.nodes import NO_ATTRIBUTES, NO_BODIES
from splitscope.engine.model.tensors import sharing
from splitscope.engine.onnxio.loader import LoadedModel, dtype_name, text_error
from splitscope.engine.onnxio.scopes import scope_from
from splitscope.engine.onnxio.validate import node_defect

_MAX_ATTR_VALUES = 16
_BODY_TYPES = (AttributeProto.GRAPH, AttributeProto.GRAPHS)


class BadText(ValueError):
    """A string field held bytes that are not UTF-8 (protobuf returns them as ``bytes``)."""


class ModelTextError(ModelDecodeError):
    """A name in the graph is not valid UTF-8."""

    def __init__(self, where: str) -> None:
        super().__init__(text_error("The model", where).message)


def _shape_of(t: onnx.TypeProto) -> tuple[str | None, tuple[Dim, ...] | None]:
    which = t.WhichOneof("value")
    if which != "tensor_type" and which != "sparse_tensor_type":
        return (which.upper().replace("_TYPE", "") if which else None), None
    tt = t.tensor_type if which == "tensor_type" else t.sparse_tensor_type
    dtype = dtype_name(tt.elem_type)
    if not tt.HasField("shape"):
        return dtype, None
    dims: list[Dim] = []
    for d in tt.shape.dim:
        w = d.WhichOneof("value")
        dims.append(d.dim_value if w == "dim_value" else d.dim_param if w == "dim_param" else None)
    return dtype, tuple(dims)


def attribute_value(a: onnx.AttributeProto) -> Any:
    """A short, JSON-friendly value for an attribute (tensors summarised, graphs omitted)."""
    t = a.type
    if t == AttributeProto.INT:
        return a.i
    if t == AttributeProto.FLOAT:
        return a.f
    if t == AttributeProto.STRING:
        return a.s.decode("utf-8", "replace")
    if t == AttributeProto.INTS:
        return list(a.ints)
    if t == AttributeProto.FLOATS:
        return list(a.floats)
    if t == AttributeProto.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if t == AttributeProto.TENSOR:
        dims = list(a.t.dims)
        n = 1
        for d in dims:
            n *= d
        if n <= _MAX_ATTR_VALUES and a.t.data_location != onnx.TensorProto.EXTERNAL:
            try:
                arr = onnx.numpy_helper.to_array(a.t)
                return arr.tolist()
            except Exception:  # noqa: BLE001 - unusual dtypes: fall through to a summary
                pass
        return f"tensor {dtype_name(a.t.data_type)}{dims}"
    if t in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        return "<graph>"
    if t == AttributeProto.TYPE_PROTO:
        return str(_shape_of(a.tp))
    if a.ref_attr_name:
        return f"@{a.ref_attr_name}"
    return str(onnx.helper.get_attribute_value(a))


def scope_of(node: onnx.NodeProto, paths: dict[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The module scope of a node (``/encoder/layer.3/attn/MatMul`` -> encoder, layer.3, attn): see
    :func:`splitscope.engine.onnxio.scopes.scope_from` (``paths`` too)."""
    meta = {p.key: p.value for p in node.metadata_props} if len(node.metadata_props) else None
    if meta and any(type(k) is bytes or type(v) is bytes for k, v in meta.items()):
        raise BadText("metadata_props")
    name = node.name
    if type(name) is bytes:
        raise BadText("name")
    return scope_from(name, meta, paths)


def adjacency_of(nodes: Nodes, tensors: Tensors, label: str) -> Adjacency:
    """Predecessors, successors, edges and a topological order; raises :class:`CyclicGraphError` on a cycle."""

    made = np.frombuffer(tensors.producer, dtype=np.int32) if tensors.producer else np.zeros(0, np.int32)
    preds, succs, edges, self_reader = link_nodes(nodes, made)
    if self_reader is not None:
        node = nodes[self_reader]
        raise CyclicGraphError(
            f"Node '{node.label}' ({node.op_type}) in {label} reads its own output: the graph has a cycle, "
            "which ONNX forbids; re-export the model."
        )
    order, indeg = kahn_order(preds, succs)
    if len(order) < len(nodes):
        stuck = [nd for nd in nodes if indeg[nd.index] > 0]
        cycle = _find_cycle(stuck, nodes, tensors)
        names_ = " -> ".join(nodes[i].label for i in cycle)
        raise CyclicGraphError(f"The graph {label} has a cycle ({names_}), which ONNX forbids: re-export the model.")
    return Adjacency(order, preds, succs, edges)


def outer_references(g: Graph) -> set[str]:
    """Names a body reads from enclosing scopes (at any depth)."""
    refs: set[str] = set()
    for t in g.tensors.values():
        if t.producer is None and not t.is_input and not t.is_initializer and t.consumers:
            refs.add(t.name)
    for n in g.nodes:
        for sub in n.subgraphs.values():
            refs |= {
                r
                for r in outer_references(sub)
                if r not in g.tensors
                or (g.tensors[r].producer is None and not g.tensors[r].is_input and not g.tensors[r].is_initializer)
            }
    return refs


def _find_cycle(stuck: list[Node], nodes: Nodes, tensors: Mapping[str, Tensor]) -> list[int]:
    alive = {n.index for n in stuck}
    start = stuck[0].index
    path: list[int] = []
    seen: dict[int, int] = {}
    cur = start
    while cur not in seen:
        seen[cur] = len(path)
        path.append(cur)
        nxt = None
        for i in nodes[cur].all_inputs:
            t = tensors.get(i)
            if t is not None and t.producer in alive:
                nxt = t.producer
                break
        if nxt is None:
            return path
        cur = nxt
    cyc = path[seen[cur] :]
    cyc.reverse()
    return [*cyc, cyc[0]]


def build_graph(
    g: onnx.GraphProto,
    path: str,
    initializers: Initializers | None,
    functions: dict[tuple[str, str], Graph],
    outer: set[str] | None = None,
    opsets: dict[str, int] | None = None,
) -> tuple[Graph, Sequence[int]]:
    """Build a :class:`Graph` (recursing into bodies) and return it with a topological order.

    With ``opsets`` (domain to version) every node is also checked against its schema
    (:func:`splitscope.engine.onnxio.validate.node_defect`).
    """
    tensors = Tensors()
    label = f"'{path}'" if path else "(main graph)"
    _typed_tensors(g, tensors, label)
    init_names, constants = _initializer_tensors(g, tensors, initializers, label)
    tensor = tensors.tensor
    add = tensors.add

    nodes = Nodes(tensors.names, add)  # inputs and outputs as rows of the tensors
    in_off, in_rows, out_off, out_rows = nodes.in_off, nodes.in_rows, nodes.out_off, nodes.out_rows
    producer = tensors.producer
    consumed, readers = array("i"), array("i")  # (tensor row, node) of every read, in node order
    paths: dict[str, tuple[str, ...]] = {}  # scopes by a name's path: a layer's nodes share one
    shared: dict[tuple[bytes, ...], dict[str, Any]] = {}  # one dict of values per distinct set of attributes
    for idx, pn in enumerate(g.node):
        protos = list(pn.attribute)  # read once: the schema check below walks them again
        attrs, subgraphs = _shared_attributes(pn, idx, protos, path, label, functions, opsets, shared)
        try:
            scope = scope_of(pn, paths)
        except BadText as e:
            raise ModelTextError(f"{label}: node #{idx} {e}") from None
        ins, outs = list(pn.input), list(pn.output)
        if (
            bytes in (type(pn.name), type(pn.op_type), type(pn.domain))
            or bytes in map(type, ins)
            or bytes in map(type, outs)
        ):
            raise ModelTextError(f"{label}: node #{idx} ({pn.name!r}, {pn.op_type!r})")
        node = nodes.add(
            pn.name, pn.op_type, pn.domain, ins, outs, attrs, scope, subgraphs, functions.get((pn.domain, pn.op_type))
        )
        if opsets is not None:
            nodes.defect[idx] = node_defect(pn, opsets, tensors, constants, protos, node)
        if pn.op_type == "Constant" and len(outs) == 1 and outs[0]:
            _constant_type(tensor(outs[0]), protos)
        for r in in_rows[in_off[idx] : in_off[idx + 1]]:
            if r >= 0:
                consumed.append(r)
                readers.append(idx)
        if subgraphs:
            node.implicit_inputs = implicit = sorted(
                {r for sub in subgraphs.values() for r in outer_references(sub)} - set(ins)
            )
            for i in implicit:
                consumed.append(add(i))
                readers.append(idx)
        for r in out_rows[out_off[idx] : out_off[idx + 1]]:
            if r >= 0:
                producer[r] = idx
    tensors.freeze(consumed, readers)
    nodes.compact()
    graph = Graph(
        g.name,
        nodes,
        tensors,
        [i.name for i in g.input if i.name not in init_names],
        [o.name for o in g.output],
        initializers if initializers is not None else Initializers(),
        constants,
        path,
    )
    graph.adjacency = adjacency_of(nodes, tensors, label)
    return graph, graph.adjacency.order


def _typed_tensors(g: onnx.GraphProto, tensors: Tensors, label: str) -> None:
    """A row for each tensor the graph declares a type for (inputs, value_info, outputs), with that type."""
    add, dtypes, shapes, share = tensors.add, tensors.dtype, tensors.shape, sharing()
    for vi in chain(g.input, g.value_info, g.output):
        if type(vi.name) is bytes:
            raise ModelTextError(f"{label}: value name {vi.name!r}")
        r = add(vi.name)
        dt, shp = _shape_of(vi.type)
        if dt is not None:
            dtypes[r] = dt
        if shp is not None:
            shapes[r] = share(shp)


def _initializer_tensors(
    g: onnx.GraphProto, tensors: Tensors, initializers: Initializers | None, label: str
) -> tuple[set[str], dict[str, list[Any]]]:
    """Mark the weights (the graph's own and those read apart, ``initializers``), the real inputs and the outputs;
    return the weights' names and the values of the small ones (read by node checks and attributes)."""
    tensor, share = tensors.tensor, sharing()
    init_names: set[str] = set()
    constants: dict[str, list[Any]] = {}
    for init in g.initializer:
        if type(init.name) is bytes:
            raise ModelTextError(f"{label}: initializer name {init.name!r}")
        t = tensor(init.name)
        t.is_initializer = True
        t.dtype = dtype_name(init.data_type)
        t.shape = share(tuple(init.dims))
        init_names.add(init.name)
        if (
            len(init.dims) <= 1
            and (not init.dims or init.dims[0] <= _MAX_ATTR_VALUES)
            and init.data_location != onnx.TensorProto.EXTERNAL
        ):
            with contextlib.suppress(Exception):  # exotic dtypes: no values, only the shape
                constants[init.name] = onnx.numpy_helper.to_array(init).reshape(-1).tolist()
    if initializers is not None:
        for name in initializers:
            tensor(name).is_initializer = True
            init_names.add(name)
    for vi in g.input:
        if vi.name not in init_names:
            tensors[vi.name].is_input = True
    for vi in g.output:
        tensors[vi.name].is_output = True
    return init_names, constants


def _shared_attributes(
    pn: onnx.NodeProto,
    idx: int,
    protos: list[onnx.AttributeProto],
    path: str,
    label: str,
    functions: dict[tuple[str, str], Graph],
    opsets: dict[str, int] | None,
    shared: dict[tuple[bytes, ...], dict[str, Any]],
) -> tuple[dict[str, Any], Mapping[str, Graph]]:
    """:func:`_attributes`, the values one dict per distinct set of attributes in ``shared`` (keyed by their bytes):
    a layer repeated 10,000 times held 10,000 equal dicts, each with its lists, and a 200k-node model 250k objects
    to free. Nodes with bodies get their own; a node's attributes are read, never written."""
    if not protos:
        return NO_ATTRIBUTES, NO_BODIES
    if any(a.type in _BODY_TYPES for a in protos):
        return _attributes(pn, idx, protos, path, label, functions, opsets)
    key = tuple(a.SerializeToString() for a in protos)
    attrs = shared.get(key)
    if attrs is None:
        attrs = shared[key] = _attributes(pn, idx, protos, path, label, functions, opsets)[0]
    return attrs, NO_BODIES


def _attributes(
    pn: onnx.NodeProto,
    idx: int,
    protos: list[onnx.AttributeProto],
    path: str,
    label: str,
    functions: dict[tuple[str, str], Graph],
    opsets: dict[str, int] | None,
) -> tuple[dict[str, Any], dict[str, Graph]]:
    """A node's attribute values, and its bodies built as graphs of their own (named by their path)."""
    attrs: dict[str, Any] = {}
    subgraphs: dict[str, Graph] = {}
    for a in protos:
        if type(a.name) is bytes:
            raise ModelTextError(f"{label}: node #{idx} attribute name {a.name!r}")
        if a.type == AttributeProto.GRAPH:
            sub_path = f"{path}/{pn.name or '#' + str(idx)}/{a.name}".lstrip("/")
            subgraphs[a.name], _ = build_graph(a.g, sub_path, None, functions, None, opsets)
        elif a.type == AttributeProto.GRAPHS:
            for k, sg in enumerate(a.graphs):
                sub_path = f"{path}/{pn.name or '#' + str(idx)}/{a.name}[{k}]".lstrip("/")
                subgraphs[f"{a.name}[{k}]"], _ = build_graph(sg, sub_path, None, functions, None, opsets)
        else:
            attrs[a.name] = attribute_value(a)
    return attrs, subgraphs


def _constant_type(out: Any, protos: list[onnx.AttributeProto]) -> None:
    """A Constant's output type is its ``value`` attribute's: known before shape inference."""
    value = next((a for a in protos if a.name == "value" and a.type == AttributeProto.TENSOR), None)
    if value is not None:
        out.dtype = out.dtype or dtype_name(value.t.data_type)
        out.shape = out.shape if out.shape is not None else tuple(value.t.dims)


def is_topologically_sorted(graph: Graph) -> bool:
    """Whether every node comes after the producers of its inputs, as ONNX requires."""
    nodes, producer = graph.nodes, graph.tensors.producer
    ins, _ = graph.slot_rows()
    if ins:
        rows = np.frombuffer(ins, dtype=np.int32)
        made = np.frombuffer(producer, dtype=np.int32) if producer else np.zeros(0, np.int32)
        reader = np.repeat(np.arange(len(nodes)), np.diff(np.frombuffer(nodes.in_off, dtype=np.int32)))
        known = rows >= 0
        if bool((made[rows[known]] >= reader[known]).any()):
            return False
    # the outer tensors bodies read
    return all(producer[r] < v for v in nodes.implicit for r in graph.read_rows(v, ins))


def graph_from_onnx(loaded: LoadedModel) -> tuple[GraphModel, Sequence[int]]:
    """Turn a loaded model into a :class:`GraphModel` and the main graph's topological order.

    Only the types and shapes the file records are known:
    :func:`splitscope.engine.onnxio.shapes.apply_shape_inference` adds the rest later (the GUI paints in
    between).
    """
    warnings = list(loaded.warnings)
    m = loaded.proto
    functions: dict[tuple[str, str], Graph] = {}
    opsets = {(o.domain or "ai.onnx"): o.version for o in m.opset_import}
    for f in m.functions:
        fg = onnx.helper.make_graph(
            list(f.node),
            f.name,
            [onnx.helper.make_value_info(i, onnx.TypeProto()) for i in f.input],
            [onnx.helper.make_value_info(o, onnx.TypeProto()) for o in f.output],
        )
        f_opsets = {**opsets, **{(o.domain or "ai.onnx"): o.version for o in f.opset_import}}
        functions[(f.domain, f.name)], _ = build_graph(
            fg, f"function {f.domain}::{f.name}", None, functions, None, f_opsets
        )
    graph, order = build_graph(m.graph, "", loaded.initializers, functions, None, opsets)
    if not is_topologically_sorted(graph):
        warnings.append(
            "Nodes are not in topological order, as ONNX requires: TensorRT's parser may reject "
            "the model; re-export or sort it (onnx-graphsurgeon's toposort)."
        )
    gm = GraphModel(
        loaded.path,
        graph,
        m.ir_version,
        opsets,
        f"{m.producer_name} {m.producer_version}".strip(),
        functions,
        warnings=warnings,
        model_bytes=loaded.file_bytes,
        metadata={
            str(p.key)[:200]: str(p.value)[:2000] for p in list(m.metadata_props)[:200] if isinstance(p.key, str)
        },
    )
    return gm, order
