"""Colours of the app: one lookup from status and role to colour, light and dark.

Status colours are from the Okabe-Ito palette (distinguishable with the common
colour-vision deficiencies) and always come with a shape cue: a circle for
delegate, a triangle for plugin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from splitscope.engine.model import Role, Status
from splitscope.engine.palette import colour_table, theme


@dataclass(frozen=True)
class Palette:
    """Every colour the canvas and charts use."""

    dark: bool
    background: QColor
    text: QColor
    muted: QColor
    edge: QColor
    boundary: QColor
    selection: QColor
    match: QColor
    frame_fill: tuple[QColor, QColor]
    frame_border: QColor
    status_fill: dict[Status, QColor]
    status_border: dict[Status, QColor]
    role: dict[Role, QColor]
    neutral: QColor
    """Items a colouring leaves without a value (not measured, left as written): a grey apart from the frames."""


STATUS_MARK = {Status.DELEGATE: "●", Status.PLUGIN: "▲"}

COLOURS = colour_table()
"""The palette data file (resources/palette.json): the named colours every panel draws with."""


def make_palette(dark: bool) -> Palette:
    """The light or dark palette, as Qt colours."""
    t = theme(dark)
    return Palette(
        dark,
        QColor(t["background"]),
        QColor(t["text"]),
        QColor(t["muted"]),
        QColor(t["edge"]),
        QColor(t["boundary"]),
        QColor(t["selection"]),
        QColor(t["match"]),
        (QColor(t["frame_fill"][0]), QColor(t["frame_fill"][1])),
        QColor(t["frame_border"]),
        {s: QColor(t["status_fill"][s.value]) for s in (Status.DELEGATE, Status.PLUGIN)},
        {s: QColor(t["status_border"][s.value]) for s in (Status.DELEGATE, Status.PLUGIN)},
        {r: QColor(COLOURS["roles"][r.value]) for r in Role},
        QColor(t["line"]),
    )


def system_is_dark() -> bool:
    """Whether the desktop asks for a dark theme (Qt 6.5+ colour scheme, else the window colour)."""
    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    if scheme is not None:
        value = scheme()
        if value == Qt.ColorScheme.Dark:
            return True
        if value == Qt.ColorScheme.Light:
            return False
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


_ORIGINAL: dict[str, Any] = {}


def apply_app_palette(dark: bool) -> None:
    """Make the widgets match the canvas when the user forces a theme the platform style lacks."""
    from PySide6.QtWidgets import QApplication, QStyleFactory

    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    if "palette" not in _ORIGINAL:
        _ORIGINAL["palette"] = QPalette(app.palette())
        _ORIGINAL["style"] = app.style().name()
    native_dark = _ORIGINAL["palette"].color(QPalette.ColorRole.Window).lightness() < 128
    if dark == native_dark:
        if app.style().name() != _ORIGINAL["style"]:
            app.setStyle(QStyleFactory.create(_ORIGINAL["style"]))
        app.setPalette(_ORIGINAL["palette"])
        return
    app.setStyle(QStyleFactory.create("Fusion"))
    pal = QPalette()
    colors = COLOURS["widgets_dark" if dark else "widgets_light"]
    for role, color in colors.items():
        pal.setColor(getattr(QPalette.ColorRole, role), QColor(color))
    app.setPalette(pal)
