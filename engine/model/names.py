"""A column of names in one string (:class:`Names`), with an index from name to row that is arrays, not a dict.

A 200k-node model held 650k name strings and 400k integers in the dicts that found a tensor's or a weight's row:
a million small objects, most of what it took to free the model. Here a table's names are one string and its offsets,
and the index is an open-addressing table of row numbers keyed by each name's hash: a few objects per table,
whatever its size. Names added since the last :meth:`Names.compact` wait in a list and a dict, so a table being
built (every name looked up as it goes in) runs at a dict's pace."""

from __future__ import annotations

import itertools
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import overload

import numpy as np
from splitscope.engine.heap import drop_in_steps, empty_in_steps

_MIN_TAIL = 4096
"""Names a compacted table lets wait before it folds them in (and at least a quarter of its size)."""


_STEP = 50_000
"""Names folded (and let go of) per step of :meth:`Names.compact`."""

_STALE = -2
"""``Names._mask`` of a table whose index is made at its first use (:meth:`Names.index_later`)."""

_INDEXING: dict[int, threading.Lock] = {}
"""A lock per table (by id) whose index is being made late: a second thread asking for that table waits for it
rather than making it too; a lookup in another table does not wait."""
_INDEXING_GUARD = threading.Lock()


_COLUMN_STEP = 1 << 20
"""Items copied per step from numpy into an array (8 MB of int64: a few milliseconds)."""


def _column(a: np.ndarray) -> array[int]:
    """``a`` (int64) as an ``array('q')``, copied a slice at a time (a 64 MB slot table copied twice in one go held
    the interpreter 180 ms)."""
    out = array("q")
    for i in range(0, len(a), _COLUMN_STEP):
        out.frombytes(np.ascontiguousarray(a[i : i + _COLUMN_STEP]).data.cast("B"))
    return out


