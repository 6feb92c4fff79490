"""Exports that travel: the graph as PNG/SVG (written in a worker, atomically), the canvas or any widget
copied to the clipboard as an image for slides, and any table as CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QAbstractItemView, QFileDialog, QWidget
from splitscope.engine.report.files import atomic_path, write_text_atomic

if TYPE_CHECKING:
    from splitscope.gui.canvas.canvas import GraphCanvas


def last_dir() -> Path:
    return Path(str(QSettings().value("main/last_dir", str(Path.home()))))


def write_graph(snap: Any, path: Path, fmt: str, title: str, subtitle: str) -> Path:
    """Write a canvas snapshot to ``path`` as PNG or SVG, through a temporary file and a rename (any thread:
    QPainter on a QImage or QSvgGenerator works off the UI thread, and a 50k-node graph takes seconds)."""
    with atomic_path(path) as tmp:
        if fmt == "svg":
            snap.render_svg(str(tmp), title, subtitle)
        elif not snap.render_image(title=title, subtitle=subtitle).save(str(tmp), "PNG"):
            raise OSError(f"could not write {path}")
    return path


def widget_image(widget: QWidget, scale: float = 2.0) -> QImage:
    """``widget`` drawn into an image at ``scale`` (crisp when pasted into slides)."""
    img = QImage(int(widget.width() * scale), int(widget.height() * scale), QImage.Format.Format_ARGB32)
    img.setDevicePixelRatio(scale)
    img.fill(widget.palette().window().color())
    widget.render(img)
    return img


def copy_image(image: QImage) -> None:
    """Put ``image`` on the clipboard."""
    QGuiApplication.clipboard().setImage(image)


def canvas_image(c: GraphCanvas, scale: float = 2.0) -> QImage:
    """What the canvas shows, with its legend and without the minimap over it (Edit › Copy Canvas as Image)."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QPainter

    img = QImage(int(c.width() * scale), int(c.height() * scale), QImage.Format.Format_ARGB32)
    img.setDevicePixelRatio(scale)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    c.render_to(p, QRectF(0, 0, c.width(), c.height()), c.scene_rect(), c.scale, c.show_legend)
    p.end()
    return img


def table_csv(view: QAbstractItemView) -> str:
    """A table's rows as shown (sorted and filtered as the view shows them) as CSV, header row first; a
    combo box in a cell gives its current choice."""
    m = view.model()
    buf = io.StringIO()
    w = csv.writer(buf)
    cols = range(m.columnCount())
    w.writerow([str(m.headerData(c, Qt.Orientation.Horizontal) or "") for c in cols])
    for r in range(m.rowCount()):
        row: list[Any] = []
        for c in cols:
            idx = m.index(r, c)
            widget = view.indexWidget(idx)
            value = widget.currentText() if hasattr(widget, "currentText") else m.data(idx)
            row.append("" if value is None else str(value))
        w.writerow(row)
    return buf.getvalue()


def add_csv_menu(view: QAbstractItemView, name: str) -> None:
    """Right-click on ``view``: Copy as CSV, Export as CSV… (every table of the app travels)."""
    from PySide6.QtWidgets import QMenu

    def menu(pos: Any) -> None:
        m = QMenu(view)
        m.addAction("Copy as CSV", lambda: QGuiApplication.clipboard().setText(table_csv(view)))
        m.addAction("Export as CSV…", lambda: ask_and_save_csv(view, view, name))
        m.exec(view.viewport().mapToGlobal(pos))

    view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    view.customContextMenuRequested.connect(menu)


def ask_and_save_csv(parent: QWidget, table: QAbstractItemView, name: str) -> Path | None:
    """Export ``table`` as CSV, atomically."""
    path, _ = QFileDialog.getSaveFileName(parent, "Export table as CSV", str(last_dir() / f"{name}.csv"), "CSV (*.csv)")
    if not path:
        return None
    return write_text_atomic(Path(path), table_csv(table))
