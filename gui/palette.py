"""Colours of the app: one lookup from status and role to colour, light and dark.

Status colours are from the Okabe-Ito palette (distinguishable with the common
colour-vision deficiencies) and always come with a shape cue: a circle for
delegate, a triangle for plugin.
"""

from __future__ import annotations

from dataclasses import dataclass

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
