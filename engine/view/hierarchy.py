"""Group a graph's nodes into a tree of name scopes, for hierarchical expand and collapse.

Exporters name nodes by module path (``/encoder/layer.3/attn/MatMul``) or record
the scope in metadata; :func:`splitscope.engine.onnxio.graph.scope_of` reads it. Here those paths
become a tree of :class:`Group`\\ s. Chains of single-child scopes are merged
(``encoder/layer.3`` when ``encoder`` holds nothing else), and a group with too
many direct nodes (a graph exported without scopes) is split into runs of
consecutive nodes in topological order, so every level stays readable. A group whose direct
nodes are mostly repeated blocks (a model exported without scopes) gets one subgroup per repeat
(``Conv block ×16``) found by structure (:mod:`splitscope.engine.view.blocks`).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from splitscope.engine.heap import drop_in_steps
from splitscope.engine.model import GraphModel, Nodes, Status, Tensors
from splitscope.engine.model.nodes import STATUS_CODE
from splitscope.engine.model.tensors import INITIALIZER_FLAG, OUTPUT_FLAG
from splitscope.engine.view.blocks import Repeat, block_name, find_repeats
from splitscope.engine.view.groups import NO_PARENT, Group, GroupDraft, Groups
from splitscope.engine.view.scoped import effective_scope_ids, scope_groups

CHUNK = 200
_SET_STEP = 50_000
"""Rows put in a set per step (one call holds the interpreter for as long as it takes)."""
"""Most direct nodes a group shows before they are split into runs."""
MAX_CHILDREN = 16
"""Most subgroups a group shows (1,650 transformer layers) before they are split into runs of subgroups."""
RUN_MIN_NODES = 6
"""Fewest nodes between two repeats that become a group of their own (a downsampling block)."""
REPEAT_MIN_NODES = 32
FLAT_SCOPE_NODES = 160
"""Direct nodes in a named scope past which it is searched for repeated blocks too (a flat exporter scope)."""
"""Fewest direct nodes in a group before repeated blocks are looked for in it."""
CONSTANT_OPS = frozenset(
    {"Constant", "ConstantOfShape", "Identity", "Cast", "CastLike", "Reshape", "Unsqueeze", "Squeeze", "Transpose"}
)
"""Ops that, fed only by constants, only carry a constant (a weight alias, a cast weight, a shape vector)."""
SHAPE_READERS = frozenset({"Shape", "Size"})
"""Ops that read only their input's shape, never its values."""
NONDETERMINISTIC_OPS = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"}
)


@dataclass(slots=True)
class _Tree:
    """The tree while it is built: drafts of the groups, each node's deepest group and topological position."""

    groups: list[GroupDraft]
    node_group: list[int]
    topo_pos: Sequence[int]


@dataclass(slots=True)
class Hierarchy:
    """The group tree of a graph model."""

    groups: Groups
    node_group: array[int]
    """Deepest group of each node."""
    topo_pos: Sequence[int]
    """Topological position of each node."""
    folded: dict[int, int] = field(default_factory=dict)
    """Nodes that only carry constants or shape arithmetic, folded into the consumer that shows them
    (node: host node)."""
    hosted: dict[int, int] = field(default_factory=dict)
    """How many folded nodes each host node shows (its badge)."""

    @property
    def root(self) -> Group:
        """The root group (the whole graph)."""
        return self.groups[0]

    def path(self, group_id: int) -> list[int]:
        """Group ids from the root down to ``group_id``."""
        out = []
        g: int | None = group_id
        while g is not None:
            out.append(g)
            g = self.groups[g].parent
        out.reverse()
        return out

    def full_label(self, group_id: int) -> str:
        """The scope path of a group, e.g. ``encoder/layer.3/attn``."""
        return "/".join(self.groups[g].label for g in self.path(group_id)[1:])

    def refresh_counts(self, gm: GraphModel) -> None:
        """Recount sizes, plugin nodes and FLOPs after statuses or costs changed: each node counted in its own
        group, then each group's totals added to its parent's, the deepest groups first (in numpy, a level at a
        time: a relayout of a million nodes recounts in a fraction of a second)."""
        groups = self.groups
        n = len(groups)
        own = _own_counts(gm.nodes, self.node_group, n)
        parent = np.frombuffer(groups.parent, dtype=np.int32).astype(np.int64)
        parent[parent == NO_PARENT] = -1
        depth = np.zeros(n, np.int64)
        up = parent.copy()
        while (above := up >= 0).any():  # each group's depth, by walking every chain up a step at a time
            depth[above] += 1
            up[above] = parent[up[above]]
        for d in range(int(depth.max(initial=0)), 0, -1):
            at = np.flatnonzero(depth == d)
            for col in own:
                np.add.at(col, parent[at], col[at])
        groups.put_counts(*own)


