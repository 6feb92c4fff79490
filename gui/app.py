"""The Splitscope main window (first cut: open, analyse in a worker, see the split per node)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSettings, QSortFilterProxyModel, Qt
from PySide6.QtGui import QAction, QColor, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.analyze import SAMPLE_MODEL, analyze
from engine.model import GraphModel, Status
from engine.report import headline
from profiler.jobs import JobRunner

STATUS_COLORS = {Status.DELEGATE: QColor("#2e7d32"), Status.PLUGIN: QColor("#c62828")}
STATUS_MARKS = {Status.DELEGATE: "● delegate", Status.PLUGIN: "▲ plugin"}
COLUMNS = ("Node", "Op", "Status", "Role", "FLOPs", "Source", "Reason")


class NodeTableModel(QAbstractTableModel):
    """The main graph's nodes with their split verdicts."""

    def __init__(self) -> None:
        super().__init__()
        self._gm: GraphModel | None = None

    def set_model(self, gm: GraphModel | None) -> None:
        """Show ``gm``'s nodes."""
        self.beginResetModel()
        self._gm = gm
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return 0 if self._gm is None or parent.isValid() else len(self._gm.nodes)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if self._gm is None or not index.isValid():
            return None
        n = self._gm.nodes[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (n.label, (n.domain + "::" if n.domain else "") + n.op_type, STATUS_MARKS[n.status],
                    n.role.value, "?" if n.flops is None else f"{n.flops:,}", n.source.value, n.reason)[col]
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return n.flops or 0 if col == 4 else self.data(index)
        if role == Qt.ItemDataRole.ForegroundRole and col == 2:
            return STATUS_COLORS[n.status]
        if role == Qt.ItemDataRole.ToolTipRole:
            return n.reason
        return None


class MainWindow(QMainWindow):
    """Open a model, analyse it in a worker, show the split."""

    def __init__(self, parser: str = "auto") -> None:
        super().__init__()
        self.parser = parser
        self.setWindowTitle("Splitscope")
        self.setAcceptDrops(True)
        self.graph_model: GraphModel | None = None
        self.runner = JobRunner(self)

        self.headline = QLabel("Open an ONNX model (Ctrl+O) or drop one here.")
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table_model = NodeTableModel()
        proxy = QSortFilterProxyModel(self)
        proxy.setSourceModel(self.table_model)
        proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.table = QTableView()
        self.table.setModel(proxy)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # graph order
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setStretchLastSection(True)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.addWidget(self.headline)
        lay.addWidget(self.table)
        self.setCentralWidget(body)

        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cancel_button)
        self._set_running(False)

        file_menu = self.menuBar().addMenu("&File")
        for text, key, slot in (("&Open...", QKeySequence.StandardKey.Open, self.choose_file),
                                ("Open &Sample", None, lambda: self.open_model(SAMPLE_MODEL)),
                                ("&Quit", QKeySequence.StandardKey.Quit, self.close)):
            act = QAction(text, self)
            if key is not None:
                act.setShortcut(key)
            act.triggered.connect(slot)
            file_menu.addAction(act)
        cancel = QAction("Cancel job", self)
        cancel.setShortcut(Qt.Key.Key_Escape)
        cancel.triggered.connect(self.runner.cancel)
        self.addAction(cancel)

        self.runner.progress_changed.connect(self._on_progress)
        self.runner.job_finished.connect(self._on_finished)
        self.runner.job_failed.connect(self._on_failed)
        self.runner.job_cancelled.connect(lambda: self.statusBar().showMessage("Cancelled.", 5000))
        self.runner.running_changed.connect(self._set_running)
        geometry = QSettings().value("main/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1200, 760)

    def _set_running(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)

    def choose_file(self) -> None:
        """Ask for a model file and open it."""
        settings = QSettings()
        start = str(settings.value("main/last_dir", str(Path.home())))
        path, _ = QFileDialog.getOpenFileName(self, "Open ONNX model", start, "ONNX models (*.onnx);;All files (*)")
        if path:
            settings.setValue("main/last_dir", str(Path(path).parent))
            self.open_model(Path(path))

    def open_model(self, path: Path) -> None:
        """Analyse ``path`` in a worker; the current model stays until the new one is ready."""
        self.statusBar().showMessage(f"Analysing {path.name}...")
        parser = self.parser
        self.runner.start(lambda token: analyze(path, parser=parser, cancel=token))

    def _on_progress(self, p: Any) -> None:
        self.progress.setRange(0, p.total)
        self.progress.setValue(p.done)
        self.statusBar().showMessage(p.message)

    def _on_finished(self, gm: GraphModel) -> None:
        self.graph_model = gm
        self.table_model.set_model(gm)
        self.table.resizeColumnsToContents()
        src = gm.parser.name if gm.parser.name != "table" else f"operator table ({gm.parser.target})"
        self.headline.setText(f"<b>{gm.path.name if gm.path else ''}</b> — {headline(gm)}. Source: {src}.")
        self.setWindowTitle(f"Splitscope — {gm.path.name if gm.path else ''}")
        self.statusBar().showMessage("Ready.", 3000)

    def _on_failed(self, message: str, details: str) -> None:
        self.statusBar().showMessage(message, 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, "Could not open the model", message, parent=self)
        if details:
            box.setDetailedText(details)
        box.open()

    def dragEnterEvent(self, event: Any) -> None:
        if any(u.toLocalFile().lower().endswith(".onnx") for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:
        for u in event.mimeData().urls():
            if u.toLocalFile().lower().endswith(".onnx"):
                self.open_model(Path(u.toLocalFile()))
                break

    def closeEvent(self, event: Any) -> None:
        QSettings().setValue("main/geometry", self.saveGeometry())
        self.runner.cancel()
        self.runner.wait(5000)
        super().closeEvent(event)


def main(argv: list[str] | None = None) -> int:
    """Start the app: ``python main.py [MODEL] [--parser ...]``."""
    ap = argparse.ArgumentParser(prog="splitscope-gui")
    ap.add_argument("model", nargs="?", type=Path, help="ONNX model (default: the bundled sample)")
    ap.add_argument("--parser", choices=["auto", "tensorrt", "rtx", "table"], default="auto")
    args = ap.parse_args(argv)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("Splitscope")
    app.setApplicationName("Splitscope")
    window = MainWindow(args.parser)
    window.show()
    window.open_model(args.model or SAMPLE_MODEL)
    return app.exec()
