"""What a layout needs of a model that expand and collapse do not change (:class:`LayoutContext`): each group's
path from the root, and each graph edge placed in the box of the lowest group that holds both its ends, between
that group's children, in arrays (a 200k-node model's edges are a few hundred thousand triples, not dicts)."""

from __future__ import annotations

from typing import Any

import numpy as np
from splitscope.engine.model import GraphModel
from splitscope.engine.view.hierarchy import Hierarchy


class LayoutContext:
    """What a layout needs that does not change with expand/collapse: graph edges by level."""

    def __init__(self, gm: GraphModel, h: Hierarchy) -> None:
        self.gm = gm
        self.h = h
        boundary: dict[str, int] = {}
        # Unique graph edges (producer, consumer) with their tensors: the graph's own adjacency.
        pairs = gm.graph.adj.edges
        self.pairs = pairs
        self.edge_src, self.edge_dst = _ints(pairs.src), _ints(pairs.dst)
        self.folded = np.zeros(len(gm.nodes), bool)
        """Per node, whether it is folded into its consumer (shown by it)."""
        self.folded[np.fromiter(h.folded, np.int64, len(h.folded))] = True
        self.edge_live = ~self.folded[self.edge_src]
        """Per graph edge, whether it can be drawn: a folded constant draws none (its consumer shows it)."""
        self.boundary = boundary
        self.edge_bytes: np.ndarray | None = None
        """Per graph edge, the bytes of the partition-boundary tensors it carries (None: the model has none)."""
        self.edge_boundary: np.ndarray | None = None
        self.refresh_boundaries()
        self.path_table, self.path_length = _path_table(h.groups.parent)
        """Each group's path from the root as a row of group ids, -1 padded (a group outside the tree: all -1)."""
        self.node_group = np.asarray(h.node_group, np.int64)
        self.folded_nodes = np.fromiter(h.folded, np.int64, len(h.folded))
        self.folded_hosts = np.fromiter(h.folded.values(), np.int64, len(h.folded))
        # Each edge appears in the box of its lowest common group, between that group's children: in arrays (a
        # dict of pairs per group held a million small objects at 200k nodes, and took 0.4 s to fill).
        self._local = _local_edges(self.path_table, self.path_length, self.node_group, self.folded_nodes, pairs)

    def local_edges(self, gid: int) -> list[tuple[int, int]]:
        """The distinct edges between the children of group ``gid`` (encoded: nodes >= 0, group ``g`` as ``-g - 1``), in
        the order the graph's edges first give them."""
        lca, ru, rv = self._local
        i0, i1 = np.searchsorted(lca, gid, "left"), np.searchsorted(lca, gid, "right")
        return list(zip(ru[i0:i1].tolist(), rv[i0:i1].tolist(), strict=True))

    def refresh_boundaries(self) -> None:
        """Re-read the partition-boundary tensors (after the parser changed the split), and each graph edge's share
        of them."""
        self.boundary = boundary = {t.name: t.bytes or 0 for p in self.gm.partitions for t in p.boundary_tensors}
        self.edge_bytes = self.edge_boundary = None
        if not boundary:
            return
        table, offsets = self.pairs.table, np.asarray(self.pairs.offsets, np.int64)
        by_row = {r: b for name, b in boundary.items() if (r := table.get(name)) is not None}
        keys = np.fromiter(by_row, np.int64, len(by_row))
        rows = _ints(self.pairs.rows)
        at = np.flatnonzero(np.isin(rows, keys))  # the edges' slots carrying a boundary tensor
        edge = np.searchsorted(offsets, at, "right") - 1
        by = np.argsort(keys)
        sizes = np.fromiter(by_row.values(), np.int64, len(by_row))[by]
        self.edge_bytes = np.zeros(len(self.edge_src), np.int64)
        np.add.at(self.edge_bytes, edge, sizes[np.searchsorted(keys[by], rows[at])])
        self.edge_boundary = np.zeros(len(self.edge_src), bool)
        self.edge_boundary[edge] = True


def _ints(a: Any) -> np.ndarray:
    """An ``array('i')`` as int64 numpy (a copy: indexes further arrays)."""
    return np.frombuffer(a, np.int32).astype(np.int64) if len(a) else np.zeros(0, np.int64)


