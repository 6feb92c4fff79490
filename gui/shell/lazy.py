"""A dock whose panel is built when it is first needed: when the dock is first shown, or when a feature asks for
the panel (a job of its kind began). A panel of plots costs tens of milliseconds to build; the window's tabs of
them would otherwise all be built before the window first shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from PySide6.QtWidgets import QVBoxLayout, QWidget

if TYPE_CHECKING:
    from splitscope.gui.shell.host import Shell

P = TypeVar("P", bound=QWidget)


class LazyPanel(Generic[P]):
    """``shell.add_dock(title, ...)`` with a holder; :meth:`get` builds the panel (once) and calls ``wire`` on it."""

    def __init__(self, shell: Shell, title: str, factory: Callable[[], P], wire: Callable[[P], None]) -> None:
        self.factory, self.wire = factory, wire
        self.widget: P | None = None
        self.holder = QWidget()
        self.holder.setObjectName(f"lazy_{title.lower().replace(' ', '_')}")
        lay = QVBoxLayout(self.holder)
        lay.setContentsMargins(0, 0, 0, 0)
        self.dock = shell.add_dock(title, self.holder)
        self.dock.visibilityChanged.connect(lambda visible: self.get() if visible else None)

    @property
    def built(self) -> bool:
        return self.widget is not None

    def get(self) -> P:
        if self.widget is None:
            self.widget = self.factory()
            self.holder.layout().addWidget(self.widget)
            self.wire(self.widget)
        return self.widget
