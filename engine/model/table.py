"""What the graph's tables share: a view of one row (equal by table and row), and rows looked up by name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

if TYPE_CHECKING:
    from splitscope.engine.model.names import Names

V = TypeVar("V", bound="RowView")
_new = object.__new__


class RowView:
    """A view of row ``_i`` of table ``_t``: holds nothing else, made when a row is read."""

    __slots__ = ("_i", "_t")
    _t: Any
    _i: int

    @classmethod
    def of(cls: type[V], table: Any, i: int) -> V:
        """The view of row ``i`` of ``table``."""
        v = _new(cls)
        v._t, v._i = table, i
        return v

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._t is self._t and other._i == self._i  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((id(self._t), self._i))


class NamedRows(Mapping[str, V], Generic[V]):
    """Rows by name, read as the mapping of views they replace; a subclass names its view class in ``view``."""

    __slots__ = ()
    view: ClassVar[type[Any]]
    names: Names

    def __getitem__(self, name: str) -> V:
        v = _new(self.view)
        i = self.names.get(name)
        if i is None:
            raise KeyError(name)
        v._t, v._i = self, i
        return v

    def get(self, name: str, default: Any = None) -> Any:  # a view, or ``default``
        i = self.names.get(name)
        if i is None:
            return default
        v = _new(self.view)
        v._t, v._i = self, i
        return v

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)
