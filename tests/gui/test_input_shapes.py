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
    new = window.graph_model  # a new model, counted by a worker: the one on screen was never changed under it
    assert new is not gm and gm.missing_dims == ["height", "width"]
    assert new.dims == {"batch": 1, "height": 96, "width": 64} and not new.missing_dims
    assert sum(n.flops or 0 for n in new.nodes if n.op_type == "Conv") == _conv_flops(96, 64)
    assert "at x [1, 3, 96, 64]" in window.summary.headline.text()
    # Opened again, the model comes back at the values given, and nothing is asked.
    if window.input_shapes.dialog is not None:
        window.input_shapes.dialog.close()
    window.open_model(p)
    wait_idle(qtbot, window)
    assert window.graph_model is not new and window.graph_model.dims["height"] == 96
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


def test_double_click_opens_an_if_body_coloured_by_the_parser_and_back(qtbot, tmp_path):
    """The exported detector's NMS sits in an If: its body opens on the canvas, the NonZero the parser named is
    the plugin, the outer tensors it reads are its inputs; search finds the node inside; Back returns."""
    import pytest
    from splitscope.engine.model import Source, Status
    from splitscope.gui.shell.window import MainWindow

    pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX's parser")
    from tests.gui.test_window import ROOT

    w = MainWindow(parser="rtx")
    qtbot.addWidget(w)
    w.show()
    w.open_model(ROOT / "tests" / "data" / "torch_detector_if.onnx")
    wait_idle(qtbot, w)
    main = w.view
    w.search.setText("NonZero")
    qtbot.waitUntil(lambda: "inside the bodies of 1 node" in w.match_label.text())
    owner = next(n for n in w.graph_model.nodes if n.op_type == "If")
    assert w.canvas.highlight_nodes == {owner.index}
    with qtbot.waitSignal(w.controller.session.body_changed, timeout=30000) as sig:
        w.canvas.body_requested.emit(owner.index)  # what a double-click on the If sends
    wait_idle(qtbot, w)
    assert sig.args[0] == [f"If '{owner.label}' › then_branch"] and w.bodies.bar.isVisible()
    body = w.view.gm
    nz = next(n for n in body.nodes if n.op_type == "NonZero")
    assert nz.status is Status.PLUGIN and nz.source is Source.PARSER
    assert "/Gather_output_0" in body.graph.inputs  # an outer tensor the body captures
    qtbot.waitUntil(lambda: w.canvas.highlight_nodes == {nz.index})  # search follows the graph on screen
    w.inspector.show_node(nz.index)
    assert "NonZero" in w.inspector.toPlainText()
    with qtbot.waitSignal(w.controller.session.body_changed, timeout=30000) as sig:
        w.controller.session.switch_body("else_branch")  # what the bar's "Show else_branch" button does
    wait_idle(qtbot, w)
    assert sig.args[0][-1].endswith("else_branch")
    with qtbot.waitSignal(w.controller.session.body_changed, timeout=30000) as sig:
        w.controller.session.close_body()
    assert sig.args[0] == [] and w.view is main and not w.bodies.bar.isVisible()
    # Refolding, or opening another model, from inside a body goes back to the main graph, canvas and all.
    for leave in (
        lambda: w.session.set_folding(False),
        lambda: w.open_model(ROOT / "tests" / "data" / "torch_two_stage.onnx"),
    ):
        with qtbot.waitSignal(w.controller.session.body_changed, timeout=30000):
            w.canvas.body_requested.emit(next(n for n in w.graph_model.nodes if n.op_type == "If").index)
        wait_idle(qtbot, w)
        with qtbot.waitSignal(w.controller.session.body_changed, timeout=30000) as sig:
            leave()
        wait_idle(qtbot, w)
        assert sig.args[0] == [] and not w.view.crumbs and not w.bodies.bar.isVisible()
        assert w.canvas.gm is w.view.gm and not w.session.outer_views
    w.close()


def test_verify_by_building_from_the_window(qtbot, window, tmp_path):
    """Tools › Verify the Split by Building: a job with progress and Cancel; the model comes back with the node
    the builder rejects marked, and the headline says it was verified by building."""
    import pytest

    pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX (its builder runs on the CPU)")
    from splitscope.engine.runtime.store import model_key
    from splitscope.profiler.dims import remember_dims
    from splitscope.profiler.queue import DONE

    from tests.engine.test_verify import _branch_that_fails_at_8

    p = _branch_that_fails_at_8(tmp_path / "m.onnx")
    remember_dims(model_key(p), {"n": 8})
    window.open_model(p)
    wait_idle(qtbot, window)
    jid = window.engine_ui.verify()
    q = window.controller.queue
    with qtbot.waitSignal(window.controller.model_ready, timeout=120000):
        qtbot.waitUntil(lambda: q.jobs[jid].state == DONE, timeout=120000)
    wait_idle(qtbot, window)
    gm = window.graph_model
    branch = next(n for n in gm.nodes if n.label == "branch")
    assert branch.status.value == "plugin" and branch.source.value == "builder"
    assert "verified by building at x [8]" in window.summary.headline.text()
    assert "Verify m.onnx by building at x [8]" in q.jobs[jid].title


def test_the_verify_dialog_gives_the_budget_and_ranges(qtbot, window, tmp_path):
    """Tools › Verify the Split by Building…: the budget (remembered) and a min / max per dim in force; the build
    runs over the range and the headline says so."""
    import pytest

    pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX (its builder runs on the CPU)")
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QSpinBox
    from splitscope.engine.runtime.store import model_key
    from splitscope.gui.engine.verify_dialog import VerifyDialog
    from splitscope.profiler.dims import remember_dims
    from splitscope.profiler.queue import DONE

    from tests.engine.test_verify import _chain

    p = _chain(tmp_path / "m.onnx")
    remember_dims(model_key(p), {"n": 4})
    window.open_model(p)
    wait_idle(qtbot, window)
    dialog = VerifyDialog(window.graph_model, window)
    qtbot.addWidget(dialog)
    dialog.findChild(QSpinBox, "verify_budget").setValue(90)
    lo, hi = dialog.findChild(QSpinBox, "min_n"), dialog.findChild(QSpinBox, "max_n")
    assert (lo.maximum(), hi.minimum()) == (4, 4)  # the range always holds the value in force
    lo.setValue(1)
    hi.setValue(16)
    budget, ranges = dialog.values()
    assert budget == 90 and ranges == {"n": (1, 16)} and int(QSettings().value("verify/budget")) == 90
    jid = window.engine_ui.verify(budget, ranges)
    q = window.controller.queue
    with qtbot.waitSignal(window.controller.model_ready, timeout=120000):
        qtbot.waitUntil(lambda: q.jobs[jid].state == DONE, timeout=120000)
    wait_idle(qtbot, window)
    assert "over n 1..16 (opt 4)" in window.summary.headline.text()
    assert window.graph_model.build["partitions"][0]["status"] == "built"
