"""Each node's module scope as an id into a tree of the distinct scopes (:class:`Scopes`).

A 200k-node export held 72k distinct scope tuples and 60k step strings, once a node's tuple was shared with the
others of its layer: after the names went into tables, most of what was left to free. Here a scope is a row of two
arrays (its parent scope and its last step), the steps one :class:`Names` table, and a node's tuple is made when it
is read."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from splitscope.engine.heap import empty_in_steps
from splitscope.engine.model.names import Names

Scope = tuple[str, ...]
ROOT = -1
"""The id of the empty scope (a node exported without one)."""


class Scopes(Sequence[Scope]):
    """The nodes' scopes in order, read as the list of tuples it replaces: ``ids`` one per node, each a row of
    ``parent`` and ``step`` (a row of ``steps``), parents before their children."""

    __slots__ = ("_by_scope", "_by_step", "ids", "parent", "step", "steps")

    def __init__(self) -> None:
        self.ids = array("i")
        self.parent = array("i")
        self.step = array("i")
        self.steps = Names()
        self._by_scope: dict[Scope, int] | None = {(): ROOT}  # while built: a node's scope is one of few
        self._by_step: dict[tuple[int, str], int] | None = {}

    def id_of(self, scope: Scope) -> int:
        """The id of ``scope``, added (with its ancestors) if new."""
        by_scope, by_step = self._by_scope, self._by_step
        if by_scope is None or by_step is None:
            by_scope, by_step = self._reindex()
        k = by_scope.get(scope)
        if k is not None:
            return k
        parent = by_scope.get(scope[:-1]) if scope else None
        if parent is not None:  # most often: a scope one step below one seen before
            k = by_step.get((parent, scope[-1]))
            if k is None:
                k = by_step[(parent, scope[-1])] = len(self.parent)
                self.parent.append(parent)
                self.step.append(self.steps.add(scope[-1]))
            by_scope[scope] = k
            return k
        k = ROOT
        for s in scope:  # a step at a time: a deep scope's prefixes are never made as tuples
            nxt = by_step.get((k, s))
            if nxt is None:
                nxt = by_step[(k, s)] = len(self.parent)
                self.parent.append(k)
                self.step.append(self.steps.add(s))
            k = nxt
        by_scope[scope] = k
        return k

    def child(self, parent: int, step: str) -> int:
        """The id of the scope one ``step`` below scope ``parent``, added if new."""
        by_step = self._by_step
        if by_step is None:
            _, by_step = self._reindex()
        k = by_step.get((parent, step))
        if k is None:
            k = by_step[(parent, step)] = len(self.parent)
            self.parent.append(parent)
            self.step.append(self.steps.add(step))
        return k

    def _reindex(self) -> tuple[dict[Scope, int], dict[tuple[int, str], int]]:
        """The lookups :meth:`compact` dropped, made again (a scope added after the table was built)."""
        names, step = self.steps, self.step
        self._by_scope = {(): ROOT}
        self._by_step = {(p, names[step[k]]): k for k, p in enumerate(self.parent)}
        return self._by_scope, self._by_step

    def append(self, scope: Scope) -> None:
        self.ids.append(self.id_of(scope))

    def extend(self, scopes: Iterable[Scope]) -> None:
        """Append each of ``scopes``: a tuple seen before in this call is looked up by its identity (the nodes of a
        layer share one tuple), not hashed again."""
        id_of, ids = self.id_of, self.ids
        seen: dict[int, tuple[Scope, int]] = {}  # the tuple kept too: its id is never another's meanwhile
        for s in scopes:
            hit = seen.get(id(s))
            if hit is None or hit[0] is not s:
                hit = seen[id(s)] = (s, id_of(s))
            ids.append(hit[1])

    def compact(self) -> None:
        """Drop the lookups used while the nodes were added (once they are all in)."""
        by_step, by_scope = self._by_step, self._by_scope
        self._by_scope = self._by_step = None
        for lookup in (by_step, by_scope):
            if lookup:
                empty_in_steps(lookup)
        self.steps.compact()

    def table(self) -> list[Scope]:
        """Every distinct scope's tuple, by id (one pass: a parent comes before its children)."""
        names = list(self.steps)
        out: list[Scope] = []
        for p, s in zip(self.parent, self.step, strict=True):
            out.append((*out[p], names[s]) if p >= 0 else (names[s],))
        return out

    def scope(self, k: int) -> Scope:
        """The tuple of scope ``k``."""
        steps: list[str] = []
        parent, step, names = self.parent, self.step, self.steps
        while k >= 0:
            steps.append(names[step[k]])
            k = parent[k]
        steps.reverse()
        return tuple(steps)

    def all(self) -> list[Scope]:
        """Every node's scope in order, equal scopes one tuple."""
        table = self.table()
        table.append(())  # ROOT, read as table[-1]
        return [table[k] for k in self.ids]

    @overload
    def __getitem__(self, i: int) -> Scope: ...
    @overload
    def __getitem__(self, i: slice) -> list[Scope]: ...
    def __getitem__(self, i: int | slice) -> Scope | list[Scope]:
        if isinstance(i, slice):
            return [self.scope(k) for k in self.ids[i]]
        return self.scope(self.ids[i])

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[Scope]:
        return iter(self.all())
