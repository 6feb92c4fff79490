"""Tools › Profile…: the backend, iteration counts, values for the model's symbolic dims (remembered per
model) and optional inputs from a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)
from splitscope.engine.dims import symbolic_dims
from splitscope.engine.model import GraphModel
from splitscope.gui.shell.shapes import start_value
from splitscope.profiler.dims import remember_dims, saved_dims
from splitscope.profiler.profiling import ProfileRequest

BACKENDS = (
    ("ort-cpu", "ONNX Runtime, CPU"),
    ("ort-cuda", "ONNX Runtime, CUDA"),
    ("tensorrt", "TensorRT engine"),
    ("rtx", "TensorRT-RTX engine"),
)


class ProfileDialog(QDialog):
    """Asks what to profile; :meth:`request` is the answer."""

    def __init__(self, gm: GraphModel, key: str, available: dict[str, str], parent: QWidget | None = None) -> None:
        """``available``: backend -> "" when it can run here, else why not (shown as its tooltip)."""
        super().__init__(parent)
        self.setWindowTitle("Profile")
        self.gm, self.key = gm, key
        settings = QSettings()
        form = QFormLayout(self)
        self.backend = QComboBox()
        for name, label in BACKENDS:
            unverified = name in ("tensorrt", "rtx")
            text = f"{label} (not yet run against a real engine)" if unverified else label
            self.backend.addItem(text if not available.get(name) else f"{text} (not here)", name)
            idx = self.backend.count() - 1
            item = self.backend.model().item(idx)  # type: ignore[attr-defined]
            tip = [available[name]] if available.get(name) else []
            if unverified:
                tip.append(
                    "Written to TensorRT's documented API and tested against a fake engine: its figures are "
                    "not yet confirmed by a real engine (the profile's JSON says verified: false)."
                )
            if available.get(name):
                item.setEnabled(False)
            if tip:
                item.setToolTip("\n".join(tip))
        last = str(settings.value("profile/backend", "ort-cpu"))
        pos = self.backend.findData(last)
        if pos >= 0 and not available.get(last):
            self.backend.setCurrentIndex(pos)
        form.addRow("Backend", self.backend)
        self.target = target_combo()
        self.target.currentIndexChanged.connect(lambda *_: self._target_changed(available))
        form.addRow("Run on", self.target)
        self._target_changed(available)
        self.iterations = self._spin(int(settings.value("profile/iterations", 100)), 1, 1_000_000)
        self.warmup = self._spin(int(settings.value("profile/warmup", 10)), 0, 100_000)
        self.profiled = self._spin(int(settings.value("profile/profiled", 20)), 1, 100_000)
        form.addRow("Timed iterations", self.iterations)
        form.addRow("Warm-up iterations", self.warmup)
        form.addRow("Profiled iterations (per-node times)", self.profiled)
        saved = self._saved_dims()
        self.dims: dict[str, QSpinBox] = {}
        for d in symbolic_dims(gm):
            box = self._spin(start_value(gm, d, saved), 1, 1 << 20)  # the shapes in force first
            self.dims[d] = box
            form.addRow(f"Dim '{d}'", box)
        if not self.dims:
            form.addRow(QLabel("The inputs have no symbolic dims."))
        self.input = QLineEdit()
        self.input.setPlaceholderText("random, seeded (or pick a .npz / .npy)")
        pick = QPushButton("Choose…")
        pick.clicked.connect(self._choose_input)
        row = QHBoxLayout()
        row.addWidget(self.input, 1)
        row.addWidget(pick)
        form.addRow("Inputs", row)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Profile")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _target_changed(self, available: dict[str, str]) -> None:
        """Backends missing here may be on the target (it says so if not): enabled for a remote target."""
        remote = self.target.currentData() is not None
        model = self.backend.model()
        for i in range(self.backend.count()):
            name = self.backend.itemData(i)
            model.item(i).setEnabled(remote or not available.get(name))  # type: ignore[attr-defined]

    @staticmethod
    def _spin(value: int, lo: int, hi: int) -> QSpinBox:
        s = QSpinBox()
        s.setRange(lo, hi)
        s.setValue(min(max(value, lo), hi))
        return s

    def _saved_dims(self) -> dict[str, int]:
        return saved_dims(self.key)

    def _choose_input(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Inputs", str(Path.home()), "NumPy (*.npz *.npy)")
        if name:
            self.input.setText(name)

    def request(self) -> ProfileRequest:
        """The request, and the choices remembered for next time (the dims for this model)."""
        settings = QSettings()
        dims = {d: box.value() for d, box in self.dims.items()}
        remember_dims(self.key, dims)
        settings.setValue("profile/backend", self.backend.currentData())
        for k in ("iterations", "warmup", "profiled"):
            settings.setValue(f"profile/{k}", getattr(self, k).value())
        assert self.gm.path is not None
        return ProfileRequest(
            self.gm.path,
            str(self.backend.currentData()),
            self.iterations.value(),
            self.warmup.value(),
            self.profiled.value(),
            dims,
            self.input.text().strip() or None,
            _parser_of(self.gm),
            chosen_target(self.target),
        )


def target_combo() -> QComboBox:
    """This machine and the saved SSH targets (Tools › Targets…), the one last used chosen."""
    from splitscope.profiler.targets import current_target, saved_targets

    box = QComboBox()
    box.addItem("This machine", None)
    for t in saved_targets():
        box.addItem(t.label, t.to_json())
    pos = box.findText(current_target().label)
    box.setCurrentIndex(max(pos, 0))
    box.setToolTip("Where the job runs: Splitscope must be installed there (Tools › Targets… checks it)")
    return box


def chosen_target(box: QComboBox) -> dict[str, Any] | None:
    """The target a combo of :func:`target_combo` names (None: this machine), remembered as the one in use."""
    from splitscope.engine.remote.target import Target
    from splitscope.profiler.targets import set_current_target

    data = box.currentData()
    set_current_target(Target.from_json(data) if data else Target())
    return dict(data) if data else None


def _parser_of(gm: GraphModel) -> str:
    """The parser that split the open model, so the profile's plugin nodes are the ones the window shows."""
    p: Any = gm.parser
    return {"tensorrt": "tensorrt", "tensorrt-rtx": "rtx"}.get(getattr(p, "name", "table"), "table")
