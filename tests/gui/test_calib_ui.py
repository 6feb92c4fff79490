"""Calibration from the window (pytest-qt, offscreen): a job on the GPU lane in a child process, the
Calibration panel's histogram with each method's threshold, the plan's precision colouring, and a cancel
that leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from splitscope.profiler.queue import CANCELLED, DONE
from splitscope.profiler.workers import settled

from tests.engine.test_calib import _cnn
from tests.gui.conftest import wait_idle

ROOT = Path(__file__).resolve().parents[2]


def test_calibrate_from_the_window(qtbot, window, tmp_path):
    model = _cnn(tmp_path / "cnn.onnx")
    window.open_model(model)
    wait_idle(qtbot, window)
    ui = window.calib_ui
    out = tmp_path / "cnn.int8.onnx"
    jid = ui.submit(
        {
            "model": str(model),
            "out": str(out),
            "data": "random",
            "method": "entropy",
            "precision": "int8",
            "samples": 4,
            "keep": ["fc"],
            "dims": {},
            "budget": "snr=10",
        }
    )
    q = window.controller.queue
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE and ui.result is not None, timeout=90000)
    assert out.exists() and "fc" in ui.result.excluded
    # The sensitivity bars and the search path, live and then from the result.
    search = ui.result.search
    assert ui.panel.ranges and all(len(p) == 4 for p in ui.panel.ranges.values())  # one point a sample
    assert ui.panel.sens_bars.opts["width"] is not None and len(ui.panel.path) == len(search.path)
    assert ui.panel.tensors.count() >= 3 and "SNR" in ui.panel.title.text()
    lines = [i for i in ui.panel.plot.getPlotItem().items if type(i).__name__ == "InfiniteLine"]
    assert len(lines) == 4  # max, percentile, entropy, MSE thresholds on the selected tensor's histogram
    heat = window.canvas.heat
    assert heat is not None and window.colours.actions["plan"].isChecked()
    by = {n.name: n.index for n in window.graph_model.nodes}
    assert heat.nodes[by["fc"]] != heat.nodes[by["conv1"]]  # kept in FP32 vs INT8


def test_cancelled_calibration_writes_nothing(qtbot, window, tmp_path):
    window.open_model(ROOT / "tests" / "data" / "torch_transformer.onnx")
    wait_idle(qtbot, window)
    (tmp_path / "o").mkdir()
    out = tmp_path / "o" / "t.int8.onnx"
    ui = window.calib_ui
    jid = ui.submit(
        {
            "model": str(ROOT / "tests" / "data" / "torch_transformer.onnx"),
            "out": str(out),
            "data": "random",
            "method": "max",
            "precision": "int8",
            "samples": 100000,
            "keep": [],
            "dims": {"batch": 4, "seq": 16},
        }
    )
    q = window.controller.queue
    qtbot.waitUntil(lambda: q.jobs[jid].done > 3, timeout=60000)
    rec = q.jobs[jid]
    at_cancel = f"{rec.done}/{rec.total} {rec.message!r} after {rec.elapsed:.1f} s"
    q.cancel(jid)
    qtbot.waitUntil(lambda: q.jobs[jid].state == CANCELLED, timeout=60000)
    qtbot.waitUntil(settled, timeout=60000)  # the job's worker has closed its generator: the child unwound
    left = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert not out.exists() and not left, f"cancelled at {at_cancel}; left {left}"


def test_fp16_plan_in_the_window_uses_the_engine_explorers_colours(qtbot, window, tmp_path):
    from splitscope.gui.calibrate.ui import CalibDialog
    from splitscope.gui.engine.ui import PRECISION_COLOURS

    model = _cnn(tmp_path / "cnn.onnx")
    window.open_model(model)
    wait_idle(qtbot, window)
    dlg = CalibDialog(window, window.graph_model, [])
    dlg.precision.setCurrentText("fp16")
    assert not dlg.method.isEnabled() and dlg.out.text().endswith("cnn.fp16.onnx")  # FP16 needs no ranges
    dlg.precision.setCurrentText("int8")
    assert dlg.method.isEnabled()
    ui = window.calib_ui
    jid = ui.submit(
        {
            "model": str(model),
            "out": str(tmp_path / "cnn.fp16.onnx"),
            "data": "random",
            "method": "max",
            "precision": "fp16",
            "samples": 2,
            "keep": ["fc"],
            "dims": {},
        }
    )
    qtbot.waitUntil(lambda: window.controller.queue.jobs[jid].state == DONE and ui.result is not None, timeout=90000)
    assert "casts" in ui.panel.title.text() and "FP16" in ui.panel.title.text()
    heat = window.canvas.heat
    by = {n.name: n.index for n in window.graph_model.nodes}
    keys = list(heat.palette)
    assert keys[int(heat.nodes[by["conv1"]])] == PRECISION_COLOURS["FP16"]
    assert keys[int(heat.nodes[by["fc"]])] == PRECISION_COLOURS["FP32"]


def test_pinning_nodes_measures_again_with_the_cached_statistics(qtbot, window, tmp_path):
    model = _cnn(tmp_path / "cnn.onnx")
    window.open_model(model)
    wait_idle(qtbot, window)
    ui, q = window.calib_ui, window.controller.queue
    assert ui.pin(True) is None  # nothing calibrated yet: a status message, no job
    jid = ui.submit(
        {
            "model": str(model),
            "out": str(tmp_path / "cnn.int8.onnx"),
            "data": "random",
            "method": "max",
            "precision": "int8",
            "samples": 4,
            "keep": [],
            "dims": {},
        }
    )
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE and ui.result is not None, timeout=90000)
    assert ui.panel.pin_fp32.isEnabled() and ui.panel.pin_low.text() == "Pin Selection to INT8"
    by = {n.name: n.index for n in window.graph_model.nodes}
    window.canvas.highlight_nodes = set()
    window.canvas.selected_node = by["conv2"]
    first = ui.result
    jid = ui.pin(True)
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE and ui.result is not first, timeout=90000)
    assert "conv2" in ui.result.excluded and ui.result.json["stats_cached"]  # seconds: no second pass
    assert "1 nodes in FP32" in ui.panel.pins.text() or "1 node" in ui.panel.pins.text()
    heat = window.canvas.heat
    assert heat.nodes[by["conv2"]] != heat.nodes[by["conv1"]]
    second = ui.result
    jid = ui.pin(False)
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE and ui.result is not second, timeout=90000)
    assert "conv2" not in ui.result.excluded and "conv2" in ui.result.quantized


def test_pinning_a_node_to_fp16_inside_an_int8_model(qtbot, window, tmp_path):
    from splitscope.gui.engine.ui import PRECISION_COLOURS

    model = _cnn(tmp_path / "cnn.onnx")
    window.open_model(model)
    wait_idle(qtbot, window)
    ui, q = window.calib_ui, window.controller.queue
    jid = ui.submit(
        {
            "model": str(model),
            "out": str(tmp_path / "cnn.int8.onnx"),
            "data": "random",
            "method": "max",
            "precision": "int8",
            "samples": 2,
            "keep": [],
            "dims": {},
        }
    )
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE and ui.result is not None, timeout=90000)
    assert ui.panel.pin_half.isEnabled()
    by = {n.name: n.index for n in window.graph_model.nodes}
    window.canvas.highlight_nodes = set()
    window.canvas.selected_node = by["conv2"]
    first = ui.result
    jid = ui.pin("half")
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE and ui.result is not first, timeout=90000)
    assert ui.result.half.nodes == ("conv2",) and "1 in FP16" in ui.panel.pins.text()
    heat = window.canvas.heat
    assert list(heat.palette)[int(heat.nodes[by["conv2"]])] == PRECISION_COLOURS["FP16"]


def test_the_recipe_is_previewed_and_checked_before_anything_runs(qtbot, window, tmp_path):
    import numpy as np
    from PIL import Image
    from splitscope.gui.calibrate.ui import CalibDialog

    model = _cnn(tmp_path / "cnn.onnx")
    window.open_model(model)
    wait_idle(qtbot, window)
    folder = tmp_path / "imgs"
    folder.mkdir()
    Image.fromarray(np.full((40, 60, 3), 128, np.uint8)).save(folder / "a.png")
    dlg = CalibDialog(window, window.graph_model, [])
    qtbot.addWidget(dlg)
    assert dlg.recipe.preset.currentData() == "imagenet"  # no detector metadata, three channels
    dlg.data.setText(str(folder))
    qtbot.waitUntil(lambda: dlg.recipe.last is not None, timeout=20000)
    shape = list(window.graph_model.graph.tensors[window.graph_model.graph.inputs[0]].shape)
    assert f"a.png → [{', '.join(map(str, shape))}]" in dlg.recipe.info.text() and "values" in dlg.recipe.info.text()
    dlg.recipe.last = None
    dlg.recipe.preset.setCurrentIndex(dlg.recipe.preset.findData("symmetric"))
    qtbot.waitUntil(lambda: dlg.recipe.last is not None, timeout=20000)
    assert abs(dlg.recipe.last.low) < 0.01 and abs(dlg.recipe.last.high) < 0.01  # mid-grey is about 0 in -1..1
    dlg.recipe.last = None
    dlg.recipe.layout_box.setCurrentText("nhwc")
    qtbot.waitUntil(lambda: dlg.recipe.last is not None, timeout=20000)
    assert "set layout=nchw in the recipe" in dlg.recipe.info.text()  # the recipe's fault, named before a run
    args = dlg.args(Path(model), {})
    assert args["recipe"] == "preset=symmetric,fit=stretch,layout=nhwc" and args["metric"] == "auto"


def test_the_dialog_starts_from_a_paddle_config_beside_the_model_and_says_so(qtbot, window, tmp_path):
    from splitscope.gui.calibrate.ui import CalibDialog

    from tests.engine.test_feeds_and_recipes import PADDLEOCR_REC_CONFIG

    model = _cnn(tmp_path / "rec.onnx")
    (tmp_path / "inference.yml").write_text(PADDLEOCR_REC_CONFIG)
    window.open_model(model)
    wait_idle(qtbot, window)
    dlg = CalibDialog(window, window.graph_model, [])
    qtbot.addWidget(dlg)
    assert (dlg.recipe.fit.currentText(), dlg.recipe.order.currentText()) == ("pad", "bgr")
    assert dlg.recipe.source.text() == "From inference.yml beside the model."
    assert "fit=pad" in dlg.recipe.text() and "order=bgr" in dlg.recipe.text()
