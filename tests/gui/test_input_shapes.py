"""Tools › Input Shapes…: the window asks for a dim without a value, re-costs at the values given, and opens the
model at them next time."""

from __future__ import annotations

import onnx

from tests.engine.test_dims import _conv_flops, _strided
from tests.gui.conftest import wait_idle


def test_the_window_asks_for_the_missing_dims_and_recosts(qtbot, window, tmp_path):
    p = tmp_path / "strided.onnx"
    onnx.save(_strided(), p)
    window.open_model(p)
    wait_idle(qtbot, window)
    gm = window.graph_model
    assert gm.missing_dims == ["height", "width"]
    assert "unknown until given" in window.summary.headline.text()
    qtbot.waitUntil(lambda: window.input_shapes.dialog is not None and window.input_shapes.dialog.isVisible())
    dlg = window.input_shapes.dialog
    assert "needs a value" in dlg.findChild(type(dlg.shapes), "origin_height").text()
    assert dlg.boxes["height"].value() == 640  # a typical size to edit, never a silent 1
    dlg.boxes["height"].setValue(96)
    dlg.boxes["width"].setValue(64)
    assert "x [1, 3, 96, 64]" in dlg.shapes.text()
    with qtbot.waitSignal(window.controller.model_ready, timeout=60000):
        dlg.accept()
    wait_idle(qtbot, window)
    assert window.graph_model is gm and gm.dims == {"batch": 1, "height": 96, "width": 64} and not gm.missing_dims
    assert sum(n.flops or 0 for n in gm.nodes if n.op_type == "Conv") == _conv_flops(96, 64)
    assert "at x [1, 3, 96, 64]" in window.summary.headline.text()
    # Opened again, the model comes back at the values given, and nothing is asked.
    window.input_shapes.dialog.close()
    window.open_model(p)
    wait_idle(qtbot, window)
    assert window.graph_model is not gm and window.graph_model.dims["height"] == 96
    assert window.input_shapes.dialog is None


def test_each_model_keeps_its_own_search(qtbot, window, tmp_path):
    from splitscope.engine.sample import SAMPLE_MODEL

    other = tmp_path / "strided.onnx"
    onnx.save(_strided(), other)
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    window.search.setText("Conv")
    qtbot.waitUntil(lambda: bool(window.canvas.highlight_nodes))
    window.open_model(other)
    wait_idle(qtbot, window)
    assert window.search.text() == "" and not window.canvas.highlight_nodes  # nothing of the sample's
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    assert window.search.text() == "Conv" and window.canvas.highlight_nodes  # the sample's search comes back
