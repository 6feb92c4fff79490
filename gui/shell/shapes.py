"""Tools › Input Shapes…: the values of the inputs' symbolic dims that every figure is counted at.

Each dim says where its value comes from (given, the model's metadata, batch-like at 1, or none yet); the
inputs' shapes follow the spin boxes as they change. OK re-costs the model in a worker (the parser is not asked
again) and remembers the values for this model. A model opened with a dim that has no value (a height, a
sequence length) opens this dialog by itself: its costs stay unknown until the value is given, never 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QWidget,
)
from splitscope.engine.dims import symbolic_dims
from splitscope.engine.dims.names import suggest_value
from splitscope.engine.model import GraphModel
from splitscope.profiler.dims import remember_dims, saved_dims

if TYPE_CHECKING:
    from splitscope.gui.shell.host import Shell


def _origin(gm: GraphModel, dim: str) -> str:
    if dim in gm.missing_dims:
        return "needs a value"
    for note in gm.dim_notes:
        if note.startswith(f"{dim}=") and " from " in note:
            return note.split(" from ", 1)[1]
        if "batch-like" in note and f"{dim}=1" in note.split(":")[0].split(", "):
            return "batch-like: 1 until given"
    return "given"


class InputShapesDialog(QDialog):
    """One spin box per symbolic dim of the inputs, with where its value comes from and the shapes it gives."""

    def __init__(self, gm: GraphModel, saved: dict[str, int], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.gm: GraphModel | None = gm
        name = gm.path.name if gm.path is not None else "the model"
        self.setWindowTitle(f"Input Shapes — {name}")
        form = QFormLayout(self)
        intro = QLabel(
            "FLOPs, bytes, boundary bytes, the roofline and every job are counted at these shapes."
            + (
                f"<br><b>{', '.join(gm.missing_dims)} {'has' if len(gm.missing_dims) == 1 else 'have'} no value"
                "</b>: the costs that depend on them are unknown until you give one."
                if gm.missing_dims
                else ""
            )
        )
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        form.addRow(intro)
        self.boxes: dict[str, QSpinBox] = {}
        for d in symbolic_dims(gm):
            box = QSpinBox()
            box.setRange(1, 1 << 20)
            box.setAccelerated(True)
            inp, axis, rank = dim_place(gm, d)
            value = gm.dims.get(d) or saved.get(d) or suggest_value(d, axis, rank)
            box.setValue(int(value))
            box.setObjectName(f"dim_{d}")
            box.valueChanged.connect(self._update)
            self.boxes[d] = box
            row = QHBoxLayout()
            row.addWidget(box)
            why = QLabel(_origin(gm, d))
            why.setObjectName(f"origin_{d}")
            if d in gm.missing_dims:
                why.setStyleSheet("font-weight: bold")
            row.addWidget(why, 1)
            form.addRow(f"{d}  ({inp} axis {axis})" if inp else d, row)
        if not self.boxes:
            form.addRow(QLabel("Every input's shape is fixed: there is nothing to set."))
        self.shapes = QLabel()
        self.shapes.setObjectName("shapes")
        self.shapes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.shapes.setWordWrap(True)
        form.addRow("Inputs", self.shapes)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Re-count at These Shapes")
        buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(bool(self.boxes))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self._update()

    def dims(self) -> dict[str, int]:
        """The values chosen."""
        return {d: box.value() for d, box in self.boxes.items()}

    def _update(self) -> None:
        gm = self.gm
        if gm is None:  # let go of: the dialog is closing
            return
        dims = self.dims()
        lines = []
        for inp in gm.graph.inputs:
            t = gm.graph.tensors.get(inp)
            if t is None or t.shape is None:
                continue
            shape = ", ".join(str(dims.get(d, d)) if isinstance(d, str) else str(d) for d in t.shape)
            lines.append(f"{inp} [{shape}]")
        self.shapes.setText("<br>".join(lines) or "no inputs")


def start_value(gm: GraphModel, dim: str, saved: dict[str, int]) -> int:
    """What a dialog's box for ``dim`` starts at: the shapes in force, then the value remembered, then a typical
    size (never a silent 1 for a height or a sequence)."""
    _, axis, rank = dim_place(gm, dim)
    return int(gm.dims.get(dim) or saved.get(dim) or suggest_value(dim, axis, rank))


def dim_place(gm: GraphModel, dim: str) -> tuple[str, int, int]:
    """(input, axis, the input's rank) where ``dim`` first sits."""
    for inp in gm.graph.inputs:
        t = gm.graph.tensors.get(inp)
        for k, d in enumerate((t.shape or ()) if t is not None else ()):
            if d == dim:
                return inp, k, len(t.shape or ())
    return "", -1, 0


class InputShapes:
    """Tools › Input Shapes… and the ask when a model opens with a dim that has no value."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.controller = shell.controller
        self.dialog: InputShapesDialog | None = None
        self._asked: str = ""
        self.controller.model_ready.connect(self._model_ready)

    def add_actions(self, tools: Any, view: Any) -> None:
        """Tools › Input Shapes…"""
        act = self.shell.add_action(tools, "&Input Shapes…", self.ask, "Ctrl+I")
        act.setToolTip("The values of the inputs' symbolic dims that FLOPs, bytes and every job are counted at")

    def saved(self, gm: GraphModel) -> dict[str, int]:
        key = _key(gm)
        return saved_dims(key) if key else {}

    def ask(self) -> None:
        """Open the dialog for the model on screen (non-modal: the window stays usable)."""
        gm = self.controller.graph_model
        if gm is None:
            self.shell.show_message("Open a model first.", 5000)
            return
        self._drop_dialog()
        dlg = self.dialog = InputShapesDialog(gm, self.saved(gm), self.shell.window())
        dlg.accepted.connect(self._accepted)  # a bound method: no closure that Qt would keep holding the model
        dlg.show()

    def _accepted(self) -> None:
        dlg = self.dialog
        if dlg is not None and dlg.gm is not None:
            self._apply(dlg.gm, dlg.dims())

    def _apply(self, gm: GraphModel, dims: dict[str, int]) -> None:
        if gm is not self.controller.graph_model:
            return  # another model was opened meanwhile
        key = _key(gm)
        if key:
            remember_dims(key, dims)
        name = gm.path.name if gm.path else "the model"
        if self.controller.session.set_dims(dims):
            self.shell.show_message(f"Counting {name} at the new shapes…")
        else:
            self.shell.show_message(f"{name} is still being opened: set the shapes again once it is shown.", 10000)

    def _drop_dialog(self) -> None:
        """Close the dialog and let it go (it and its connection hold its model: a closed dialog kept alive kept a
        200k-node model after the next one was opened)."""
        if self.dialog is not None:
            dlg, self.dialog = self.dialog, None
            dlg.gm = None  # let go of the model now: the deferred delete below waits for an event loop to run it
            dlg.close()
            dlg.deleteLater()

    def _model_ready(self, gm: GraphModel, *_: Any) -> None:
        if self.dialog is not None and self.dialog.gm is not gm:
            self._drop_dialog()
        marker = f"{gm.path}:{sorted(gm.missing_dims)}"
        if gm.missing_dims and marker != self._asked:
            self._asked = marker  # asked once per model and set of missing dims
            self.shell.show_message(
                f"{', '.join(gm.missing_dims)}: no value; the costs that depend on "
                f"{'it' if len(gm.missing_dims) == 1 else 'them'} are unknown until given (Tools › Input Shapes…)",
                15000,
            )
            self.ask()


def _key(gm: GraphModel) -> str:
    from splitscope.engine.runtime.store import model_key

    if gm.path is None:
        return ""
    try:
        return model_key(gm.path)
    except OSError:
        return ""
