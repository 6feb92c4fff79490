"""View › Colour by: the canvas's colour modes. Each feature adds its modes with a ``heat(view)`` function
(time share, precision, engine layer, calibration plan, ...); the controller holds the mode in force, and this
presenter paints it, falling back to status colours when a mode has nothing to show."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu
from splitscope.engine.view.layout import View
from splitscope.gui.canvas.canvas import GraphCanvas
from splitscope.gui.canvas.render import Heat
from splitscope.profiler.controller import AppController

HeatSource = Callable[[View], "Heat | None"]


class ColourModes(QObject):
    """The modes, their menu entries and the painting of the one in force."""

    def __init__(self, controller: AppController, canvas: GraphCanvas, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.controller, self.canvas = controller, canvas
        self.menu = QMenu("Colour &by")
        self.group = QActionGroup(self)
        self.actions: dict[str, QAction] = {}
        self.sources: dict[str, HeatSource] = {}
        self.add("status", "&Status", None)
        self.actions["status"].setChecked(True)
        controller.colour_mode_changed.connect(self._paint)
        controller.model_ready.connect(lambda *_: self._paint(controller.results.colour_mode))  # the model's own
        # A body on screen has its own node numbers: the main graph's heat maps (time, precision) do not apply.
        controller.session.body_changed.connect(
            lambda crumbs: self._paint("status" if crumbs else controller.results.colour_mode)
        )

    def add(self, key: str, text: str, heat: HeatSource | None) -> QAction:
        """A View › Colour by entry; ``heat(view) -> Heat | None`` colours the canvas for it."""
        act = QAction(text, self, checkable=True)
        act.triggered.connect(lambda _=False, k=key: self.controller.set_colour_mode(k))
        self.group.addAction(act)
        self.menu.addAction(act)
        self.actions[key] = act
        if heat is not None:
            self.sources[key] = heat
        return act

    def is_on(self, key: str) -> bool:
        """Whether the canvas shows this mode now."""
        return self.controller.colour_mode == key

    def _paint(self, mode: str) -> None:
        view = self.controller.view
        source = self.sources.get(mode)
        in_body = view is not None and bool(view.crumbs)  # its node numbers are not the main graph's
        heat = source(view) if view is not None and source is not None and not in_body else None
        if heat is None:
            mode = "status"
        self.controller.note_colour_mode(mode)
        if mode in self.actions:
            self.actions[mode].setChecked(True)
        self.canvas.set_heat(heat)
