"""What a feature of the window may ask of the shell: the :class:`Shell` protocol.

The feature modules (profile, calibrate, engine, show) are built with the application controller and a
shell; they never import the main window. The controller owns the state and the jobs; the shell owns the
widgets every feature shares (the canvas, the inspector, the docks, menus, status bar and colour modes).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from PySide6.QtGui import QAction, QScreen
    from PySide6.QtWidgets import QDockWidget, QWidget
    from splitscope.gui.canvas.canvas import GraphCanvas
    from splitscope.gui.canvas.panels import Inspector
    from splitscope.gui.shell.colours import ColourModes
    from splitscope.profiler.controller import AppController


class Shell(Protocol):
    """The main window, as its features see it."""

    controller: AppController
    canvas: GraphCanvas
    inspector: Inspector
    colours: ColourModes
    dep_status: dict[str, Any]

    def add_dock(
        self, title: str, widget: QWidget, *, tab_with_ops: bool = True, height: int | None = None
    ) -> QDockWidget:
        """A bottom dock, tabbed with the Ops panel (the canvas keeps its size)."""
        ...

    def add_action(
        self, menu: Any, text: str, slot: Callable[..., Any], shortcut: Any = None, checkable: bool = False
    ) -> QAction:
        """An action of ``menu`` (the window's shortcuts work wherever the focus is)."""
        ...

    def show_message(self, text: str, ms: int = 0) -> None:
        """A status-bar message."""
        ...

    def show_failure(self, message: str, details: str = "") -> None:
        """The one presenter of errors: status bar, a dialog with the details, the log file."""
        ...

    def open_model(self, path: Path) -> None:
        """Analyse and show a model."""
        ...

    def highlight(self, nodes: list[int]) -> None:
        """Highlight nodes and step through them with Find Next/Previous."""
        ...

    def window(self) -> QWidget:
        """The top-level widget: the parent of dialogs."""
        ...

    def screen(self) -> QScreen:
        """The screen the window is on."""
        ...