_EXACT = 1 << 62
"""Below this a model's FLOPs are summed in 64-bit integers; past it (an absurd dim) in Python's."""


def _own_counts(nodes: Any, node_group: Sequence[int], n: int) -> tuple[np.ndarray, ...]:
    """Per group, its own nodes' count, plugin count, FLOPs and FLOPs outside plugins (unknown FLOPs as 0)."""
    g = np.asarray(node_group, dtype=np.int64)
    is_plugin = np.frombuffer(bytes(nodes.status), dtype=np.uint8) == STATUS_CODE[Status.PLUGIN]
    raw = np.frombuffer(nodes.flops, dtype=np.int64) if len(nodes.flops) else np.zeros(0, np.int64)
    size = np.bincount(g, minlength=n).astype(np.int64)
    plugin = np.bincount(g[is_plugin], minlength=n).astype(np.int64)
    if not nodes.huge and int(np.maximum(raw, 0).sum(dtype=np.uint64)) < _EXACT:
        f = np.maximum(raw, 0)
        flops, delegate = np.zeros(n, np.int64), np.zeros(n, np.int64)
    else:  # Python's integers: no overflow
        f = np.array([v or 0 for v in nodes.values("flops")], dtype=object)
        flops, delegate = np.zeros(n, dtype=object), np.zeros(n, dtype=object)
    np.add.at(flops, g, f)
    np.add.at(delegate, g[~is_plugin], f[~is_plugin])
    return size, plugin, flops, delegate


def effective_scopes(gm: GraphModel, order: Sequence[int]) -> list[tuple[str, ...]]:
    """Each node's scope; a node exported without one joins the scope its consumers share (their longest
    common prefix), so the weight aliases and shape arithmetic of a layer sit in that layer
    (:func:`~splitscope.engine.view.scoped.effective_scope_ids`, as tuples)."""
    table = gm.nodes.scope.table()
    table.append(())  # ROOT, read at -1
    return [table[k] for k in effective_scope_ids(gm, order).tolist()]


def _rows_flagged(nodes: Nodes, tensors: Tensors, flag: int) -> set[int]:
    """The tensors with ``flag`` (weights, graph outputs) as rows of the nodes' names: the tensors' own rows when
    the nodes index the tensors' names, as a loaded graph's do."""
    table = nodes.tensor_names
    flags = np.frombuffer(tensors.flags, dtype=np.uint8) if tensors.flags else np.zeros(0, np.uint8)
    rows = np.flatnonzero(flags & flag).tolist()
    if table is tensors.names:
        out: set[int] = set()
        for k in range(0, len(rows), _SET_STEP):  # a slice at a time: 485k weights' rows at a million nodes
            out.update(rows[k : k + _SET_STEP])
        return out
    names = tensors.names
    return {r for k in rows if (r := table.get(names[k])) is not None}


