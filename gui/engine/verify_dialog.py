"""Tools › Verify the Split by Building…: the time the builds may take, and, per dim, the range to build over.

A dim left at its value in force builds static there; a range (min ≤ value ≤ max) builds with an optimisation
profile: min / the value in force as opt / max. The budget bounds the builds and the narrowing of a failing one;
what is not built within it is said in the result, never taken as built.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QSpinBox, QWidget
from splitscope.engine.model import GraphModel


class VerifyDialog(QDialog):
    """Budget (seconds) and a min / max pair per dim in force."""

    def __init__(self, gm: GraphModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        name = gm.path.name if gm.path is not None else "the model"
        self.setWindowTitle(f"Verify by Building — {name}")
        self.setMinimumWidth(480)
        form = QFormLayout(self)
        intro = QLabel(
            f"Each engine partition is built with TensorRT-RTX (on the CPU) at <b>{gm.shapes_label()}</b>; a "
            "partition the builder rejects is built again in halves to find the nodes it rejects."
        )
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        form.addRow(intro)
        self.budget = QSpinBox()
        self.budget.setObjectName("verify_budget")
        self.budget.setRange(10, 24 * 3600)
        self.budget.setSuffix(" s")
        self.budget.setValue(int(QSettings().value("verify/budget", 300)))
        self.budget.setToolTip("The builds and the narrowing stop here; what was not built is said so")
        form.addRow("Time budget", self.budget)
        self.spans: dict[str, tuple[QSpinBox, QSpinBox]] = {}
        if gm.dims:
            note = QLabel("Build over a range of a dim (an optimisation profile: min, the value in force, max):")
            note.setWordWrap(True)
            form.addRow(note)
        for dim, value in sorted(gm.dims.items()):
            lo, hi = QSpinBox(), QSpinBox()
            lo.setRange(1, value)
            hi.setRange(value, 1 << 20)
            lo.setValue(value)
            hi.setValue(value)
            lo.setObjectName(f"min_{dim}")
            hi.setObjectName(f"max_{dim}")
            row = QHBoxLayout()
            row.addWidget(QLabel("min"))
            row.addWidget(lo)
            row.addWidget(QLabel(f"opt {value}   max"))
            row.addWidget(hi)
            row.addStretch(1)
            form.addRow(f"{dim}", row)
            self.spans[dim] = (lo, hi)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Build")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> tuple[float, dict[str, tuple[int, int]]]:
        """(budget in seconds, the ranges given: name -> (min, max)); the budget is remembered."""
        QSettings().setValue("verify/budget", self.budget.value())
        ranges = {d: (lo.value(), hi.value()) for d, (lo, hi) in self.spans.items() if lo.value() != hi.value()}
        return float(self.budget.value()), ranges
