"""A graph's tensors in columns (:class:`Tensors`), :class:`Tensor` the view of one, and the sizes of the element
types."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from splitscope.engine.dims.expr import eval_dim
from splitscope.engine.model.coded import Coded
from splitscope.engine.model.names import Names, RowsByName
from splitscope.engine.model.rows import Rows
from splitscope.engine.model.table import NamedRows, RowView

Dim = int | str | None
"""One dimension: a number, a symbolic name, or None when unknown."""

# Bytes per element; sub-byte types count as fractions.
DTYPE_SIZES: dict[str, float] = {
    "FLOAT": 4,
    "UINT8": 1,
    "INT8": 1,
    "UINT16": 2,
    "INT16": 2,
    "INT32": 4,
    "INT64": 8,
    "STRING": 0,
    "BOOL": 1,
    "FLOAT16": 2,
    "DOUBLE": 8,
    "UINT32": 4,
    "UINT64": 8,
    "COMPLEX64": 8,
    "COMPLEX128": 16,
    "BFLOAT16": 2,
    "FLOAT8E4M3FN": 1,
    "FLOAT8E4M3FNUZ": 1,
    "FLOAT8E5M2": 1,
    "FLOAT8E5M2FNUZ": 1,
    "UINT4": 0.5,
    "INT4": 0.5,
    "FLOAT4E2M1": 0.5,
    "FLOAT8E8M0": 1,
    "UINT2": 0.25,
    "INT2": 0.25,
}


def size_in_bytes(numel: int, dtype: str | None) -> int:
    """Bytes of ``numel`` elements of ``dtype`` (sub-byte types packed, rounded up), in integers only:
    element counts from damaged or symbolic shapes can exceed what a float holds."""
    quarter_bytes = int(DTYPE_SIZES.get(dtype or "", 4) * 4)
    return -(-numel * quarter_bytes // 4)


def _numel(at: tuple[int, ...] | None, shape: tuple[Dim, ...] | None, dims: dict[str, int]) -> int | None:
    """Element count from a concrete shape, else a symbolic one at ``dims`` (see :meth:`Tensor.numel`)."""
    if at is not None:
        return math.prod(at)
    if shape is None:
        return None
    n = 1
    for d in shape:
        if isinstance(d, int):
            if d < 0:
                return None
            n *= d
        elif isinstance(d, str):
            v = eval_dim(d, dims)
            if v is None:
                return None
            n *= v
        else:
            return None
    return n


def _resolved(
    at: tuple[int, ...] | None, shape: tuple[Dim, ...] | None, dims: dict[str, int]
) -> tuple[int, ...] | None:
    """A concrete shape, else a symbolic one at ``dims`` (see :meth:`Tensor.resolved`)."""
    if at is not None:
        return at
    if shape is None:
        return None
    out = []
    for d in shape:
        v = d if isinstance(d, int) and d >= 0 else eval_dim(d, dims) if isinstance(d, str) else None
        if v is None:
            return None
        out.append(v)
    return tuple(out)


_INPUT, _OUTPUT, _INITIALIZER = 1, 2, 4
INPUT_FLAG, OUTPUT_FLAG, INITIALIZER_FLAG = _INPUT, _OUTPUT, _INITIALIZER
"""The bits of :attr:`Tensors.flags`: a graph input, a graph output, a weight."""
_new = object.__new__
_V = TypeVar("_V")


def sharing() -> Callable[[_V], _V]:
    """A function giving one object per distinct (hashable) value it is given: equal shapes read from a file are
    each a new tuple, and a 200k-node model held hundreds of thousands of copies, each a block to free."""
    seen: dict[Any, Any] = {}

    def share(value: _V) -> _V:
        return seen.setdefault(value, value)  # type: ignore[no-any-return]

    return share


class Tensors(NamedRows["Tensor"]):
    """Every tensor of one graph by name, in columns: names, dtypes and shapes one list each, producers one
    ``array('i')``, the flags one ``bytearray``, consumers compressed rows (:class:`Rows`) once :meth:`freeze` has
    run. Read as the mapping of :class:`Tensor` it replaces; each :class:`Tensor` it gives is a view of one row."""

    __slots__ = ("_pairs", "at", "consumers", "dtype", "flags", "names", "producer", "shape")

    def __init__(self) -> None:
        self.names = Names()
        """Each row's name (one string for the table once :meth:`freeze` has run), and the row of each name."""
        self.dtype: Coded[str | None] = Coded(blank=None)
        self.shape: Coded[tuple[Dim, ...] | None] = Coded(blank=None)
        self.at: Coded[tuple[int, ...] | None] = Coded(blank=None)
        """Dtypes and shapes, symbolic and at the dims in force, take few distinct values: kept as codes."""
        self.producer = array("i")
        """The producing node's index, -1 for none."""
        self.flags = bytearray()
        self.consumers = Rows(array("i", [0]), array("i"))
        self._pairs: tuple[array[int], array[int]] | None = (array("i"), array("i"))  # (tensor, node) while built

    def add(self, name: str) -> int:
        """The row of ``name``, made (untyped, unused) if it has none."""
        i = self.names.get(name)
        if i is None:
            i = self.names.append(name)
            self.dtype.codes.append(0)  # None, each column's blank code 0
            self.shape.codes.append(0)
            self.at.codes.append(0)
            self.producer.append(-1)
            self.flags.append(0)
            if self._pairs is None:  # frozen: the new row reads as used by no node
                self.consumers.offsets.append(self.consumers.offsets[-1])
        return i

    def add_many(self, names: Sequence[str]) -> list[int]:
        """:meth:`add` each of ``names`` ('' gives -1), the new rows' columns extended at once."""
        before = len(self.names)
        rows = self.names.add_many(names)
        self._grow(len(self.names) - before)
        return rows

    def add_distinct(self, names: list[str]) -> None:
        """Add rows for ``names``, distinct and new to the table (:meth:`Names.extend_distinct`: the list is let go
        of), their columns extended at once."""
        new = len(names)
        self.names.extend_distinct(names)
        self._grow(new)

    def _grow(self, new: int) -> None:
        """Extend every column but the names by ``new`` blank rows."""
        if not new:
            return
        self.dtype.fill(None, new)
        self.shape.fill(None, new)
        self.at.fill(None, new)
        self.producer.extend(array("i", [-1]) * new)
        self.flags.extend(bytes(new))
        if self._pairs is None:  # frozen: the new rows read as used by no node
            self.consumers.offsets.extend(array("i", [self.consumers.offsets[-1]]) * new)

    def copy(self) -> Tensors:
        """A table of the same rows, its own to change."""
        c = Tensors()
        c.names, c.dtype, c.shape, c.at = self.names.copy(), self.dtype.copy(), self.shape.copy(), self.at.copy()
        c.producer, c.flags = array("i", self.producer), bytearray(self.flags)
        c.consumers = Rows(array("i", self.consumers.offsets), array("i", self.consumers.targets))
        c._pairs = None if self._pairs is None else (array("i", self._pairs[0]), array("i", self._pairs[1]))
        return c

    def tensor(self, name: str) -> Tensor:
        """The tensor ``name``, made if there is none."""
        return Tensor.of(self, self.add(name))

    def add_consumer(self, name: str, node: int) -> None:
        """``node`` reads ``name`` (while the graph is built, before :meth:`freeze`)."""
        assert self._pairs is not None, "the tensors are frozen"
        self._pairs[0].append(self.add(name))
        self._pairs[1].append(node)

    def freeze(self, rows: array[int] | None = None, nodes: array[int] | None = None) -> None:
        """Put the consumers added into rows (each tensor's in the order added); ``rows`` and ``nodes``: more
        (tensor row, node) pairs, collected by the caller."""
        self.names.compact()
        if self._pairs is None:
            return
        t, n = self._pairs
        if rows is not None and nodes is not None:
            t.extend(rows)
            n.extend(nodes)
        count = len(self.names)
        tt = np.frombuffer(t, dtype=np.int32) if t else np.zeros(0, np.int32)
        offsets = np.zeros(count + 1, dtype=np.int32)
        np.cumsum(np.bincount(tt, minlength=count), out=offsets[1:])
        by = np.argsort(tt, kind="stable")
        readers = np.frombuffer(n, dtype=np.int32)[by] if n else np.zeros(0, np.int32)
        self.consumers = Rows(array("i", offsets.tobytes()), array("i", readers.astype(np.int32).tobytes()))
        self._pairs = None

    def sizes(self, dims: dict[str, int] | None = None) -> list[int | None]:
        """Every row's bytes at the dims in force (None where unknown), in one pass."""
        dims = dims or {}
        return [
            None if dt is None or (n := _numel(at, shape, dims)) is None else size_in_bytes(n, dt)
            for dt, at, shape in zip(self.dtype, self.at, self.shape, strict=True)
        ]

    def is_initializer_row(self, r: int) -> bool:
        """Whether row ``r`` is a weight."""
        return bool(self.flags[r] & _INITIALIZER)

    def is_output_row(self, r: int) -> bool:
        """Whether row ``r`` is a graph output."""
        return bool(self.flags[r] & _OUTPUT)

    def is_input_row(self, r: int) -> bool:
        """Whether row ``r`` is a graph input."""
        return bool(self.flags[r] & _INPUT)

    def numel_of(self, name: str, dims: dict[str, int]) -> int | None:
        """:meth:`Tensor.numel` of ``name`` (None for no such tensor), without a view."""
        r = self.names.get(name)
        return None if r is None else _numel(self.at[r], self.shape[r], dims)

    def resolved_of(self, name: str, dims: dict[str, int]) -> tuple[int, ...] | None:
        """:meth:`Tensor.resolved` of ``name`` (None for no such tensor), without a view."""
        r = self.names.get(name)
        return None if r is None else _resolved(self.at[r], self.shape[r], dims)

    def row_of(self, name: str) -> int | None:
        """The row of ``name``, None for none."""
        return self.names.get(name)

    @property
    def rows(self) -> Mapping[str, int]:
        """Each name's row (read it: ``rows.get`` is the fast :meth:`row_of` of a loop over every node)."""
        return RowsByName(self.names)

    def producer_of(self, name: str) -> int | None:
        """The node that makes ``name``, None for none (or no such tensor)."""
        i = self.names.get(name)
        if i is None:
            return None
        p = self.producer[i]
        return None if p < 0 else p