def constant_carriers(gm: GraphModel, order: Sequence[int], shapes: bool = True) -> dict[int, int]:
    """Nodes that only carry constants, each with the node that shows it (its first consumer that is not itself
    folded). Graph outputs and plugin nodes never fold.

    Two kinds fold: :data:`CONSTANT_OPS` fed only by initializers and other such nodes (a weight alias, a cast
    weight), and, with ``shapes``, *shape arithmetic*: nodes whose inputs are all constants or the outputs of
    ``Shape``/``Size`` (which read only a tensor's shape), such as the ``Shape → Gather → Concat → Reshape``
    runs and the position and mask tables exporters compute once per model. Nothing of the input data reaches
    them, so they are no part of the data path the user reads.
    """
    nodes, tensors = gm.nodes, gm.graph.tensors
    const: set[int] = set()
    known = _rows_flagged(nodes, tensors, INITIALIZER_FLAG)
    """Tensors (rows of the nodes' names) that carry only a constant: weights, then the outputs of the nodes
    found to fold."""
    known.add(-1)  # an omitted optional input
    outputs = _rows_flagged(nodes, tensors, OUTPUT_FLAG)
    plugin = STATUS_CODE[Status.PLUGIN]
    ops, domains, status, bodies = nodes.op_type, nodes.domain, nodes.status, nodes.subgraphs
    in_off, in_rows, out_off, out_rows = nodes.in_off, nodes.in_rows, nodes.out_off, nodes.out_rows
    free = known.issuperset
    for i in order:  # the columns read directly: a million nodes' views and lists were most of the time
        op = ops[i]
        if shapes:
            if op in NONDETERMINISTIC_OPS or (op not in SHAPE_READERS and not free(in_rows[in_off[i] : in_off[i + 1]])):
                continue
        elif op not in CONSTANT_OPS or not free(in_rows[in_off[i] : in_off[i + 1]]):
            continue
        if domains[i] not in ("", "ai.onnx") or bodies.get(i) or status[i] == plugin:
            continue
        outs = out_rows[out_off[i] : out_off[i + 1]]
        if (op == "Constant" or in_off[i + 1] > in_off[i]) and outputs.isdisjoint(outs):
            const.add(i)
            known.update(outs)
    if len(const) == len(nodes):
        return {}  # a model of constants only: fold nothing rather than everything
    succs = gm.graph.adj.succs
    host: dict[int, int] = {}
    for i in reversed(order):
        if i not in const:
            continue
        for s in succs[i]:
            h = host.get(s, s) if s in const else s
            if h not in const:
                host[i] = h
                break
    return host


