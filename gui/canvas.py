"""The graph canvas: draws a :class:`splitscope.engine.view.layout.Layout`, fast at 50k nodes.

A plain QWidget that paints only what is on screen: items are culled with
numpy against the visible scene rectangle, and the level of detail follows the
zoom (zoomed out: coloured blocks; zoomed in: op names, then names, shapes and
dtypes). Pan with the mouse, zoom with the wheel; click selects, a double click
on a block expands it, on a frame's header collapses it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetrics,
    QImage,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPen,
    QPolygonF,
    QWheelEvent,
)
from PySide6.QtWidgets import QWidget
from splitscope.engine.model import GraphModel, Status
from splitscope.engine.text import format_bytes
from splitscope.engine.view.hierarchy import Hierarchy
from splitscope.engine.view.layout import HEADER, KIND_BLOCK, KIND_FRAME, KIND_NODE, Layout
from splitscope.gui.palette import Palette, make_palette

MIN_SCALE, MAX_SCALE = 1e-4, 4.0
LOD_BOXES = 0.12
"""Below this scale items are plain boxes (no text, no markers)."""
LOD_TEXT = 0.45
LOD_DETAIL = 0.9
MAX_EDGES_DRAWN = 6000


def _shape_text(gm: GraphModel, name: str) -> str:
    t = gm.graph.tensors.get(name)
    if t is None:
        return "?"
    dt = (t.dtype or "?").lower().replace("float", "f").replace("int", "i")
    if t.shape is None:
        return f"{dt}[?]"
    return f"{dt}[{','.join(str(d) if d is not None else '?' for d in t.shape)}]"


def segments_path(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> QPainterPath:
    """One QPainterPath of many line segments, built from numpy without a Python loop."""
    import pyqtgraph as pg  # imported at first use, after the window is up

    n = len(x0)
    xs = np.empty(2 * n)
    ys = np.empty(2 * n)
    xs[0::2], xs[1::2] = x0, x1
    ys[0::2], ys[1::2] = y0, y1
    return pg.arrayToQPath(xs, ys, connect="pairs", finiteCheck=False)


class GraphCanvas(QWidget):
    """Pan/zoom view of a laid-out graph with selection, search highlights and expand/collapse."""

    node_selected = Signal(int)
    """A node was clicked (its index), or -1 when the selection was cleared."""
    group_selected = Signal(int)
    group_toggle_requested = Signal(int)
    """Double click on a block (expand) or a frame header (collapse): the group id."""
    view_changed = Signal()
    painted = Signal()
    """A frame with a graph on it was painted (startup timing)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumSize(QSize(320, 240))
        self.palette_ = make_palette(False)
        self.gm: GraphModel | None = None
        self.hier: Hierarchy | None = None
        self.layout_: Layout | None = None
        self.scale = 1.0
        self.cx = 0.0
        self.cy = 0.0
        self.selected_node = -1
        self.selected_group = -1
        self.highlight_nodes: set[int] = set()
        self.show_legend = True
        self.busy_text = ""
        """A notice over the canvas while a long job runs (empty: none)."""
        self._press: QPointF | None = None
        self._press_center = (0.0, 0.0)
        self._dragged = False
        self._arrays: dict[str, np.ndarray] = {}
        self.font_small = QFont(self.font())
        self.font_small.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.85))
        self.last_paint_ms = 0.0

    # ----------------------------------------------------------------- data
    def set_palette(self, palette: Palette) -> None:
        """Switch light/dark colours."""
        self.palette_ = palette
        self.update()

    def set_graph(self, gm: GraphModel, hier: Hierarchy, layout: Layout, keep_view: bool = False) -> None:
        """Show a new layout (after open, expand or collapse)."""
        self.gm, self.hier, self.layout_ = gm, hier, layout
        self._arrays = layout.arrays
        kind, depth = layout.arrays["kind"], layout.arrays["depth"]
        frames = np.flatnonzero(kind == KIND_FRAME)
        self._frames_by_depth = frames[np.argsort(depth[frames], kind="stable")]
        if not keep_view:
            self.fit()
        self.update()
        self.view_changed.emit()

    # ------------------------------------------------------------ transform
    def scene_rect(self) -> QRectF:
        """The visible part of the scene."""
        w, h = self.width() / self.scale, self.height() / self.scale
        return QRectF(self.cx - w / 2, self.cy - h / 2, w, h)

    def to_screen(self, x: float, y: float) -> QPointF:
        """Scene point to widget point."""
        return QPointF((x - self.cx) * self.scale + self.width() / 2, (y - self.cy) * self.scale + self.height() / 2)

    def to_scene(self, p: QPointF) -> tuple[float, float]:
        """Widget point to scene point."""
        return ((p.x() - self.width() / 2) / self.scale + self.cx, (p.y() - self.height() / 2) / self.scale + self.cy)

    def fit(self) -> None:
        """Fit the whole graph (the top of a very tall one) in the view."""
        if self.layout_ is None:
            return
        x0, y0, x1, y1 = self.layout_.bounds()
        margin = 40
        sw = (self.width() - margin) / max(x1 - x0, 1)
        sh = (self.height() - margin) / max(y1 - y0, 1)
        s = min(sw, sh)
        if s < LOD_TEXT and sw >= LOD_TEXT:
            # A tall chain: fit the width and show the top rather than a sliver.
            s = min(sw, 1.0)
            self.scale = s
            self.cx = (x0 + x1) / 2
            self.cy = y0 + (self.height() / 2 - margin / 2) / s
        else:
            self.scale = min(max(s, MIN_SCALE), 1.5)
            self.cx, self.cy = (x0 + x1) / 2, (y0 + y1) / 2
        self.update()
        self.view_changed.emit()

    def zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        """Zoom keeping ``anchor`` (widget point; default the centre) fixed."""
        anchor = anchor or QPointF(self.width() / 2, self.height() / 2)
        ax, ay = self.to_scene(anchor)
        self.scale = min(max(self.scale * factor, MIN_SCALE), MAX_SCALE)
        nx, ny = self.to_scene(anchor)
        self.cx += ax - nx
        self.cy += ay - ny
        self.update()
        self.view_changed.emit()

    def center_on_item(self, item: int, zoom_in: bool = True) -> None:
        """Scroll (and zoom, if needed to read it) to an item."""
        a = self._arrays
        if not a or item < 0:
            return
        self.cx = float(a["x"][item] + a["w"][item] / 2)
        self.cy = float(a["y"][item] + a["h"][item] / 2)
        if zoom_in and self.scale < LOD_DETAIL:
            self.scale = 1.0
        self.update()
        self.view_changed.emit()

    def center_on(self, x: float, y: float) -> None:
        """Scroll to a scene point."""
        self.cx, self.cy = x, y
        self.update()
        self.view_changed.emit()

    # ---------------------------------------------------------------- input
    def item_at(self, p: QPointF) -> int:
        """The topmost item under a widget point, or -1 (nodes and blocks before frames)."""
        a = self._arrays
        if not a:
            return -1
        sx, sy = self.to_scene(p)
        hit = np.flatnonzero((a["x"] <= sx) & (sx <= a["x"] + a["w"]) & (a["y"] <= sy) & (sy <= a["y"] + a["h"]))
        if len(hit) == 0:
            return -1
        solid = hit[a["kind"][hit] != KIND_FRAME]
        if len(solid):
            return int(solid[-1])
        return int(hit[np.argmax(a["depth"][hit])])

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.position()
            self._press_center = (self.cx, self.cy)
            self._dragged = False
            self.setCursor(Qt.CursorShape.ClosedHandCursor)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press is not None:
            d = event.position() - self._press
            if abs(d.x()) + abs(d.y()) > 3:
                self._dragged = True
            self.cx = self._press_center[0] - d.x() / self.scale
            self.cy = self._press_center[1] - d.y() / self.scale
            self.update()
            self.view_changed.emit()
        else:
            item = self.item_at(event.position())
            self.setToolTip(self._tooltip(item))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton or self._press is None:
            return
        self._press = None
        self.unsetCursor()
        if not self._dragged:
            self.select_item(self.item_at(event.position()))

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        item = self.item_at(event.position())
        if item < 0 or self.layout_ is None:
            return
        kind = self.layout_.kind[item]
        if kind in (KIND_BLOCK, KIND_FRAME):
            self.group_toggle_requested.emit(self.layout_.ref[item])

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_by(1.25 ** steps, event.position())

    def keyPressEvent(self, event: Any) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom_by(0.8)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.selected_group >= 0:
            self.group_toggle_requested.emit(self.selected_group)
        else:
            super().keyPressEvent(event)

    def select_item(self, item: int) -> None:
        """Select an item (a node or a group) and tell the panels."""
        L = self.layout_
        if L is None or item < 0:
            self.selected_node = self.selected_group = -1
            self.node_selected.emit(-1)
        elif L.kind[item] == KIND_NODE:
            self.selected_node, self.selected_group = L.ref[item], -1
            self.node_selected.emit(L.ref[item])
        else:
            self.selected_node, self.selected_group = -1, L.ref[item]
            self.group_selected.emit(L.ref[item])
        self.update()

    def select_node(self, node: int, center: bool = True) -> None:
        """Select a node by index (from a panel) and scroll to what shows it."""
        if self.layout_ is None or node < 0:
            return
        self.selected_node, self.selected_group = node, -1
        if center:
            self.center_on_item(self.layout_.node_item[node])
        self.update()

    def _tooltip(self, item: int) -> str:
        L = self.layout_
        if L is None or item < 0 or self.gm is None or self.hier is None:
            return ""
        if L.kind[item] == KIND_NODE:
            n = self.gm.nodes[L.ref[item]]
            return f"{n.label}\n{n.op_type}: {n.status.value}, {n.role.value}\n{n.reason}"
        g = self.hier.groups[L.ref[item]]
        verb = "collapse" if L.kind[item] == KIND_FRAME else "expand"
        return (f"{self.hier.full_label(g.id)}: {g.size} nodes, {g.plugin} plugin, "
                f"{g.delegate_share:.0%} delegated\nDouble-click to {verb}")

    # --------------------------------------------------------------- paint
    def paintEvent(self, event: Any) -> None:
        import time

        t0 = time.perf_counter()
        p = QPainter(self)
        self.render_to(p, self.rect(), self.scene_rect(), self.scale, legend=self.show_legend)
        if self.busy_text:
            self._draw_notice(p, self.busy_text)
        p.end()
        self.last_paint_ms = (time.perf_counter() - t0) * 1000
        if self.layout_ is not None:
            self.painted.emit()

    def render_to(self, p: QPainter, target: Any, view: QRectF, scale: float, legend: bool = True) -> None:
        """Draw ``view`` (scene units) into ``target`` at ``scale``; used for screen and export."""
        pal = self.palette_
        p.fillRect(target, pal.background)
        a = self._arrays
        if not a or self.gm is None or self.hier is None or self.layout_ is None:
            p.setPen(pal.muted)
            p.drawText(target, Qt.AlignmentFlag.AlignCenter, "Open an ONNX model (Ctrl+O) or drop one here.")
            return
        x0, y0, x1, y1 = view.left(), view.top(), view.right(), view.bottom()
        ox = target.left() if hasattr(target, "left") else 0
        oy = target.top() if hasattr(target, "top") else 0

        def sx(v: np.ndarray | float) -> Any:
            return (v - x0) * scale + ox

        def sy(v: np.ndarray | float) -> Any:
            return (v - y0) * scale + oy

        x, y, w, h = a["x"], a["y"], a["w"], a["h"]
        vis = (x + w >= x0) & (x <= x1) & (y + h >= y0) & (y <= y1)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, scale >= LOD_BOXES)
        # Frames of expanded groups, outermost first; frames too small to see are skipped
        # (a 50k-node overview has ~16k of them).
        fr = self._frames_by_depth
        frames = fr[vis[fr] & (w[fr] * scale >= 16) & (h[fr] * scale >= 12)]
        L = self.layout_
        for i in frames:
            rect = QRectF(sx(x[i]), sy(y[i]), w[i] * scale, h[i] * scale)
            fill = pal.frame_fill[int(a["depth"][i]) % 2]
            gid = L.ref[i]
            sel = gid == self.selected_group
            p.setPen(QPen(pal.selection if sel else pal.frame_border, 2 if sel else 1))
            p.setBrush(fill)
            p.drawRoundedRect(rect, 6 * min(scale, 1), 6 * min(scale, 1))
            if scale * HEADER >= 12:
                self._draw_group_header(p, rect, gid, scale)
        # Edges.
        ex0, ey0, ex1, ey1 = a["ex0"], a["ey0"], a["ex1"], a["ey1"]
        if len(ex0):
            evis = (np.maximum(ex0, ex1) >= x0) & (np.minimum(ex0, ex1) <= x1) & \
                   (np.maximum(ey0, ey1) >= y0) & (np.minimum(ey0, ey1) <= y1)
            idx = np.flatnonzero(evis)
            plain = idx[~a["boundary"][idx]]
            bnd = idx[a["boundary"][idx]]
            if len(plain) <= MAX_EDGES_DRAWN or scale >= LOD_TEXT:
                self._draw_edges(p, plain, sx, sy, scale, QPen(pal.edge, max(1.0, 1.2 * min(scale, 1.5))))
            pen = QPen(pal.boundary, max(1.5, 3 * min(scale, 1.5)))
            pen.setStyle(Qt.PenStyle.DashLine)
            self._draw_edges(p, bnd, sx, sy, scale, pen, labels=scale >= LOD_TEXT)
        # Nodes and blocks.
        solid = np.flatnonzero(vis & (a["kind"] != KIND_FRAME))
        if scale < LOD_BOXES:
            self._draw_boxes_fast(p, solid, sx, sy, scale)
        else:
            for i in solid:
                rect = QRectF(sx(x[i]), sy(y[i]), w[i] * scale, h[i] * scale)
                if a["kind"][i] == KIND_NODE:
                    self._draw_node(p, rect, L.ref[i], scale)
                else:
                    self._draw_block(p, rect, L.ref[i], scale)
        if legend:
            self._draw_legend(p)

    def _draw_edges(self, p: QPainter, idx: np.ndarray, sx: Any, sy: Any, scale: float, pen: QPen,
                    labels: bool = False) -> None:
        if len(idx) == 0:
            return
        a = self._arrays
        X0, Y0 = sx(a["ex0"][idx]), sy(a["ey0"][idx])
        X1, Y1 = sx(a["ex1"][idx]), sy(a["ey1"][idx])
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        curved = scale >= LOD_BOXES and len(idx) < 3000
        if not curved:
            p.drawPath(segments_path(X0, Y0, X1, Y1))
            return
        path = QPainterPath()
        for k in range(len(idx)):
            a0, b0, a1, b1 = float(X0[k]), float(Y0[k]), float(X1[k]), float(Y1[k])
            path.moveTo(a0, b0)
            if curved:
                dy = max(abs(b1 - b0) * 0.5, 20 * scale)
                path.cubicTo(a0, b0 + dy, a1, b1 - dy, a1, b1)
            else:
                path.lineTo(a1, b1)
        p.drawPath(path)
        if labels and self.layout_ is not None:
            p.setFont(self.font_small)
            p.setPen(self.palette_.boundary)
            for k, e in enumerate(idx):
                edge = self.layout_.edges[int(e)]
                if edge.boundary_bytes:
                    mx, my = (float(X0[k]) + float(X1[k])) / 2, (float(Y0[k]) + float(Y1[k])) / 2
                    p.drawText(QPointF(mx + 6, my), format_bytes(edge.boundary_bytes))

    def _draw_boxes_fast(self, p: QPainter, idx: np.ndarray, sx: Any, sy: Any, scale: float) -> None:
        """Zoomed far out: each box is one thick, flat-capped stroke; one path per colour and height."""
        a = self._arrays
        pal = self.palette_
        for st, status in ((0, Status.DELEGATE), (1, Status.PLUGIN)):
            sel = idx[a["status"][idx] == st]
            for height in np.unique(a["h"][sel]) if len(sel) else ():
                part = sel[a["h"][sel] == height]
                x0 = sx(a["x"][part])
                x1 = sx(a["x"][part] + a["w"][part])
                yc = sy(a["y"][part] + height / 2)
                pen = QPen(pal.status_border[status], max(1.5, float(height) * scale))
                pen.setCapStyle(Qt.PenCapStyle.FlatCap)
                p.strokePath(segments_path(x0, yc, np.maximum(x1, x0 + 1.5), yc), pen)

    def _marker(self, p: QPainter, cx: float, cy: float, r: float, status: Status) -> None:
        pal = self.palette_
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(pal.status_border[status])
        if status is Status.PLUGIN:
            p.drawPolygon(QPolygonF([QPointF(cx, cy - r), QPointF(cx + r, cy + r * 0.8),
                                     QPointF(cx - r, cy + r * 0.8)]))
        else:
            p.drawEllipse(QPointF(cx, cy), r * 0.85, r * 0.85)

    def _draw_node(self, p: QPainter, rect: QRectF, node: int, scale: float) -> None:
        assert self.gm is not None
        n = self.gm.nodes[node]
        pal = self.palette_
        selected = node == self.selected_node
        matched = node in self.highlight_nodes
        border = pal.selection if selected else pal.status_border[n.status]
        p.setPen(QPen(border, 3 if selected else (2 if n.status is Status.PLUGIN else 1)))
        p.setBrush(pal.match if matched else pal.status_fill[n.status])
        radius = 5 * min(scale, 1.5)
        p.drawRoundedRect(rect, radius, radius)
        if scale < LOD_TEXT:
            return
        r = 5 * scale
        self._marker(p, rect.left() + 10 * scale, rect.top() + 12 * scale, r, n.status)
        p.setPen(QColor("#1b1b1b") if matched else pal.text)  # the match fill is light in both themes
        f = QFont(self.font())
        f.setPointSizeF(max(6.0, 9.5 * min(scale, 1.6)))
        f.setBold(True)
        p.setFont(f)
        text_rect = rect.adjusted(20 * scale, 2 * scale, -4 * scale, -2 * scale)
        op = n.op_type if not n.domain else f"{n.domain.split('.')[-1]}::{n.op_type}"
        if scale < LOD_DETAIL:
            p.drawText(text_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, op)
            return
        fm = QFontMetrics(f)
        p.drawText(text_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, fm.elidedText(
            op, Qt.TextElideMode.ElideRight, int(text_rect.width())))
        f2 = QFont(self.font())
        f2.setPointSizeF(max(5.0, 7.5 * min(scale, 1.6)))
        p.setFont(f2)
        fm2 = QFontMetrics(f2)
        p.setPen(QColor("#3c4043") if matched else pal.muted)
        out = _shape_text(self.gm, n.outputs[0]) if n.outputs else ""
        name = n.label.rsplit("/", 1)[-1]
        lines = out if name == n.op_type else f"{name}\n{out}"
        p.drawText(text_rect.adjusted(0, fm.height(), 0, 0), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                   "\n".join(fm2.elidedText(s, Qt.TextElideMode.ElideMiddle, int(text_rect.width()))
                             for s in lines.split("\n")))

    def _share_bar(self, p: QPainter, rect: QRectF, share: float) -> None:
        pal = self.palette_
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(pal.status_border[Status.DELEGATE])
        p.drawRect(QRectF(rect.left(), rect.top(), rect.width() * share, rect.height()))
        p.setBrush(pal.status_border[Status.PLUGIN])
        p.drawRect(QRectF(rect.left() + rect.width() * share, rect.top(), rect.width() * (1 - share), rect.height()))

    def _draw_block(self, p: QPainter, rect: QRectF, gid: int, scale: float) -> None:
        assert self.hier is not None
        g = self.hier.groups[gid]
        pal = self.palette_
        status = Status.PLUGIN if g.plugin else Status.DELEGATE
        selected = gid == self.selected_group
        p.setPen(QPen(pal.selection if selected else pal.status_border[status], 3 if selected else 1.5))
        p.setBrush(pal.status_fill[status])
        radius = 8 * min(scale, 1.5)
        p.drawRoundedRect(rect, radius, radius)
        # A second outline: a block stands for many nodes.
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRoundedRect(rect.adjusted(3 * scale, 3 * scale, -3 * scale, -3 * scale), radius, radius)
        bar = QRectF(rect.left() + 8 * scale, rect.bottom() - 12 * scale, rect.width() - 16 * scale, 5 * scale)
        self._share_bar(p, bar, g.delegate_share)
        if scale < LOD_TEXT:
            return
        self._marker(p, rect.left() + 14 * scale, rect.top() + 16 * scale, 5 * scale, status)
        f = QFont(self.font())
        f.setPointSizeF(max(6.0, 9.5 * min(scale, 1.6)))
        f.setBold(True)
        p.setFont(f)
        p.setPen(pal.text)
        fm = QFontMetrics(f)
        tr = rect.adjusted(24 * scale, 5 * scale, -6 * scale, -14 * scale)
        p.drawText(tr, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                   fm.elidedText(g.label, Qt.TextElideMode.ElideMiddle, int(tr.width())))
        f2 = QFont(self.font())
        f2.setPointSizeF(max(5.0, 7.5 * min(scale, 1.6)))
        p.setFont(f2)
        p.setPen(pal.muted)
        info = f"{g.size:,} nodes · {g.plugin} plugin · {g.delegate_share:.0%} delegated"
        top_left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        p.drawText(tr.adjusted(0, fm.height() + 2 * scale, 0, 0), top_left,
                   QFontMetrics(f2).elidedText(info, Qt.TextElideMode.ElideRight, int(tr.width())))

    def _draw_group_header(self, p: QPainter, rect: QRectF, gid: int, scale: float) -> None:
        assert self.hier is not None
        g = self.hier.groups[gid]
        pal = self.palette_
        f = QFont(self.font())
        f.setPointSizeF(max(6.0, 8.5 * min(scale, 1.6)))
        f.setBold(True)
        p.setFont(f)
        p.setPen(pal.muted)
        head = QRectF(rect.left() + 8 * scale, rect.top() + 4 * scale, rect.width() - 16 * scale, (HEADER - 8) * scale)
        bar_w = min(80 * scale, head.width() * 0.3)
        text = f"▾ {g.label} · {g.size:,}"
        left_mid = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        p.drawText(head.adjusted(0, 0, -bar_w - 6 * scale, 0), left_mid,
                   QFontMetrics(f).elidedText(text, Qt.TextElideMode.ElideRight, int(head.width() - bar_w)))
        bar = QRectF(head.right() - bar_w, head.center().y() - 3 * scale, bar_w, 6 * scale)
        self._share_bar(p, bar, g.delegate_share)

    def _draw_legend(self, p: QPainter) -> None:
        pal = self.palette_
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        f = QFont(self.font())
        f.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.9))
        p.setFont(f)
        fm = QFontMetrics(f)
        rows = [(Status.DELEGATE, "delegate: TensorRT takes it"), (Status.PLUGIN, "plugin: needs custom CUDA"),
                (None, "partition boundary (bytes/inference)")]
        width = max(fm.horizontalAdvance(t) for _, t in rows) + 44
        height = len(rows) * (fm.height() + 4) + 12
        box = QRectF(10, 10, width, height)
        bg = QColor(pal.background)
        bg.setAlpha(225)
        p.setPen(QPen(pal.frame_border))
        p.setBrush(bg)
        p.drawRoundedRect(box, 6, 6)
        yy = box.top() + 8 + fm.ascent()
        for st, text in rows:
            if st is None:
                pen = QPen(pal.boundary, 2.5)
                pen.setStyle(Qt.PenStyle.DashLine)
                p.setPen(pen)
                mid = yy - fm.ascent() / 2 + 2
                p.drawLine(QPointF(box.left() + 10, mid), QPointF(box.left() + 30, mid))
            else:
                self._marker(p, box.left() + 20, yy - fm.ascent() / 2 + 2, 6, st)
            p.setPen(pal.text)
            p.drawText(QPointF(box.left() + 38, yy), text)
            yy += fm.height() + 4

    def _draw_notice(self, p: QPainter, text: str) -> None:
        pal = self.palette_
        fm = QFontMetrics(self.font())
        w = fm.horizontalAdvance(text) + 40
        box = QRectF((self.width() - w) / 2, 16, w, fm.height() + 20)
        bg = QColor(pal.background)
        bg.setAlpha(235)
        p.setPen(QPen(pal.selection, 1.5))
        p.setBrush(bg)
        p.drawRoundedRect(box, 8, 8)
        p.setPen(pal.text)
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)

    def render_image(self, max_side: int = 8000) -> QImage:
        """The whole graph as an image (for PNG export), at up to ``max_side`` pixels."""
        if self.layout_ is None:
            return QImage()
        x0, y0, x1, y1 = self.layout_.bounds()
        m = 20.0
        w, h = x1 - x0 + 2 * m, y1 - y0 + 2 * m
        scale = min(1.0, max_side / max(w, h))
        img = QImage(max(1, math.ceil(w * scale)), max(1, math.ceil(h * scale)), QImage.Format.Format_ARGB32)
        p = QPainter(img)
        self.render_to(p, img.rect(), QRectF(x0 - m, y0 - m, w, h), scale)
        p.end()
        return img

    def render_svg(self, path: str) -> None:
        """Write the whole graph as SVG."""
        from PySide6.QtSvg import QSvgGenerator

        if self.layout_ is None:
            return
        x0, y0, x1, y1 = self.layout_.bounds()
        m = 20.0
        w, h = x1 - x0 + 2 * m, y1 - y0 + 2 * m
        gen = QSvgGenerator()
        gen.setFileName(path)
        gen.setSize(QSize(math.ceil(w), math.ceil(h)))
        gen.setViewBox(QRectF(0, 0, w, h))
        gen.setTitle("Splitscope graph")
        p = QPainter(gen)
        self.render_to(p, QRectF(0, 0, w, h), QRectF(x0 - m, y0 - m, w, h), 1.0)
        p.end()


