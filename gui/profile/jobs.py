"""The Jobs panel: queued, running and finished jobs, each with a progress bar, elapsed time and Cancel."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)
from splitscope.profiler.queue import CANCELLED, DONE, FAILED, QUEUED, RUNNING, JobQueue

STATE_TEXT = {QUEUED: "queued", RUNNING: "running", DONE: "done", FAILED: "failed", CANCELLED: "cancelled"}


def _elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


class JobsPanel(QWidget):
    """Lists the queue's jobs; select finished profiles to show them, two to compare them."""

    selection_changed = Signal(list)
    """Ids of the selected finished jobs."""
    compare_requested = Signal(int, int)

    def __init__(self, queue: JobQueue, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.queue = queue
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Job", "State", "Progress", "Elapsed", ""])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QTreeWidget.SelectionMode.ExtendedSelection)
        h = self.tree.header()
        h.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 3, 4):
            h.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        h.resizeSection(2, 160)
        self.empty = QLabel("No jobs yet. Tools › Profile… times the model on this machine.")
        self.empty.setWordWrap(True)
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("Select two finished profiles of this model to compare them")
        self.compare_button.setEnabled(False)
        self.compare_button.clicked.connect(self._compare)
        clear = QPushButton("Clear finished")
        clear.clicked.connect(queue.forget_finished)
        row = QHBoxLayout()
        row.addWidget(self.empty, 1)
        row.addWidget(self.compare_button)
        row.addWidget(clear)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.tree, 1)
        lay.addLayout(row)
        self._items: dict[int, QTreeWidgetItem] = {}
        self._bars: dict[int, QProgressBar] = {}
        self._cancel: dict[int, QToolButton] = {}
        queue.changed.connect(self._changed)
        self.tree.itemSelectionChanged.connect(self._selected)
        self.tree.itemDoubleClicked.connect(self._details)
        self._tick = QTimer(self)
        self._tick.setInterval(500)
        self._tick.timeout.connect(self._refresh_elapsed)
        self._tick.start()

    def _changed(self, job_id: int) -> None:
        rec = self.queue.jobs.get(job_id)
        item = self._items.get(job_id)
        if rec is None:
            if item is not None:
                self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(item))
                del self._items[job_id]
                self._bars.pop(job_id, None)
                self._cancel.pop(job_id, None)
            self.empty.setVisible(not self._items)
            return
        if item is None:
            item = QTreeWidgetItem([rec.title, "", "", "", ""])
            item.setData(0, Qt.ItemDataRole.UserRole, job_id)
            self.tree.insertTopLevelItem(0, item)
            self._items[job_id] = item
            bar = QProgressBar()
            bar.setTextVisible(True)
            self._bars[job_id] = bar
            self.tree.setItemWidget(item, 2, bar)
            btn = QToolButton()
            btn.setText("Cancel")
            btn.clicked.connect(lambda _=False, j=job_id: self.queue.cancel(j))
            self._cancel[job_id] = btn
            self.tree.setItemWidget(item, 4, btn)
        self.empty.setVisible(False)
        item.setText(1, STATE_TEXT.get(rec.state, rec.state))
        item.setToolTip(0, rec.message or rec.title)
        bar = self._bars[job_id]
        if rec.state == RUNNING and not rec.total:
            bar.setRange(0, 0)  # busy: no count known yet
        else:
            bar.setRange(0, max(rec.total, 1))
            bar.setValue(rec.total if rec.state == DONE and not rec.done else min(rec.done, max(rec.total, 1)))
        bar.setFormat(rec.error[:60] if rec.state == FAILED else (rec.message[:60] or "%p%"))
        self._cancel[job_id].setEnabled(not rec.finished)
        item.setText(3, _elapsed(rec.elapsed) if rec.started is not None else "")

    def _refresh_elapsed(self) -> None:
        for jid, item in self._items.items():
            rec = self.queue.jobs.get(jid)
            if rec is not None and rec.state == RUNNING:
                item.setText(3, _elapsed(rec.elapsed))

    def selected_finished(self) -> list[int]:
        """Ids of the selected jobs that ended well."""
        out = []
        for item in self.tree.selectedItems():
            jid = item.data(0, Qt.ItemDataRole.UserRole)
            rec = self.queue.jobs.get(jid)
            if rec is not None and rec.state == DONE:
                out.append(jid)
        return out

    def _selected(self) -> None:
        ids = self.selected_finished()
        self.compare_button.setEnabled(len(ids) == 2)
        self.selection_changed.emit(ids)

    def _compare(self) -> None:
        ids = self.selected_finished()
        if len(ids) == 2:
            a, b = sorted(ids)
            self.compare_requested.emit(a, b)

    def _details(self, item: QTreeWidgetItem) -> None:
        rec = self.queue.jobs.get(item.data(0, Qt.ItemDataRole.UserRole))
        if rec is None or rec.state != FAILED:
            return
        box = QMessageBox(QMessageBox.Icon.Warning, "Job failed", rec.error, parent=self)
        if rec.details:
            box.setDetailedText(rec.details)
        box.open()
        self._box = box
