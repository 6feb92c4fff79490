"""Who feeds whom, in flat arrays: a graph's predecessors and successors as compressed rows, its edges as a table,
its topological order as one ``array('i')``. Built once per graph (:func:`link_nodes`, :func:`kahn_order`) and read by
every pass; a few blocks of memory for a whole graph, where objects per node made millions."""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from splitscope.engine.model.names import Names
    from splitscope.engine.model.nodes import Nodes


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
    is ``src[k] -> dst[k]`` carrying the tensors of rows ``rows[offsets[k]:offsets[k + 1]]`` of ``table`` (in the
    consumer's input order). Read it as the mapping it replaces: ``items()`` gives ``((u, v), names)``, iterating
    gives ``(u, v)``."""

    __slots__ = ("dst", "offsets", "rows", "src", "table")

    def __init__(self, src: array[int], dst: array[int], offsets: array[int], rows: array[int], table: Names) -> None:
        self.src, self.dst, self.offsets, self.rows, self.table = src, dst, offsets, rows, table

    def __len__(self) -> int:
        return len(self.src)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.src, self.dst, strict=True)

    def items(self) -> Iterator[tuple[tuple[int, int], list[str]]]:
        o, rows, pick = self.offsets, self.rows, self.table.pick
        for k, (u, v) in enumerate(zip(self.src, self.dst, strict=True)):
            yield (u, v), pick(rows[o[k] : o[k + 1]])


def link_nodes(nodes: Nodes, producer: np.ndarray, all_inputs: bool = True) -> tuple[Rows, Rows, Edges, int | None]:
    """Predecessors, successors and the tensors of each edge of ``nodes`` (``producer``: the node making each row
    of :attr:`Nodes.tensor_names`, -1 for none; with ``all_inputs``, the outer tensors their bodies read too), and
    the first node that reads its own output (a cycle of one), or None. All in numpy over the input rows: each
    slot's producer, then the edges (a node's producers in the order it first reads them, each edge's tensors in
    the order it reads them); a graph with bodies' outer reads or a node reading its own output goes through
    :func:`_link_each`."""
    n = len(nodes)
    in_rows = np.frombuffer(nodes.in_rows, dtype=np.int32) if nodes.in_rows else np.zeros(0, np.int32)
    prod = np.where(in_rows >= 0, producer[np.maximum(in_rows, 0)] if len(producer) else -1, -1).astype(np.int64)
    v_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.frombuffer(nodes.in_off, dtype=np.int32)))
    slots = np.flatnonzero(prod >= 0)
    sv, su = v_of[slots], prod[slots]
    if (all_inputs and nodes.implicit) or bool((su == sv).any()):
        return _link_each(nodes, producer, all_inputs)
    key = sv * max(n, 1) + su
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    pair_order = np.argsort(first, kind="stable")  # by consumer, then by the slot that first names the producer
    rank = np.empty_like(pair_order)
    rank[pair_order] = np.arange(len(pair_order))
    slot_pair = rank[inv.reshape(-1)]
    src_np, dst_np = su[first[pair_order]], sv[first[pair_order]]
    by = np.argsort(slot_pair, kind="stable")  # each edge's slots together, in the order the consumer reads them
    e_off = np.zeros(len(pair_order) + 1, dtype=np.int32)
    np.cumsum(np.bincount(slot_pair, minlength=len(pair_order)), out=e_off[1:])
    p_off = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(dst_np, minlength=n), out=p_off[1:])
    src, dst = _ints(src_np), _ints(dst_np)
    edges = Edges(src, dst, _ints(e_off), _ints(in_rows[slots[by]]), nodes.tensor_names)
    return Rows(_ints(p_off), _ints(src_np)), _successors(src, dst, n), edges, None


def _ints(a: np.ndarray) -> array[int]:
    return array("i", a.astype(np.int32).tobytes())


def _link_each(nodes: Nodes, producer: np.ndarray, all_inputs: bool = True) -> tuple[Rows, Rows, Edges, int | None]:
    """:func:`link_nodes` a node at a time (bodies' outer reads; the first node reading its own output named)."""
    n = len(nodes)
    p_off, p_tgt = array("i", [0]), array("i")
    src, dst, e_off, rows = array("i"), array("i"), array("i", [0]), array("i")
    in_off, in_rows, table = nodes.in_off, nodes.in_rows, nodes.tensor_names
    made = producer.tolist()
    implicit = nodes.implicit if all_inputs else {}
    for v in range(n):
        mine: dict[int, list[int]] = {}  # this node's producers, first seen first, and the rows each gives it
        reads = in_rows[in_off[v] : in_off[v + 1]].tolist()
        extra = implicit.get(v)
        if extra:
            reads += [-1 if (r := table.get(name)) is None else r for name in extra]
        for r in reads:
            u = made[r] if 0 <= r < len(made) else -1
            if u < 0:
                continue
            if u == v:
                return _no_rows(n), _no_rows(n), Edges(src, dst, e_off, rows, table), v
            got = mine.get(u)
            if got is None:
                mine[u] = [r]
            else:
                got.append(r)
        for u, given in mine.items():
            p_tgt.append(u)
            src.append(u)
            dst.append(v)
            rows.extend(given)
            e_off.append(len(rows))
        p_off.append(len(p_tgt))
    succs = _successors(src, dst, n)
    return Rows(p_off, p_tgt), succs, Edges(src, dst, e_off, rows, table), None


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
