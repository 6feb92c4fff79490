"""A small stacked horizontal bar chart painted with QPainter: the split summary's two charts.

They were pyqtgraph plots: two PlotWidgets redrawn on every model change, whose axis layout and range updates cost
tens of milliseconds of the UI thread in the frame that shows the next model, and whose import the first model paid.
A handful of rectangles and labels need none of that."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget


@dataclass(frozen=True)
class BarRow:
    """One bar: its label and the two stacked parts (delegate first, plugin after)."""

    label: str
    first: float
    second: float


class BarChart(QWidget):
    """A titled chart of stacked horizontal bars, scaled to ``full`` (a share: 100) or to the longest bar."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.rows: list[BarRow] = []
        self.full: float | None = None
        self.axis_label = ""
        self.colours: tuple[QColor, QColor] = (QColor(), QColor())
        self.background, self.text = QColor(), QColor()
        self.setVisible(False)  # until the first figures
        self.setMinimumHeight(150)
        self.setMaximumHeight(190)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)

    def sizeHint(self) -> QSize:
        return QSize(300, 170)

    def set_bars(
        self,
        rows: list[BarRow],
        *,
        full: float | None,
        axis_label: str,
        colours: tuple[QColor, QColor],
        background: QColor,
        text: QColor,
    ) -> None:
        """Show ``rows``; ``full``: the value a whole bar stands for (None: the longest row)."""
        self.rows, self.full, self.axis_label = list(rows), full, axis_label
        self.colours, self.background, self.text = colours, background, text
        self.setVisible(True)
        self.update()

    def clear(self, background: QColor | None = None, text: QColor | None = None) -> None:
        """No figures until the next ones (the chart keeps its place: hiding it would lay the window out again);
        the palette's colours where given (a theme switched meanwhile)."""
        self.rows = []
        self.background = background if background is not None else self.background
        self.text = text if text is not None else self.text
        self.update()

    def scale(self) -> float:
        """The value the full width stands for."""
        if self.full is not None:
            return self.full
        return max((r.first + r.second for r in self.rows), default=0.0) or 1.0

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        try:
            p.fillRect(self.rect(), self.background)
            p.setPen(self.text)
            fm = p.fontMetrics()
            line = fm.height()
            w, h = self.width(), self.height()
            p.drawText(QRectF(0, 2, w, line), Qt.AlignmentFlag.AlignHCenter, self.title)
            if not self.rows:
                return
            left = 8 + max(fm.horizontalAdvance(r.label) for r in self.rows) + 6
            top, bottom = line + 8, h - line - 6
            width = max(w - left - 12, 10)
            pitch = (bottom - top) / len(self.rows)
            if pitch < 2:  # too short to draw bars at all
                return
            bar = max(min(pitch * 0.6, 28.0), 1.0)
            unit = width / self.scale()
            for k, r in enumerate(self.rows):
                y = top + k * pitch + (pitch - bar) / 2
                p.setPen(self.text)
                right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                p.drawText(QRectF(4, y, left - 10, bar), right, r.label)
                a, b = r.first * unit, r.second * unit
                p.fillRect(QRectF(left, y, a, bar), self.colours[0])
                p.fillRect(QRectF(left + a, y, b, bar), self.colours[1])
            p.setPen(self.text)
            p.drawLine(int(left), int(bottom), int(left + width), int(bottom))
            below = QRectF(left, bottom + 2, width, line)
            end = f"{self.scale():g}"
            p.drawText(below, Qt.AlignmentFlag.AlignLeft, "0")
            p.drawText(below, Qt.AlignmentFlag.AlignRight, end)
            gap = max(fm.horizontalAdvance("0"), fm.horizontalAdvance(end)) + 6  # the axis's ends stay readable
            middle = below.adjusted(gap, 0, -gap, 0)
            label = fm.elidedText(self.axis_label, Qt.TextElideMode.ElideRight, int(middle.width()))
            p.drawText(middle, Qt.AlignmentFlag.AlignHCenter, label)
        finally:
            p.end()
