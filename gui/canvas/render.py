"""Painting a laid-out graph onto any QPainter: the screen, a PNG or SVG export, a report.

A :class:`GraphPainter` is a snapshot: the model, hierarchy and layout arrays as they were
when it was made, the palette, and the selection to show. The canvas makes one per frame;
an export makes one on the UI thread and paints it in a worker while the canvas moves on
to other layouts (it replaces its arrays, never edits them in place).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPainterPath, QPen, QPolygonF
from splitscope.engine.model import GraphModel, Status
from splitscope.engine.text import format_bytes, shape_label
from splitscope.engine.view.hierarchy import Hierarchy
from splitscope.engine.view.layout import HEADER, KIND_FRAME, KIND_NODE, Layout
from splitscope.gui.shell.palette import COLOURS, STATUS_MARK, Palette

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
    return dt + shape_label(t, gm.dims).replace(", ", ",")


def segments_path(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> QPainterPath:
    """One QPainterPath of many line segments, built from numpy without a Python loop."""
    import pyqtgraph as pg  # imported at first use, after the window is up

    n = len(x0)
    xs = np.empty(2 * n)
    ys = np.empty(2 * n)
    xs[0::2], xs[1::2] = x0, x1
    ys[0::2], ys[1::2] = y0, y1
    return pg.arrayToQPath(xs, ys, connect="pairs", finiteCheck=False)


@dataclass(frozen=True, slots=True)
class Heat:
    """A colouring of nodes and blocks by a measured figure. ``nodes``/``groups`` map to values in [0, 1]
    (sequential: share of the largest) or [-1, 1] (diverging: log2 of B over A, clipped at 4x); nodes
    without a value are drawn neutral."""

    nodes: dict[int, float]
    groups: dict[int, float]
    label: str
    diverging: bool = False
    low: str = ""
    high: str = ""
    palette: tuple[str, ...] = ()
    """Categorical: a value is an index into these colours (engine layer, precision)."""
    items: tuple[tuple[str, str], ...] = ()
    """Categorical legend: (label, colour) rows."""


PARTITION_COLOURS = tuple(COLOURS["partitions"])
"""Outline colours of engine partitions (none of them a status colour)."""
SEQUENTIAL = ((255, 247, 236), (253, 212, 158), (252, 141, 89), (215, 48, 31), (127, 0, 0))
DIVERGING = ((0, 114, 178), (140, 190, 220), (245, 245, 245), (240, 160, 120), (213, 94, 0))


def heat_colour(v: float, diverging: bool) -> QColor:
    """The colour of a heat value (see :class:`Heat`)."""
    stops = DIVERGING if diverging else SEQUENTIAL
    t = (min(max(v, -1.0), 1.0) + 1) / 2 if diverging else min(max(v, 0.0), 1.0)
    pos = t * (len(stops) - 1)
    k = min(int(pos), len(stops) - 2)
    f = pos - k
    a, b = stops[k], stops[k + 1]
    return QColor(*(int(a[i] + (b[i] - a[i]) * f) for i in range(3)))


@dataclass(frozen=True, slots=True)
class GraphPainter:
    """A snapshot of a laid-out graph and how to show it; paints from any thread."""

    gm: GraphModel | None
    hier: Hierarchy | None
    layout_: Layout | None
    _arrays: dict[str, np.ndarray]
    _frames_by_depth: np.ndarray
    palette_: Palette
    selected_node: int = -1
    selected_group: int = -1
    highlight_nodes: frozenset[int] = frozenset()
    base_font: QFont | None = None
    font_small: QFont | None = None
    heat: Heat | None = None
    """When set, fills show a measured figure (time share, or a run against another) instead of the status."""

    def font(self) -> QFont:
        """The base font (the canvas widget's)."""
        return QFont(self.base_font) if self.base_font is not None else QFont()

    def render_to(self, p: QPainter, target: Any, view: QRectF, scale: float, legend: bool = True) -> QRectF | None:
        """Draw ``view`` (scene units) into ``target`` at ``scale``; used for screen and export. Returns where the
        legend was drawn (None: none was)."""
        pal = self.palette_
        p.fillRect(target, pal.background)
        a = self._arrays
        if not a or self.gm is None or self.hier is None or self.layout_ is None:
            p.setPen(pal.muted)
            p.drawText(target, Qt.AlignmentFlag.AlignCenter, "Open an ONNX model (Ctrl+O) or drop one here.")
            return None
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
            evis = (
                (np.maximum(ex0, ex1) >= x0)
                & (np.minimum(ex0, ex1) <= x1)
                & (np.maximum(ey0, ey1) >= y0)
                & (np.minimum(ey0, ey1) <= y1)
            )
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
            if "part_lo" in a and bool((a["part_lo"][solid] >= 0).any()):
                self._draw_partitions(p, solid, sx, sy, scale)
            for i in solid:
                rect = QRectF(sx(x[i]), sy(y[i]), w[i] * scale, h[i] * scale)
                if a["kind"][i] == KIND_NODE:
                    self._draw_node(p, rect, L.ref[i], scale)
                else:
                    self._draw_block(p, rect, L.ref[i], scale)
        return self._draw_legend(p) if legend else None

    def _draw_partitions(self, p: QPainter, solid: np.ndarray, sx: Any, sy: Any, scale: float) -> None:
        """Each item in an engine partition gets an outline in that partition's colour, behind it, and (zoomed
        in) a tag naming the engine: items of one engine read as one group at whatever level is shown."""
        a = self._arrays
        lo, hi = a["part_lo"], a["part_hi"]
        f = QFont(self.font())
        f.setPointSizeF(max(6.0, 7.0 * min(scale, 1.6)))
        f.setBold(True)
        fm = QFontMetrics(f)
        p.setFont(f)
        grow = 5 * min(scale, 1.5) + 1
        for i in solid:
            if lo[i] < 0:
                continue
            colour = QColor(PARTITION_COLOURS[int(lo[i]) % len(PARTITION_COLOURS)])
            rect = QRectF(sx(a["x"][i]), sy(a["y"][i]), a["w"][i] * scale, a["h"][i] * scale)
            pen = QPen(colour, max(2.0, 2.5 * min(scale, 1.5)))
            if lo[i] != hi[i]:
                pen.setStyle(Qt.PenStyle.DotLine)  # spans several engines
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            r = 8 * min(scale, 1.5) + grow
            p.drawRoundedRect(rect.adjusted(-grow, -grow, grow, grow), r, r)
            if scale >= LOD_TEXT:
                tag = f"engine {lo[i] + 1}" if lo[i] == hi[i] else f"engines {lo[i] + 1}–{hi[i] + 1}"
                p.setPen(colour)
                p.drawText(QPointF(rect.right() - fm.horizontalAdvance(tag), rect.top() - grow - 3), tag)

    def _draw_edges(
        self, p: QPainter, idx: np.ndarray, sx: Any, sy: Any, scale: float, pen: QPen, labels: bool = False
    ) -> None:
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
            if b1 > b0:
                dy = max(abs(b1 - b0) * 0.5, 20 * scale)
                path.cubicTo(a0, b0 + dy, a1, b1 - dy, a1, b1)
            else:  # into the next column of a wrapped chain: a short hook down, then straight up to its top
                hook = 14 * scale
                path.cubicTo(a0, b0 + hook, a0 + (a1 - a0) * 0.2, b0 + hook, a0 + (a1 - a0) * 0.5, (b0 + b1) / 2)
                path.cubicTo(a1 - (a1 - a0) * 0.2, b1 - hook, a1, b1 - hook, a1, b1)
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
            p.drawPolygon(
                QPolygonF([QPointF(cx, cy - r), QPointF(cx + r, cy + r * 0.8), QPointF(cx - r, cy + r * 0.8)])
            )
        else:
            p.drawEllipse(QPointF(cx, cy), r * 0.85, r * 0.85)

    def _draw_node(self, p: QPainter, rect: QRectF, node: int, scale: float) -> None:
        assert self.gm is not None
        n = self.gm.nodes[node]
        pal = self.palette_
        selected = node == self.selected_node
        matched = node in self.highlight_nodes
        border = pal.selection if selected else pal.status_border[n.status]
        radius = 5 * min(scale, 1.5)
        if matched:  # a search match: a halo around the node, the status fill stays visible
            p.setPen(QPen(pal.match, max(3.0, 5 * min(scale, 1.0))))
            p.setBrush(Qt.BrushStyle.NoBrush)
            grow = 3 * min(scale, 1.0) + 1
            p.drawRoundedRect(rect.adjusted(-grow, -grow, grow, grow), radius + grow, radius + grow)
        p.setPen(QPen(border, 3 if selected else (2 if n.status is Status.PLUGIN else 1)))
        p.setBrush(self._fill(node, None, n.status))
        p.drawRoundedRect(rect, radius, radius)
        if scale < LOD_TEXT:
            return
        r = 5 * scale
        self._marker(p, rect.left() + 10 * scale, rect.top() + 12 * scale, r, n.status)
        text_pen, muted_pen = self._text_pens(node, None)
        p.setPen(text_pen)
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
        hosted = self.hier.hosted.get(node, 0) if self.hier is not None else 0
        badge = f"+{hosted}" if hosted else ""
        if badge:  # folded constants and shape arithmetic: a pill at the top right, the inspector lists them
            f3 = QFont(self.font())
            f3.setPointSizeF(max(5.0, 7.0 * min(scale, 1.6)))
            fm3 = QFontMetrics(f3)
            pill = QRectF(0, 0, fm3.horizontalAdvance(badge) + 8 * scale, fm3.height() + 1)
            pill.moveTopRight(QPointF(rect.right() - 4 * scale, rect.top() + 3 * scale))
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(pal.muted)
            p.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2)
            p.setFont(f3)
            p.setPen(pal.background)
            p.drawText(pill, Qt.AlignmentFlag.AlignCenter, badge)
            p.setFont(f)
            p.setPen(text_pen)
            text_rect = text_rect.adjusted(0, 0, -pill.width() - 2 * scale, 0)
        p.drawText(
            text_rect,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
            fm.elidedText(op, Qt.TextElideMode.ElideRight, int(text_rect.width())),
        )
        if badge:
            text_rect = text_rect.adjusted(0, 0, pill.width() + 2 * scale, 0)
        f2 = QFont(self.font())
        f2.setPointSizeF(max(5.0, 7.5 * min(scale, 1.6)))
        p.setFont(f2)
        fm2 = QFontMetrics(f2)
        p.setPen(muted_pen)
        out = _shape_text(self.gm, n.outputs[0]) if n.outputs else ""
        name = n.label.rsplit("/", 1)[-1]
        lines = out if name == n.op_type else f"{name}\n{out}"
        p.drawText(
            text_rect.adjusted(0, fm.height(), 0, 0),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
            "\n".join(
                fm2.elidedText(s, Qt.TextElideMode.ElideMiddle, int(text_rect.width())) for s in lines.split("\n")
            ),
        )

    def _text_pens(self, node: int | None, gid: int | None) -> tuple[QColor, QColor]:
        """Text and secondary-text colours that read on the item's fill (light text on a dark heat colour)."""
        pal = self.palette_
        if self.heat is None:
            return pal.text, pal.muted
        c = self._fill(node, gid, Status.DELEGATE)
        if 0.299 * c.red() + 0.587 * c.green() + 0.114 * c.blue() < 140:
            return QColor(255, 255, 255), QColor(235, 235, 235)
        return QColor(20, 20, 20), QColor(70, 70, 70)

    def _fill(self, node: int | None, gid: int | None, status: Status) -> QColor:
        h = self.heat
        if h is None:
            return self.palette_.status_fill[status]
        v = h.nodes.get(node) if node is not None else h.groups.get(gid) if gid is not None else None
        if v is None:  # not measured (or left as written): a neutral grey, set apart from the frames it sits in
            return QColor(self.palette_.neutral)
        if h.palette:
            return QColor(h.palette[int(v) % len(h.palette)])
        return heat_colour(v, h.diverging)

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
        p.setBrush(self._fill(None, gid, status))
        radius = 8 * min(scale, 1.5)
        p.drawRoundedRect(rect, radius, radius)
        # A second outline: a block stands for many nodes.
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRoundedRect(rect.adjusted(3 * scale, 3 * scale, -3 * scale, -3 * scale), radius, radius)
        bar = QRectF(rect.left() + 8 * scale, rect.bottom() - 12 * scale, rect.width() - 16 * scale, 5 * scale)
        self._share_bar(p, bar, g.bar_share)
        if scale < LOD_TEXT:
            return
        self._marker(p, rect.left() + 14 * scale, rect.top() + 16 * scale, 5 * scale, status)
        f = QFont(self.font())
        f.setPointSizeF(max(6.0, 9.5 * min(scale, 1.6)))
        f.setBold(True)
        p.setFont(f)
        text_pen, muted_pen = self._text_pens(None, gid)
        p.setPen(text_pen)
        fm = QFontMetrics(f)
        tr = rect.adjusted(24 * scale, 5 * scale, -6 * scale, -14 * scale)
        p.drawText(
            tr,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
            fm.elidedText(g.label, Qt.TextElideMode.ElideMiddle, int(tr.width())),
        )
        f2 = QFont(self.font())
        f2.setPointSizeF(max(5.0, 7.5 * min(scale, 1.6)))
        p.setFont(f2)
        p.setPen(muted_pen)
        top_left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        line = tr.adjusted(0, fm.height() + 2 * scale, 0, 0)
        if g.plugin:  # how many plugin nodes it holds, first and in the plugin colour and shape
            f3 = QFont(f2)
            f3.setBold(True)
            p.setFont(f3)
            p.setPen(pal.status_border[Status.PLUGIN])
            mark = f"{STATUS_MARK[Status.PLUGIN]} {g.plugin} plugin  "
            p.drawText(line, top_left, mark)
            line = line.adjusted(QFontMetrics(f3).horizontalAdvance(mark), 0, 0, 0)
            p.setFont(f2)
            p.setPen(muted_pen)
        # Short enough for a card ("of FLOPs delegated" was cut on most): all, or the share of what is known; the
        # share goes first where the line is short (it is on the bar and in the tooltip).
        of = "FLOPs" if g.flops else "of nodes"
        share = "all delegated" if not g.plugin else f"{g.delegate_share:.0%} {of} delegated"
        rep = g.repeat
        count = f"{rep[0]} × {rep[1]:,} nodes" if rep else f"{g.size:,} {'node' if g.size == 1 else 'nodes'}"
        fm2, room = QFontMetrics(f2), int(line.width())
        info = next((t for t in (f"{count} · {share}", count) if fm2.horizontalAdvance(t) <= room), count)
        p.drawText(line, top_left, fm2.elidedText(info, Qt.TextElideMode.ElideRight, room))

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
        p.drawText(
            head.adjusted(0, 0, -bar_w - 6 * scale, 0),
            left_mid,
            QFontMetrics(f).elidedText(text, Qt.TextElideMode.ElideRight, int(head.width() - bar_w)),
        )
        bar = QRectF(head.right() - bar_w, head.center().y() - 3 * scale, bar_w, 6 * scale)
        self._share_bar(p, bar, g.bar_share)

    def _draw_legend(self, p: QPainter, at: QPointF | None = None) -> QRectF:
        pal = self.palette_
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        f = QFont(self.font())
        f.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.9))
        p.setFont(f)
        fm = QFontMetrics(f)
        rows = [
            (Status.DELEGATE, "delegate: TensorRT takes it"),
            (Status.PLUGIN, "plugin: needs custom CUDA"),
            (None, "partition boundary (bytes/inference)"),
        ]
        heat = self.heat
        width = max(fm.horizontalAdvance(t) for _, t in rows) + 44
        height = len(rows) * (fm.height() + 4) + 12
        box = QRectF(at.x() if at else 10, at.y() if at else 10, width, height)
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
        if heat is not None:  # the colour scale of the heat map, in its own box beside, with its ends named
            hb_w = max(fm.horizontalAdvance(heat.label) + 20, 200 if not heat.items else 330)
            hb = QRectF(box.right() + 8, box.top(), hb_w, height + (fm.height() + 2 if heat.items else 0))
            p.setPen(QPen(pal.frame_border))
            p.setBrush(bg)
            p.drawRoundedRect(hb, 6, 6)
            yy = hb.top() + 8 + fm.ascent()
            p.setPen(pal.text)
            p.drawText(QPointF(hb.left() + 10, yy), heat.label)
            if heat.items:  # categorical: a swatch per category, in columns
                cols = max(1, (len(heat.items) + 2) // 3)
                col_w = (hb.width() - 20) / cols
                for k, (label, colour) in enumerate(heat.items[: cols * 3]):
                    cx = hb.left() + 10 + (k // 3) * col_w
                    cy = yy + 6 + (k % 3) * (fm.height() + 2)
                    p.setPen(Qt.PenStyle.NoPen)
                    p.setBrush(QColor(colour))
                    p.drawRect(QRectF(cx, cy + 2, 10, fm.height() - 4))
                    p.setPen(pal.text)
                    p.drawText(
                        QPointF(cx + 14, cy + fm.ascent()),
                        fm.elidedText(label, Qt.TextElideMode.ElideRight, int(col_w - 18)),
                    )
                return box
            yy += 6
            bar = QRectF(hb.left() + 10, yy, hb.width() - 20, fm.height() * 0.8)
            steps = 24
            for k in range(steps):
                v = (k / (steps - 1)) * 2 - 1 if heat.diverging else k / (steps - 1)
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(heat_colour(v, heat.diverging))
                p.drawRect(
                    QRectF(bar.left() + bar.width() * k / steps, bar.top(), bar.width() / steps + 0.5, bar.height())
                )
            yy = bar.bottom() + fm.ascent() + 2
            p.setPen(pal.muted)
            p.drawText(QPointF(bar.left(), yy), heat.low)
            p.drawText(QPointF(bar.right() - fm.horizontalAdvance(heat.high), yy), heat.high)
        return box

    HEADER_PX = 92.0
    """Height of an export's title band (model name, headline, legend), in scene units."""

    def _subtitle_font(self) -> QFont:
        f = QFont(self.font())
        f.setPointSizeF(8.5)
        return f

    def _band(self, page_w: float, subtitle: str) -> float:
        """Height of the title band: the title, then the headline wrapped beside the legend."""
        from PySide6.QtCore import QRect

        text_w = max(100, int(page_w - 300 - 30 - 20))
        rect = QFontMetrics(self._subtitle_font()).boundingRect(
            QRect(0, 0, text_w, 100000), int(Qt.TextFlag.TextWordWrap), subtitle
        )
        return max(self.HEADER_PX, 40.0 + rect.height() + 12)

    def _export_page(self, p: QPainter, target: QRectF, scale: float, title: str, subtitle: str) -> None:
        """An export: a title band (the model's name, the headline, the legend beside them, outside the
        graph), then the whole graph below it."""
        assert self.layout_ is not None
        x0, y0, x1, y1 = self.layout_.bounds()
        m = 20.0
        pal = self.palette_
        p.fillRect(target, pal.background)
        p.save()
        p.scale(scale, scale)
        band = self._band(target.width() / scale, subtitle)
        legend = self._draw_legend(p, QPointF(target.width() / scale - 300, 10))
        f = QFont(self.font())
        f.setPointSizeF(13)
        f.setBold(True)
        p.setFont(f)
        p.setPen(pal.text)
        text_w = max(100.0, legend.left() - 30)
        p.drawText(QRectF(m, 8, text_w, 24), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        p.setFont(self._subtitle_font())
        p.setPen(pal.muted)
        p.drawText(
            QRectF(m, 34, text_w, band - 38), int(Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap), subtitle
        )
        p.restore()
        w, h = x1 - x0 + 2 * m, y1 - y0 + 2 * m
        self.render_to(
            p, QRectF(0, band * scale, w * scale, h * scale), QRectF(x0 - m, y0 - m, w, h), scale, legend=False
        )

    def export_size(self, subtitle: str = "") -> tuple[float, float]:
        """Scene size of an export page: the graph with its margin, under the title band (at least 720 wide,
        so the title, the headline and the legend fit)."""
        assert self.layout_ is not None
        x0, y0, x1, y1 = self.layout_.bounds()
        w = max(x1 - x0 + 40.0, 720.0)
        return w, y1 - y0 + 40.0 + self._band(w, subtitle)

    def render_image(
        self, max_side: int = 16000, title: str = "", subtitle: str = "", resolution: float = 2.0
    ) -> QImage:
        """The whole graph as an image (PNG export), at ``resolution`` pixels per scene unit (2x: sharp on a
        high-density screen and in slides), shrunk to ``max_side`` pixels if it would be larger."""
        if self.layout_ is None:
            return QImage()
        w, h = self.export_size(subtitle)
        scale = min(resolution, max_side / max(w, h))
        img = QImage(max(1, math.ceil(w * scale)), max(1, math.ceil(h * scale)), QImage.Format.Format_ARGB32)
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        self._export_page(p, QRectF(img.rect()), scale, title, subtitle)
        p.end()
        return img

    def render_svg(self, path: str, title: str = "", subtitle: str = "") -> None:
        """Write the whole graph as SVG, with the same title band as :meth:`render_image`."""
        from PySide6.QtSvg import QSvgGenerator

        if self.layout_ is None:
            return
        w, h = self.export_size(subtitle)
        gen = QSvgGenerator()
        gen.setFileName(path)
        gen.setSize(QSize(math.ceil(w), math.ceil(h)))
        gen.setViewBox(QRectF(0, 0, w, h))
        gen.setTitle(title or "Splitscope graph")
        gen.setDescription(subtitle)
        p = QPainter(gen)
        self._export_page(p, QRectF(0, 0, w, h), 1.0, title, subtitle)
        p.end()