def _path_table(parent: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each group's path from the root, a row of ids padded with -1, and its length (0 for a group outside the
    tree: merged away, its parent -1), from the groups' parent column (the root's is -2)."""
    par = _ints(parent)
    n = len(par)
    up: list[np.ndarray] = []  # the k-th ancestor of every group still climbing (-1: none)
    cur = np.where(par != -1, np.arange(n), -1)
    while (cur >= 0).any():
        up.append(cur)
        cur = np.where(cur >= 0, par[np.maximum(cur, 0)], -1)
        cur[cur < 0] = -1  # the root's NO_PARENT ends its path
    length = np.zeros(n, np.int64)
    for col in up:
        length += col >= 0
    table = np.full((n, max(len(up), 1) + 1), -1, np.int64)
    for k, col in enumerate(up):
        rows = np.flatnonzero(col >= 0)
        table[rows, length[rows] - 1 - k] = col[rows]
    return table, length


_EDGE_STEP = 100_000
"""Edges whose group paths are compared per step: each step's arrays are edges x depth (a million edges' in one go
were arrays of tens of megabytes each: the layout context of the 1M export took 0.45-0.79 s, in steps 0.26-0.29 s)."""


def _edge_triples(
    table: np.ndarray, length: np.ndarray, ng: np.ndarray, src: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    """(group, from, to) for each edge ``src -> dst`` that crosses children of its lowest common group (see
    :func:`_local_edges`), in edge order."""
    ga, gb = ng[src], ng[dst]
    pa, pb = table[ga], table[gb]
    same = (pa == pb) & (pa >= 0)
    k = np.where(same.all(axis=1), same.shape[1], same.argmin(axis=1))  # the common prefix's length (the root at least)
    rows = np.arange(len(src))
    lca = pa[rows, k - 1]
    ru = np.where(k < length[ga], -pa[rows, k] - 1, src)
    rv = np.where(k < length[gb], -pb[rows, k] - 1, dst)
    keep = ru != rv
    return np.stack([lca[keep], ru[keep], rv[keep]], axis=1)


def _local_edges(
    table: np.ndarray, length: np.ndarray, ng: np.ndarray, gone: np.ndarray, pairs: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each graph edge ``u -> v`` (the folded nodes ``gone`` left out): the lowest group holding both ends, and the
    children of that group the edge runs between (the end node itself where it sits in that group directly; a group
    ``g`` encoded as ``-g - 1``). Distinct triples, sorted by group and, within a group, by the first edge that gives
    them: three arrays (group, from, to). ``table`` and ``length``: each group's path (:func:`_path_table`); ``ng``:
    each node's group."""
    empty = np.zeros(0, np.int64)
    src, dst = np.asarray(pairs.src, np.int64), np.asarray(pairs.dst, np.int64)
    if len(gone):
        keep = ~(np.isin(src, gone) | np.isin(dst, gone))
        src, dst = src[keep], dst[keep]
    if not len(src):
        return empty, empty, empty
    parts = [
        _edge_triples(table, length, ng, src[c0 : c0 + _EDGE_STEP], dst[c0 : c0 + _EDGE_STEP])
        for c0 in range(0, len(src), _EDGE_STEP)
    ]
    triples = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if not len(triples):
        return empty, empty, empty
    # One integer a triple (the ends shifted past the encoded groups), unique and ordered by group, then first use.
    shift = int(-triples[:, 1:].min()) + 1 if triples[:, 1:].min() < 0 else 0
    span = int(triples[:, 1:].max()) + shift + 1
    if (int(triples[:, 0].max()) + 1) * span * span < 2**62:
        key = (triples[:, 0] * span + triples[:, 1] + shift) * span + triples[:, 2] + shift
        _, first = np.unique(key, return_index=True)
    else:  # too large to pack: rows compared whole (slower)
        _, first = np.unique(triples, axis=0, return_index=True)
    first.sort()
    uniq = triples[first]
    uniq = uniq[np.argsort(uniq[:, 0], kind="stable")]
    return uniq[:, 0].copy(), uniq[:, 1].copy(), uniq[:, 2].copy()
