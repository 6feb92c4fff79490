"""The Splitscope main window."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QToolBar,
    QWidget,
)
from splitscope.engine.model import GraphModel
from splitscope.engine.report.stats import panel_stats
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.engine.view.layout import View, prepare_view, relayout
from splitscope.gui.canvas import GraphCanvas, Minimap
from splitscope.gui.palette import make_palette, system_is_dark
from splitscope.gui.panels import Inspector, OpsPanel, SummaryPanel
from splitscope.profiler.jobs import JobRunner

MAX_RECENT = 10
APP_VERSION = "0.1.0"


class MainWindow(QMainWindow):
    """Open a model, see its split on a graph canvas, inspect nodes and ops."""

    view_ready = Signal()
    """A new layout is on the canvas."""
    export_finished = Signal(str)
    """A graph export ended: the path written, or '' when it failed."""

    def __init__(self, parser: str = "auto") -> None:
        super().__init__()
        self.parser = parser
        self.setWindowTitle("Splitscope")
        self.setAcceptDrops(True)
        self.graph_model: GraphModel | None = None
        self.view: View | None = None
        self.pending_path: Path | None = None
        self.matches: list[int] = []
        self.match_pos = -1
        self.dark_override: bool | None = None
        self.runner = JobRunner(self)  # analysis
        self.layout_runner = JobRunner(self)
        self.dep_status: dict[str, Any] = {}
        self._early_model: GraphModel | None = None
        self._first_layout = threading.Event()
        self._final_pending = False

        # A job still running after 2.5 s says so over the canvas, with how to stop it.
        self._slow_timer = QTimer(self)
        self._slow_timer.setSingleShot(True)
        self._slow_timer.setInterval(2500)
        self._slow_timer.timeout.connect(self._show_slow_notice)
        self.canvas = GraphCanvas()
        self.minimap = Minimap(self.canvas, self.canvas)
        self.setCentralWidget(self.canvas)
        self.inspector = Inspector()
        self.ops = OpsPanel()
        self.summary = SummaryPanel()
        d1 = self._dock("Inspector", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea)
        d2 = self._dock("Split summary", self.summary, Qt.DockWidgetArea.RightDockWidgetArea)
        d3 = self._dock("Ops", self.ops, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.resizeDocks([d1, d2], [420, 340], Qt.Orientation.Vertical)
        self.resizeDocks([d1], [520], Qt.Orientation.Horizontal)
        self.resizeDocks([d3], [200], Qt.Orientation.Vertical)

        self._build_toolbar()
        self._build_status_bar()
        self._build_menus()
        self._apply_theme()

        self.canvas.node_selected.connect(self._on_node_selected)
        self.canvas.group_selected.connect(self._on_group_selected)
        self.canvas.group_toggle_requested.connect(self.toggle_group)
        self.ops.op_chosen.connect(self._on_op_chosen)
        self.runner.progress_changed.connect(self._on_analysis_progress)
        self.layout_runner.progress_changed.connect(self._on_progress)
        for r in (self.runner, self.layout_runner):
            r.job_failed.connect(self._on_failed)
            r.job_cancelled.connect(lambda: self.statusBar().showMessage("Cancelled.", 5000))
            r.running_changed.connect(self._update_running)
        self.runner.job_finished.connect(self._on_analysed)
        self.layout_runner.job_finished.connect(self._on_laid_out)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(lambda *_: self._apply_theme())

        settings = QSettings()
        geometry = settings.value("main/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1400, 860)
        state = settings.value("main/state")
        if state is not None:
            self.restoreState(state)
        self._probe_dependencies()

    # ------------------------------------------------------------ building
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.replace(' ', '_')}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_toolbar(self) -> None:
        tb = QToolBar("Search", self)
        tb.setObjectName("toolbar_search")
        self.addToolBar(tb)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search node name or op type (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.setMaximumWidth(320)
        self.search.returnPressed.connect(self._search_now_and_next)
        # Matching scans every node: wait until typing pauses (50k nodes take ~25 ms a scan).
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(150)
        self._search_timer.timeout.connect(lambda: self._search_changed(self.search.text()))
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        tb.addWidget(self.search)
        self.prev_button = QPushButton("◀")
        self.prev_button.setToolTip("Previous match (Shift+F3)")
        self.prev_button.clicked.connect(self.find_previous)
        self.next_button = QPushButton("▶")
        self.next_button.setToolTip("Next match (F3)")
        self.next_button.clicked.connect(self.find_next)
        self.match_label = QLabel("")
        tb.addWidget(self.prev_button)
        tb.addWidget(self.next_button)
        tb.addWidget(self.match_label)
        tb.addSeparator()
        for text, slot, tip in (("Fit", self.canvas.fit, "Fit the graph (F)"),
                                ("Expand all", self.expand_all, "Expand every group (slow on huge graphs)"),
                                ("Collapse all", self.collapse_all, "Collapse to the top-level scopes"),
                                ("Open in Netron", self.open_in_netron, "A second opinion, served on 127.0.0.1")):
            act = QAction(text, self)
            act.setToolTip(tip)
            act.triggered.connect(slot)
            tb.addAction(act)

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.badges: dict[str, QLabel] = {}
        for name, label in (("tensorrt", "TensorRT"), ("tensorrt-rtx", "TensorRT-RTX"), ("cuda", "CUDA"),
                            ("nvml", "NVML")):
            b = QLabel(f"{label}: …")
            b.setObjectName(f"badge_{name}")
            b.setContentsMargins(6, 0, 6, 0)
            sb.addPermanentWidget(b)
            self.badges[name] = b
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Cancel the running job (Esc)")
        self.cancel_button.clicked.connect(self.cancel_jobs)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)
        self._update_running()

    def _action(self, menu: Any, text: str, slot: Any, shortcut: Any = None, checkable: bool = False) -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(shortcut)
        act.setCheckable(checkable)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _build_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self._action(f, "&Open…", self.choose_file, QKeySequence.StandardKey.Open)
        self.recent_menu = f.addMenu("Open &Recent")
        self._action(f, "Open &Sample", lambda: self.open_model(SAMPLE_MODEL))
        f.addSeparator()
        self._action(f, "Export Graph as &PNG…", lambda: self.export_graph("png"))
        self._action(f, "Export Graph as S&VG…", lambda: self.export_graph("svg"))
        f.addSeparator()
        self._action(f, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        self._rebuild_recent()
        v = mb.addMenu("&View")
        self._action(v, "&Fit", self.canvas.fit, Qt.Key.Key_F)
        self._action(v, "Zoom &In", lambda: self.canvas.zoom_by(1.25), QKeySequence.StandardKey.ZoomIn)
        self._action(v, "Zoom &Out", lambda: self.canvas.zoom_by(0.8), QKeySequence.StandardKey.ZoomOut)
        self.legend_action = self._action(v, "&Legend", self._toggle_legend, checkable=True)
        self.legend_action.setChecked(True)
        v.addSeparator()
        self.dark_action = self._action(v, "&Dark Theme", self._toggle_dark, checkable=True)
        self._action(v, "Theme Follows the &System", self._follow_system)
        v.addSeparator()
        self._action(v, "Find…", self._focus_search, QKeySequence.StandardKey.Find)
        self._action(v, "Find Next", self.find_next, QKeySequence.StandardKey.FindNext)
        self._action(v, "Find Previous", self.find_previous, QKeySequence.StandardKey.FindPrevious)
        h = mb.addMenu("&Help")
        self._action(h, "&About Splitscope", self.show_about)
        esc = QAction("Cancel job", self)
        esc.setShortcut(Qt.Key.Key_Escape)
        esc.triggered.connect(self.cancel_jobs)
        self.addAction(esc)

    # -------------------------------------------------------------- theme
    def _is_dark(self) -> bool:
        return self.dark_override if self.dark_override is not None else system_is_dark()

    def _apply_theme(self) -> None:
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "setColorScheme"):  # Qt 6.8+: the whole app follows a forced choice
            wanted = {None: Qt.ColorScheme.Unknown, True: Qt.ColorScheme.Dark, False: Qt.ColorScheme.Light}
            if hints.colorScheme() != wanted[self.dark_override] or self.dark_override is None:
                hints.blockSignals(True)
                hints.setColorScheme(wanted[self.dark_override])
                hints.blockSignals(False)
        dark = self._is_dark()
        _apply_app_palette(dark)
        self.dark_action.setChecked(dark)
        pal = make_palette(dark)
        self.canvas.set_palette(pal)
        self.minimap.refresh()
        self.summary.set_stats(self.graph_model, self.view.stats if self.view else None, pal)

    def _toggle_dark(self, checked: bool) -> None:
        self.dark_override = checked
        self._apply_theme()

    def _follow_system(self) -> None:
        self.dark_override = None
        self._apply_theme()

    def _toggle_legend(self, checked: bool) -> None:
        self.canvas.show_legend = checked
        self.canvas.update()

    # ---------------------------------------------------------- opening
    def choose_file(self) -> None:
        """Ask for a model file and open it."""
        settings = QSettings()
        start = str(settings.value("main/last_dir", str(Path.home())))
        path, _ = QFileDialog.getOpenFileName(self, "Open ONNX model", start, "ONNX models (*.onnx);;All files (*)")
        if path:
            self.open_model(Path(path))

    def open_model(self, path: Path) -> None:
        """Analyse ``path`` in a worker; the current model stays on screen until the new one is ready."""
        path = Path(path)
        self.pending_path = path
        self.statusBar().showMessage(f"Analysing {path.name}…")
        parser = self.parser
        self.layout_runner.cancel()
        self._first_layout.set()
        self._early_model = None

        first_layout = self._first_layout = threading.Event()

        def job(token: Any) -> Any:
            from splitscope.engine.split.analyze import analyze  # onnx loads in the worker, not before the window shows

            gen = analyze(path, parser=parser, cancel=token, responsive=True)
            while True:
                try:
                    p = next(gen)
                except StopIteration as stop:
                    return stop.value
                yield p
                if p.model is not None:
                    # Let the first layout have the CPU (and the GIL) before refining.
                    first_layout.wait(timeout=3.0)

        self.runner.start(job)

    def _remember(self, path: Path) -> None:
        settings = QSettings()
        settings.setValue("main/last_dir", str(path.parent))
        if path.resolve() == SAMPLE_MODEL.resolve():
            return
        recent = [p for p in (settings.value("main/recent") or []) if p != str(path)]
        settings.setValue("main/recent", [str(path), *recent][:MAX_RECENT])
        self._rebuild_recent()

    def _rebuild_recent(self) -> None:
        self.recent_menu.clear()
        recent = QSettings().value("main/recent") or []
        if isinstance(recent, str):
            recent = [recent]
        for p in recent:
            act = self.recent_menu.addAction(p)
            act.triggered.connect(lambda _=False, p=p: self.open_model(Path(p)))
        self.recent_menu.setEnabled(bool(recent))

    def cancel_jobs(self) -> None:
        """Cancel whatever runs (Esc)."""
        self._first_layout.set()
        self.runner.cancel()
        self.layout_runner.cancel()

    # ------------------------------------------------------- job results
    def _update_running(self, *_: Any) -> None:
        running = self.runner.running or self.layout_runner.running
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        if running and not self._slow_timer.isActive() and not self.canvas.busy_text:
            self._slow_timer.start()
        elif not running:
            self._slow_timer.stop()
            if self.canvas.busy_text:
                self.canvas.busy_text = ""
                self.canvas.update()

    def _show_slow_notice(self) -> None:
        if self.layout_runner.running:
            what = "Large graph: laying it out"
        elif self.runner.running:
            what = "Large model: still analysing (the parser proves every node)"
        else:
            return
        self.canvas.busy_text = f"{what}, this may take a while. Esc or Cancel stops it."
        self.canvas.update()

    def _on_progress(self, p: Any) -> None:
        self.progress.setRange(0, p.total)
        self.progress.setValue(p.done)
        self.statusBar().showMessage(p.message)

    def _on_analysis_progress(self, p: Any) -> None:
        self._on_progress(p)
        if isinstance(p.model, GraphModel):
            # First paint: the structure coloured by the support table; shapes, costs and the
            # real parser's answer refine it when the analysis finishes.
            self._early_model = p.model
            gm = p.model
            self.layout_runner.start(lambda token: prepare_view(gm, cancel=token))

    def _on_analysed(self, gm: GraphModel) -> None:
        if gm.path is not None:
            self._remember(gm.path)
        view = self.view
        if view is not None and view.gm is gm:
            # Same model, refined: recount groups and redraw statuses and boundaries in place.
            expanded = set(view.layout.expanded)
            self._final_pending = True

            def refresh(token: Any) -> Any:
                view.hier.refresh_counts(gm)
                view.ctx.refresh_boundaries()
                new = yield from relayout(view, expanded, token)
                new.stats = panel_stats(gm)
                return new

            self.layout_runner.start(refresh)
        elif self.layout_runner.running and self._early_model is gm:
            self._final_pending = True  # the first layout is still running; refresh when it lands
        else:
            self._final_pending = False

            def first(token: Any) -> Any:
                new = yield from prepare_view(gm, cancel=token)
                new.stats = panel_stats(gm)
                return new

            self.layout_runner.start(first)

    def _preload(self) -> None:
        """Import pyqtgraph in a worker after the first paint, before the charts need it."""
        if "pyqtgraph" in sys.modules or getattr(self, "_preloader", None) is not None:
            return
        import importlib

        from superqt.utils import create_worker

        self._preloader = create_worker(importlib.import_module, "pyqtgraph", _start_thread=True)

    def _on_laid_out(self, view: View) -> None:
        self._first_layout.set()
        QTimer.singleShot(0, self._preload)
        keep = self.view is not None and self.view.gm is view.gm
        if view.stats is None and keep and self.view is not None:
            view.stats = self.view.stats  # expand/collapse: same figures
        self.view = view
        self.canvas.set_graph(view.gm, view.hier, view.layout, keep_view=keep)
        self.minimap.refresh()
        analysing = self.runner.running and self._early_model is view.gm
        if getattr(self, "_final_pending", False) and not analysing and not keep:
            self._final_pending = False
            self._on_analysed(view.gm)  # the analysis finished while the first layout ran
        if not analysing and view.stats is not None and view.gm is not self.graph_model:
            gm = view.gm
            self.graph_model = gm
            self.inspector.set_model(gm, view.hier)
            self.ops.set_rows(view.stats["ops"])
            self.summary.set_stats(gm, view.stats, make_palette(self._is_dark()))
            self.setWindowTitle(f"Splitscope — {gm.path.name if gm.path else ''}")
            self._search_changed(self.search.text())
            for w in gm.warnings:
                self.statusBar().showMessage(w, 8000)
        if keep:
            self._after_relayout_focus()
        self.statusBar().showMessage(
            f"{len(view.gm.nodes):,} nodes, {view.layout.size:,} items shown. Double-click a block to expand it.",
            6000)
        self.view_ready.emit()

    def _on_failed(self, message: str, details: str) -> None:
        self.statusBar().showMessage(message, 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, "Splitscope", message, parent=self)
        box.setInformativeText("The model that was open stays open." if self.graph_model else "")
        if details:
            box.setDetailedText(details)
        box.open()
        self._failure_box = box

    # ------------------------------------------------------ expand/collapse
    def toggle_group(self, gid: int) -> None:
        """Expand a collapsed group or collapse an expanded one, in place."""
        if self.view is None:
            return
        expanded = set(self.view.layout.expanded)
        if gid in expanded:
            expanded.discard(gid)
        else:
            expanded.add(gid)
        self._relayout(expanded, focus_group=gid)

    def expand_all(self) -> None:
        """Expand every group."""
        if self.view is not None:
            self._relayout({g.id for g in self.view.hier.groups if g.parent != -1})

    def collapse_all(self) -> None:
        """Collapse to the top level."""
        if self.view is not None:
            self._relayout({0})

    def _relayout(self, expanded: set[int], focus_group: int = -1, focus_node: int = -1) -> None:
        view = self.view
        assert view is not None
        self._focus = (focus_group, focus_node)
        self.layout_runner.start(lambda token: relayout(view, expanded, token))

    def _after_relayout_focus(self) -> None:
        fg, fn = getattr(self, "_focus", (-1, -1))
        if self.view is None:
            return
        if fn >= 0:
            self.canvas.select_node(fn)
        elif fg >= 0 and fg in self.view.layout.group_item:
            self.canvas.center_on_item(self.view.layout.group_item[fg], zoom_in=False)
        self._focus = (-1, -1)

    # ------------------------------------------------------------ panels
    def _on_node_selected(self, index: int) -> None:
        self.inspector.show_node(index)
        if index >= 0 and self.graph_model is not None:
            self.ops.select_op_of(self.graph_model.nodes[index])

    def _on_group_selected(self, gid: int) -> None:
        self.inspector.show_group(gid)

    def _on_op_chosen(self, nodes: list[int]) -> None:
        self.canvas.highlight_nodes = set(nodes)
        self.matches = sorted(nodes, key=lambda i: self.view.hier.topo_pos[i] if self.view else i)
        self.match_pos = -1
        self.find_next()

    # ------------------------------------------------------------ search
    def _focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _search_changed(self, text: str) -> None:
        gm = self.graph_model
        text = text.strip().lower()
        if gm is None or not text:
            self.matches = []
            self.canvas.highlight_nodes = set()
            self.match_label.setText("")
            self.canvas.update()
            return
        hits = [n.index for n in gm.nodes if text in n.label.lower() or text == n.op_type.lower()
                or text in n.op_type.lower()]
        if self.view is not None:
            hits.sort(key=lambda i: self.view.hier.topo_pos[i])
        self.matches = hits
        self.match_pos = -1
        self.canvas.highlight_nodes = set(hits)
        self.match_label.setText(f"{len(hits)} matches" if hits else "no match")
        self.canvas.update()

    def _search_now_and_next(self) -> None:
        if self._search_timer.isActive():
            self._search_timer.stop()
            self._search_changed(self.search.text())
        self.find_next()

    def find_next(self) -> None:
        """Go to the next match (F3, Enter in the search field)."""
        self._goto_match(+1)

    def find_previous(self) -> None:
        """Go to the previous match (Shift+F3)."""
        self._goto_match(-1)

    def _goto_match(self, step: int) -> None:
        if not self.matches or self.view is None:
            return
        self.match_pos = (self.match_pos + step) % len(self.matches)
        node = self.matches[self.match_pos]
        self.match_label.setText(f"{self.match_pos + 1} / {len(self.matches)}")
        self.inspector.show_node(node)
        hidden = [g for g in self.view.hier.path(self.view.hier.node_group[node])
                  if g not in self.view.layout.expanded]
        if hidden:  # inside collapsed groups: expand the way to it first
            self._relayout(set(self.view.layout.expanded) | set(hidden), focus_node=node)
        else:
            self.canvas.select_node(node)

    # ----------------------------------------------------------- export
    def export_graph(self, fmt: str) -> None:
        """Save the whole graph as PNG or SVG (written atomically)."""
        if self.view is None:
            return
        settings = QSettings()
        start = str(Path(str(settings.value("main/last_dir", str(Path.home())))) / f"graph.{fmt}")
        path, _ = QFileDialog.getSaveFileName(self, f"Export graph as {fmt.upper()}", start, f"{fmt.upper()} (*.{fmt})")
        if path:
            self.save_graph(Path(path), fmt)

    def save_graph(self, path: Path, fmt: str) -> None:
        """Write the graph image to ``path`` in a worker, through a temporary file and a rename.

        A fully expanded 50k-node graph takes seconds to draw at full size: never on the UI thread
        (QPainter on a QImage or QSvgGenerator works in any thread).
        """
        from superqt.utils import create_worker

        canvas = self.canvas

        def write() -> Path:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".{fmt}", dir=path.parent)
            os.close(fd)
            try:
                if fmt == "svg":
                    canvas.render_svg(tmp)
                elif not canvas.render_image().save(tmp, "PNG"):
                    raise OSError(f"could not write {path}")
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return path

        worker = create_worker(write, _start_thread=False, _ignore_errors=True)  # shown below, not re-raised
        worker.returned.connect(lambda p: (self.statusBar().showMessage(f"Saved {p}", 5000),
                                           self.export_finished.emit(str(p))))
        worker.errored.connect(lambda e: (self._on_failed(
            f"Could not export the graph: {e}. Choose another folder.", ""), self.export_finished.emit("")))
        self.statusBar().showMessage(f"Exporting {path.name}…")
        self._export_worker = worker
        worker.start()

    # ----------------------------------------------------------- netron
    def open_in_netron(self) -> None:
        """Serve the model with netron on 127.0.0.1 and open it in the browser."""
        if self.graph_model is None or self.graph_model.path is None:
            return
        path = str(self.graph_model.path)
        try:
            import netron

            host, port = netron.serve(path, address=("127.0.0.1", 0), browse=False)
        except Exception as e:  # noqa: BLE001 - any netron failure becomes a message
            self._on_failed(f"Netron could not serve the model: {e}. Is the netron package installed?", "")
            return
        url = QUrl(f"http://{host}:{port}")
        self.netron_url = url
        if not QDesktopServices.openUrl(url):
            self.statusBar().showMessage(f"Netron is serving the model at {url.toString()}", 15000)

    # ------------------------------------------------------ dependencies
    def _probe_dependencies(self) -> None:
        from splitscope.engine._optional import probe_all
        from superqt.utils import create_worker

        worker = create_worker(probe_all, _start_thread=False, _ignore_errors=True)  # probes never raise
        worker.returned.connect(self._show_badges)
        worker.start()
        self._probe_worker = worker

    def _show_badges(self, status: dict[str, Any]) -> None:
        self.dep_status = status
        labels = {"tensorrt": "TensorRT", "tensorrt-rtx": "TensorRT-RTX", "cuda": "CUDA", "nvml": "NVML"}
        for name, badge in self.badges.items():
            st = status[name]
            mark = "✔" if st.ready else "✖"
            state = "ready" if st.ready else st.state.value
            badge.setText(f"{mark} {labels[name]}: {state}")
            tip = f"{labels[name]}: {st.state.value}" + (f" {st.version}" if st.version else "")
            if st.error:
                tip += f"\n{st.error}"
            if not st.ready and st.fix:
                tip += f"\nFix: {st.fix}"
            badge.setToolTip(tip)

    def show_about(self) -> None:
        """About, with the state of each optional dependency."""
        lines = [f"<h3>Splitscope {APP_VERSION}</h3><p>What TensorRT takes, and what needs custom CUDA.</p><ul>"]
        for name, st in self.dep_status.items():
            extra = f" {st.version}" if st.version else ""
            fix = f" — <code>{st.fix}</code>" if not st.ready and st.fix else ""
            lines.append(f"<li><b>{name}</b>: {st.state.value}{extra}{fix}</li>")
        lines.append("</ul>")
        QMessageBox.about(self, "About Splitscope", "".join(lines))

    # ------------------------------------------------------- events
    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        QTimer.singleShot(0, self._place_minimap)

    def _place_minimap(self) -> None:
        c = self.canvas
        self.minimap.move(c.width() - self.minimap.width() - 10, c.height() - self.minimap.height() - 10)
        self.minimap.raise_()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, self._place_minimap)

    def dragEnterEvent(self, event: Any) -> None:
        if any(u.toLocalFile().lower().endswith(".onnx") for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:
        for u in event.mimeData().urls():
            if u.toLocalFile().lower().endswith(".onnx"):
                self.open_model(Path(u.toLocalFile()))
                break

    def closeEvent(self, event: Any) -> None:
        settings = QSettings()
        settings.setValue("main/geometry", self.saveGeometry())
        settings.setValue("main/state", self.saveState())
        self.cancel_jobs()
        self.runner.wait(5000)
        super().closeEvent(event)


_ORIGINAL: dict[str, Any] = {}


def _apply_app_palette(dark: bool) -> None:
    """Make the widgets match the canvas when the user forces a theme the platform style lacks."""
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QStyleFactory

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


def _install_excepthook(app: QApplication) -> None:
    """Unexpected errors in slots: log them, tell the user where, keep the app running.

    PySide6 only prints exceptions raised in slots to stderr by default.
    """
    import logging
    import traceback

    from splitscope.engine.paths import log_dir

    log_file = log_dir() / "splitscope.log"
    logging.basicConfig(filename=log_file, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("splitscope")

    def hook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("unexpected error\n%s", details)
        sys.__stderr__.write(details)
        parent = app.activeWindow()
        box = QMessageBox(QMessageBox.Icon.Critical, "Splitscope: unexpected error",
                          f"{exc_type.__name__}: {exc}\n\nThe app keeps running; nothing you made was changed. "
                          f"Details are in {log_file}.", parent=parent)
        box.setDetailedText(details)
        box.open()
        hook.box = box  # type: ignore[attr-defined]

    sys.excepthook = hook


def main(argv: list[str] | None = None, t0: float | None = None) -> int:
    """Start the app: ``python main.py [MODEL] [--parser ...] [--report-startup]``."""
    t0 = t0 if t0 is not None else time.perf_counter()
    ap = argparse.ArgumentParser(prog="splitscope-gui")
    ap.add_argument("model", nargs="?", type=Path, help="ONNX model (default: the bundled sample)")
    ap.add_argument("--parser", choices=["auto", "tensorrt", "rtx", "table"], default="auto")
    ap.add_argument("--report-startup", action="store_true",
                    help="open the model, print one JSON line of startup timings, and exit")
    args = ap.parse_args(argv)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("Splitscope")
    app.setApplicationName("Splitscope")
    app.setDesktopFileName("splitscope")
    _install_excepthook(app)
    window = MainWindow(args.parser)
    window.show()
    window.open_model(args.model or SAMPLE_MODEL)
    if args.report_startup:
        _report_startup(app, window, t0)
    return app.exec()


def _report_startup(app: QApplication, window: MainWindow, t0: float) -> None:
    """Print {window_s, layout_s, first_paint_s, nodes} measured from process start, then quit."""
    app.processEvents()
    marks: dict[str, float] = {"window_s": time.perf_counter() - t0}
    started: dict[str, float] = {}
    # Heartbeat: a 5 ms timer on the UI thread; the longest gap between its ticks is
    # the longest time the UI thread could not react (analysis and layout run in workers).
    beat = {"last": time.perf_counter(), "max": 0.0}

    def tick() -> None:
        now = time.perf_counter()
        beat["max"] = max(beat["max"], now - beat["last"])
        beat["last"] = now

    heart = QTimer(window)
    heart.setInterval(5)
    heart.timeout.connect(tick)
    heart.start()

    def layout_started(running: bool) -> None:
        if running and "layout" not in started:
            started["layout"] = time.perf_counter()

    def painted() -> None:
        if "first_paint_s" in marks:
            return
        marks["first_paint_s"] = time.perf_counter() - t0
        out = {"window_s": round(marks["window_s"], 3), "layout_s": round(marks["layout_s"], 3),
               "first_paint_s": round(marks["first_paint_s"], 3),
               "nodes": len(window.view.gm.nodes) if window.view else 0,
               "max_ui_stall_ms": round(beat["max"] * 1000, 1)}
        print(json.dumps(out), flush=True)
        window.cancel_jobs()
        QTimer.singleShot(0, window.close)

    def ready() -> None:
        marks["layout_s"] = time.perf_counter() - started.get("layout", time.perf_counter())
        window.canvas.painted.connect(painted, Qt.ConnectionType.SingleShotConnection)
        window.canvas.repaint()

    def failed(message: str, _details: str) -> None:
        print(json.dumps({"error": message}), flush=True)
        QTimer.singleShot(0, lambda: app.exit(2))

    window.layout_runner.running_changed.connect(layout_started)
    window.view_ready.connect(ready)
    window.runner.job_failed.connect(failed)
    window.layout_runner.job_failed.connect(failed)
