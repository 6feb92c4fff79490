"""An If / Loop / Scan body as a model of its own, for the canvas: its nodes coloured by what the parser said of
the node that owns it, the outer tensors it captures shown as its inputs, its partitions found like the main
graph's. The voice model whose whole network sits in If branches is read this way."""

from __future__ import annotations

import re

from splitscope.engine.model import Graph, GraphModel, Node, Source, Status
from splitscope.engine.onnxio.graph import outer_references
from splitscope.engine.split.partitions import find_partitions

_BLAMED = re.compile(r"in its body, node '([^']+)'")


def bodies_of(node: Node) -> list[str]:
    """The names of a node's bodies (``then_branch``, ``else_branch``, ``body``), in the file's order."""
    return list(node.subgraphs)


def body_model(gm: GraphModel, node: Node, body: str) -> GraphModel:
    """The body ``body`` of ``node`` (a node of ``gm``'s graph) as a :class:`GraphModel` the canvas can lay out."""
    g = node.subgraphs[body]
    outer = gm.graph.tensors
    tensors = g.tensors.copy()
    captured = sorted(outer_references(g))
    for name in captured:
        t = tensors.tensor(name)  # read by the body's nodes already, or by none
        t.is_input = True
        src = outer.get(name)
        if src is not None:
            t.dtype, t.shape, t.at = src.dtype, src.shape, src.at
    graph = Graph(
        f"{node.label} › {body}",
        g.nodes,
        tensors,
        [*g.inputs, *(c for c in captured if c not in g.inputs)],
        list(g.outputs),
        g.initializers,
        g.constants,
        path=g.path,
        adjacency=g.adjacency,
    )
    _apply_owner_verdict(node, g)
    sub = GraphModel(
        gm.path,
        graph,
        gm.ir_version,
        gm.opsets,
        gm.producer,
        gm.functions,
        parser=gm.parser,
        dims=dict(gm.dims),
        metadata=gm.metadata,
    )
    sub.partitions = find_partitions(graph, graph.adj.order, gm.dims)
    return sub


def _apply_owner_verdict(owner: Node, g: Graph) -> None:
    """The parser answers for the node that owns a body: a node it named inside is the cause (plugin, by the
    parser); an owner it imported whole vouches for every node inside (delegate, by the parser)."""
    if owner.source is not Source.PARSER:
        return
    if owner.status is Status.DELEGATE:
        for n in g.nodes:
            if n.source is not Source.PARSER:
                n.status, n.source = Status.DELEGATE, Source.PARSER
                n.reason = f"imported with its {owner.op_type} '{owner.label}' by the parser"
        return
    m = _BLAMED.search(owner.reason or "")
    if m is None:
        return
    for n in g.nodes:
        if n.label == m.group(1):
            n.status, n.source = Status.PLUGIN, Source.PARSER
            n.reason = owner.reason
