"""A graph's weights in columns (:class:`Initializers`) and :class:`Initializer`, the view of one: shape and size
only; the data stays on disk until a job needs it. A model of 100k weights was 100k objects; here, six lists."""

from __future__ import annotations

from array import array

from splitscope.engine.model.coded import Coded
from splitscope.engine.model.names import Names
from splitscope.engine.model.table import NamedRows, RowView


class Initializers(NamedRows["Initializer"]):
    """Every weight of one graph by name: dtype, dims, bytes and whether the bytes live in an external file."""

    __slots__ = ("dims", "dtype", "external", "names", "nbytes")

    def __init__(self) -> None:
        self.names = Names()
        self.dtype: Coded[str] = Coded()
        self.dims: Coded[tuple[int, ...]] = Coded()
        self.nbytes = array("q")
        self.external = bytearray()

    def add(self, name: str, dtype: str, dims: tuple[int, ...], nbytes: int, external: bool = False) -> None:
        """Record the weight ``name`` (again: the last record stands)."""
        i = self.names.get(name)
        if i is None:
            self.names.append(name)
            self.dtype.append(dtype)
            self.dims.append(dims)
            self.nbytes.append(nbytes)
            self.external.append(external)
        else:
            self.dtype[i], self.dims[i], self.nbytes[i], self.external[i] = dtype, dims, nbytes, external


class Initializer(RowView):
    """A weight: shape and size only (a view of one row of its graph's :class:`Initializers`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Initializer({self.name!r}, {self.dtype}, {self.dims})"

    @property
    def name(self) -> str:
        return self._t.names[self._i]

    @property
    def dtype(self) -> str:
        return self._t.dtype[self._i]

    @property
    def dims(self) -> tuple[int, ...]:
        return self._t.dims[self._i]

    @property
    def nbytes(self) -> int:
        return self._t.nbytes[self._i]

    @property
    def external(self) -> bool:
        """Whether its bytes live in an external data file."""
        return bool(self._t.external[self._i])


Initializers.view = Initializer
