"""The graph canvas: draws a :class:`splitscope.engine.view.layout.Layout`, fast at 50k nodes.

A plain QWidget that paints only what is on screen: items are culled with
numpy against the visible scene rectangle, and the level of detail follows the
zoom (zoomed out: coloured blocks; zoomed in: op names, then names, shapes and
dtypes). Pan with the mouse, zoom with the wheel; click selects, a double click
on a block expands it, on a frame's header collapses it.
"""

from __future__ import annotations

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
    QPen,
    QWheelEvent,
)
from PySide6.QtWidgets import QWidget
from splitscope.engine.model import GraphModel, Status
from splitscope.engine.view.hierarchy import Hierarchy
from splitscope.engine.view.layout import HEADER, KIND_BLOCK, KIND_FRAME, KIND_NODE, Layout
from splitscope.gui.canvas.render import (
    LOD_BOXES,
    LOD_DETAIL,
    LOD_TEXT,
    MAX_EDGES_DRAWN,
    MAX_SCALE,
    MIN_SCALE,
    GraphPainter,
    Heat,
    segments_path,
)
from splitscope.gui.shell.palette import Palette, make_palette


class GraphCanvas(QWidget):
    """Pan/zoom view of a laid-out graph with selection, search highlights and expand/collapse."""

    node_selected = Signal(int)
    """A node was clicked (its index), or -1 when the selection was cleared."""
    group_selected = Signal(int)
    group_toggle_requested = Signal(int)
    body_requested = Signal(int)
    """A node with bodies (If, Loop, Scan) was double-clicked: open its body."""
    context_requested = Signal(int, object)
    """Right click: the item under the pointer (-1 for none) and the global position for a menu."""
    """Double click on a block (expand) or a frame header (collapse): the group id."""
    view_changed = Signal()
    resized = Signal()
    """The canvas changed size (its overlays place themselves again)."""
    overlays_moved = Signal()
    """The legend or a notice appeared, went or moved (what the minimap keeps clear of)."""
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
        self._fit_view: tuple[float, float, float] | None = None  # the view Fit last made
        self.overlay_width = 0
        """Pixels of the minimap's column at the right: a first view that can keeps its graph clear of it."""
        self.scale = 1.0
        self.cx = 0.0
        self.cy = 0.0
        self.selected_node = -1
        self.selected_group = -1
        self.highlight_nodes: set[int] = set()
        self.heat: Heat | None = None
        """Colour by a measured figure instead of the status (View › Colour by)."""
        self.show_legend = True
        self.busy_text = ""
        self.legend_rect: QRectF | None = None
        """Where the last paint drew the legend and the busy notice (None: not drawn)."""
        self.notice_rect: QRectF | None = None
        """A notice over the canvas while a long job runs (empty: none)."""
        self._press: QPointF | None = None
        self._press_center = (0.0, 0.0)
        self._dragged = False
        self._arrays: dict[str, np.ndarray] = {}
        self._frames_by_depth = np.zeros(0, dtype=np.int64)
        self.font_small = QFont(self.font())
        self.font_small.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.85))
        self.last_paint_ms = 0.0

    # ----------------------------------------------------------------- data
    def set_palette(self, palette: Palette) -> None:
        """Switch light/dark colours."""
        self.palette_ = palette
        self.update()

    def set_heat(self, heat: Heat | None) -> None:
        """Colour nodes and blocks by ``heat`` (None: by status again)."""
        self.heat = heat
        self.update()

    def set_graph(self, gm: GraphModel, hier: Hierarchy, layout: Layout, keep_view: bool = False) -> None:
        """Show a new layout (after open, expand or collapse)."""
        self.gm, self.hier, self.layout_ = gm, hier, layout
        self._arrays = layout.arrays
        kind, depth = layout.arrays["kind"], layout.arrays["depth"]
        frames = np.flatnonzero(kind == KIND_FRAME)
        self._frames_by_depth = frames[np.argsort(depth[frames], kind="stable")]
        if not keep_view:
            self.first_view()
        self.update()
        self.view_changed.emit()

    READABLE_SCALE = 0.8
    """The scale at which every label is 9 px or more (names 9.5 pt and frame headers 8.5 pt at 96 dpi)."""

    def first_view(self) -> None:
        """Fit the graph; where that leaves its labels under 9 px, open at a readable zoom on the part that decides
        instead: the first plugin node (or the block holding it) in the flow, else the graph's inputs at the top.
        The minimap shows where that is; Fit (F) shows the whole."""
        self.fit()
        L, gm = self.layout_, self.gm
        readable = self.READABLE_SCALE * 96.0 / self.logicalDpiY()
        if L is None or gm is None or not self._arrays or self.scale >= readable:
            return
        a = self._arrays
        x, y, w, h = a["x"], a["y"], a["w"], a["h"]
        items = [k for i in gm.nodes.with_status(Status.PLUGIN) if (k := L.node_item[i]) >= 0]
        x0, y0, x1, _ = L.bounds()
        self.scale = readable
        view_w, view_h = self.width() / self.scale, self.height() / self.scale
        top = (self.LEGEND_BAND if self.show_legend else 0) / self.scale
        if items:
            k = min(items, key=lambda i: (y[i], x[i]))
            fx, fy = x[k] + w[k] / 2, y[k] + h[k] / 2
            self.cx = fx
            self.cy = fy + view_h / 6  # the plugin in the upper part, what feeds it above
        else:
            self.cx = (x0 + x1) / 2 if x1 - x0 <= view_w else x0 + view_w / 2
            self.cy = y0 - top + view_h / 2 - 20 / self.scale  # the inputs at the top, under the legend
        margin = 40 / self.scale
        free = view_w - (self.overlay_width + 20) / self.scale  # left of the minimap's column, which shows now
        if x1 - x0 <= free - 2 * 10 / self.scale:
            self.cx = (x0 + x1) / 2 + (view_w - free) / 2  # centred beside the minimap, clear of it
        elif x1 - x0 <= view_w - 2 * margin:
            self.cx = (x0 + x1) / 2
        else:  # never past the graph's left or right edge
            self.cx = min(max(self.cx, x0 + view_w / 2 - margin), x1 - view_w / 2 + margin)
        self.update()
        self.view_changed.emit()

    # ------------------------------------------------------------ transform
    def scene_rect(self) -> QRectF:
        """The visible part of the scene."""
        w, h = self.width() / self.scale, self.height() / self.scale
        return QRectF(self.cx - w / 2, self.cy - h / 2, w, h)

    def shows_all(self) -> bool:
        """Whether the view shows the whole graph (a minimap would add nothing; with no graph, True)."""
        if self.layout_ is None:
            return True
        x0, y0, x1, y1 = self.layout_.bounds()
        v = self.scene_rect()
        slack = 2 / self.scale  # two pixels: Fit's rounding
        return v.left() <= x0 + slack and v.top() <= y0 + slack and v.right() >= x1 - slack and v.bottom() >= y1 - slack

    def on_screen(self) -> dict[str, float | int]:
        """What the view shows now, for ``--report-startup`` and tests: ``items_visible`` (nodes and blocks
        in view), ``plugins_visible`` (share of plugin nodes whose node or enclosing block is in view and
        marked), ``min_label_px`` (smallest label text drawn, in pixels; 0 when zoomed out past labels) and
        ``edges_drawn``."""
        L, a, gm = self.layout_, self._arrays, self.gm
        if L is None or gm is None or not a:
            return {"items_visible": 0, "plugins_visible": 0.0, "min_label_px": 0.0, "edges_drawn": 0}
        r = self.scene_rect()
        x0, y0, x1, y1 = r.left(), r.top(), r.right(), r.bottom()
        x, y, w, h = a["x"], a["y"], a["w"], a["h"]
        vis = (x + w >= x0) & (x <= x1) & (y + h >= y0) & (y <= y1)
        solid = vis & (a["kind"] != KIND_FRAME)
        plugin = gm.nodes.with_status(Status.PLUGIN)
        marked = self.scale >= LOD_BOXES  # below, boxes are plain colour without the ▲ marker
        shown = sum(1 for i in plugin if vis[L.node_item[i]]) if marked else 0
        ex0, ey0, ex1, ey1 = a["ex0"], a["ey0"], a["ex1"], a["ey1"]
        evis = (
            (np.maximum(ex0, ex1) >= x0)
            & (np.minimum(ex0, ex1) <= x1)
            & (np.maximum(ey0, ey1) >= y0)
            & (np.minimum(ey0, ey1) <= y1)
        )
        n_plain = int((evis & ~a["boundary"]).sum())
        edges = int((evis & a["boundary"]).sum()) + (
            n_plain if n_plain <= MAX_EDGES_DRAWN or self.scale >= LOD_TEXT else 0
        )
        px_per_pt = self.logicalDpiY() / 72.0
        label_px = 0.0
        if self.scale >= LOD_TEXT and bool(solid.any()):
            # Names are 9.5 pt bold scaled by min(scale, 1.6), never below 6 pt; frame headers 8.5 pt (render.py).
            frames = vis & (a["kind"] == KIND_FRAME)
            pt = 8.5 if bool(frames.any()) and self.scale * HEADER >= 12 else 9.5
            label_px = max(6.0, pt * min(self.scale, 1.6)) * px_per_pt
        return {
            "items_laid_out": int((a["kind"] != KIND_FRAME).sum()),
            "items_visible": int(solid.sum()),
            "plugins_visible": round(shown / len(plugin), 3) if plugin else 1.0,
            "min_label_px": round(label_px, 1),
            "edges_drawn": edges,
        }

    def to_screen(self, x: float, y: float) -> QPointF:
        """Scene point to widget point."""
        return QPointF((x - self.cx) * self.scale + self.width() / 2, (y - self.cy) * self.scale + self.height() / 2)

    def to_scene(self, p: QPointF) -> tuple[float, float]:
        """Widget point to scene point."""
        return ((p.x() - self.width() / 2) / self.scale + self.cx, (p.y() - self.height() / 2) / self.scale + self.cy)

    def clear_corner(self, w: int, h: int, gap: int = 10) -> tuple[int, int]:
        """Where a ``w`` x ``h`` overlay (the minimap) covers the fewest pixels of the nodes and blocks in view:
        the bottom-right corner unless another (top-right, bottom-left) covers less. Widget coordinates."""
        corners = [
            (self.width() - w - gap, self.height() - h - gap),
            (self.width() - w - gap, gap),
            (gap, self.height() - h - gap),
        ]
        a = self._arrays
        if not a or self.layout_ is None:
            return corners[0]
        solid = np.flatnonzero(a["kind"] != KIND_FRAME)
        sx0 = (a["x"][solid] - self.cx) * self.scale + self.width() / 2
        sy0 = (a["y"][solid] - self.cy) * self.scale + self.height() / 2
        sx1, sy1 = sx0 + a["w"][solid] * self.scale, sy0 + a["h"][solid] * self.scale
        notes = [r for r in (self.legend_rect, self.notice_rect) if r is not None]
        cost = []
        for x, y in corners:
            ox = np.clip(np.minimum(sx1, x + w) - np.maximum(sx0, x), 0, None)
            oy = np.clip(np.minimum(sy1, y + h) - np.maximum(sy0, y), 0, None)
            covered = float((ox * oy).sum())
            if any(r.intersects(QRectF(x, y, w, h)) for r in notes):
                covered += w * h  # never over the legend or a notice
            cost.append(covered)
        return corners[int(np.argmin(cost))]  # the first of equals: bottom-right

    LEGEND_BAND = 72
    """Pixels at the top that the legend covers: Fit keeps the graph below them."""

    def fit(self) -> None:
        """Fit the whole graph, both axes, in the view (never past 1.5x), below the legend."""
        if self.layout_ is None:
            return
        x0, y0, x1, y1 = self.layout_.bounds()
        margin = 40
        top = self.LEGEND_BAND if self.show_legend else 0
        sw = (self.width() - margin) / max(x1 - x0, 1)
        sh = (self.height() - margin - top) / max(y1 - y0, 1)
        self.scale = min(max(min(sw, sh), MIN_SCALE), 1.5)
        # Centre the graph in the part of the view below the legend (the minimap is hidden while all of it shows).
        self.cx = (x0 + x1) / 2
        self.cy = (y0 + y1) / 2 - top / 2 / self.scale
        self._fit_view = (self.cx, self.cy, self.scale)
        self.update()
        self.view_changed.emit()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        # A view left as Fit made it stays fitted: the first view is fitted before the docks settle the canvas's
        # size, and a graph fitted to the taller canvas was cut at the bottom.
        if self.layout_ is not None and self._fit_view == (self.cx, self.cy, self.scale):
            self.fit()
        self.resized.emit()

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
        elif kind == KIND_NODE and self.gm is not None and self.gm.nodes[self.layout_.ref[item]].subgraphs:
            self.body_requested.emit(self.layout_.ref[item])  # an If / Loop / Scan: open its body

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_by(1.25**steps, event.position())

    def keyPressEvent(self, event: Any) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom_by(0.8)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.selected_group >= 0:
            self.group_toggle_requested.emit(self.selected_group)
        elif key in (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_Left, Qt.Key.Key_Right) and self._step(key):
            pass
        else:
            super().keyPressEvent(event)

    def _step(self, key: Any) -> bool:
        """Arrow keys move the selection along the drawn edges: up to a producer, down to a consumer, left
        and right between the items that share the current one's producer."""
        L = self.layout_
        if L is None:
            return False
        cur = L.node_item[self.selected_node] if self.selected_node >= 0 else L.group_item.get(self.selected_group, -1)
        if cur < 0:
            return False
        ups = [e.src for e in L.edges if e.dst == cur]
        downs = [e.dst for e in L.edges if e.src == cur]
        if key == Qt.Key.Key_Up:
            cands = ups
        elif key == Qt.Key.Key_Down:
            cands = downs
        else:
            parent = ups[0] if ups else -1
            sibs = sorted({e.dst for e in L.edges if e.src == parent} | {cur}, key=lambda i: L.x[i])
            k = sibs.index(cur) + (1 if key == Qt.Key.Key_Right else -1)
            cands = [sibs[k]] if 0 <= k < len(sibs) else []
        if not cands:
            return False
        nxt = min(cands, key=lambda i: abs(L.x[i] - L.x[cur]))
        self.select_item(nxt)
        self.center_on_item(nxt, zoom_in=False)
        return True

    def contextMenuEvent(self, event: Any) -> None:
        item = self.item_at(QPointF(event.pos()))
        if item >= 0:
            self.select_item(item)
        self.context_requested.emit(item, event.globalPos())

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
        return (
            f"{self.hier.full_label(g.id)}: {g.size} nodes, {g.plugin} plugin, "
            f"{g.delegate_share:.0%} delegated\nDouble-click to {verb}"
        )

    # --------------------------------------------------------------- paint
    def paintEvent(self, event: Any) -> None:
        import time

        t0 = time.perf_counter()
        p = QPainter(self)
        legend = self.snapshot().render_to(p, self.rect(), self.scene_rect(), self.scale, legend=self.show_legend)
        notice = self._draw_notice(p, self.busy_text, legend) if self.busy_text else None
        p.end()
        moved = (legend, notice) != (self.legend_rect, self.notice_rect)
        self.legend_rect, self.notice_rect = legend, notice
        if moved:
            self.overlays_moved.emit()
        self.last_paint_ms = (time.perf_counter() - t0) * 1000
        if self.layout_ is not None:
            self.painted.emit()

    def _draw_notice(self, p: QPainter, text: str, legend: QRectF | None = None) -> QRectF:
        """A notice at the top, centred, clear of the ``legend`` (beside it where there is room, else under it)."""
        pal = self.palette_
        p.setFont(self.font())
        fm = QFontMetrics(self.font())
        w = fm.horizontalAdvance(text) + 40
        box = QRectF((self.width() - w) / 2, 16, w, fm.height() + 20)
        if legend is not None and box.intersects(legend):
            if legend.right() + 12 + w <= self.width() - 8:
                box.moveLeft(legend.right() + 12)
            else:
                box.moveTop(legend.bottom() + 8)
        bg = QColor(pal.background)
        bg.setAlpha(235)
        p.setPen(QPen(pal.selection, 1.5))
        p.setBrush(bg)
        p.drawRoundedRect(box, 8, 8)
        p.setPen(pal.text)
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
        return box

    def snapshot(self, plain: bool = False) -> GraphPainter:
        """What is on screen now, as a painter that any thread may use: it holds references to the
        current layout arrays, which :meth:`set_graph` replaces (never mutates). ``plain``: without
        selection and search highlights (exports)."""
        return GraphPainter(
            self.gm,
            self.hier,
            self.layout_,
            self._arrays,
            self._frames_by_depth,
            self.palette_,
            -1 if plain else self.selected_node,
            -1 if plain else self.selected_group,
            frozenset() if plain else frozenset(self.highlight_nodes),
            QFont(self.font()),
            QFont(self.font_small),
            self.heat,
        )

    def render_to(self, p: QPainter, target: Any, view: QRectF, scale: float, legend: bool = True) -> None:
        """Paint ``view`` of what is on screen into ``target`` (see :meth:`GraphPainter.render_to`)."""
        self.snapshot().render_to(p, target, view, scale, legend)


class Minimap(QWidget):
    """An overview of the whole graph with the visible area; click or drag to move there."""

    def __init__(self, canvas: GraphCanvas, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.canvas = canvas
        self.setFixedSize(180, 220)
        self._image: QImage | None = None
        self._map: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
        canvas.view_changed.connect(self._follow)

    def _follow(self) -> None:
        """Shown only while the view leaves part of the graph out: over a graph shown whole it would only cover
        part of it (a card in the corner of a small window)."""
        self.setVisible(not self.canvas.shows_all())
        self.update()

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
            r = QRectF(
                (v.left() - x0) * sx + 4, (v.top() - y0) * sy + 4, max(v.width() * sx, 3), max(v.height() * sy, 3)
            )
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
