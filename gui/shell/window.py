"""The Splitscope main window: the shell every feature is built into. It owns the widgets the features share (the
canvas, minimap, inspector, ops and summary panels, docks, menus, status bar, colour modes) and implements
:class:`splitscope.gui.shell.host.Shell` for them; the application controller (:class:`splitscope.profiler.controller.
AppController`) owns the model, the jobs and the results. The features never import this module."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QToolBar,
    QWidget,
)
from splitscope.engine.model import GraphModel
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.engine.text import model_title, plural
from splitscope.engine.view.layout import KIND_BLOCK, View
from splitscope.gui.calibrate.ui import CalibUi
from splitscope.gui.canvas.bodies import BodyNavigator
from splitscope.gui.canvas.canvas import GraphCanvas, Minimap
from splitscope.gui.canvas.panels import Inspector, OpsPanel, SummaryPanel
from splitscope.gui.engine.ui import EngineUi
from splitscope.gui.kernel.ui import KernelUi
from splitscope.gui.profile.ui import ProfilingUi
from splitscope.gui.remote.ui import RemoteUi
from splitscope.gui.shell import exports, layout_state
from splitscope.gui.shell.badges import DependencyBadges
from splitscope.gui.shell.colours import ColourModes
from splitscope.gui.shell.menus import show_canvas_menu
from splitscope.gui.shell.palette import apply_app_palette, make_palette, system_is_dark
from splitscope.gui.shell.search import Search
from splitscope.gui.shell.shapes import InputShapes
from splitscope.gui.shell.tools import NetronTool, OptimizeTool
from splitscope.gui.show.ui import ShowUi
from splitscope.profiler.controller import AppController
from splitscope.profiler.jobs import JobRunner

MAX_RECENT = 10
APP_VERSION = "0.1.0"


def recent_files(settings: QSettings) -> list[str]:
    """The recent-files list as stored: QSettings' INI backend hands a one-item list back as a plain
    string (and an empty one as None), so read it as whatever it is."""
    value = settings.value("main/recent")
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value if v]


UI_SWITCH_INTERVAL_S = 0.001
"""How long a worker thread may keep the interpreter once the UI thread asks for it (Python's default: 5 ms).

Every call the UI thread makes into Qt lets go of the interpreter and asks for it back; while a job works in Python
(the light pass, the analysis, the layout) each of those asks waited up to 5 ms, and one paint makes hundreds. On
the 2-core machine, the window's first show with a 50k-node model opening took 0.54-0.56 s after Qt's import at
5 ms and 0.16-0.23 s at 1 ms (``bench/bench_window.py``); the jobs themselves lose no measurable time."""


class MainWindow(QMainWindow):
    """Open a model, see its split on a graph canvas, inspect nodes and ops."""

    view_ready = Signal()
    """A new layout is on the canvas."""
    export_finished = Signal(str)
    """A graph export ended: the path written, or '' when it failed."""

    def __init__(self, parser: str = "auto") -> None:
        super().__init__()
        sys.setswitchinterval(min(sys.getswitchinterval(), UI_SWITCH_INTERVAL_S))
        self.parser = parser
        self.setWindowTitle("Splitscope")
        self.setAcceptDrops(True)
        self.controller = AppController(parser, self)
        self.session = self.controller.session
        self.dark_override: bool | None = None

        # A job still running after 2.5 s says so over the canvas, with how to stop it.
        self._slow_timer = QTimer(self)
        self._slow_timer.setSingleShot(True)
        self._slow_timer.setInterval(2500)
        self._slow_timer.timeout.connect(self._show_slow_notice)
        self.canvas = GraphCanvas()
        self.minimap = Minimap(self.canvas, self.canvas)
        self.canvas.resized.connect(self._place_minimap)
        self.canvas.overlays_moved.connect(self._place_minimap)
        self.setCentralWidget(self.canvas)
        self.inspector = Inspector()
        self.ops = OpsPanel()
        self.summary = SummaryPanel()
        d1 = self._dock("Inspector", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea)
        # In a scroll area: a short dock scrolls its charts instead of squeezing their axes and captions.
        summary_scroll = QScrollArea()
        summary_scroll.setWidgetResizable(True)
        summary_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        summary_scroll.setWidget(self.summary)
        d2 = self._dock("Split summary", summary_scroll, Qt.DockWidgetArea.RightDockWidgetArea)
        d3 = self._dock("Ops", self.ops, Qt.DockWidgetArea.BottomDockWidgetArea)
        self._bottom_tabs = [d3]
        self.colours = ColourModes(self.controller, self.canvas, self)
        self.controller.model_ready.connect(self._on_model_ready)  # before the features: the panels first
        self.controller.failed.connect(self.show_failure)
        # The features, each built with the controller and this shell; their panels are tabbed with Ops.
        self.profiling = ProfilingUi(self)
        self.engine_ui = EngineUi(self)
        self.calib_ui = CalibUi(self)
        self.kernel_ui = KernelUi(self)
        self.remote_ui = RemoteUi(self)  # targets and sweeps
        self.show_ui = ShowUi(self)  # planner, present mode, report
        self.input_shapes = InputShapes(self)
        from PySide6.QtWidgets import QTableView

        for table in self.findChildren(QTableView):  # ops, engine layers, plans, scenarios: all travel as CSV
            if table.contextMenuPolicy() != Qt.ContextMenuPolicy.CustomContextMenu:
                exports.add_csv_menu(table, table.objectName() or "table")
        self.resizeDocks([d1, d2], [300, 460], Qt.Orientation.Vertical)
        self.resizeDocks([d1], [520], Qt.Orientation.Horizontal)
        self.resizeDocks([d3], [210], Qt.Orientation.Vertical)
        # At 1024x680 the panels keep something readable: the ops table about five rows, the inspector a
        # screenful of lines (they scroll beyond), the canvas the rest.
        self.ops.table.setMinimumHeight(4 * self.ops.table.verticalHeader().defaultSectionSize())
        self.inspector.setMinimumHeight(160)
        self.summary.setMinimumHeight(400)  # headline and both charts with their captions

        self.optimize_tool = OptimizeTool(self)
        self.netron = NetronTool(self)
        self._build_toolbar()
        self.addToolBarBreak()
        self.bodies = BodyNavigator(self, self.addToolBar("Body"))
        self._build_status_bar()
        self._build_menus()
        self._apply_theme()

        self.canvas.node_selected.connect(self._on_node_selected)
        self.inspector.showing.connect(self._raise_inspector)
        self.canvas.group_selected.connect(self._on_group_selected)
        self.canvas.group_toggle_requested.connect(self.toggle_group)
        self.canvas.context_requested.connect(
            lambda item, pos: setattr(self, "_context_menu", show_canvas_menu(self, item, pos))
        )
        self.ops.op_chosen.connect(self._on_op_chosen)
        s = self.session
        s.progress.connect(self._on_progress)
        s.failed.connect(self.show_failure)
        s.cancelled.connect(lambda: self.statusBar().showMessage("Cancelled.", 5000))
        s.running_changed.connect(self._update_running)
        s.analysed.connect(lambda gm: self._remember(gm.path) if gm.path is not None else None)
        s.view_changed.connect(self._on_view_changed)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(lambda *_: self._apply_theme())

        self._default_layout = layout_state.restore(self)
        self.deps.probe()

    # ------------------------------------------------------------ the shell, as the features see it
    def add_dock(
        self, title: str, widget: QWidget, *, tab_with_ops: bool = True, height: int | None = None
    ) -> QDockWidget:
        """A bottom dock for a feature's panel, tabbed with the Ops panel (the canvas keeps its size)."""
        dock = self._dock(title, widget, Qt.DockWidgetArea.BottomDockWidgetArea)
        if tab_with_ops:
            self.tabifyDockWidget(self._bottom_tabs[-1], dock)
            self._bottom_tabs.append(dock)
            self._bottom_tabs[0].raise_()
        if height is not None:
            self.resizeDocks([dock], [height], Qt.Orientation.Vertical)
        return dock

    def add_action(self, menu: Any, text: str, slot: Any, shortcut: Any = None, checkable: bool = False) -> QAction:
        """An action of ``menu`` (its shortcut works wherever the focus is in the window)."""
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(shortcut)
        act.setCheckable(checkable)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def show_message(self, text: str, ms: int = 0) -> None:
        """A status-bar message."""
        self.statusBar().showMessage(text, ms)

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
        self.finder = Search(self.controller, self.canvas, self.inspector, tb)
        self.search, self.match_label = self.finder.field, self.finder.label
        tb.addSeparator()
        for text, slot, tip in (
            ("Fit", self.canvas.fit, "Fit the graph (F)"),
            ("Expand all", self.expand_all, "Expand every group (slow on huge graphs)"),
            ("Collapse all", self.collapse_all, "Collapse to the top-level scopes"),
            ("Open in Netron", self.open_in_netron, "A second opinion, served on 127.0.0.1"),
        ):
            act = QAction(text, self)
            act.setToolTip(tip)
            act.triggered.connect(slot)
            tb.addAction(act)

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.deps = DependencyBadges(sb)
        self.badges = self.deps.labels
        self.dep_status = self.deps.status  # filled in place when the probe answers
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Cancel the running job (Esc)")
        self.cancel_button.clicked.connect(self.cancel_jobs)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)
        self._update_running()

    def _build_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self.add_action(f, "&Open…", self.choose_file, QKeySequence.StandardKey.Open)
        self.recent_menu = f.addMenu("Open &Recent")
        self.add_action(f, "Open &Sample", lambda: self.open_model(SAMPLE_MODEL))
        self.engine_ui.add_file_actions(f)
        self.show_ui.add_file_actions(f)
        f.addSeparator()
        self.add_action(f, "Export Graph as &PNG…", lambda: self.export_graph("png"))
        self.add_action(f, "Export Graph as S&VG…", lambda: self.export_graph("svg"))
        f.addSeparator()
        self.add_action(f, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        self._rebuild_recent()
        e = mb.addMenu("&Edit")
        self.add_action(e, "&Undo View Change", self.session.undo, QKeySequence.StandardKey.Undo)
        self.add_action(e, "&Redo View Change", self.session.redo, QKeySequence.StandardKey.Redo)
        self.show_ui.add_edit_actions(e)
        v = mb.addMenu("&View")
        self.add_action(v, "&Fit", self.canvas.fit, Qt.Key.Key_F)
        self.add_action(v, "Zoom &In", lambda: self.canvas.zoom_by(1.25), QKeySequence.StandardKey.ZoomIn)
        self.add_action(v, "Zoom &Out", lambda: self.canvas.zoom_by(0.8), QKeySequence.StandardKey.ZoomOut)
        self.legend_action = self.add_action(v, "&Legend", self._toggle_legend, checkable=True)
        self.legend_action.setChecked(True)
        self.add_action(v, "&Reset Layout", lambda: layout_state.reset(self, self._default_layout))
        v.addSeparator()
        self.dark_action = self.add_action(v, "&Dark Theme", self._toggle_dark, checkable=True)
        self.add_action(v, "Theme Follows the &System", self._follow_system)
        self.fold_action = self.add_action(
            v, "Fold &Constants and Shape Arithmetic", self.session.set_folding, checkable=True
        )
        self.fold_action.setChecked(True)  # weight aliases, Constant nodes, Shape → Gather → Concat: a +N badge
        v.addMenu(self.colours.menu)  # View › Colour by: the modes every feature added
        panels = v.addMenu("&Panels")  # a closed panel comes back from here
        for dock in self.findChildren(QDockWidget):
            panels.addAction(dock.toggleViewAction())
        v.addSeparator()
        self.add_action(v, "Find…", self.finder.focus, QKeySequence.StandardKey.Find)
        self.add_action(v, "Find Next", self.find_next, QKeySequence.StandardKey.FindNext)
        self.add_action(v, "Find Previous", self.find_previous, QKeySequence.StandardKey.FindPrevious)
        t = mb.addMenu("&Tools")
        self.add_action(t, "&Optimize Export…", self.optimize_tool.choose_and_run).setToolTip(
            "Run an ONNX optimizer on a copy, check it with ONNX Runtime, and compare the split before and after"
        )
        self.input_shapes.add_actions(t, v)
        for part in (self.profiling, self.engine_ui, self.calib_ui, self.kernel_ui, self.remote_ui, self.show_ui):
            part.add_actions(t, v)
        h = mb.addMenu("&Help")
        self.add_action(h, "&Keyboard Shortcuts", self._show_shortcuts)
        self.add_action(h, "&About Splitscope", self.show_about)
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
        apply_app_palette(dark)
        self.dark_action.setChecked(dark)
        pal = make_palette(dark)
        self.canvas.set_palette(pal)
        self.inspector.set_palette(pal)
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

    # The session's state, read by tests, benchmarks and the panels.
    @property
    def graph_model(self) -> GraphModel | None:
        """The model whose final analysis is shown."""
        return self.session.graph_model

    @property
    def view(self) -> View | None:
        """The layout on screen."""
        return self.session.view

    @property
    def runner(self) -> JobRunner:
        """The analysis job."""
        return self.session.analysis

    @property
    def layout_runner(self) -> JobRunner:
        """The layout job."""
        return self.session.layout

    def open_model(self, path: Path) -> None:
        """Analyse ``path`` in a worker; the current model stays on screen until the new one is ready."""
        path = Path(path)
        self.statusBar().showMessage(f"Analysing {path.name}…")
        layout_state.ensure_canvas_room(self)  # a layout saved on another screen never leaves it unreadable
        size = self.canvas.size()
        self.session.viewport = (max(size.width(), 320), max(size.height(), 240))
        self.session.open(path)  # at the dims last given for it, looked up in the worker

    def _remember(self, path: Path) -> None:
        settings = QSettings()
        settings.setValue("main/last_dir", str(path.parent))
        if path.resolve() == SAMPLE_MODEL.resolve():
            return
        recent = [p for p in recent_files(settings) if p != str(path)]
        settings.setValue("main/recent", [str(path), *recent][:MAX_RECENT])
        self._rebuild_recent()

    def _rebuild_recent(self) -> None:
        self.recent_menu.clear()
        recent = recent_files(QSettings())
        for p in recent:
            act = self.recent_menu.addAction(p)
            act.triggered.connect(lambda _=False, p=p: self.open_model(Path(p)))
        self.recent_menu.setEnabled(bool(recent))

    def cancel_jobs(self) -> None:
        """Cancel whatever runs (Esc)."""
        self.session.cancel()
        self.optimize_tool.cancel()

    # ------------------------------------------------------- job results
    def _update_running(self, *_: Any) -> None:
        running = self.session.running
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

    def _preload(self) -> None:
        """Import pyqtgraph (configured) in a worker after the first paint, before a panel of plots needs it."""
        if "splitscope.gui.shell.charts" in sys.modules or getattr(self, "_preloader", None) is not None:
            return
        import importlib

        from splitscope.profiler.workers import function_worker

        self._preloader = function_worker(importlib.import_module, "splitscope.gui.shell.charts")
        self._preloader.start()

    def _on_view_changed(self, view: View, keep: bool) -> None:
        QTimer.singleShot(0, self._preload)
        if view.gm is self.graph_model or view.crumbs:
            self.inspector.hier = view.hier  # folding changes the group tree; a body has its own
        self.canvas.set_graph(view.gm, view.hier, view.layout, keep_view=keep)
        self.minimap.refresh()
        self._place_minimap()
        if view.gm.preview:
            self.summary.set_stats(view.gm, None, make_palette(self._is_dark()))
        if keep:
            self._after_relayout_focus()
        blocks = bool((view.layout.arrays["kind"] == KIND_BLOCK).any())
        self.statusBar().showMessage(
            f"{plural(len(view.gm.nodes), 'node')}, {plural(view.layout.size, 'item')} laid out."
            + (" Double-click a block to expand it." if blocks else ""),
            6000,
        )
        self.view_ready.emit()

    def _on_model_ready(self, gm: GraphModel, view: View) -> None:
        # A new model starts clean: no filter, selection or highlight from the previous one.
        self.ops.filter.clear()
        self.ops.table.clearSelection()
        self.canvas.selected_node = self.canvas.selected_group = -1
        self.canvas.highlight_nodes = set()
        self.inspector.set_model(gm, view.hier)
        self.ops.set_rows(view.stats["ops"])
        self.summary.set_stats(gm, view.stats, make_palette(self._is_dark()))
        self.setWindowTitle(f"Splitscope — {model_title(gm)}")
        self.finder.refresh()
        for w in gm.warnings:
            self.statusBar().showMessage(w, 8000)

    def show_failure(self, message: str, details: str = "") -> None:
        """The one presenter of every job's error: status bar, a dialog with the details, the log file."""
        logging.getLogger("splitscope").warning("%s%s", message, f"\n{details}" if details else "")
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
        self.session.toggle_group(gid)

    def expand_all(self) -> None:
        """Expand every group."""
        self.session.expand_all()

    def collapse_all(self) -> None:
        """Collapse to the top level."""
        self.session.collapse_all()

    def _after_relayout_focus(self) -> None:
        fg, fn = self.session.focus
        if self.view is None:
            return
        if fn >= 0:
            self.canvas.select_node(fn)
        elif fg >= 0 and fg in self.view.layout.group_item:
            self.canvas.center_on_item(self.view.layout.group_item[fg], zoom_in=False)
        self.session.focus = (-1, -1)

    # ------------------------------------------------------------ panels
    def _on_node_selected(self, index: int) -> None:
        self.inspector.show_node(index)
        view = self.view
        if index >= 0 and view is not None and not view.crumbs:  # the ops table is the main graph's
            self.ops.select_op_of(view.gm.nodes[index])
        else:
            self.ops.table.clearSelection()  # nothing selected on the canvas: nothing in the table either

    def _raise_inspector(self) -> None:
        """A selection shows the inspector, where it is tabbed behind the Split summary (a small screen)."""
        dock = self.inspector.parentWidget()
        if isinstance(dock, QDockWidget) and self.tabifiedDockWidgets(dock):
            dock.raise_()

    def _on_group_selected(self, gid: int) -> None:
        self.inspector.show_group(gid)

    def highlight(self, nodes: list[int]) -> None:
        """Highlight ``nodes`` and step through them with Find Next/Previous (the right-click menu)."""
        self._on_op_chosen(nodes)

    def _on_op_chosen(self, nodes: list[int]) -> None:
        self.finder.highlight(nodes)

    def find_next(self) -> None:
        """Go to the next match (F3, Enter in the search field)."""
        self.finder.next()

    def find_previous(self) -> None:
        """Go to the previous match (Shift+F3)."""
        self.finder.previous()

    # ----------------------------------------------------------- export
    def export_graph(self, fmt: str) -> None:
        """File › Export Graph as PNG/SVG…: the whole graph, written atomically."""
        if self.view is None:
            return
        start = str(exports.last_dir() / f"graph.{fmt}")
        path, _ = QFileDialog.getSaveFileName(self, f"Export graph as {fmt.upper()}", start, f"{fmt.upper()} (*.{fmt})")
        if path:
            self.save_graph(Path(path), fmt)

    def save_graph(self, path: Path, fmt: str) -> None:
        """Write the graph image to ``path`` in a worker (a fully expanded 50k-node graph takes seconds to draw:
        never on the UI thread); :data:`export_finished` says when."""
        from splitscope.profiler.workers import function_worker

        snap = self.canvas.snapshot(plain=True)  # what is on screen now; the canvas may move on meanwhile
        gm = self.graph_model
        title = f"{model_title(gm)} — Splitscope" if gm is not None else "Splitscope"
        subtitle = (self.view.stats or {}).get("headline", "") if self.view is not None else ""
        worker = function_worker(exports.write_graph, snap, path, fmt, title, subtitle)  # errors are shown below
        worker.returned.connect(lambda p: (self.show_message(f"Saved {p}", 5000), self.export_finished.emit(str(p))))
        worker.errored.connect(
            lambda e: (
                self.show_failure(f"Could not export the graph: {e}. Choose another folder."),
                self.export_finished.emit(""),
            )
        )
        self.show_message(f"Exporting {path.name}…")
        self._export_worker = worker
        worker.start()

    def copy_canvas(self) -> None:
        """Edit › Copy Canvas as Image."""
        self.show_ui.copy_canvas()

    # ----------------------------------------------------------- netron
    def open_in_netron(self) -> None:
        """Serve the model with netron on 127.0.0.1 and open it in the browser (:class:`NetronTool`)."""
        if self.graph_model is not None and self.graph_model.path is not None:
            self.netron.open(self.graph_model.path)

    def show_about(self) -> None:
        """About, with the state of each optional dependency."""
        self.deps.show_about(self, APP_VERSION)

    # ------------------------------------------------------- events
    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        QTimer.singleShot(0, self._place_minimap)

    def _place_minimap(self) -> None:
        c = self.canvas
        # A fifth of the canvas at most, so that on a small window it does not cover the graph.
        w = int(min(180, max(90, c.width() * 0.18)))
        h = int(min(220, max(110, c.height() * 0.25)))
        c.overlay_width = w
        if (w, h) != (self.minimap.width(), self.minimap.height()):
            self.minimap.setFixedSize(w, h)
            self.minimap.refresh()
        self.minimap.move(*c.clear_corner(w, h))  # where it covers the fewest cards of the view
        self.minimap.raise_()

    def _show_shortcuts(self) -> None:
        from splitscope.gui.shell.shortcuts import show_shortcuts

        self._shortcuts_dialog = show_shortcuts(self)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, lambda: layout_state.shown(self))
        QTimer.singleShot(0, self._place_minimap)

    def dragEnterEvent(self, event: Any) -> None:
        if any(u.toLocalFile().lower().endswith((".onnx", ".json")) for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:
        files = [u.toLocalFile() for u in event.mimeData().urls()]
        model = next((f for f in files if f.lower().endswith(".onnx")), None)
        if model is not None:
            self.open_model(Path(model))
        elif trt := [f for f in files if f.lower().endswith(".json")]:
            self.engine_ui.import_files(trt)  # trtexec's files of one engine

    def closeEvent(self, event: Any) -> None:
        layout_state.save(self)
        self.cancel_jobs()
        self.controller.cancel_all()
        self.runner.wait(2000)  # jobs stop at their next check; launch.main ends the process if one has not
        self.kernel_ui.remove_scratch()  # the kernel files written for the user's editor
        super().closeEvent(event)
