"""Showing the split to stakeholders, in the window: the planner dock, present mode (View › Present, F11),
File › Export Report… (HTML or PDF, a job with progress and Cancel), File › Export Model Explorer Node
Data…, and Edit › Copy Canvas as Image."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtWidgets import QFileDialog
from splitscope.engine.jobs import CancelToken, JobEvent
from splitscope.gui import exports
from splitscope.gui.planner import PlannerUi
from splitscope.gui.present import PresentBoard

if TYPE_CHECKING:
    from splitscope.engine.model import GraphModel
    from splitscope.gui.app import MainWindow


class ShowUi(QObject):
    """Builds and wires the planner, the present board, the report and the exports."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.planner = PlannerUi(window)
        self.board: PresentBoard | None = None
        window.profiling.queue.finished.connect(self._job_finished)
        from PySide6.QtWidgets import QTableView

        for view in window.findChildren(QTableView):  # ops, engine layers, plans, scenarios: all travel as CSV
            if view.contextMenuPolicy() != Qt.ContextMenuPolicy.CustomContextMenu:
                exports.add_csv_menu(view, view.objectName() or "table")

    # ------------------------------------------------------------ menus
    def add_file_actions(self, f: Any) -> None:
        w = self.window
        w._action(f, "Export &Report…", self.export_report, "Ctrl+Shift+R").setToolTip(
            "One self-contained HTML file or a PDF: the decision, the split, where the time goes, precision, "
            "engine layers and how each figure was obtained")
        w._action(f, "Export Model Explorer &Node Data…", self.export_node_data).setToolTip(
            "The split, node times and precisions as Model Explorer node data (model-explorer MODEL "
            "--node_data_paths FILE)")

    def add_edit_actions(self, e: Any) -> None:
        self.window._action(e, "&Copy Canvas as Image", self.copy_canvas, "Ctrl+Shift+C")

    def add_actions(self, _tools: Any, view: Any) -> None:
        w = self.window
        view.addSeparator()
        w._action(view, "&Present", self.present, "F11").setToolTip(
            "A full-screen board for a meeting: arrows step through the custom nodes, Esc leaves")
        self.dark_board = w._action(view, "Present on a Dark Board", lambda *_: self._toggle_board_theme(),
                                    checkable=True)
        self.dark_board.toggled.connect(lambda on: QSettings().setValue("present/dark", on))
        self.dark_board.setChecked(QSettings().value("present/dark", False, type=bool))

    # ------------------------------------------------------------ model
    def model_changed(self, gm: GraphModel) -> None:
        self.planner.model_changed(gm)

    def _job_finished(self, jid: int) -> None:
        rec = self.window.profiling.queue.jobs.get(jid)
        if rec is None:
            return
        if rec.kind == "profile":  # latency ranges come with a profile
            self.planner._show_plans()
            self.planner.recompute()
        if self.board is not None and self.board.isVisible():
            self.planner.evaluated.connect(self._refresh_board, Qt.ConnectionType.SingleShotConnection)
        elif rec.kind == "report" and isinstance(rec.result, dict):
            self.window.statusBar().showMessage(f"Wrote the report {rec.result['out']} "
                                                f"({rec.result['bytes'] / 1e6:.2f} MB)", 10000)

    def _refresh_board(self) -> None:
        if self.board is not None and self.board.isVisible():
            self.board.refresh()

    # ---------------------------------------------------------- present
    def present(self) -> PresentBoard | None:
        """Open the board full screen (Esc leaves)."""
        if self.window.graph_model is None:
            self.window.statusBar().showMessage("Open a model first.", 5000)
            return None
        if self.board is not None:
            self.board.close()
        self.board = PresentBoard(self.window, dark=self.dark_board.isChecked())
        screen = self.window.screen()
        if screen is not None:  # without a window manager (a bare X server) full screen needs the geometry too
            self.board.setGeometry(screen.geometry())
        self.board.showFullScreen()
        self.board.activateWindow()
        self.board.setFocus()
        return self.board

    def _toggle_board_theme(self) -> None:
        QSettings().setValue("present/dark", self.dark_board.isChecked())
        if self.board is not None and self.board.isVisible():
            self.board.dark = self.dark_board.isChecked()
            self.board.update()

    def copy_canvas(self) -> None:
        exports.copy_image(exports.canvas_image(self.window))
        self.window.statusBar().showMessage("Copied the canvas as an image.", 4000)

    # ----------------------------------------------------------- report
    def documents(self) -> dict[str, Any]:
        """What the window has open for this model: its profiles (the shown one first, and one per other
        backend), the imported engine's document, the calibration result, the planner's scenarios."""
        w = self.window
        prof = w.profiling
        shown = prof.results.get(prof.shown) if prof.shown is not None else None
        profiles = [shown] if shown else []
        for r in prof.results.values():
            if r is not shown and r.get("backend") not in {p.get("backend") for p in profiles}:
                profiles.append(r)
        from splitscope.engine.errors import SplitscopeError
        from splitscope.engine.present.report import check_same_model

        gm = w.graph_model

        def mine(doc: dict[str, Any] | None, what: str) -> bool:
            if doc is None or gm is None:
                return False
            try:
                check_same_model(gm, doc, what, f"the {what} open")
            except SplitscopeError:
                return False
            return True

        cur = self.planner.current()
        return {"profiles": [p for p in profiles if mine(p, "profile")],
                "engine": w.engine_ui.doc if mine(getattr(w.engine_ui, "doc", None), "engine") else None,
                "calibration": w.calib_ui.result if mine(w.calib_ui.result, "calibration") else None,
                "scenarios": list(self.planner.scenarios), "chosen": cur.name if cur else None}

    def export_report(self) -> None:
        w = self.window
        gm = w.graph_model
        if gm is None:
            w.statusBar().showMessage("Open a model first.", 5000)
            return
        stem = gm.path.stem if gm.path else "model"
        start = str(exports.last_dir() / f"{stem}-report.html")
        path, _ = QFileDialog.getSaveFileName(w, "Export report", start, "HTML (*.html);;PDF (*.pdf)")
        if path:
            self.submit_report(Path(path))

    def submit_report(self, out: Path) -> int:
        """Write the report as a job (progress, Cancel; nothing is left when cancelled)."""
        from splitscope.engine.present.report import report_job

        gm = self.window.graph_model
        assert gm is not None
        if not out.suffix:  # a name typed without one: the dialog's default kind
            out = out.with_suffix(".html")
        docs = self.documents()

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            return (yield from report_job(gm, out, docs["profiles"], docs["engine"], docs["calibration"],
                                          docs["scenarios"], docs["chosen"], token))

        return self.window.profiling.queue.submit(f"Report {out.name}", job, lane="cpu", kind="report")

    def export_node_data(self) -> None:
        w = self.window
        gm = w.graph_model
        if gm is None:
            return
        folder = QFileDialog.getExistingDirectory(w, "Folder for the Model Explorer node data",
                                                  str(exports.last_dir()))
        if folder:
            files = self.write_node_data(Path(folder))
            w.statusBar().showMessage("Wrote " + ", ".join(f.name for f in files), 8000)

    def write_node_data(self, folder: Path) -> list[Path]:
        from splitscope.engine.present.node_data import write_node_data

        gm = self.window.graph_model
        assert gm is not None
        docs = self.documents()
        return write_node_data(gm, folder, (docs["profiles"] or [None])[0], docs["engine"], docs["calibration"])