class Names:
    """Names in row order, read as a list of strings; with ``indexed``, each name's row too (:meth:`get`, ``in``),
    the names then distinct. Rows are only ever added."""

    __slots__ = (
        "__weakref__",  # a table read back from another process is listed weakly until indexed
        "_base",
        "_base_len",
        "_blob",
        "_compacted",
        "_hash",
        "_mask",
        "_off",
        "_slots",
        "_tail",
        "_tail_rows",
        "indexed",
    )

    def __init__(self, names: Iterable[str] = (), *, indexed: bool = True) -> None:
        self.indexed = indexed
        self._blob = ""
        self._off = array("q", [0])
        self._hash = array("q")
        self._slots = array("q")
        self._mask = -1  # no slots yet
        self._tail: list[str] = []
        self._tail_rows: dict[str, int] = {}
        self._compacted = False
        self._base: Names | None = None  # the table this one was copied from, and its length then
        self._base_len = 0
        for name in names:
            self.add(name) if indexed else self.append(name)

    # reading
    def __len__(self) -> int:
        return len(self._off) - 1 + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        o = self._off
        nc = len(o) - 1
        if 0 <= i < nc:
            return self._blob[o[i] : o[i + 1]]
        if i < 0:
            i += len(self)
            if 0 <= i < nc:
                return self._blob[o[i] : o[i + 1]]
        return self._tail[i - nc]  # IndexError past the end

    def __iter__(self) -> Iterator[str]:
        b, o = self._blob, self._off
        for k in range(len(o) - 1):
            yield b[o[k] : o[k + 1]]
        yield from self._tail

    def pick(self, rows: Iterable[int]) -> list[str]:
        """The names of ``rows`` ('' for a negative row: an omitted optional input)."""
        if self._tail:
            return [self[r] if r >= 0 else "" for r in rows]
        b, o = self._blob, self._off
        return [b[o[r] : o[r + 1]] if r >= 0 else "" for r in rows]

    def extends(self, other: Names) -> bool:
        """Whether every row of ``other`` is the same row here: ``other`` itself, or a table this one was copied
        from (:meth:`copy`) that has not grown since."""
        t: Names | None = self
        while t is not None:
            if t is other:
                return True
            base = t._base
            if base is None or len(base) != t._base_len:
                return False
            t = base
        return False

    def get(self, name: str, default: int | None = None) -> int | None:
        """The row of ``name``, ``default`` for none (an indexed table)."""
        if self._tail_rows:
            r = self._tail_rows.get(name)
            if r is not None:
                return r
        m = self._mask
        if m < 0:
            if m == _STALE:
                self.ensure_index()
                m = self._mask
            if m < 0:
                return default
        h = hash(name)
        s, hs, o, b = self._slots, self._hash, self._off, self._blob
        k = h & m
        while True:
            r = s[k] - 1
            if r < 0:
                return default
            if hs[r] == h and b[o[r] : o[r + 1]] == name:
                return r
            k = (k + 1) & m

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    # adding
    def append(self, name: str) -> int:
        """Add ``name`` as a new row (an unindexed table: names may repeat); returns its row."""
        if self._mask == _STALE:
            self.ensure_index()
        tail = self._tail
        tail.append(name)
        r = len(self._off) - 2 + len(tail)
        if self.indexed:
            self._tail_rows[name] = r
        if self._compacted and len(tail) >= max(_MIN_TAIL, len(self._off) >> 2):
            self.compact()
        return r

    def add(self, name: str) -> int:
        """The row of ``name``, added if it has none (an indexed table)."""
        r = self.get(name)
        return self.append(name) if r is None else r

    def add_many(self, names: Iterable[str]) -> list[int]:
        """:meth:`add` each of ``names`` ('' gives -1: an omitted input), in one pass: a million nodes' inputs and
        outputs in a fraction of a second (an indexed table)."""
        if self._mask == _STALE:
            self.ensure_index()
        if self._mask >= 0 or not self.indexed:  # a compacted index to consult: one by one
            return [self.add(s) if s else -1 for s in names]
        rows, tail = self._tail_rows, self._tail
        base, before = len(self._off) - 1, len(rows)
        put = rows.setdefault  # a new name takes the next row: the dict's size, read before it grows
        out = [put(s, base + len(rows)) if s else -1 for s in names]
        tail.extend(itertools.islice(rows, before, None))  # the new names, in the order they came
        return out

    def extend_distinct(self, names: list[str]) -> None:
        """Add ``names``, distinct and none of them here yet, and fold them in at once (:meth:`compact`, which lets
        go of the list given): a fresh table of a million names without a dict of them first (an indexed table)."""
        if not self.indexed or self._tail:
            raise ValueError("extend_distinct fills an indexed table with nothing waiting")
        self._tail = names
        self.compact()

    def extend(self, names: Iterable[str]) -> None:
        """Append each of ``names`` (an unindexed table: an indexed one adds them one by one)."""
        if self.indexed:
            for name in names:
                self.add(name)
            return
        self._tail.extend(names)
        if self._compacted and len(self._tail) >= max(_MIN_TAIL, len(self._off) >> 2):
            self.compact()

    def compact(self) -> None:
        """Fold the names waiting in the list into the one string (and the index): done once a table is built, and
        then whenever enough have been added since."""
        if self._mask == _STALE:
            self.ensure_index()
        self._compacted = True
        tail, rows = self._tail, self._tail_rows
        if not tail:
            return
        nc = len(self._off) - 1
        # A slice at a time, and the names let go of a slice at a time: each step is one call that holds the
        # interpreter, and a tensor table of a 200k-node model is 400k names (other threads, the window's among
        # them, get their turn between steps).
        parts = [self._blob]
        for i in range(0, len(tail), _STEP):
            chunk = tail[i : i + _STEP]
            end = self._off[-1]
            lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
            self._off.frombytes((np.cumsum(lengths) + end).tobytes())
            parts.append("".join(chunk))
            if self.indexed:
                self._hash.frombytes(np.fromiter(map(hash, chunk), dtype=np.int64, count=len(chunk)).tobytes())
        self._blob = "".join(parts)
        if self.indexed:
            self._build_slots(nc + len(tail))
        self._tail, self._tail_rows = [], {}
        empty_in_steps(rows, step=_STEP)  # its keys are the tail's names: references only, but 400k of them
        drop_in_steps(tail, step=_STEP)

    def index_later(self) -> None:
        """Let go of the index and make it again at the table's first lookup or addition (:meth:`ensure_index`): a
        table pickled in one process finds nothing in another until then (a string's hash is the process's own),
        and a table only read by row never needs it."""
        if self.indexed:
            self._hash, self._slots, self._mask = array("q"), array("q"), _STALE

    def ensure_index(self) -> None:
        """Make the index now if it was left for later (:meth:`index_later`), a slice at a time; another thread
        asking meanwhile waits for it."""
        if self._mask != _STALE:
            return
        with _INDEXING_GUARD:
            lock = _INDEXING.setdefault(id(self), threading.Lock())
        try:
            with lock:
                self._index_now()
        finally:
            with _INDEXING_GUARD:
                _INDEXING.pop(id(self), None)

    def _index_now(self) -> None:
        if self._mask == _STALE:  # not made while this thread waited
            n = len(self._off) - 1
            b, o = self._blob, self._off
            self._hash = array("q")
            for i in range(0, n, _STEP):
                j = min(i + _STEP, n)
                names = (b[o[k] : o[k + 1]] for k in range(i, j))
                self._hash.frombytes(np.fromiter(map(hash, names), dtype=np.int64, count=j - i).tobytes())
            if n:
                self._build_slots(n)  # the mask last: a reader sees the index whole or asks here
            else:
                self._mask = -1

    def _build_slots(self, n: int) -> None:
        """The open-addressing table: at most half full; each row at its hash's slot or the next free one after."""
        size = 1 << max(4, (2 * n - 1).bit_length())
        mask = size - 1
        h = np.frombuffer(self._hash, dtype=np.int64)
        slots = np.zeros(size, dtype=np.int64)
        pending = np.arange(n, dtype=np.int64)
        pos = h & mask
        while pending.size:  # each round, every free slot asked for takes one of its askers; the rest step on
            free = np.flatnonzero(slots[pos] == 0)
            at, row = pos[free], pending[free] + 1
            slots[at] = row  # of several rows at one slot, one is written (which does not matter: each is found)
            left = np.ones(pending.size, dtype=bool)
            left[free[slots[at] == row]] = False
            pending, pos = pending[left], (pos[left] + 1) & mask
        self._slots = _column(slots)
        self._mask = mask

    def copy(self) -> Names:
        """A table of the same names, its own to add to."""
        self.ensure_index()
        c = Names(indexed=self.indexed)
        c._blob, c._off, c._hash = self._blob, array("q", self._off), array("q", self._hash)
        c._slots, c._mask, c._compacted = array("q", self._slots), self._mask, self._compacted
        c._tail, c._tail_rows = list(self._tail), dict(self._tail_rows)
        c._base, c._base_len = self, len(self)
        return c


class RowsByName(Mapping[str, int]):
    """An indexed :class:`Names` read as the mapping from name to row it replaces."""

    __slots__ = ("_names", "get")

    def __init__(self, names: Names) -> None:
        self._names = names
        self.get = names.get  # type: ignore[method-assign]

    def __getitem__(self, name: str) -> int:
        r = self._names.get(name)
        if r is None:
            raise KeyError(name)
        return r

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