class Tensor(RowView):
    """A value in a graph: its type, shape and who makes and uses it; a view of one row of its graph's
    :class:`Tensors` (``Tensor(name, ...)`` alone makes a table of one)."""

    __slots__ = ()

    def __init__(
        self,
        name: str,
        dtype: str | None = None,
        shape: tuple[Dim, ...] | None = None,
        producer: int | None = None,
        consumers: Sequence[int] = (),
        is_input: bool = False,
        is_output: bool = False,
        is_initializer: bool = False,
        at: tuple[int, ...] | None = None,
    ) -> None:
        t = Tensors()
        self._t, self._i = t, t.add(name)
        self.dtype, self.shape, self.producer, self.at = dtype, shape, producer, at
        self.is_input, self.is_output, self.is_initializer = is_input, is_output, is_initializer
        t.consumers, t._pairs = Rows(array("i", [0, len(consumers)]), array("i", consumers)), None

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.dtype}, {self.shape})"

    @property
    def name(self) -> str:
        return self._t.names[self._i]

    @property
    def dtype(self) -> str | None:
        return self._t.dtype[self._i]

    @dtype.setter
    def dtype(self, value: str | None) -> None:
        self._t.dtype[self._i] = value

    @property
    def shape(self) -> tuple[Dim, ...] | None:
        return self._t.shape[self._i]

    @shape.setter
    def shape(self, value: tuple[Dim, ...] | None) -> None:
        self._t.shape[self._i] = value

    @property
    def at(self) -> tuple[int, ...] | None:
        """The concrete shape at the dims in force (:mod:`splitscope.engine.onnxio.concrete`), where inference at
        those values could type it; None otherwise."""
        return self._t.at[self._i]

    @at.setter
    def at(self, value: tuple[int, ...] | None) -> None:
        self._t.at[self._i] = value

    @property
    def producer(self) -> int | None:
        p = self._t.producer[self._i]
        return None if p < 0 else p

    @producer.setter
    def producer(self, value: int | None) -> None:
        self._t.producer[self._i] = -1 if value is None else value

    @property
    def consumers(self) -> Sequence[int]:
        """The nodes that read it, in node order (once the graph is built)."""
        return self._t.consumers[self._i]

    def _flag(self, bit: int) -> bool:
        return bool(self._t.flags[self._i] & bit)

    def _set(self, bit: int, on: bool) -> None:
        f = self._t.flags
        f[self._i] = f[self._i] | bit if on else f[self._i] & ~bit

    @property
    def is_input(self) -> bool:
        return self._flag(_INPUT)

    @is_input.setter
    def is_input(self, on: bool) -> None:
        self._set(_INPUT, on)

    @property
    def is_output(self) -> bool:
        return self._flag(_OUTPUT)

    @is_output.setter
    def is_output(self, on: bool) -> None:
        self._set(_OUTPUT, on)

    @property
    def is_initializer(self) -> bool:
        return self._flag(_INITIALIZER)

    @is_initializer.setter
    def is_initializer(self, on: bool) -> None:
        self._set(_INITIALIZER, on)

    def numel(self, dims: dict[str, int] | None = None) -> int | None:
        """Element count at the dims in force: the concrete shape where known, else the symbolic shape with each
        dim looked up in ``dims`` (or, for an exporter's expression, evaluated there).

        Returns None when the shape is unknown or a dim has no value: a dim without a value is never taken as 1.
        """
        t, i = self._t, self._i
        return _numel(t.at[i], t.shape[i], dims or {})

    def resolved(self, dims: dict[str, int] | None = None) -> tuple[int, ...] | None:
        """The shape at the dims in force (see :meth:`numel`), None when a dim is unknown."""
        t, i = self._t, self._i
        return _resolved(t.at[i], t.shape[i], dims or {})

    def nbytes(self, dims: dict[str, int] | None = None) -> int | None:
        """Size in bytes (see :meth:`numel`), None when unknown."""
        t, i = self._t, self._i
        dtype = t.dtype[i]
        n = _numel(t.at[i], t.shape[i], dims or {}) if dtype is not None else None
        return None if n is None or dtype is None else size_in_bytes(n, dtype)

    @property
    def symbolic(self) -> bool:
        """Whether the shape has symbolic or unknown dimensions."""
        return self.shape is None or any(not isinstance(d, int) for d in self.shape)


Tensors.view = Tensor