def build_hierarchy(
    gm: GraphModel, order: Sequence[int], chunk: int = CHUNK, fold: bool = True, shapes: bool = True
) -> Hierarchy:
    """Build the group tree of ``gm``'s main graph.

    Parameters
    ----------
    gm
        The analysed model.
    order
        A topological order of its nodes.
    chunk
        Most direct nodes per group before they are split into runs.
    fold
        Fold nodes that only carry constants into their consumers (:func:`constant_carriers`).
    shapes
        Fold shape arithmetic too.
    """
    n = len(gm.nodes)
    pos = np.zeros(n, dtype=np.int32)
    pos[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
    topo_pos = array("i", pos.tobytes())  # one block, not an int object a node
    folded = constant_carriers(gm, order, shapes) if fold else {}
    groups, node_group = scope_groups(gm, order, pos, list(folded), gm.path.name if gm.path else "model")
    hosted: dict[int, int] = {}
    for hst in folded.values():
        hosted[hst] = hosted.get(hst, 0) + 1
    t = _Tree(groups, node_group, topo_pos)
    _merge_chains(t)
    _group_repeats(t, gm)
    _split_large(t, chunk)
    _split_children(t)
    for i, hst in folded.items():
        t.node_group[i] = t.node_group[hst]
    _renumber_depths(t)
    h = Hierarchy(Groups(t.groups), array("i", t.node_group), topo_pos, folded, hosted)
    drop_in_steps(t.groups, t.node_group)  # a slice at a time: 396k drafts and their lists at a million nodes
    h.refresh_counts(gm)
    return h


def _merge_chains(h: _Tree) -> None:
    """Merge a group that holds one subgroup and no nodes into it; dissolve one-node groups."""
    groups = h.groups
    for g in reversed(groups):  # children before parents
        if g.id == 0 or g.parent is None or g.parent == -1 or g.groups or len(g.nodes) != 1:
            continue
        parent = groups[g.parent]
        if _numbered_sibling(g, parent, groups):
            continue  # one layer of a numbered list (model.10, an Upsample alone): it keeps its scope
        parent.groups.remove(g.id)
        parent.nodes.append(g.nodes[0])
        parent.nodes.sort(key=lambda n: h.topo_pos[n])
        h.node_group[g.nodes[0]] = parent.id
        g.parent, g.nodes = -1, []
    for g in groups:
        if g.parent == -1:
            continue
        if g.id == 0:
            continue
        while len(g.groups) == 1 and not g.nodes:
            only = groups[g.groups[0]]
            g.label = f"{g.label}/{only.label}"
            g.groups = only.groups
            g.nodes = only.nodes
            for c in g.groups:
                groups[c].parent = g.id
            for n in g.nodes:
                h.node_group[n] = g.id
            only.parent = -1  # detached
            only.groups, only.nodes = [], []


_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _numbered_sibling(g: GroupDraft, parent: GroupDraft, groups: list[GroupDraft]) -> bool:
    """Whether ``g`` is one of a numbered list of layers (``model.0``, ``model.1``, ...) among its siblings."""
    m = _NUMBERED.match(g.label)
    if m is None:
        return False
    stem = m.group(1)
    same = 0
    for c in parent.groups:
        o = _NUMBERED.match(groups[c].label)
        if c != g.id and o is not None and o.group(1) == stem:
            same += 1
            if same >= 2:
                return True
    return False


def _natural(label: str) -> tuple[str, int]:
    m = _NUMBERED.match(label)
    return (m.group(1), int(m.group(2))) if m else (label, -1)


def run_label(labels: list[str]) -> str:
    """The label of a run of layers: its first and last by their numbers (``model.0 … model.22``), so it says
    what it holds; one layer keeps its own label."""
    if len(labels) == 1:
        return labels[0]
    ordered = sorted(labels, key=_natural)
    return f"{ordered[0]} … {ordered[-1]}"


def _group_repeats(h: _Tree, gm: GraphModel) -> None:
    """Give each group whose direct nodes are mostly repeated blocks (a model exported without scopes: ResNet
    bottlenecks, transformer layers) a ``Conv block ×N`` subgroup per repeat, one child per block."""
    preds, ops = gm.graph.adj.preds, gm.nodes.op_type
    gid, made = -1, len(h.groups)
    while gid + 1 < len(h.groups):  # the blocks made here are searched in turn (a stage's bottlenecks)
        gid += 1
        g = h.groups[gid]
        if g.parent == -1 or len(g.nodes) < REPEAT_MIN_NODES:
            continue
        if gid != 0 and gid < made and len(g.nodes) < FLAT_SCOPE_NODES:
            continue  # a scope the exporter named (a layer's attention): its repeats are its own business
        seq = sorted(g.nodes)  # the exporter's order, where it is topological
        pos = {v: k for k, v in enumerate(seq)}
        edges = [(pos[u], k) for k, v in enumerate(seq) for u in preds[v] if u in pos]
        if any(a >= b for a, b in edges):
            seq = list(g.nodes)
            pos = {v: k for k, v in enumerate(seq)}
            edges = [(pos[u], k) for k, v in enumerate(seq) for u in preds[v] if u in pos]
        repeats = find_repeats([ops[v] for v in seq], edges)
        if sum(r.period * r.count for r in repeats) * 2 < len(seq):
            continue  # incidental repeats inside a named scope: leave it as the exporter named it
        _make_blocks(h, gid, seq, repeats, ops)


def _make_blocks(h: _Tree, gid: int, seq: list[int], repeats: list[Repeat], ops: Sequence[str]) -> None:
    """Turn ``repeats`` of the direct nodes ``seq`` of group ``gid`` into groups; the runs between them of
    :data:`RUN_MIN_NODES` or more into one group each; then, where those items repeat in turn (a ResNet stage:
    a downsampling block, then ``Conv block ×N``), a group per repeat of items (``Conv stage ×4``)."""
    g = h.groups[gid]
    items: list[tuple[object, list[int], GroupDraft | None]] = []  # (token, nodes, group)
    taken: set[int] = set()

    def run(nodes: list[int]) -> None:
        if len(nodes) >= RUN_MIN_NODES:
            sig = tuple(ops[v] for v in nodes)
            grp = _new_group(h, block_name(sig), gid)
            _fill(h, grp, nodes)
            taken.update(nodes)
            items.append((("run", sig), nodes, grp))
        else:
            items.extend(((ops[v],), [v], None) for v in nodes)

    at = 0
    for r in repeats:
        run(seq[at : r.start])
        unit = tuple(ops[v] for v in seq[r.start : r.start + r.period])
        name = block_name(unit)
        outer = _new_group(h, f"{name} ×{r.count}", gid)
        for j in range(r.count):
            block = _new_group(h, f"{name} {j + 1}", outer.id)
            _fill(h, block, seq[r.start + j * r.period : r.start + (j + 1) * r.period])
            taken.update(block.nodes)
        outer.first = h.groups[outer.groups[0]].first
        items.append((("repeat", unit), [], outer))
        at = r.end
    run(seq[at:])
    g.nodes = [v for v in g.nodes if v not in taken]
    # Second level: repeats of items (whatever the count inside each repeat).
    for r in find_repeats([t for t, _, _ in items], min_period=2):
        kids = [grp for _, _, grp in items[r.start : r.end] if grp is not None]
        if len(kids) < r.count * 2:
            continue  # repeats of single nodes: nothing to gather
        name = block_name([ops[v] for grp in kids for v in _nodes_below(h, grp)]).replace("block", "stage")
        for j in range(r.count):
            part = items[r.start + j * r.period : r.start + (j + 1) * r.period]
            stage = _new_group(h, f"{name} {j + 1}", gid)
            for _, nodes, grp in part:
                if grp is None:
                    g.nodes.remove(nodes[0])
                    stage.nodes.append(nodes[0])
                    h.node_group[nodes[0]] = stage.id
                else:
                    h.groups[gid].groups.remove(grp.id)
                    grp.parent = stage.id
                    stage.groups.append(grp.id)
            stage.first = min([h.groups[c].first for c in stage.groups] + [h.topo_pos[v] for v in stage.nodes])
            stage.nodes.sort(key=lambda v: h.topo_pos[v])


def _nodes_below(h: _Tree, grp: GroupDraft) -> list[int]:
    out, stack = [], [grp.id]
    while stack:
        g = h.groups[stack.pop()]
        out.extend(g.nodes)
        stack.extend(g.groups)
    return out


def _fill(h: _Tree, grp: GroupDraft, nodes: list[int]) -> None:
    grp.nodes = sorted(nodes, key=lambda v: h.topo_pos[v])
    for v in grp.nodes:
        h.node_group[v] = grp.id
    grp.first = h.topo_pos[grp.nodes[0]]


def _new_group(h: _Tree, label: str, parent: int) -> GroupDraft:
    g = GroupDraft(len(h.groups), label, parent, h.groups[parent].depth + 1)
    h.groups.append(g)
    h.groups[parent].groups.append(g.id)
    return g


def _split_large(h: _Tree, chunk: int) -> None:
    """Split every group with more than 2*chunk direct nodes into runs."""
    for gid in range(len(h.groups)):
        if h.groups[gid].parent != -1:
            _split(h, gid, chunk)


def _split(h: _Tree, gid: int, chunk: int) -> None:
    g = h.groups[gid]
    if len(g.nodes) <= 2 * chunk:
        return
    nodes = g.nodes
    g.nodes = []
    size = chunk
    while len(nodes) / size > 2 * chunk:
        size *= chunk
    for k in range(0, len(nodes), size):
        run = nodes[k : k + size]
        child = GroupDraft(
            len(h.groups),
            f"nodes {h.topo_pos[run[0]]}–{h.topo_pos[run[-1]]}",
            gid,
            g.depth + 1,
            first=h.topo_pos[run[0]],
        )
        h.groups.append(child)
        g.groups.append(child.id)
        child.nodes = run
        for n in run:
            h.node_group[n] = child.id
        _split(h, child.id, chunk)


def _split_children(h: _Tree, most: int = MAX_CHILDREN) -> None:
    """A group with more than ``most`` subgroups (hundreds of layers) gets runs of them, ``layers.0 … layers.99``,
    so that each level shows a handful of blocks."""
    for gid in range(len(h.groups)):
        g = h.groups[gid]
        if g.parent != -1 and len(g.groups) > most:
            _split_children_one(h, gid, most)


def _split_children_one(h: _Tree, gid: int, most: int) -> None:
    g = h.groups[gid]
    kids = g.groups
    size = most
    while -(-len(kids) // size) > most:
        size *= most
    g.groups = []
    for k in range(0, len(kids), size):
        run = kids[k : k + size]
        first = h.groups[run[0]]
        label = run_label([h.groups[c].label for c in run])
        child = GroupDraft(len(h.groups), label, gid, g.depth + 1, first=first.first)
        h.groups.append(child)
        g.groups.append(child.id)
        child.groups = run
        for c in run:
            h.groups[c].parent = child.id
    for c in g.groups:
        if len(h.groups[c].groups) > most:
            _split_children_one(h, c, most)


def _renumber_depths(h: _Tree) -> None:
    """Order siblings by their first node and set depths from the root down."""
    for g in h.groups:
        if g.parent != -1:
            g.groups.sort(key=lambda c: h.groups[c].first)
    stack = [0]
    while stack:
        gid = stack.pop()
        for c in h.groups[gid].groups:
            h.groups[c].depth = h.groups[gid].depth + 1
            stack.append(c)
