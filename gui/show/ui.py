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
from splitscope.gui.shell import exports
from splitscope.gui.show.planner import PlannerUi
from splitscope.gui.show.present import PresentBoard

if TYPE_CHECKING:
    from splitscope.engine.api import Report
    from splitscope.gui.shell.host import Shell


class ShowUi(QObject):
    """The planner, the present board, the report and the Model Explorer export, from what the controller
    holds for the open model."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = c = shell.controller
        self.planner = PlannerUi(shell)
        self.board: PresentBoard | None = None
        c.profile_ready.connect(self._profile_ready)
        c.report_ready.connect(self._report_ready)

    # ------------------------------------------------------------ menus
    def add_file_actions(self, f: Any) -> None:
        w = self.shell
        w.add_action(f, "Export &Report…", self.export_report, "Ctrl+Shift+R").setToolTip(
            "One self-contained HTML file or a PDF: the decision, the split, where the time goes, precision, "
            "engine layers and how each figure was obtained"
        )
        w.add_action(f, "Export Model Explorer &Node Data…", self.export_node_data).setToolTip(
            "The split, node times and precisions as Model Explorer node data (model-explorer MODEL "
            "--node_data_paths FILE)"
        )

    def add_edit_actions(self, e: Any) -> None:
        self.shell.add_action(e, "&Copy Canvas as Image", self.copy_canvas, "Ctrl+Shift+C")

    def add_actions(self, _tools: Any, view: Any) -> None:
        w = self.shell
        view.addSeparator()
        w.add_action(view, "&Present", self.present, "F11").setToolTip(
            "A full-screen board for a meeting: arrows step through the custom nodes, Esc leaves"
        )
        self.dark_board = w.add_action(
            view, "Present on a Dark Board", lambda *_: self._toggle_board_theme(), checkable=True
        )
        self.dark_board.toggled.connect(lambda on: QSettings().setValue("present/dark", on))
        self.dark_board.setChecked(QSettings().value("present/dark", False, type=bool))

    # ------------------------------------------------------------ model
    def _profile_ready(self, *_: Any) -> None:  # latency ranges come with a profile
        self.planner.refresh_plans()
        if self.board is not None and self.board.isVisible():
            self.planner.evaluated.connect(self._refresh_board, Qt.ConnectionType.SingleShotConnection)

    def _report_ready(self, _jid: int, report: Report) -> None:
        self.shell.show_message(f"Wrote the report {report.out} ({report.bytes / 1e6:.2f} MB)", 10000)

    def _refresh_board(self) -> None:
        if self.board is not None and self.board.isVisible():
            self.board.refresh()

    # ---------------------------------------------------------- present
    def present(self) -> PresentBoard | None:
        """Open the board full screen (Esc leaves)."""
        if self.controller.graph_model is None:
            self.shell.show_message("Open a model first.", 5000)
            return None
        if self.board is not None:
            self.board.close()
        self.board = PresentBoard(self.shell, self.planner, dark=self.dark_board.isChecked())
        self.board.dark_changed.connect(self.dark_board.setChecked)  # the menu's choice, for the next board
        screen = self.shell.screen()
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
        exports.copy_image(exports.canvas_image(self.shell.canvas))
        self.shell.show_message("Copied the canvas as an image.", 4000)

    # ----------------------------------------------------------- report
    def documents(self) -> dict[str, Any]:
        """What the window has open for this model: its profiles (the shown one first, and one per other
        backend), the imported engine's document, the calibration result, the planner's scenarios."""
        res = self.controller.results
        shown = res.profiles.get(res.shown_profile) if res.shown_profile is not None else None
        kept = [shown] if shown else []
        for r in res.profiles.values():
            if r is not shown and r.backend not in {p.backend for p in kept}:
                kept.append(r)
        profiles = [p.json for p in kept]
        from splitscope.engine.errors import SplitscopeError
        from splitscope.engine.present.inputs import check_same_model
        from splitscope.engine.present.report import ReportExtras, generation_section

        gm = self.controller.graph_model

        def mine(doc: dict[str, Any] | None, what: str) -> bool:
            if doc is None or gm is None:
                return False
            try:
                check_same_model(gm, doc, what, f"the {what} open")
            except SplitscopeError:
                return False
            return True

        cur = self.planner.current()
        engine = res.engine.doc() if res.engine is not None else None
        return {
            "profiles": [p for p in profiles if mine(p, "profile")],
            "engine": engine if mine(engine, "engine") else None,
            "calibration": cal.json if (cal := res.calibration) and mine(cal.json, "calibration") else None,
            "scenarios": list(self.planner.scenarios),
            "chosen": cur.name if cur else None,
            "extras": ReportExtras(
                generation_section(res.generation.json) if res.generation else None,
                res.sweep,
                tuple(k.json for k in res.kernels if mine(k.json, "kernel")),
            ),
        }

    def export_report(self) -> None:
        gm = self.controller.graph_model
        if gm is None:
            self.shell.show_message("Open a model first.", 5000)
            return
        stem = gm.path.stem if gm.path else "model"
        start = str(exports.last_dir() / f"{stem}-report.html")
        path, _ = QFileDialog.getSaveFileName(self.shell.window(), "Export report", start, "HTML (*.html);;PDF (*.pdf)")
        if path:
            self.submit_report(Path(path))

    def submit_report(self, out: Path) -> int:
        """Write the report as a job (progress, Cancel; nothing is left when cancelled)."""
        from splitscope.engine.present.report import report_job

        gm = self.controller.graph_model
        assert gm is not None
        if not out.suffix:  # a name typed without one: the dialog's default kind
            out = out.with_suffix(".html")
        docs = self.documents()

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            return (
                yield from report_job(
                    gm,
                    out,
                    docs["profiles"],
                    docs["engine"],
                    docs["calibration"],
                    docs["scenarios"],
                    docs["chosen"],
                    token,
                    docs["extras"],
                )
            )

        return self.controller.submit_report(f"Report {out.name}", job)

    def export_node_data(self) -> None:
        gm = self.controller.graph_model
        if gm is None:
            return
        folder = QFileDialog.getExistingDirectory(
            self.shell.window(), "Folder for the Model Explorer node data", str(exports.last_dir())
        )
        if folder:
            files = self.write_node_data(Path(folder))
            self.shell.show_message("Wrote " + ", ".join(f.name for f in files), 8000)

    def write_node_data(self, folder: Path) -> list[Path]:
        from splitscope.engine.present.node_data import write_node_data

        gm = self.controller.graph_model
        assert gm is not None
        docs = self.documents()
        return write_node_data(gm, folder, (docs["profiles"] or [None])[0], docs["engine"], docs["calibration"])
