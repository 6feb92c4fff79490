"""Group roll-ups of per-node values, computed once for every colouring and figure: one pass over the nodes,
then one up the scope tree (deepest groups first), so 50k nodes cost milliseconds, not a walk to the root per
node. The root group (0) holds the whole model."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

from splitscope.engine.view.hierarchy import Hierarchy

V = TypeVar("V", bound=Hashable)


def _deepest_first(hier: Hierarchy) -> list[int]:
    groups = hier.groups
    return sorted((g.id for g in groups if g.parent not in (None, -1)), key=lambda g: -groups[g].depth)


def values_up(hier: Hierarchy, node_vals: Mapping[int, V], most: int = 3) -> dict[int, set[V]]:
    """For every group, the set of values of the nodes below it (at most ``most`` kept above a group's own
    level: enough to tell one value from several)."""
    sets: dict[int, set[V]] = {}
    ng = hier.node_group
    for i, v in node_vals.items():
        if 0 <= i < len(ng):
            sets.setdefault(ng[i], set()).add(v)
    groups = hier.groups
    for gid in _deepest_first(hier):
        s = sets.get(gid)
        parent = groups[gid].parent
        if s and parent is not None and parent >= 0:
            ps = sets.setdefault(parent, set())
            if len(ps) < most:
                ps |= s
    return sets


def sums_up(hier: Hierarchy, node_vals: Mapping[int, float]) -> dict[int, float]:
    """For every group, the sum of the values of the nodes below it, at any depth."""
    sums: dict[int, float] = {}
    ng = hier.node_group
    for i, v in node_vals.items():
        if 0 <= i < len(ng):
            sums[ng[i]] = sums.get(ng[i], 0.0) + v
    groups = hier.groups
    for gid in _deepest_first(hier):
        parent = groups[gid].parent
        if gid in sums and parent is not None and parent >= 0:
            sums[parent] = sums.get(parent, 0.0) + sums[gid]
    return sums