class Minimap(QWidget):
    """An overview of the whole graph with the visible area; click or drag to move there."""

    def __init__(self, canvas: GraphCanvas, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.canvas = canvas
        self.setFixedSize(180, 220)
        self._image: QImage | None = None
        self._map: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
        canvas.view_changed.connect(self.update)

    def refresh(self) -> None:
        """Redraw the overview image (after a new layout)."""
        c = self.canvas
        a = c._arrays
        if not a or c.layout_ is None:
            self._image = None
            self.update()
            return
        x0, y0, x1, y1 = c.layout_.bounds()
        # Each axis scaled on its own: a 1,000-layer chain still fills the overview.
        sxs = (self.width() - 8) / max(x1 - x0, 1)
        sys_ = (self.height() - 8) / max(y1 - y0, 1)
        self._map = (x0, y0, sxs, sys_)
        img = QImage(self.width(), self.height(), QImage.Format.Format_ARGB32)
        pal = c.palette_
        img.fill(pal.frame_fill[1])
        p = QPainter(img)
        solid = np.flatnonzero(a["kind"] != KIND_FRAME)
        for st, status in ((0, Status.DELEGATE), (1, Status.PLUGIN)):
            sel = solid[a["status"][solid] == st]
            if not len(sel):
                continue
            x0s = (a["x"][sel] - x0) * sxs + 4
            x1s = np.maximum((a["x"][sel] + a["w"][sel] - x0) * sxs + 4, x0s + 2.0)
            yc = (a["y"][sel] + a["h"][sel] / 2 - y0) * sys_ + 4
            pen = QPen(pal.status_border[status], max(1.0, float(a["h"][sel].max()) * sys_))
            pen.setCapStyle(Qt.PenCapStyle.FlatCap)
            p.strokePath(segments_path(x0s, yc, x1s, yc), pen)
        p.end()
        self._image = img
        self.update()

    def paintEvent(self, event: Any) -> None:
        p = QPainter(self)
        pal = self.canvas.palette_
        if self._image is not None:
            p.drawImage(0, 0, self._image)
            x0, y0, sx, sy = self._map
            v = self.canvas.scene_rect()
            r = QRectF((v.left() - x0) * sx + 4, (v.top() - y0) * sy + 4, max(v.width() * sx, 3),
                       max(v.height() * sy, 3))
            p.setPen(QPen(pal.selection, 1.5))
            c = QColor(pal.selection)
            c.setAlpha(40)
            p.setBrush(QBrush(c))
            p.drawRect(r)
        p.setPen(QPen(pal.muted, 1))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        p.end()

    def _goto(self, event: QMouseEvent) -> None:
        x0, y0, sx, sy = self._map
        if sx > 0 and sy > 0:
            self.canvas.center_on((event.position().x() - 4) / sx + x0, (event.position().y() - 4) / sy + y0)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._goto(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._goto(event)
