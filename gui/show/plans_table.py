"""The planner's plans table as a model and a delegate: one row per item, whatever their number (a 200k-node export
can have tens of thousands of custom nodes), with the plan's combo box made only while a cell is edited."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, QTimer
from PySide6.QtWidgets import QComboBox, QStyledItemDelegate, QStyleOptionViewItem, QWidget
from splitscope.engine.plan.scenario import PLANS, Item

COLUMNS = ("custom work", "why", "TensorRT ships", "plan", "measured")
PLAN_COLUMN = 3

_Index = QModelIndex | QPersistentModelIndex


class PlansModel(QAbstractTableModel):
    """Each item's label, reason, TensorRT's shipped plugin, its plan in the scenario shown, and its measured time."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.items: list[Item] = []
        self.plans: dict[str, str] | None = None
        """The scenario's plans by item key, or None for today (not editable)."""
        self.measured: list[float | None] = []

    def reset(self, items: list[Item], plans: dict[str, str] | None, measured: list[float | None]) -> None:
        self.beginResetModel()
        self.items, self.plans, self.measured = items, plans, measured
        self.endResetModel()

    def chosen(self, row: int) -> str:
        """The item's plan in the scenario shown; one it does not offer (an old or edited file) counts as today's,
        as the evaluation counts it."""
        it = self.items[row]
        plan = self.plans.get(it.key, it.today) if self.plans is not None else it.today
        return plan if plan in it.options else it.today

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.items)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        f = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() == PLAN_COLUMN and self.plans is not None:
            f |= Qt.ItemFlag.ItemIsEditable
        return f

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        it, c = self.items[index.row()], index.column()
        best = it.matches[0] if it.matches else None
        if role == Qt.ItemDataRole.EditRole and c == PLAN_COLUMN:
            return self.chosen(index.row())
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        if c == PLAN_COLUMN:
            if role == Qt.ItemDataRole.ToolTipRole:
                return (
                    "today's plan: make or pick a scenario to change it"
                    if self.plans is None
                    else "what to do with it in this scenario (double-click to change)"
                )
            return PLANS[self.chosen(index.row())]
        if c == 4:
            t = self.measured[index.row()] if index.row() < len(self.measured) else None
            return f"{t:.4g} ms" if t else "—"
        if c == 2:
            if best is None:
                return "—"
            return best["note"] if role == Qt.ItemDataRole.ToolTipRole else f"{best['plugin']} ({best['kind']})"
        return it.label if c == 0 else it.reason


class PlanDelegate(QStyledItemDelegate):
    """The plan column's editor: a combo box of the item's options; a choice goes to ``choose(key, plan)``."""

    def __init__(self, model: PlansModel, choose: Callable[[str, str], None], parent: Any = None) -> None:
        super().__init__(parent)
        self.model = model
        self.choose = choose

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem, index: _Index) -> QWidget:
        combo = QComboBox(parent)
        for opt in self.model.items[index.row()].options:
            combo.addItem(PLANS[opt], opt)
        combo.activated.connect(lambda _i, cb=combo: self.commitData.emit(cb))
        QTimer.singleShot(0, combo.showPopup)  # one click opens the list, as a combo box in the cell would
        return combo

    def setEditorData(self, editor: QWidget, index: _Index) -> None:
        assert isinstance(editor, QComboBox)
        k = editor.findData(self.model.chosen(index.row()))
        editor.setCurrentIndex(max(k, 0))

    def setModelData(self, editor: QWidget, model: Any, index: _Index) -> None:
        assert isinstance(editor, QComboBox)
        plan = editor.currentData()
        if plan is not None and plan != self.model.chosen(index.row()):
            self.choose(self.model.items[index.row()].key, plan)
