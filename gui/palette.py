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


STATUS_MARK = {Status.DELEGATE: "●", Status.PLUGIN: "▲"}

_ROLE_COLORS = {
    Role.COMPUTE: "#0072B2", Role.DATA_MOVEMENT: "#56B4E9", Role.SHAPE: "#999999",
    Role.PRE_PROCESSING: "#009E73", Role.POST_PROCESSING: "#E69F00", Role.CONTROL_FLOW: "#CC79A7",
}


def make_palette(dark: bool) -> Palette:
    """The light or dark palette."""
    if dark:
        return Palette(
            True, QColor("#1e1f22"), QColor("#e6e6e6"), QColor("#9aa0a6"), QColor("#6b7078"), QColor("#CC79A7"),
            QColor("#ffd54f"), QColor("#F0E442"), (QColor("#26282c"), QColor("#2c2f34")), QColor("#4a4f57"),
            {Status.DELEGATE: QColor("#12385a"), Status.PLUGIN: QColor("#5a2a10")},
            {Status.DELEGATE: QColor("#56B4E9"), Status.PLUGIN: QColor("#ff7f3f")},
            {r: QColor(c) for r, c in _ROLE_COLORS.items()})
    return Palette(
        False, QColor("#fafafa"), QColor("#1b1b1b"), QColor("#5f6368"), QColor("#9aa0a6"), QColor("#a4457d"),
        QColor("#1a73e8"), QColor("#F0E442"), (QColor("#f1f3f4"), QColor("#e8eaed")), QColor("#c4c7cc"),
        {Status.DELEGATE: QColor("#d6e9f8"), Status.PLUGIN: QColor("#fde0cf")},
        {Status.DELEGATE: QColor("#0072B2"), Status.PLUGIN: QColor("#D55E00")},
        {r: QColor(c) for r, c in _ROLE_COLORS.items()})


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
    if dark:
        colors = {"Window": "#2b2d30", "WindowText": "#e6e6e6", "Base": "#1e1f22", "AlternateBase": "#26282c",
                  "Text": "#e6e6e6", "Button": "#34373b", "ButtonText": "#e6e6e6", "ToolTipBase": "#2b2d30",
                  "ToolTipText": "#e6e6e6", "Highlight": "#2f65ca", "HighlightedText": "#ffffff",
                  "PlaceholderText": "#8b9096", "Mid": "#45484d", "Dark": "#1a1b1e", "Light": "#4a4d52"}
    else:
        colors = {"Window": "#f3f3f3", "WindowText": "#1b1b1b", "Base": "#ffffff", "AlternateBase": "#f5f5f5",
                  "Text": "#1b1b1b", "Button": "#f0f0f0", "ButtonText": "#1b1b1b", "ToolTipBase": "#ffffdc",
                  "ToolTipText": "#1b1b1b", "Highlight": "#1a73e8", "HighlightedText": "#ffffff",
                  "PlaceholderText": "#80868b", "Mid": "#c4c7cc", "Dark": "#9aa0a6", "Light": "#ffffff"}
    for role, color in colors.items():
        pal.setColor(getattr(QPalette.ColorRole, role), QColor(color))
    app.setPalette(pal)
