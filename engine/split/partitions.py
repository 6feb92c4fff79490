"""Engine partitions: the runs of delegate nodes TensorRT would build as separate engines.

Nodes that only make constants (Constant, and nodes fed only by constants and weights: a ConstantOfShape of a
constant shape)
are weights of their consumer, as TensorRT folds them at build time: they are never a partition of their
own, do not split anything, and their outputs cross no boundary per inference. ``constants=False`` gives
the parser's raw subgraphs, which count them (kept apart as ``parser_subgraphs``).

Every plugin node splits the engine. Delegate nodes are grouped by the number of
plugin "stages" in front of them, then into connected components within a
stage; that makes the partitions and the plugin nodes an acyclic chain of
engines and custom kernels, the way the parser's ``supports_model_v2``
subgraphs come out (pinned in tests against the real parser).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from splitscope.engine.model import BoundaryTensor, Graph, Partition, Tensor
from splitscope.engine.model.tensors import INITIALIZER_FLAG


def constant_nodes(graph: Graph, order: Sequence[int]) -> list[bool]:
    """Per node, whether it only makes a constant: Constant, or a node without bodies whose every input is a
    weight or another such node's output (a ConstantOfShape of a constant shape; not one of ``Shape(x)``, which
    TensorRT computes at run time)."""
    nodes = graph.nodes
    tensors = graph.tensors
    ops, domains, bodies = nodes.op_type, nodes.domain, nodes.subgraphs
    flags, producer = tensors.flags, tensors.producer
    weight = INITIALIZER_FLAG
    slots, _ = graph.slot_rows()
    in_off, own = nodes.in_off, nodes.in_rows  # own: -1 for an omitted input
    const = [False] * len(nodes)
    for idx in order:
        op = ops[idx]
        if idx in bodies or op.startswith("Random") or domains[idx] not in ("", "ai.onnx", "ai.onnx.ml"):
            continue
        if op == "Constant":
            const[idx] = True
            continue
        ins = [slots[k] for k in range(in_off[idx], in_off[idx + 1]) if own[k] >= 0]  # -1 left: no such tensor
        if not ins:
            continue
        ok = True
        for r in ins:
            if r < 0:
                ok = False
                break
            p = producer[r]
            if not (flags[r] & weight or (p >= 0 and const[p])):
                ok = False
                break
        const[idx] = ok
    return const


def find_partitions(
    graph: Graph,
    order: Sequence[int],
    dims: dict[str, int] | None = None,
    inside: list[bool] | None = None,
    constants: bool = True,
    const: list[bool] | None = None,
) -> list[Partition]:
    """Group the delegate nodes of ``graph`` into engine partitions, with boundary tensors.

    Parameters
    ----------
    graph
        The main graph, with statuses set.
    order
        A topological order of its nodes.
    dims
        Values for symbolic dimensions when sizing boundary tensors (default 1).
    inside
        Per node, whether it runs inside an engine, in place of its status (the planner's what-if: a plugin
        node given a TensorRT plugin runs inside; a node moved to the host runs outside).

    Returns
    -------
    list of Partition
        In topological order of their first node. A boundary tensor is one that
        a partition reads from, or writes to, a node outside it (a plugin node or
        another partition); model inputs and outputs are not boundaries.
    """
    nodes = graph.nodes
    n = len(nodes)
    delegate = list(inside) if inside is not None else nodes.delegates()
    if not constants:
        const = [False] * n
    elif const is None:
        const = constant_nodes(graph, order)
    # A constant-only node is a weight of its consumer: it joins no partition and splits nothing.
    preds = [[p for p in graph.adj.preds[i] if not const[p]] for i in range(n)]
    delegate = [d and not c for d, c in zip(delegate, const, strict=True)]
    stage = _stages(order, preds, delegate)
    part_of = [-1] * n
    parts: list[Partition] = []
    flops = nodes.flops  # the column: -1 unknown (0 here), -2 past 64 bits (read from the node)
    for k, members in enumerate(_groups(order, preds, delegate, stage)):
        for m in members:
            part_of[m] = k
        total = sum(flops[m] if flops[m] >= 0 else nodes[m].flops or 0 for m in members)
        parts.append(Partition(k, array("i", sorted(members)), [], total))
    for p in parts:
        p.boundary_tensors.extend(_boundary(graph, p, part_of, const, dims))
    return parts


_SOURCE = -1
"""The stage of a node outside every engine fed only by inputs and constants: its result enters an engine as an
input would, and splits nothing."""


def _stages(order: Sequence[int], preds: list[list[int]], delegate: list[bool]) -> list[int]:
    """Per node, how many plugin nodes lie on the longest path to it from a delegate node (:data:`_SOURCE` for a
    plugin fed only by inputs and constants)."""
    stage = [0] * len(delegate)
    for idx in order:
        if delegate[idx]:
            s = 0
            for p in preds[idx]:
                if delegate[p]:
                    s = max(s, stage[p])
                elif stage[p] != _SOURCE:
                    s = max(s, stage[p] + 1)
        else:
            s = _SOURCE
            for p in preds[idx]:
                if delegate[p] or stage[p] != _SOURCE:
                    s = max(s, stage[p])
        stage[idx] = s
    return stage


def _groups(order: Sequence[int], preds: list[list[int]], delegate: list[bool], stage: list[int]) -> list[list[int]]:
    """The delegate nodes joined by delegate-to-delegate edges within one stage (union-find), each group in
    topological order, the groups in the order of their first node."""
    parent = list(range(len(delegate)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for idx in order:
        if not delegate[idx]:
            continue
        for p in preds[idx]:
            if delegate[p] and stage[p] == stage[idx]:
                ra, rb = find(p), find(idx)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for idx in order:
        if delegate[idx]:
            groups.setdefault(find(idx), []).append(idx)
    return list(groups.values())


def _boundary(
    graph: Graph, p: Partition, part_of: list[int], const: list[bool], dims: dict[str, int] | None
) -> list[BoundaryTensor]:
    """The tensors partition ``p`` reads from a node outside it (``in``) or writes to one (``out``); model inputs,
    outputs and constants are none."""
    nodes, tensors = graph.nodes, graph.tensors
    producer, consumers = tensors.producer, tensors.consumers
    ins, outs = graph.slot_rows()
    out_off = nodes.out_off
    out: list[BoundaryTensor] = []
    seen: set[int] = set()
    for m in p.nodes:
        for r in graph.read_rows(m, ins):
            if r in seen:
                continue
            u = producer[r]
            if u < 0 or part_of[u] == p.index or const[u]:
                continue
            seen.add(r)
            t = Tensor.of(tensors, r)
            out.append(BoundaryTensor(t.name, t.nbytes(dims), "in", t.symbolic))
        for r in outs[out_off[m] : out_off[m + 1]]:
            if r < 0 or r in seen:
                continue
            if any(part_of[c] != p.index for c in consumers[r]):
                seen.add(r)
                t = Tensor.of(tensors, r)
                out.append(BoundaryTensor(t.name, t.nbytes(dims), "out", t.symbolic))
    return out
