"""The first cut of the group tree: a group per module scope, read from the scopes' tree of ids
(:class:`splitscope.engine.model.scopes.Scopes`) rather than from each node's tuple.

A scope's path is a path in that tree, so the group a node sits in is its scope's own, made once per distinct scope
(394k at a million nodes) instead of once per step of every node's path (4M lookups): the groups come in the order
the nodes first reach them in topological order, as a walk over the nodes made them, and each group's direct nodes
are one sort of the nodes by group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from splitscope.engine.heap import drop_in_steps
from splitscope.engine.model import GraphModel
from splitscope.engine.model.scopes import ROOT, Scopes
from splitscope.engine.view.groups import GroupDraft


def _depths(scopes: Scopes) -> list[int]:
    """Each scope's depth (a top-level scope 1), then ROOT's 0 as the last item: read at index -1 (ROOT)."""
    depth = [0] * (len(scopes.parent) + 1)
    for k, p in enumerate(scopes.parent):  # parents before their children
        depth[k] = depth[p] + 1
    return depth


def effective_scope_ids(gm: GraphModel, order: Sequence[int]) -> np.ndarray:
    """Each node's scope id; a node exported without one (ROOT) takes the deepest scope its consumers share, so the
    weight aliases and shape arithmetic of a layer sit in that layer (a consumer's own taken first, in reverse
    topological order)."""
    scopes = gm.nodes.scope
    ids = np.frombuffer(scopes.ids, dtype=np.int32).astype(np.int64) if len(scopes.ids) else np.zeros(0, np.int64)
    bare = np.flatnonzero(ids == ROOT)
    if not len(bare):
        return ids
    pos = np.zeros(len(ids), dtype=np.int64)
    pos[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    bare = bare[np.argsort(-pos[bare], kind="stable")]
    depth = _depths(scopes)
    parent = [*scopes.parent, ROOT]
    succs = gm.graph.adj.succs
    eff = ids.tolist()
    for i in bare.tolist():
        common = None
        for s in succs[i]:
            a = eff[s]
            if common is None:
                common = a
                continue
            while depth[common] > depth[a]:
                common = parent[common]
            while depth[a] > depth[common]:
                a = parent[a]
            while a != common:
                a, common = parent[a], parent[common]
            if common == ROOT:
                break
        if common is not None:
            eff[i] = common
    return np.asarray(eff, dtype=np.int64)


def scope_groups(
    gm: GraphModel, order: Sequence[int], topo_pos: np.ndarray, folded: Sequence[int], root_label: str
) -> tuple[list[GroupDraft], list[int]]:
    """The groups of the scopes the nodes not ``folded`` sit in (group 0 the root), and each node's group (0 for a
    folded node): what walking each node's path from the root, in topological order, makes."""
    scopes = gm.nodes.scope
    n = len(gm.nodes)
    eff = effective_scope_ids(gm, order)
    seq = np.asarray(order, dtype=np.int64)
    if len(folded):
        keep = np.ones(n, dtype=bool)
        keep[np.asarray(folded, dtype=np.int64)] = False
        seq = seq[keep[seq]]
    leaf = eff[seq]
    uniq, first = np.unique(leaf, return_index=True)
    by_first = np.argsort(first, kind="stable")
    uniq, first = uniq[by_first], first[by_first]
    groups = [GroupDraft(0, root_label, None, 0)]
    group_of = [-1] * (len(scopes.parent) + 1)
    group_of[ROOT] = 0  # the last item: ROOT is read at -1
    parent, labels = scopes.parent, scopes.steps.pick(scopes.step)
    chain: list[int] = []
    leaves, firsts = uniq.tolist(), seq[first].tolist()
    for t, at in zip(leaves, firsts, strict=True):
        while group_of[t] < 0:  # the scope and its ancestors without a group yet, deepest first
            chain.append(t)
            t = parent[t]
        g = group_of[t]
        while chain:
            t = chain.pop()
            child = len(groups)
            groups.append(GroupDraft(child, labels[t], g, groups[g].depth + 1, first=int(topo_pos[at])))
            groups[g].groups.append(child)
            group_of[t] = g = child
    gid = np.asarray(group_of, dtype=np.int64)[leaf]  # ROOT (-1) reads the last item: the root group
    node_group = np.zeros(n, dtype=np.int64)
    node_group[seq] = gid
    by_group = np.argsort(gid, kind="stable")  # within a group, topological order
    members = seq[by_group].tolist()
    ends = np.cumsum(np.bincount(gid, minlength=len(groups))).tolist()
    start = 0
    for g, end in enumerate(ends):
        if end > start:
            groups[g].nodes = members[start:end]
            start = end
    drop_in_steps(members, ends, group_of, leaves, firsts)  # a million ints at a million nodes: not in one go
    return groups, node_group.tolist()
