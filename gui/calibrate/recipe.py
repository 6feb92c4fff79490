"""The Calibrate dialog's pre-processing recipe: presets (ImageNet, 0..1, -1..1, letterbox for detectors,
grayscale, PaddleOCR's text models) or a custom one, starting from the one the model's own config or metadata
gives, with one sample prepared by it in a worker, its value range, and the recipe
checked against the model's input before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QComboBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget
from splitscope.engine.calib.data import FITS, ORDERS, PRESETS, CalibDataError, Recipe, RecipePreview
from splitscope.engine.calib.task import KINDS
from splitscope.engine.runtime.inputs import InputSpec

PRESET_TEXT = {
    "imagenet": "ImageNet classifier: resize 256, centre crop, mean/std",
    "unit": "pixels / 255 (0..1), resized to the input",
    "symmetric": "-1..1 ((x/255 - 0.5) / 0.5), resized to the input",
    "letterbox": "detector (YOLO): letterboxed to the input, grey 114, pixels / 255",
    "grayscale": "one channel, 0..1",
    "ppocr": "PaddleOCR text: BGR, ratio kept, padded right/bottom, -1..1",
    "custom": "custom: the fields below",
}


class RecipeBox(QWidget):
    """Preset, fit, mean/std, layout, channel order; a preview of the first image of the data folder prepared by
    them. Starts from ``recipe`` (``--recipe`` text); ``source`` says where that came from."""

    def __init__(
        self,
        spec: InputSpec | None,
        dims: dict[str, int],
        recipe: str,
        parent: QWidget | None = None,
        source: str = "",
    ):
        super().__init__(parent)
        self.spec, self.dims = spec, dict(dims)
        self.folder = ""
        self._worker: Any = None
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        self.preset = QComboBox()
        for key, text in PRESET_TEXT.items():
            self.preset.addItem(text, key)
        self.fit = QComboBox()
        self.fit.addItems(list(FITS))
        self.mean = QLineEdit()
        self.std = QLineEdit()
        self.layout_box = QComboBox()
        self.layout_box.addItems(["nchw", "nhwc"])
        self.order = QComboBox()
        self.order.addItems(list(ORDERS))
        form.addRow("Recipe", self.preset)
        # Two rows: the choices, then the numbers, each field wide enough for a whole three-channel value.
        wide = self.fontMetrics().horizontalAdvance("0.485/0.456/0.406") + 24
        for w in (self.mean, self.std):
            w.setMinimumWidth(wide)
        for fields in (
            (("fit", self.fit), ("layout", self.layout_box), ("order", self.order)),
            (("mean", self.mean), ("std", self.std)),
        ):
            row = QHBoxLayout()
            for label, w in fields:
                row.addWidget(QLabel(label))
                row.addWidget(w, 1)
            form.addRow("", row)
        self.source = QLabel(f"From {source}." if source else "")
        self.source.setObjectName("recipe_source")
        self.source.setWordWrap(True)
        if source:
            form.addRow("", self.source)
        preview = QHBoxLayout()
        self.thumb = QLabel()
        self.thumb.setFixedSize(96, 96)
        self.thumb.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.thumb.setObjectName("recipe_thumb")
        self.info = QLabel("Pick a folder of images to see one prepared.")
        self.info.setObjectName("recipe_info")
        self.info.setWordWrap(True)
        col = QVBoxLayout()
        col.addWidget(self.info)
        preview.addWidget(self.thumb)
        preview.addLayout(col, 1)
        form.addRow("Prepared", preview)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self._refresh)
        self.preset.currentIndexChanged.connect(self._preset_changed)
        for w in (self.mean, self.std):
            w.textEdited.connect(self._custom_edited)
        for c in (self.fit, self.layout_box, self.order):
            c.currentTextChanged.connect(lambda *_: self._timer.start())
        self.last: RecipePreview | None = None
        self.set_recipe(recipe)

    def set_recipe(self, text: str) -> None:
        """Show ``text`` (``--recipe`` form) in the fields; one that does not parse leaves ImageNet's."""
        try:
            r = Recipe.parse(text)
        except CalibDataError:
            r = Recipe()
        self.preset.blockSignals(True)
        self.preset.setCurrentIndex(max(self.preset.findData(r.preset if r.preset in PRESETS else "custom"), 0))
        self.preset.blockSignals(False)
        self._show_fields(r)
        self._timer.start()

    def _show_fields(self, r: Recipe) -> None:
        for w, v in ((self.mean, r.mean), (self.std, r.std)):
            w.setText("/".join(f"{x:g}" for x in v))
        for box, value in ((self.fit, r.fit), (self.layout_box, r.layout), (self.order, r.order)):
            box.blockSignals(True)
            box.setCurrentText(value)
            box.blockSignals(False)

    def text(self) -> str:
        """The recipe as ``calibrate --recipe`` reads it."""
        key = self.preset.currentData()
        parts = [f"preset={key}"] if key != "custom" else []
        parts += [f"fit={self.fit.currentText()}", f"layout={self.layout_box.currentText()}"]
        if self.order.currentText() != "rgb" or PRESETS.get(key, {}).get("order", "rgb") != "rgb":
            parts.append(f"order={self.order.currentText()}")
        if key == "custom":
            parts += [f"mean={self.mean.text().strip()}", f"std={self.std.text().strip()}"]
        return ",".join(parts)

    def set_dim(self, name: str, value: int) -> None:
        self.dims[name] = value
        self._timer.start()

    def set_folder(self, folder: str) -> None:
        self.folder = folder
        self._timer.start()

    def _preset_changed(self) -> None:
        key = self.preset.currentData()
        if key in PRESETS:
            r = Recipe.parse(f"preset={key},layout={self.layout_box.currentText()}")
            self._show_fields(r)
        self._timer.start()

    def _custom_edited(self) -> None:
        i = self.preset.findData("custom")
        self.preset.blockSignals(True)
        self.preset.setCurrentIndex(i)
        self.preset.blockSignals(False)
        self._timer.start()

    def _refresh(self) -> None:
        folder = self.folder.strip()
        if not folder or folder == "random" or not Path(folder).is_dir() or self.spec is None:
            self.thumb.clear()
            self.info.setText("Pick a folder of images to see one prepared (random data needs no recipe).")
            return
        from splitscope.engine.calib.data import preview_recipe
        from splitscope.profiler.workers import function_worker

        if self._worker is not None:
            self._worker.quit()
        worker = function_worker(preview_recipe, folder, self.spec, self.text(), self.dims)
        worker.returned.connect(self._show)
        worker.errored.connect(lambda e: self.info.setText(f"<b>The recipe could not be tried:</b> {e}"))
        self._worker = worker
        worker.start()

    def _show(self, p: RecipePreview) -> None:
        self.last = p
        if p.error or p.pixels is None:
            self.thumb.clear()
            self.info.setText(f"<b>The recipe cannot feed this model:</b> {p.error}")
            return
        a = p.pixels
        h, w = a.shape[:2]
        fmt = QImage.Format.Format_Grayscale8 if a.shape[2] == 1 else QImage.Format.Format_RGB888
        img = QImage(a.tobytes(), w, h, w * a.shape[2], fmt)
        self.thumb.setPixmap(QPixmap.fromImage(img).scaled(96, 96, Qt.AspectRatioMode.KeepAspectRatio))
        self.info.setText(
            f"{p.file} → [{', '.join(map(str, p.shape))}], values {p.low:.3g} to {p.high:.3g} (recipe {self.text()})"
        )


def metric_box() -> QComboBox:
    """The task metric: chosen from each output's shape, or by hand."""
    box = QComboBox()
    for k in KINDS:
        box.addItem({"auto": "from each output's shape"}.get(k, k), k)
    box.setToolTip(
        "The agreement beside SNR: top-1/top-5 for a classifier, decoded strings matched exactly for a CTC "
        "recogniser, detections matched at IoU 0.5 after NMS for a YOLO-style head (F1 over the FP32 detections), "
        "IoU of thresholded maps for dense outputs; 'auto' picks one only when the values show it"
    )
    return box
