"""A column of few distinct values kept as codes: :class:`Coded`.

A graph's op types, domains, verdict texts, attributes, dtypes and shapes take few distinct values however many
nodes or tensors there are. Kept as Python lists, each is a million references at a million nodes, and every full
collection of the garbage collector walks each of them (about 8 ns a reference: 20 ms at 200k nodes, 100 ms at a
million, on whichever thread it falls, the window's too). Here each row is a 4-byte code into a table of the
distinct values: the collector sees one small list, and the column takes half the memory.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, MutableSequence
from typing import Any, Generic, TypeVar, overload

import numpy as np

T = TypeVar("T")
_STEP = 1 << 18
"""Rows recoded per step when a coded column is appended to another."""
_NO_BLANK: Any = object()


class Coded(MutableSequence[T], Generic[T]):
    """A list of values kept as ``codes`` (``array('I')``) into ``values``, the distinct values in the order first
    met. Values are told apart by equality (hashable ones: strings, tuples, None) or, with ``by_identity``, by
    identity (dicts: a node's attributes, shared between nodes and never changed). ``blank``, when given, is code
    0 from the start. Reads as the list it replaces;
    hot loops over every row read :meth:`tolist` once, or :attr:`codes` and :attr:`values` directly."""

    __slots__ = ("_by_identity", "_index", "codes", "values")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, items: Iterable[T] = (), *, by_identity: bool = False, blank: Any = _NO_BLANK) -> None:
        self.codes = array("I")
        """Each row's code: its value is ``values[code]``."""
        self.values: list[T] = []
        """The distinct values, each once."""
        self._index: dict[Any, int] = {}
        self._by_identity = by_identity
        if blank is not _NO_BLANK:  # code 0, before any row: a builder appends a blank row as ``codes.append(0)``
            self.code(blank)
        if items:
            self.extend(items)

    def code(self, value: T) -> int:
        """``value``'s code, added to :attr:`values` if new."""
        key = id(value) if self._by_identity else value
        c = self._index.get(key)
        if c is None:
            c = self._index[key] = len(self.values)
            self.values.append(value)
        return c

    def __len__(self) -> int:
        return len(self.codes)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        try:
            return self.values[self.codes[i]]  # type: ignore[index]
        except TypeError:  # a slice: its codes are an array
            return list(map(self.values.__getitem__, self.codes[i]))  # type: ignore[index]

    @overload
    def __setitem__(self, i: int, value: T) -> None: ...
    @overload
    def __setitem__(self, i: slice, value: Iterable[T]) -> None: ...
    def __setitem__(self, i: int | slice, value: Any) -> None:
        if type(i) is slice:
            self.codes[i] = array("I", map(self.code, value))
            return
        c = self._index.get(id(value) if self._by_identity else value)  # code() inlined: a hot path
        self.codes[i] = self.code(value) if c is None else c

    def __delitem__(self, i: int | slice) -> None:
        del self.codes[i]

    def insert(self, i: int, value: T) -> None:
        self.codes.insert(i, self.code(value))

    def append(self, value: T) -> None:
        c = self._index.get(id(value) if self._by_identity else value)  # code() inlined: a hot path
        self.codes.append(self.code(value) if c is None else c)

    def extend(self, values: Iterable[T]) -> None:
        if isinstance(values, Coded) and values._by_identity == self._by_identity:
            recode = np.fromiter(map(self.code, values.values), np.uint32, count=len(values.values))
            src = np.frombuffer(values.codes, np.uint32) if len(values.codes) else np.zeros(0, np.uint32)
            if values is self:
                src = src.copy()  # a view of the codes would keep them from growing
            for i in range(0, len(src), _STEP):  # a step at a time: one call over a million rows held others 50 ms
                self.codes.frombytes(recode[src[i : i + _STEP]].tobytes())
        else:
            self.codes.extend(array("I", map(self.code, values)))

    @classmethod
    def of_codes(cls, values: list[T], codes: array[int]) -> Coded[T]:
        """A column whose rows are ``codes`` (``array("I")``) into ``values`` (a value given twice reads the same)."""
        return _rebuild(codes, values, False)

    def fill(self, value: T, count: int) -> None:
        """Append ``value`` ``count`` times."""
        self.codes.extend(array("I", [self.code(value)]) * count)

    def __iter__(self) -> Iterator[T]:
        return map(self.values.__getitem__, self.codes)

    def tolist(self) -> list[T]:
        """Every row's value, as a list (one C-level pass)."""
        return list(map(self.values.__getitem__, self.codes))

    def copy(self) -> Coded[T]:
        """A column of the same rows, its own to change."""
        return _rebuild(self.codes, self.values, self._by_identity)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Coded):
            return self.tolist() == other.tolist()
        if isinstance(other, (list, tuple)):
            return self.tolist() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        if len(self) <= 8:
            return f"Coded({self.tolist()!r})"
        return f"Coded(<{len(self)} rows, {len(self.values)} values>)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.codes, self.values, self._by_identity))


def _rebuild(codes: array[int], values: list[Any], by_identity: bool) -> Coded[Any]:
    """A column from its codes and values (pickling and copying: identities are new, so the index is made again)."""
    c: Coded[Any] = Coded(by_identity=by_identity)
    c.values = list(values)
    c._index = {(id(v) if by_identity else v): k for k, v in enumerate(c.values)}
    c.codes = array("I", codes)
    return c
