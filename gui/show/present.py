"""Present mode (View › Present, F11): a full-screen board for a meeting, readable from the back of a room.

The headline in large type; the graph fitted with plugin nodes marked and partitions outlined; the three
numbers that matter (the share of the work TensorRT takes, the partitions and the bytes crossing them,
where the time goes); the chosen scenario against today. Arrow keys step through the custom nodes, each
shown with its reason, cost and plan and ringed on the graph; Esc leaves; D switches between the light
board (the default: projectors) and a dark one; Ctrl+C copies the board as an image for slides.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QImage, QKeyEvent, QPainter, QPen
from PySide6.QtWidgets import QWidget
from splitscope.engine.plan.scenario import PLANS
from splitscope.engine.text import format_bytes
from splitscope.gui.shell.palette import COLOURS, make_palette

if TYPE_CHECKING:
    from splitscope.gui.shell.host import Shell
    from splitscope.gui.show.planner import PlannerUi

LIGHT = dict(COLOURS["board_light"])
DARK = dict(COLOURS["board_dark"])


class PresentBoard(QWidget):
    """The board. Built from the window's model, canvas layout, planner and profile when opened."""

    stepped = Signal(int)
    """The custom node shown changed (its position in the list)."""
    dark_changed = Signal(bool)
    """D switched the board's theme (the menu remembers it for the next board)."""

    def __init__(self, shell: Shell, planner: PlannerUi, dark: bool = False) -> None:
        super().__init__(None, Qt.WindowType.Window)
        self.shell, self.planner = shell, planner
        self.dark = dark
        self.setWindowTitle("Splitscope: present")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.step = -1
        self.layout_ = None  # the board's own layout, readable from the back of a room (from a worker)
        self._worker: Any = None
        self.refresh()

    # -------------------------------------------------------------- data
    def refresh(self) -> None:
        """Take the figures from the window as they are now."""
        c, planner = self.shell.controller, self.planner
        gm, view = c.graph_model, c.view
        self.gm = gm
        self.headline = (view.stats or {}).get("headline", "") if view is not None else ""
        self.items = [it for it in planner.items if it.kind == "plugin"] if gm is not None else []
        results = planner.results
        scen = planner.current()
        self.today = results[0] if results else None
        self.mine = next((d for d in results if scen is not None and d.name == scen.name), None)
        prof = planner.profile()
        self.profile = prof
        self.node_ms = {r.name: r.ms for r in prof.per_node} if prof is not None else {}
        self._figures = self._compute_numbers()  # once: paintEvent runs every frame, a 50k-node sum does not
        self.update()

    BOARD_SCALE = 1.15
    """The scale the board's graph aims at: labels of 14 px or more at 1080p."""

    def showEvent(self, e: Any) -> None:
        super().showEvent(e)
        if self.layout_ is None and self._worker is None:
            self._lay_out()

    def _lay_out(self) -> None:
        """The shallowest-first expansion whose graph fits the board's graph area at :data:`BOARD_SCALE`
        (the deepest that does; else the shallowest), laid out in a worker: a 50k-node model never stalls."""
        view = self.shell.controller.view
        if view is None:
            return
        from splitscope.engine.jobs import CancelToken, run_to_end
        from splitscope.engine.view.layout import compute_layout, expansion_levels, fitted_scale
        from splitscope.profiler.workers import function_worker

        ctx = view.ctx
        size = (int(self.width() * 0.58), int(self.height() * 0.6))
        self._token = token = CancelToken()

        def work() -> Any:
            levels = expansion_levels(ctx.h)
            chosen = None
            for exp in reversed(levels):
                lay = run_to_end(compute_layout(ctx, exp, token))
                chosen = lay
                if fitted_scale(lay, size, margin=72, top=0) >= self.BOARD_SCALE:
                    break
            return chosen

        w = function_worker(work)
        w.returned.connect(self._laid_out)
        self._worker = w
        w.start()

    def closeEvent(self, e: Any) -> None:
        token = getattr(self, "_token", None)
        if token is not None:
            token.cancel()  # a layout still running stops at its next step
        super().closeEvent(e)

    def _laid_out(self, layout: Any) -> None:
        self.layout_ = layout
        self._worker = None
        self.update()

    def numbers(self) -> list[tuple[str, str]]:
        """The three numbers that matter, as (big, caption)."""
        return self._figures

    def _compute_numbers(self) -> list[tuple[str, str]]:
        gm = self.gm
        if gm is None:
            return []
        from splitscope.engine.plan.scenario import work_share
        from splitscope.engine.text import plural

        share, caption = work_share(gm, self.profile)
        parts = plural(len(gm.partitions), "engine partition")
        out = [
            (f"{share:.0%}" if share is not None else "—", caption),
            (
                str(len(gm.partitions)),
                f"{parts.split(' ', 1)[1]}, {format_bytes(gm.boundary_bytes)} crossing them"
                if len(gm.partitions) != 1
                else "engine partition: nothing crosses between engines",
            ),
        ]
        prof = self.profile
        if prof is not None and (prof.verdict.verdict or prof.verdict.why):
            from splitscope.engine.runtime.roofline import time_split_text

            out.append((prof.verdict.verdict, time_split_text(prof.json)))
        else:
            out.append(("?", "where the time goes: profile the model (Tools › Profile…)"))
        return out

    def card(self) -> tuple[str, str] | None:
        """The custom node being shown: (title, details)."""
        if not self.items or self.step < 0:
            return None
        it = self.items[self.step % len(self.items)]
        assert self.gm is not None
        ms = sum(self.node_ms.get(self.gm.nodes[i].name, 0.0) for i in it.nodes)
        cost = f"measured {ms:.3g} ms in the profiled runs" if ms else "cost unknown until profiled"
        plan_key = (
            self.planner.current().plans.get(it.key, it.today)  # type: ignore[union-attr]
            if self.planner.current()
            else it.today
        )
        ships = f"; TensorRT ships {it.matches[0]['plugin']} ({it.matches[0]['kind']})" if it.matches else ""
        return (
            f"{self.step % len(self.items) + 1}/{len(self.items)}  ▲ {it.label}",
            f"{it.reason[:1].upper()}{it.reason[1:]}. {cost[:1].upper()}{cost[1:]}. Plan: {PLANS[plan_key]}{ships}.",
        )

    # ------------------------------------------------------------ events
    def event(self, e: QEvent) -> bool:
        """The board's keys are its own: Esc leaves the board (the window's Esc cancels jobs)."""
        if (
            e.type() == QEvent.Type.ShortcutOverride
            and isinstance(e, QKeyEvent)
            and e.key()
            in (Qt.Key.Key_Escape, Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_D)
        ):
            e.accept()
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        k = e.key()
        if k == Qt.Key.Key_Escape:
            self.close()
        elif k in (Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_Space, Qt.Key.Key_PageDown) and self.items:
            self.step = (self.step + 1) % len(self.items)
            self.stepped.emit(self.step)
            self.update()
        elif k in (Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_PageUp) and self.items:
            self.step = (self.step - 1) % len(self.items) if self.step >= 0 else len(self.items) - 1
            self.stepped.emit(self.step)
            self.update()
        elif k == Qt.Key.Key_D:
            self.dark = not self.dark
            self.dark_changed.emit(self.dark)
            self.update()
        elif k == Qt.Key.Key_C and e.modifiers() & Qt.KeyboardModifier.ControlModifier:
            from splitscope.gui.shell.exports import copy_image

            copy_image(self.image())
        else:
            super().keyPressEvent(e)

    def image(self, scale: float = 1.0) -> QImage:
        """The board as an image."""
        img = QImage(int(self.width() * scale), int(self.height() * scale), QImage.Format.Format_ARGB32)
        img.setDevicePixelRatio(scale)
        p = QPainter(img)
        self.paint(p)
        p.end()
        return img

    def paintEvent(self, _e: Any) -> None:
        p = QPainter(self)
        self.paint(p)
        p.end()

    # ----------------------------------------------------------- drawing
    def _font(self, px: float, bold: bool = False) -> QFont:
        f = QFont(self.font())
        f.setPixelSize(max(int(px), 8))
        f.setBold(bold)
        return f

    def paint(self, p: QPainter) -> None:
        c = {k: QColor(v) for k, v in (DARK if self.dark else LIGHT).items()}
        W, H = self.width(), self.height()
        u = max(min(W / 1920, H / 1080), 0.4)  # type scales with the screen: 1080p is the reference
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        p.fillRect(self.rect(), c["bg"])
        m = 40 * u
        if self.gm is None:
            p.setPen(c["muted"])
            p.setFont(self._font(40 * u))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "Open a model first. Esc leaves.")
            return
        name = self.gm.path.name if self.gm.path else "model"
        if self.gm.dims or self.gm.missing_dims:  # the shapes every figure on the board is counted at
            name += f"  ·  at {self.gm.shapes_label()}"
        p.setPen(c["muted"])
        p.setFont(self._font(24 * u))
        p.drawText(QRectF(m, m * 0.6, W - 2 * m, 34 * u), Qt.AlignmentFlag.AlignLeft, name)
        p.setPen(c["text"])
        head = QRectF(m, m * 0.6 + 38 * u, W - 2 * m, 130 * u)
        size = 44 * u
        text = self.short_headline()
        while size > 18 * u:  # as large as fits two or three lines
            p.setFont(self._font(size, True))
            need = p.boundingRect(head, Qt.TextFlag.TextWordWrap | Qt.AlignmentFlag.AlignLeft, text)
            if need.height() <= head.height():
                break
            size *= 0.92
        p.drawText(head, Qt.TextFlag.TextWordWrap | Qt.AlignmentFlag.AlignLeft, text)
        top = head.bottom() + 16 * u
        card_h = 120 * u
        graph = QRectF(m, top, (W - 2 * m) * 0.58, H - top - m - card_h - 16 * u)
        side = QRectF(graph.right() + 30 * u, top, W - graph.right() - 30 * u - m, graph.height())
        self._graph(p, graph, c)
        self._numbers(p, side, c, u)
        self._card(p, QRectF(m, graph.bottom() + 16 * u, W - 2 * m, card_h), c, u)

    def short_headline(self) -> str:
        """The decision in one sentence (:func:`splitscope.engine.plan.scenario.decision`)."""
        from splitscope.engine.plan.scenario import decision

        return decision(self.planner.items, self.today, self.mine) if self.gm is not None else ""

    def _graph(self, p: QPainter, area: QRectF, c: dict[str, QColor]) -> None:
        canvas = self.shell.canvas
        snap = canvas.snapshot(plain=True)
        if snap.layout_ is None:
            return
        sel = -1
        if self.step >= 0 and self.items:
            sel = self.items[self.step % len(self.items)].nodes[0]
        mine: dict[str, Any] = {}
        if self.layout_ is not None:  # the board's own layout, once laid out (the canvas's until then)
            import numpy as np
            from splitscope.engine.view.layout import KIND_FRAME

            kind, depth = self.layout_.arrays["kind"], self.layout_.arrays["depth"]
            frames = np.flatnonzero(kind == KIND_FRAME)
            mine = {
                "layout_": self.layout_,
                "_arrays": self.layout_.arrays,
                "_frames_by_depth": frames[np.argsort(depth[frames], kind="stable")],
            }
        snap = dataclasses.replace(snap, palette_=make_palette(self.dark), heat=None, selected_node=sel, **mine)
        x0, y0, x1, y1 = snap.layout_.bounds()
        pad = 36.0  # engine tags, outlines and hooks reach past the items' boxes
        x0, y0, x1, y1 = x0 - pad, y0 - pad, x1 + pad, y1 + pad
        scale = min(area.width() / max(x1 - x0, 1), area.height() / max(y1 - y0, 1), 1.8)
        view = QRectF(
            x0 - (area.width() / scale - (x1 - x0)) / 2,
            y0 - (area.height() / scale - (y1 - y0)) / 2,
            area.width() / scale,
            area.height() / scale,
        )
        p.save()
        p.setClipRect(area)
        snap.render_to(p, area, view, scale, legend=False)
        if sel >= 0:  # ring the custom node being talked about
            item = snap.layout_.node_item[sel]
            lx, ly = snap.layout_.x[item], snap.layout_.y[item]
            lw, lh = snap.layout_.w[item], snap.layout_.h[item]
            r = QRectF(
                area.left() + (lx - view.left()) * scale - 10,
                area.top() + (ly - view.top()) * scale - 10,
                lw * scale + 20,
                lh * scale + 20,
            )
            p.setPen(QPen(c["plugin"], 5))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(r, 12, 12)
        p.restore()

    def _numbers(self, p: QPainter, area: QRectF, c: dict[str, QColor], u: float) -> None:
        y = area.top()
        box_h = 130 * u
        for big, caption in self.numbers():
            box = QRectF(area.left(), y, area.width(), box_h)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(c["card"])
            p.drawRoundedRect(box, 14 * u, 14 * u)
            p.setPen(c["accent"])
            p.setFont(self._font(54 * u, True))
            p.drawText(
                box.adjusted(22 * u, 8 * u, -16 * u, -50 * u),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                big,
            )
            p.setPen(c["text"])
            cap = box.adjusted(22 * u, 76 * u, -16 * u, -4 * u)
            size = 22 * u
            while size > 14 * u:  # a long caption takes a smaller size rather than leaving the card
                p.setFont(self._font(size))
                if p.boundingRect(cap, Qt.TextFlag.TextWordWrap, caption).height() <= cap.height():
                    break
                size *= 0.92
            p.drawText(cap, Qt.TextFlag.TextWordWrap, caption)
            y += box_h + 16 * u
        if self.today is None:
            return
        p.setPen(c["text"])
        p.setFont(self._font(26 * u, True))
        if self.mine:
            title = "Today against " + self.mine.name
        elif self.planner.scenarios:
            title = "Today (pick a scenario in the planner to compare)"
        else:
            title = "Today (make a scenario in the planner to compare)"
        title = p.fontMetrics().elidedText(title, Qt.TextElideMode.ElideRight, int(area.width()))
        p.drawText(QRectF(area.left(), y + 4 * u, area.width(), 36 * u), Qt.AlignmentFlag.AlignLeft, title)
        y += 46 * u
        rows = [
            ("partitions", str(self.today.partitions), str(self.mine.partitions) if self.mine else "—"),
            (
                "bytes crossing",
                format_bytes(self.today.boundary_bytes),
                format_bytes(self.mine.boundary_bytes) if self.mine else "—",
            ),
        ]
        if self.today.latency is not None:
            lat = self.mine.latency if self.mine else None
            from splitscope.engine.plan.scenario import fmt_ms, range_text

            rows.append(("latency", fmt_ms(self.today.latency.today_ms), range_text(lat) if lat is not None else "—"))
        if self.mine:
            rows.append(("custom work", "—", ", ".join(self.mine.custom_work) or "none"))
        p.setFont(self._font(22 * u))
        col = area.width() / 3
        fm = p.fontMetrics()
        for label, a, b in rows:
            a, b = (
                fm.elidedText(a, Qt.TextElideMode.ElideRight, int(col)),
                fm.elidedText(b, Qt.TextElideMode.ElideRight, int(col)),
            )
            p.setPen(c["muted"])
            p.drawText(QRectF(area.left(), y, col, 32 * u), Qt.AlignmentFlag.AlignLeft, label)
            p.setPen(c["text"])
            p.drawText(QRectF(area.left() + col, y, col, 32 * u), Qt.AlignmentFlag.AlignLeft, a)
            p.drawText(QRectF(area.left() + 2 * col, y, col, 32 * u), Qt.AlignmentFlag.AlignLeft, b)
            y += 34 * u

    def _card(self, p: QPainter, box: QRectF, c: dict[str, QColor], u: float) -> None:
        card = self.card()
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(c["card"])
        p.drawRoundedRect(box, 14 * u, 14 * u)
        if card is None:
            p.setPen(c["muted"])
            p.setFont(self._font(24 * u))
            hint = (
                "→ steps through the custom nodes · D dark/light · Ctrl+C copies the board · Esc leaves"
                if self.items
                else "TensorRT takes every node: nothing custom to show. Esc leaves."
            )
            p.drawText(box.adjusted(22 * u, 0, -22 * u, 0), Qt.AlignmentFlag.AlignVCenter, hint)
            return
        title, text = card
        p.setPen(c["plugin"])
        p.setFont(self._font(30 * u, True))
        p.drawText(box.adjusted(22 * u, 12 * u, -22 * u, -70 * u), Qt.AlignmentFlag.AlignLeft, title)
        p.setPen(c["text"])
        p.setFont(self._font(23 * u))
        p.drawText(box.adjusted(22 * u, 56 * u, -22 * u, -8 * u), Qt.TextFlag.TextWordWrap, text)
