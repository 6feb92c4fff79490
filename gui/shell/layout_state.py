"""The window's saved layout (geometry and docks): restored only when it is this version's, and never so that the
canvas is left too small to read. A layout saved on a bigger screen (docks 900 px wide restored into an 850 px
window) once left the canvas 320 px wide and the next model's first view without labels. View › Reset Layout
brings the first-start layout back."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QMainWindow

STATE_VERSION = 2
"""Bumped when the docks change: a layout saved by another version is not restored."""
CANVAS_SHARE = 0.5
"""The canvas keeps at least this share of the window's width and height (and 480 x 320 px)."""
PLOT_MIN_HEIGHT = 160
"""No panel's plot is drawn shorter: its axis labels overlap below this (a short dock scrolls or lays out side by
side instead)."""
SCREEN_SHARE = 0.85
"""The first start's window: this share of the available screen's width and height, centred on it; on a screen
narrower than ``MAXIMISE_BELOW`` the window is maximised instead (85% of 1366x768 leaves too little for the canvas)."""
MAXIMISE_BELOW = 1600
RIGHT_SHARE, BOTTOM_SHARE = 0.3, 0.36
"""The first start's docks: the right-hand ones this share of the window's width, the bottom ones of its height
(with at least 300 px and 270 px: a bottom panel's plots 160 px tall under its title and tabs)."""
_SIDES = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea)
_ENDS = (Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea)


def restore(w: QMainWindow) -> bytes:
    """Restore the saved geometry and docks (this version's only); returns the first-start layout, for Reset."""
    default = bytes(w.saveState(STATE_VERSION).data())
    s = QSettings()
    geometry = s.value("main/geometry")
    if geometry is None or not w.restoreGeometry(geometry) or not fits_a_screen(w.geometry()):
        _default_size(w)  # the first start, or a geometry saved on a screen not here now
    state = s.value("main/state")
    if state is None or not w.restoreState(state, STATE_VERSION):
        w.restoreState(default, STATE_VERSION)  # the first start, or another version's docks
        w.setProperty(_SIZE_DOCKS, True)  # once shown: sizes given before the window is laid out do not hold
    return default


_SIZE_DOCKS = "splitscope_size_docks"


def shown(w: QMainWindow) -> None:
    """The window is on screen: the first start's docks get their sizes now (see :func:`default_docks`)."""
    if w.property(_SIZE_DOCKS):
        w.setProperty(_SIZE_DOCKS, False)
        default_docks(w)


def save(w: QMainWindow) -> None:
    s = QSettings()
    s.setValue("main/geometry", w.saveGeometry())
    s.setValue("main/state", w.saveState(STATE_VERSION))
    s.sync()


def reset(w: QMainWindow, default: bytes) -> None:
    """View › Reset Layout: the first-start docks and size."""
    for dock in w.findChildren(QDockWidget):
        dock.setFloating(False)
        dock.show()
    w.restoreState(default, STATE_VERSION)
    _default_size(w)
    default_docks(w)
    ensure_canvas_room(w)


def _default_size(w: QMainWindow) -> None:
    """Most of the available screen (the one the window is on, else the primary), centred on it."""
    screen = w.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    area = screen.availableGeometry()
    if area.width() < MAXIMISE_BELOW:
        w.setGeometry(area)
        w.setWindowState(w.windowState() | Qt.WindowState.WindowMaximized)
        return
    width, height = int(area.width() * SCREEN_SHARE), int(area.height() * SCREEN_SHARE)
    w.setGeometry(area.x() + (area.width() - width) // 2, area.y() + (area.height() - height) // 2, width, height)


STACK_MIN_HEIGHT = 280
"""A side dock shorter than this (the Split summary's charts at PLOT_MIN_HEIGHT and their captions) is tabbed
with the one above it rather than squashed under it."""


def default_docks(w: QMainWindow) -> None:
    """The first start's dock sizes, as shares of the window (see ``RIGHT_SHARE``); side docks that would be
    squashed stacked one over another are tabbed instead, the last raised."""
    docks = [d for d in w.findChildren(QDockWidget) if not d.isFloating()]
    side = [d for d in docks if w.dockWidgetArea(d) in _SIDES]
    ends = [d for d in docks if w.dockWidgetArea(d) in _ENDS]
    stacked = [d for d in side if not w.tabifiedDockWidgets(d)]
    room = int(w.height() * (1 - BOTTOM_SHARE)) - 80  # the menu, toolbar and status bar take about 80 px
    if len(stacked) > 1 and room < STACK_MIN_HEIGHT * len(stacked):
        for d in stacked[1:]:
            w.tabifyDockWidget(stacked[0], d)
        stacked[-1].raise_()
    if side:
        w.resizeDocks(side, [max(300, int(RIGHT_SHARE * w.width()))] * len(side), Qt.Orientation.Horizontal)
    if ends:
        w.resizeDocks(ends, [max(270, int(BOTTOM_SHARE * w.height()))] * len(ends), Qt.Orientation.Vertical)


def fits_a_screen(rect: QRect) -> bool:
    """Whether ``rect`` (a window's geometry) lies within one screen's available area, or nearly (a title bar's
    worth over its edge): a geometry saved on a larger or a missing screen does not."""
    for screen in QGuiApplication.screens():
        area = screen.availableGeometry().adjusted(-40, -40, 40, 40)
        if area.contains(rect):
            return True
    return False


def ensure_canvas_room(w: QMainWindow) -> None:
    """Shrink the side and bottom docks when they leave the canvas less than its share of the window."""
    canvas = w.centralWidget()
    if canvas is None or w.width() <= 0:
        return
    docks = [d for d in w.findChildren(QDockWidget) if d.isVisible() and not d.isFloating()]
    want_w = max(min(480, w.width() - 200), int(CANVAS_SHARE * w.width()))
    if canvas.width() < want_w:
        side = [
            d
            for d in docks
            if w.dockWidgetArea(d) in (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea)
        ]
        if side:
            room = max(160, (w.width() - want_w) // max(1, len({w.dockWidgetArea(d) for d in side})))
            w.resizeDocks(side, [room] * len(side), Qt.Orientation.Horizontal)
    want_h = max(min(320, w.height() - 200), int(CANVAS_SHARE * w.height()))
    if canvas.height() < want_h:
        bottom = [
            d
            for d in docks
            if w.dockWidgetArea(d) in (Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea)
        ]
        if bottom:
            w.resizeDocks(bottom, [max(120, w.height() - want_h - 120)] * len(bottom), Qt.Orientation.Vertical)
    layout = w.layout()
    if layout is not None:
        layout.activate()
