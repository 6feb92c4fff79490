"""The window as a user sees it, on a real X server (Xvfb), compared with a reviewed reference.

Set UPDATE_SCREENSHOTS=1 to write new references after looking at them; the
actual images are always saved under tests/screenshots/out/ for review.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QSettings, QThreadPool
from PySide6.QtGui import QImage
from splitscope.engine.sample import SAMPLE_MODEL

HERE = Path(__file__).resolve().parent
REF = HERE / "reference"
OUT = HERE / "out"


def _array(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    ptr = img.constBits()
    return (
        np.frombuffer(ptr, np.uint8, img.sizeInBytes())
        .reshape(img.height(), img.bytesPerLine())[:, : img.width() * 4]
        .reshape(img.height(), img.width(), 4)[:, :, :3]
        .copy()
    )


def _check(name: str, img: QImage) -> None:
    OUT.mkdir(exist_ok=True)
    img.save(str(OUT / f"{name}.png"))
    ref_path = REF / f"{name}.png"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not ref_path.exists():
        REF.mkdir(exist_ok=True)
        img.save(str(ref_path))
        assert os.environ.get("UPDATE_SCREENSHOTS") == "1", f"no reference yet: wrote {ref_path}; review it"
        return
    ref = _array(QImage(str(ref_path)))
    got = _array(img)
    assert ref.shape == got.shape, f"size changed: {got.shape} vs reference {ref.shape}"
    differ = (np.abs(ref.astype(int) - got.astype(int)).max(axis=2) > 48).mean()
    assert differ < 0.02, f"{differ:.1%} of pixels differ from {ref_path}; see {OUT / (name + '.png')}"


def _window(qtbot, tmp_path, model: Path):  # type: ignore[no-untyped-def]
    """The window, light theme, 1280x800, with ``model`` analysed and laid out and the badges blanked
    (they depend on the machine: GPU, TensorRT)."""
    from splitscope.gui.shell.window import MainWindow

    QCoreApplication.setOrganizationName("SplitscopeScreens")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path))
    w = MainWindow(parser="table")
    qtbot.addWidget(w)
    w.dark_override = False
    w._apply_theme()
    w.resize(1280, 800)
    w.show()
    w.open_model(model)
    qtbot.waitUntil(
        lambda: w.graph_model is not None and not w.runner.running and not w.layout_runner.running, timeout=60000
    )
    qtbot.waitUntil(lambda: bool(w.dep_status), timeout=30000)
    for b in w.badges.values():
        b.setText("")
    return w


def test_main_window_on_sample(qtbot, tmp_path):
    w = _window(qtbot, tmp_path, SAMPLE_MODEL)
    dcn = next(n.index for n in w.graph_model.nodes if n.op_type == "DCNv4")
    w.canvas.select_node(dcn)
    w.inspector.show_node(dcn)
    qtbot.wait(200)
    img = w.grab().toImage()
    arr = _array(img)
    # Both status colours are on screen (delegate blue, plugin vermillion).
    assert ((arr[:, :, 2] < 40) & (arr[:, :, 1] > 90) & (arr[:, :, 1] < 130) & (arr[:, :, 0] > 160)).any()
    assert ((arr[:, :, 2] > 190) & (arr[:, :, 1] > 80) & (arr[:, :, 1] < 100) & (arr[:, :, 0] < 20)).any()
    _check("sample_window", img)
    w.close()
    assert QThreadPool.globalInstance().waitForDone(30000)


@pytest.mark.parametrize("name", ["torch_transformer", "torch_detector_if", "torch_transformer_dynamo"])
def test_first_view_of_real_exports(qtbot, tmp_path, name):
    """The first view of each kind of real export, as it opens (nothing selected), reviewed by eye."""
    w = _window(qtbot, tmp_path, HERE.parent / "data" / f"{name}.onnx")
    qtbot.wait(200)
    seen = w.canvas.on_screen()
    assert seen["plugins_visible"] == 1.0 and seen["min_label_px"] >= 9, seen
    _check(f"first_view_{name}", w.grab().toImage())
    w.close()
    assert QThreadPool.globalInstance().waitForDone(30000)
