"""The Engine panel: the imported engine's layers (type, precision, time, share, ONNX nodes), sortable and
filterable, selection synced with the canvas, and the performance lint below."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtWidgets import QLabel, QLineEdit, QSplitter, QTableView, QTextBrowser, QVBoxLayout, QWidget
from splitscope.engine.text import plural
from splitscope.engine.trtdata.doc import EngineDoc, LayerRow, LintFinding

COLUMNS = ("Layer", "Type", "Precision", "ms", "Share", "ONNX nodes", "Mapped by")


EMPTY_TITLE = (
    "No engine imported. File › Import Engine Data… reads trtexec's --exportLayerInfo, --exportProfile "
    "and --exportTimes files (TensorRT 8 to 11)."
)


class LayerModel(QAbstractTableModel):
    """The engine's :class:`LayerRow`\\ s (a list model: 50k layers cost nothing to show)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: Sequence[LayerRow] = ()

    def set_rows(self, rows: Sequence[LayerRow]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        r = self.rows[index.row()]
        c = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if c == 0:
                return r.name
            if c == 1:
                return r.type
            if c == 2:
                return r.precision or "—"
            if c == 3:
                return "" if r.ms is None else f"{r.ms:.4f}"
            if c == 4:
                return "" if r.share is None else f"{r.share:.1%}"
            if c == 5:
                return str(len(r.onnx_nodes))
            return r.mapped_by or "unmapped"
        if role == Qt.ItemDataRole.UserRole:  # sort keys
            return (r.name, r.type, r.precision, r.ms or 0.0, r.share or 0.0, len(r.onnx_nodes), r.mapped_by)[c]
        if role == Qt.ItemDataRole.ToolTipRole and c in (0, 5):
            return "\n".join([r.name, *r.onnx_nodes[:30]])
        if role == Qt.ItemDataRole.TextAlignmentRole and c in (3, 4, 5):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class EnginePanel(QWidget):
    """Layers and lint of the imported engine."""

    layer_chosen = Signal(int)
    """A layer row was picked: its index in the imported list."""
    nodes_chosen = Signal(list)
    """A lint finding was picked: the node names it names."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(EMPTY_TITLE)
        self.title.setWordWrap(True)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter layers by name, type or precision…")
        self.model = LayerModel()
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setColumnWidth(0, 360)
        self.table.selectionModel().currentRowChanged.connect(self._row)
        self.lint = QTextBrowser()
        self.lint.setOpenLinks(False)
        self.lint.anchorClicked.connect(self._lint_clicked)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.lint)
        split.setSizes([300, 120])
        self.table.setMinimumHeight(48)  # a short bottom dock squeezes these, never the canvas
        self.lint.setMinimumHeight(28)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.title)
        lay.addWidget(self.filter)
        lay.addWidget(split, 1)
        self.findings: tuple[LintFinding, ...] = ()

    def clear(self) -> None:
        """No engine for this model."""
        self.model.set_rows(())
        self.findings = ()
        self.title.setText(EMPTY_TITLE)
        self.lint.setHtml("")

    def set_data(self, doc: EngineDoc, title: str) -> None:
        """Show an import: its layers, mapping figures and lint."""
        self.model.set_rows(doc.layers)
        self.findings = doc.lint
        mapped = (
            f"; {doc.mapped_data_node_share:.0%} of the model's data-path nodes and "
            f"{doc.mapped_layer_share or 0:.0%} of the layers mapped, {doc.unmapped} unmapped"
            if doc.mapped_data_node_share is not None
            else ""
        )
        total = f", {doc.total_layer_ms:.4f} ms of layer time" if doc.total_layer_ms else ""
        self.title.setText(
            f"<b>{html.escape(title)}</b>: {len(doc.layers)} layers ({doc.layout} layout"
            f"{'' if doc.detailed else ', names only'}){total}{mapped}."
        )
        parts = []
        for k, f in enumerate(doc.lint):
            n_layers = plural(len(f.layers), "layer")
            parts.append(
                f"<p><a href='lint:{k}'><b>{html.escape(f.kind)}</b></a> ({n_layers}, "
                f"{f.ms:.4f} ms): {html.escape(f.advice)}.</p>"
            )
        for n in doc.notes:
            parts.append(f"<p><i>{html.escape(n)}</i></p>")
        self.lint.setHtml("".join(parts) or "<p>No lint findings.</p>")
        self.table.sortByColumn(3, Qt.SortOrder.DescendingOrder)

    def select_layer(self, k: int) -> None:
        """Select the row of layer ``k`` (the canvas selected one of its nodes)."""
        src = self.model.index(k, 0)
        idx = self.proxy.mapFromSource(src)
        if idx.isValid():
            sm = self.table.selectionModel()
            sm.blockSignals(True)  # the canvas chose it: do not send it back
            self.table.selectRow(idx.row())
            self.table.scrollTo(idx)
            sm.blockSignals(False)

    def _row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.layer_chosen.emit(self.proxy.mapToSource(current).row())

    def _lint_clicked(self, url: Any) -> None:
        k = int(url.toString().split(":", 1)[1])
        if 0 <= k < len(self.findings):
            self.nodes_chosen.emit(list(self.findings[k].nodes))
