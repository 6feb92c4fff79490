"""A view's groups in columns (:class:`Groups`) and :class:`Group`, the view of one; :class:`GroupDraft`, what the
hierarchy's builder moves around before the tree is final.

The 200k-node export's view was 79k group objects, each with its lists of nodes and subgroups and half a dozen
integers: 0.9M blocks and 45 ms to free. Here the tree, once built, is a few arrays: labels one list, parents,
depths, counts and first positions one array each, members and subgroups two compressed rows."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np
from splitscope.engine.model.rows import Rows
from splitscope.engine.model.table import RowView

NO_PARENT = -2
"""The parent column's value for the root (whose parent reads as None); -1 is a group merged away (detached)."""
_BIG = 1 << 63


@dataclass(slots=True)
class GroupDraft:
    """A group while the tree is built (moved, merged, split): the fields a :class:`Group` reads once it is done."""

    id: int
    label: str
    parent: int | None
    depth: int
    groups: list[int] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    first: int = 0


def _rows(lists: Sequence[Sequence[int]]) -> Rows:
    """Lists of ints as compressed rows."""
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    offsets = np.zeros(len(lists) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = array("i")
    for row in lists:
        flat.extend(row)
    return Rows(array("i", offsets.tobytes()), flat)


class Groups(Sequence["Group"]):
    """Every group of a view's tree in columns, read as the list of :class:`Group` it replaces (group ``k`` is row
    ``k``). Only the counts change once it is made (:meth:`put_counts`)."""

    __slots__ = (
        "depth",
        "first",
        "flops",
        "flops_delegate",
        "huge",
        "label",
        "members",
        "parent",
        "plugin",
        "size",
        "subgroups",
    )

    def __init__(self, drafts: Sequence[GroupDraft]) -> None:
        n = len(drafts)
        self.label = [d.label for d in drafts]
        self.parent = array("i", [NO_PARENT if d.parent is None else d.parent for d in drafts])
        self.depth = array("i", [d.depth for d in drafts])
        self.first = array("i", [d.first for d in drafts])
        self.members = _rows([d.nodes for d in drafts])
        """Each group's direct nodes (main-graph indices), in topological order."""
        self.subgroups = _rows([d.groups for d in drafts])
        """Each group's subgroups, in the order shown."""
        zeros = bytes(8 * n)
        self.size, self.plugin = array("q", zeros), array("q", zeros)
        self.flops, self.flops_delegate = array("q", zeros), array("q", zeros)
        self.huge: dict[tuple[str, int], int] = {}
        """FLOPs past 64 bits (an absurd dim), by column and group; -1 in the column."""

    def put_counts(self, size: np.ndarray, plugin: np.ndarray, flops: np.ndarray, delegate: np.ndarray) -> None:
        """Set every group's node count, plugin count and FLOPs (all and outside plugins), one array each (FLOPs
        may be Python integers past 64 bits)."""
        self.size = array("q", size.astype(np.int64).tobytes())
        self.plugin = array("q", plugin.astype(np.int64).tobytes())
        self.huge = {}
        for column, values in (("flops", flops), ("flops_delegate", delegate)):
            if values.dtype == object:
                big = [k for k, v in enumerate(values.tolist()) if v >= _BIG]
                self.huge.update({(column, k): int(values[k]) for k in big})
                values = values.copy()
                values[big] = -1
            setattr(self, column, array("q", np.asarray(values, dtype=np.int64).tobytes()))

    @overload
    def __getitem__(self, i: int) -> Group: ...
    @overload
    def __getitem__(self, i: slice) -> list[Group]: ...
    def __getitem__(self, i: int | slice) -> Group | list[Group]:
        n = len(self.label)
        if isinstance(i, slice):
            return [Group.of(self, k) for k in range(*i.indices(n))]
        if not 0 <= i < n:
            if not -n <= i < 0:
                raise IndexError(f"group {i} of {n}")
            i += n
        return Group.of(self, i)

    def __len__(self) -> int:
        return len(self.label)

    def __iter__(self) -> Iterator[Group]:
        of = Group.of
        for k in range(len(self.label)):
            yield of(self, k)


class Group(RowView):
    """A name scope (or a run of unscoped nodes) and the split inside it: a view of one row of its view's
    :class:`Groups`."""

    __slots__ = ()
    _t: Groups

    def __repr__(self) -> str:
        return f"Group({self._i}, {self.label!r})"

    @property
    def id(self) -> int:
        return self._i

    @property
    def label(self) -> str:
        return self._t.label[self._i]

    @property
    def parent(self) -> int | None:
        """Its parent's id; None for the root, -1 for a group merged into another (no longer in the tree)."""
        p = self._t.parent[self._i]
        return None if p == NO_PARENT else p

    @property
    def depth(self) -> int:
        return self._t.depth[self._i]

    @property
    def groups(self) -> array[int]:
        """Its subgroups' ids, in the order shown."""
        return self._t.subgroups[self._i]

    @property
    def nodes(self) -> array[int]:
        """Direct member nodes (main-graph indices), in topological order."""
        return self._t.members[self._i]

    @property
    def first(self) -> int:
        """Topological position of its first node (orders siblings)."""
        return self._t.first[self._i]

    @property
    def size(self) -> int:
        """All nodes below this group."""
        return self._t.size[self._i]

    @property
    def plugin(self) -> int:
        return self._t.plugin[self._i]

    @property
    def repeat(self) -> tuple[int, int] | None:
        """For a group of two or more subgroups of equal size and no nodes of its own (``Conv block ×N``, an
        encoder's layers): (how many, nodes in each); None otherwise."""
        subs, t = self._t.subgroups[self._i], self._t
        if len(subs) < 2 or len(t.members[self._i]):
            return None
        each = t.size[subs[0]]
        return (len(subs), each) if all(t.size[g] == each for g in subs) else None

    @property
    def flops(self) -> int:
        v = self._t.flops[self._i]
        return v if v >= 0 else self._t.huge[("flops", self._i)]

    @property
    def flops_delegate(self) -> int:
        v = self._t.flops_delegate[self._i]
        return v if v >= 0 else self._t.huge[("flops_delegate", self._i)]

    @property
    def delegate_share(self) -> float:
        """Share of FLOPs delegated (of nodes, when FLOPs are unknown)."""
        if self.flops:
            return self.flops_delegate / self.flops
        return 1.0 - self.plugin / self.size if self.size else 1.0

    @property
    def bar_share(self) -> float:
        """The delegate part of the group's share bar: the smaller of the FLOPs and the node share, so that
        plugin nodes with no or unknown FLOPs (a custom op, NMS) still show in the plugin colour."""
        node_share = 1.0 - self.plugin / self.size if self.size else 1.0
        return min(self.delegate_share, node_share)
