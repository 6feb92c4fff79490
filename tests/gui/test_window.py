"""The main window as a user drives it (pytest-qt, offscreen)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from splitscope.engine.model import Status
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.engine.view.layout import KIND_BLOCK, KIND_FRAME, KIND_NODE

from tests.gui.conftest import wait_idle

ROOT = Path(__file__).resolve().parents[2]


def test_open_sample_select_node_shows_inspector(qtbot, window):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    gm = window.graph_model
    assert len(gm.nodes) == 41
    expand_all(qtbot, window)
    layout = window.view.layout
    dcn = next(n for n in gm.nodes if n.op_type == "DCNv4")
    item = layout.node_item[dcn.index]
    assert layout.kind[item] == KIND_NODE
    with qtbot.waitSignal(window.canvas.node_selected) as sig:
        window.canvas.select_item(item)
    assert sig.args == [dcn.index]
    text = window.inspector.toPlainText()
    assert "DCNv4" in text and "plugin" in text and "custom op" in text
    # The ops table follows the selection.
    rows = window.ops.table.selectionModel().selectedRows()
    assert rows and "DCNv4" in rows[0].data()
    assert "2 engine partitions" in window.summary.headline.text() and "a custom op" in window.summary.headline.text()
    assert window.windowTitle().endswith("sample.onnx")


def expand_all(qtbot, window):
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.expand_all()
    wait_idle(qtbot, window)


def test_the_window_takes_the_interpreter_back_from_workers_within_a_millisecond(window):
    """Each call into Qt lets go of the interpreter; with a job working in Python, Python's default 5 ms hand-over
    made the first show and every paint wait (see ``UI_SWITCH_INTERVAL_S``)."""
    import sys

    from splitscope.gui.shell.window import UI_SWITCH_INTERVAL_S

    assert sys.getswitchinterval() <= UI_SWITCH_INTERVAL_S == 0.001


def test_click_on_canvas_selects(qtbot, window):
    from PySide6.QtCore import QPoint, Qt

    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    expand_all(qtbot, window)
    c = window.canvas
    layout = window.view.layout
    item = layout.node_item[0]
    c.center_on_item(item)
    pos = c.to_screen(layout.x[item] + layout.w[item] / 2, layout.y[item] + layout.h[item] / 2)
    with qtbot.waitSignal(c.node_selected) as sig:
        qtbot.mouseClick(c, Qt.MouseButton.LeftButton, pos=QPoint(int(pos.x()), int(pos.y())))
    assert sig.args == [0]


def test_search_next_previous(qtbot, window):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    expand_all(qtbot, window)
    window.search.setText("conv")
    qtbot.waitUntil(lambda: window.match_label.text() == "4 matches", timeout=60000)
    assert len(window.canvas.highlight_nodes) == 4
    window.find_next()
    assert window.match_label.text() == "1 / 4"
    first = window.canvas.selected_node
    assert window.graph_model.nodes[first].op_type == "Conv"
    window.find_next()
    window.find_previous()
    assert window.canvas.selected_node == first
    window.find_previous()
    assert window.match_label.text() == "4 / 4"
    window.search.setText("no-such-thing")
    qtbot.waitUntil(lambda: window.match_label.text() == "no match", timeout=60000)


def test_expand_and_collapse_group(qtbot, window):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    hier = window.view.hier
    backbone = next(g.id for g in hier.groups if g.label == "backbone" and g.parent == 0)
    assert window.view.layout.kind[window.view.layout.group_item[backbone]] == KIND_BLOCK  # the first view
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.toggle_group(backbone)
    assert window.view.layout.kind[window.view.layout.group_item[backbone]] == KIND_FRAME
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.toggle_group(backbone)
    layout = window.view.layout
    assert layout.kind[layout.group_item[backbone]] == KIND_BLOCK
    conv = next(n.index for n in window.graph_model.nodes if n.op_type == "Conv")
    assert layout.node_item[conv] == layout.group_item[backbone]  # shown by its block
    assert hier.groups[backbone].size == 12
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.toggle_group(backbone)
    layout = window.view.layout
    assert layout.node_item[conv] != layout.group_item[backbone]  # no longer hidden in the backbone's block


def test_search_expands_collapsed_group(qtbot, window):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.collapse_all()
    window.search.setText("NonMaxSuppression")
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.search.returnPressed.emit()  # Enter in the search field
    nms = next(n.index for n in window.graph_model.nodes if n.op_type == "NonMaxSuppression")
    assert window.view.layout.kind[window.view.layout.node_item[nms]] == KIND_NODE
    assert window.canvas.selected_node == nms


def test_ops_table_highlights_canvas(qtbot, window):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    ops = window.ops
    ops.filter.setText("MatMul")
    assert ops.proxy.rowCount() == 1
    ops.table.selectRow(0)
    mm = {n.index for n in window.graph_model.nodes if n.op_type == "MatMul"}
    assert window.canvas.highlight_nodes == mm
    # The first MatMul sits in a collapsed block: the way to it opens, then it is selected.
    qtbot.waitUntil(lambda: window.canvas.selected_node in mm, timeout=30000)


def test_bad_file_keeps_previous_model(qtbot, window, tmp_path):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    before = window.graph_model
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07 not a model at all \xff\xff")
    with qtbot.waitSignal(window.runner.job_failed, timeout=30000) as sig:
        window.open_model(bad)
    assert "broken.onnx" in sig.args[0] and "re-export" in sig.args[0]
    assert window.graph_model is before and window.view.gm is before
    assert window._failure_box.isVisible()
    assert "stays open" in window._failure_box.informativeText()
    window._failure_box.close()


@pytest.fixture
def model_6k(tmp_path):
    """A 6k-node transformer export whose full layout takes long enough to cancel."""
    from tests.bench import make_transformer

    path = tmp_path / "t.onnx"
    onnx.save(make_transformer(6000), path)
    return path


def test_cancel_layout(qtbot, window, model_6k):
    window.open_model(model_6k)
    wait_idle(qtbot, window)
    before = window.view
    with qtbot.waitSignal(window.layout_runner.job_cancelled, timeout=10000):
        window.expand_all()
        window.cancel_jobs()
    assert window.view is before
    assert not window.layout_runner.running


def test_refines_table_colours_with_the_parser(qtbot, tmp_path):
    pytest.importorskip("tensorrt_rtx", reason="TensorRT-RTX not installed")
    from splitscope.gui.shell.window import MainWindow

    w = MainWindow(parser="rtx")
    qtbot.addWidget(w)
    w.show()
    w.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, w)
    assert w.graph_model.parser.name == "tensorrt-rtx"
    assert all(n.source.value == "parser" for n in w.graph_model.nodes)
    plugin = [n.index for n in w.graph_model.nodes if n.status is Status.PLUGIN]
    assert len(plugin) == 2
    assert "tensorrt-rtx" in w.summary.headline.text()
    w.close()


def test_export_png_and_svg(qtbot, window, tmp_path):
    from PySide6.QtGui import QImage

    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    expand_all(qtbot, window)
    for name, fmt in (("g.png", "png"), ("g.svg", "svg")):
        with qtbot.waitSignal(window.export_finished, timeout=60000) as sig:
            window.save_graph(tmp_path / name, fmt)
        assert sig.args == [str(tmp_path / name)]
    img = QImage(str(tmp_path / "g.png"))
    assert img.width() > 200 and img.height() > 200
    svg = (tmp_path / "g.svg").read_text()
    assert "<svg" in svg and "Conv" in svg
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".png", ".svg")) == ["g.png", "g.svg"]


def test_recent_files_and_last_folder(qtbot, window, tmp_path):
    from PySide6.QtCore import QSettings

    p = tmp_path / "copy.onnx"
    p.write_bytes(SAMPLE_MODEL.read_bytes())
    window.open_model(p)
    wait_idle(qtbot, window)
    s = QSettings()
    assert s.value("main/recent")[0] == str(p)
    assert s.value("main/last_dir") == str(tmp_path)
    assert [a.text() for a in window.recent_menu.actions()] == [str(p)]


def test_status_badges_and_about(qtbot, window):
    qtbot.waitUntil(lambda: bool(window.dep_status), timeout=30000)
    assert set(window.badges) == {"tensorrt", "tensorrt-rtx", "cuda", "nvml"}
    rtx = window.dep_status["tensorrt-rtx"]
    assert window.badges["tensorrt-rtx"].text().startswith("✔" if rtx.ready else "✖")
    trt = window.dep_status["tensorrt"]
    if not trt.ready:
        assert "pip install" in window.badges["tensorrt"].toolTip()


def test_netron_serves_on_loopback(qtbot, window, monkeypatch):
    from PySide6.QtGui import QDesktopServices

    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    window.open_in_netron()
    assert opened and opened[0].host() == "127.0.0.1"
    import urllib.request

    with urllib.request.urlopen(opened[0].toString(), timeout=10) as r:
        assert r.status == 200
    import netron

    netron.stop()


def test_help_lists_the_keyboard_shortcuts_from_the_menus(qtbot, window):
    from splitscope.gui.shell.shortcuts import shortcut_rows, show_shortcuts

    rows = shortcut_rows(window)
    what = {r[2]: r[0] for r in rows}
    assert what["Fit"] == "F" and what["Cancel job"] == "Esc" and "Open" in what and "Zoom In" in what
    assert any(r[1] == "Canvas" and "Enter" in r[0] for r in rows)
    dlg = show_shortcuts(window)
    assert any(a.text() == "&Keyboard Shortcuts" for a in window.menuBar().actions()[-1].menu().actions())
    dlg.close()


def test_report_startup_prints_timings():
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "main.py", "--report-startup", "--parser", "table"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("{")][-1]
    d = json.loads(line)
    assert set(d) >= {"window_s", "layout_s", "first_paint_s", "nodes"}
    assert d["nodes"] == 41
    assert 0 < d["window_s"] <= d["first_paint_s"]


def test_a_large_file_opens_from_the_preview_made_beside_the_window(tmp_path):
    """``main.py LARGE_MODEL``: the preview is made in a child process started before Qt; the window shows it and
    the child is gone when the window ends (a 4.8 MB weight no node reads makes the test export large)."""
    m = onnx.load(ROOT / "tests" / "data" / "torch_transformer.onnx")
    m.graph.initializer.append(onnx.numpy_helper.from_array(np.zeros(1_200_000, np.float32), "unused_large"))
    path = tmp_path / "large.onnx"
    onnx.save(m, path)
    d = _startup_on_screen(tmp_path, "large", 1366, 768, model=path)
    assert d["nodes"] == len(m.graph.node) and d["items_visible"] > 0
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(path) not in left, "no preview child outlives the window"


def _startup_on_screen(tmp_path, config: str, width: int, height: int, dpr: int = 1, model: Path | None = None) -> dict:
    """``main.py --report-startup`` (of ``model``, else the sample) on one screen of that size and scaling (Qt's
    offscreen platform, configured), with its settings in ``config``."""
    screen = tmp_path / f"screen-{width}x{height}@{dpr}.json"
    screen.write_text(
        json.dumps({"screens": [{"name": "s", "x": 0, "y": 0, "width": width, "height": height, "dpr": dpr}]})
    )
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": f"offscreen:configfile={screen}",
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(tmp_path / config),
    }
    r = subprocess.run(
        [sys.executable, "main.py", *([str(model)] if model else []), "--report-startup", "--parser", "table"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("{")][-1])


@pytest.mark.parametrize(
    ("width", "height", "dpr"), [(1366, 768, 1), (1920, 1080, 1), (2560, 1440, 1), (1920, 1080, 2)]
)
def test_the_first_start_takes_most_of_the_screen(tmp_path, width, height, dpr):
    d = _startup_on_screen(tmp_path, "first", width, height, dpr)
    assert d["screen_px"] == [width, height] and d["scale"] == dpr
    if width < 1600:  # 85% of a small screen leaves too little: maximised
        assert width - 8 <= d["window_px"][0] <= width and height - 8 <= d["window_px"][1] <= height
    else:
        assert abs(d["window_px"][0] - 0.85 * width) <= 2 and abs(d["window_px"][1] - 0.85 * height) <= 2
    assert d["canvas_px"][0] >= 0.5 * d["window_px"][0] and d["canvas_px"][1] >= 0.5 * d["window_px"][1]
    # The Inspector and the Split summary: stacked where both fit, else tabbed (the summary on top), never squashed.
    shown = [s for s in d["side_docks"] if s["shown"]]
    least = {"Split summary": 280, "Inspector": 200}  # the summary's charts at 160 px and more; the inspector's text
    assert shown and all(s["height"] >= least[s["title"]] for s in shown), d["side_docks"]
    tabbed = all(s["tabbed"] for s in d["side_docks"])
    assert tabbed == (height < 1440), d["side_docks"]
    if tabbed:
        assert [s["title"] for s in shown] == ["Split summary"]


@pytest.fixture(scope="module")
def model_50k(tmp_path_factory):
    from tests.bench import make_transformer

    path = tmp_path_factory.mktemp("big") / "t50k.onnx"
    onnx.save(make_transformer(50000), path)
    return path


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (1920, 1080)])
def test_the_first_view_is_readable_and_says_something(tmp_path, width, height, model_50k):
    """The sample, a detector export and a 50k-node export: every label of the first view 9 px or more, and a
    model of 200 nodes or more opened as 8 to 200 items (not two boxes), at a readable zoom where fitting it all
    would not be."""
    for model, nodes in ((None, 41), (ROOT / "tests/data/torch_two_stage_ort.onnx", None), (model_50k, None)):
        d = _startup_on_screen(tmp_path, f"v{width}", width, height, model=model)
        assert d["min_label_px"] >= 9.0, (model, d)
        assert d["items_visible"] >= 1 and d["plugins_visible"] == 1.0
        if (nodes or d["nodes"]) >= 200:
            assert 8 <= d["items_laid_out"] <= 200, (model, d)


def test_a_geometry_saved_on_a_bigger_screen_is_not_restored(tmp_path):
    big = _startup_on_screen(tmp_path, "same", 2560, 1440)
    assert big["window_px"][0] > 1366  # saved at its close
    small = _startup_on_screen(tmp_path, "same", 1366, 768)
    assert 1358 <= small["window_px"][0] <= 1366 and 760 <= small["window_px"][1] <= 768  # maximised, as first
    again = _startup_on_screen(tmp_path, "same", 1366, 768)  # one that fits is restored as it was
    assert again["window_px"] == small["window_px"]


def test_typing_in_search_does_not_trigger_single_key_shortcuts(qtbot, window):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    window.canvas.zoom_by(2.0)
    scale = window.canvas.scale
    window.search.setFocus()
    qtbot.keyClicks(window.search, "fuse")
    assert window.search.text() == "fuse"
    assert window.canvas.scale == scale  # "f" went to the text field, not to Fit


def test_escape_cancels_a_running_job(qtbot, window, model_6k):
    from PySide6.QtCore import Qt

    window.open_model(model_6k)
    wait_idle(qtbot, window)
    with qtbot.waitSignal(window.layout_runner.job_cancelled, timeout=10000):
        window.expand_all()
        qtbot.keyClick(window.canvas, Qt.Key.Key_Escape)
    assert not window.layout_runner.running


def test_drop_onnx_file_opens_it(qtbot, window, tmp_path):
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    p = tmp_path / "dropped.onnx"
    p.write_bytes(SAMPLE_MODEL.read_bytes())
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p))])
    event = QDropEvent(
        QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    window.dropEvent(event)
    wait_idle(qtbot, window)
    assert window.graph_model.path == p


def test_inspector_lists_if_body_nodes(qtbot, window):
    window.open_model(ROOT / "tests" / "data" / "torch_detector_if.onnx")
    wait_idle(qtbot, window)
    branch = next(n.index for n in window.graph_model.nodes if n.op_type == "If")
    window.canvas.select_node(branch)
    window.inspector.show_node(branch)
    text = window.inspector.toPlainText()
    assert "Body then_branch" in text and "NonZero" in text
    assert "enclosing graph" in text and "/Gather_output_0" in text


def test_slow_job_shows_a_notice(qtbot, window, model_6k):
    window._slow_timer.setInterval(1)  # the 2.5 s grace period, shortened for the test
    window.open_model(model_6k)
    qtbot.waitUntil(lambda: bool(window.canvas.busy_text), timeout=30000)
    assert "Esc or Cancel" in window.canvas.busy_text
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: not window.canvas.busy_text, timeout=10000)


def test_export_to_a_missing_folder_says_so(qtbot, window, tmp_path):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    with qtbot.waitSignal(window.export_finished, timeout=60000) as sig:
        window.save_graph(tmp_path / "missing" / "g.png", "png")
    assert sig.args == [""]
    assert "Could not export the graph" in window._failure_box.text()
    assert not (tmp_path / "missing").exists()
    window._failure_box.close()


@pytest.mark.parametrize("stored", [None, "one", "two"])
def test_open_recent_with_zero_one_and_two_entries(qtbot, window, tmp_path, stored):
    """Qt's INI backend reads a one-item list back as a plain string: it showed one character per item."""
    from PySide6.QtCore import QSettings

    paths = {"one": ["/models/a.onnx"], "two": ["/models/a.onnx", "/models/b.onnx"]}.get(stored, [])
    s = QSettings()
    s.sync()
    ini = Path(s.fileName())
    text = ini.read_text() if ini.exists() else ""
    lines = [ln for ln in text.splitlines() if not ln.startswith("recent=")]
    if paths:
        if "[main]" not in lines:
            lines.append("[main]")
        lines.insert(lines.index("[main]") + 1, "recent=" + ", ".join(paths))
    ini.parent.mkdir(parents=True, exist_ok=True)
    ini.write_text("\n".join(lines) + "\n")
    s.sync()
    window._rebuild_recent()
    assert [a.text() for a in window.recent_menu.actions()] == paths
    assert window.recent_menu.isEnabled() == bool(paths)


def test_a_new_model_starts_without_the_old_filter_and_selection(qtbot, window):
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    expand_all(qtbot, window)
    window.ops.filter.setText("DCN")
    dcn = next(n for n in window.graph_model.nodes if n.op_type == "DCNv4")
    window.canvas.select_item(window.view.layout.node_item[dcn.index])
    assert window.ops.table.selectionModel().selectedRows()
    other = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"
    window.open_model(other)
    qtbot.waitUntil(lambda: window.graph_model is not None and window.graph_model.path == other, timeout=60000)
    assert window.ops.filter.text() == ""
    assert not window.ops.table.selectionModel().selectedRows()
    assert window.canvas.selected_node == -1


def test_panels_menu_brings_a_closed_panel_back(qtbot, window):
    from PySide6.QtWidgets import QDockWidget

    dock = next(d for d in window.findChildren(QDockWidget) if d.windowTitle() == "Ops")
    dock.close()
    assert not dock.isVisible()
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    panels = next(a.menu() for a in view_menu.actions() if a.text() == "&Panels")
    next(a for a in panels.actions() if a.text() == "Ops").trigger()
    assert dock.isVisible()


def test_netron_without_a_browser_shows_the_address(qtbot, window, monkeypatch):
    from PySide6.QtGui import QDesktopServices, QGuiApplication

    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: False))
    window.open_in_netron()
    box = window.netron.box
    url = window.netron.url.toString()
    assert url.startswith("http://127.0.0.1:") and url in box.text()
    copy = next(b for b in box.buttons() if b.text() == "Copy address")
    copy.click()
    assert QGuiApplication.clipboard().text() == url
    box.close()
    # A browser that starts but refuses to show the page (Chromium as root): the address is shown all the same.
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: True))
    window.open_in_netron()
    assert window.netron.box is not box and window.netron.url.toString() in window.netron.box.text()
    assert any(b.text() == "Copy address" for b in window.netron.box.buttons())
    window.netron.box.close()


def test_first_view_shows_the_decision(qtbot, window):
    """The sample opens fitted, at a level whose labels are readable, with every plugin node in view."""
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    seen = window.canvas.on_screen()
    assert seen["plugins_visible"] == 1.0
    assert seen["min_label_px"] >= 9
    assert 0 < seen["items_visible"] <= 150
    assert seen["edges_drawn"] > 0


def test_fold_constant_nodes_toggles_from_the_view_menu(qtbot, window):
    window.open_model(Path(__file__).resolve().parents[1] / "data" / "torch_transformer.onnx")
    wait_idle(qtbot, window)
    folded = dict(window.view.hier.folded)
    assert folded
    host = next(iter(folded.values()))
    window.inspector.show_node(host)
    assert "Folded in (constants, shape arithmetic)" in window.inspector.toPlainText()
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.fold_action.trigger()
    wait_idle(qtbot, window)
    assert not window.view.hier.folded and window.fold_action.isChecked() is False
    assert window.graph_model is not None and window.view.stats is not None


def test_tools_optimize_export_shows_before_and_after(qtbot, window, tmp_path):
    src = tmp_path / "t.onnx"
    src.write_bytes((Path(__file__).resolve().parents[1] / "data" / "torch_transformer.onnx").read_bytes())
    window.open_model(src)
    wait_idle(qtbot, window)
    with qtbot.waitSignal(window.optimize_tool.finished, timeout=120000) as done:
        jid = window.optimize_tool.run(src, tmp_path / "t.optimized.onnx")
    res = done.args[0]
    assert res.after.nodes < res.before.nodes
    text = window.optimize_tool.box.text()
    assert "before" in text and "after" in text and "original was not changed" in text
    window.optimize_tool.box.close()
    rec = window.controller.queue.jobs[jid]  # a job of the queue, listed in the Jobs panel like the others
    assert rec.kind == "optimize" and rec.state == "done" and not window.optimize_tool.running


def test_an_optimize_export_cancelled_leaves_nothing(qtbot, window, tmp_path):
    """Esc (or the Jobs panel's Cancel) stops an Optimize Export; no file is left where it was to be written."""
    src = tmp_path / "t.onnx"
    src.write_bytes((Path(__file__).resolve().parents[1] / "data" / "torch_transformer.onnx").read_bytes())
    window.open_model(src)
    wait_idle(qtbot, window)
    out = tmp_path / "t.optimized.onnx"
    jid = window.optimize_tool.run(src, out)
    window.cancel_jobs()
    q = window.controller.queue
    qtbot.waitUntil(lambda: q.jobs[jid].state in ("cancelled", "done"), timeout=120000)
    if q.jobs[jid].state == "cancelled":  # a fast machine may finish before the cancel lands
        assert not out.exists() and not list(tmp_path.glob("*.tmp*"))


def test_undo_redo_view_changes_and_arrow_keys(qtbot, window):
    from PySide6.QtCore import Qt

    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    first = set(window.view.layout.expanded)
    expand_all(qtbot, window)
    assert set(window.view.layout.expanded) != first
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.session.undo()
    assert set(window.view.layout.expanded) == first
    with qtbot.waitSignal(window.view_ready, timeout=30000):
        window.session.redo()
    assert set(window.view.layout.expanded) != first
    wait_idle(qtbot, window)
    # Arrow keys: from a node, Down goes to a node it feeds.
    gm = window.graph_model
    conv = next(n.index for n in gm.nodes if n.op_type == "Conv")
    window.canvas.select_item(window.view.layout.node_item[conv])
    with qtbot.waitSignal(window.canvas.node_selected, timeout=60000) as sig:
        qtbot.keyClick(window.canvas, Qt.Key.Key_Down)
    assert sig.args[0] in gm.graph.adj.succs[conv]


def test_right_click_menu(qtbot, window):
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QGuiApplication

    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    expand_all(qtbot, window)
    gm = window.graph_model
    dcn = next(n for n in gm.nodes if n.op_type == "DCNv4")
    from splitscope.gui.shell.menus import show_canvas_menu

    menu = show_canvas_menu(window, window.view.layout.node_item[dcn.index], QPoint(10, 10))
    actions = {a.text(): a for a in menu.actions()}
    assert {"Copy Name", "Select Inputs", "Select Outputs", "Show in Netron"} <= set(actions)
    actions["Copy Name"].trigger()
    assert QGuiApplication.clipboard().text() == dcn.label
    actions["Select Inputs"].trigger()
    assert window.canvas.highlight_nodes == set(gm.graph.adj.preds[dcn.index])
    menu.close()


def test_garbage_is_collected_on_the_ui_thread_only_and_never_during_a_build(qtbot):
    """The app runs Python's cyclic collector on the UI thread by a timer (a collection in a worker freed Qt objects
    there, and their timers crashed the window later); while an engine job builds with the collector paused it
    waits."""
    import gc
    import threading

    from PySide6.QtWidgets import QApplication
    from splitscope.engine.jobs import collections_waiting, gc_held, gc_paused
    from splitscope.gui.shell.launch import collect_on_ui_thread

    # An earlier test's job may still be building (the collector waits for it).
    qtbot.waitUntil(lambda: not gc_held() and not collections_waiting(), timeout=60000)
    where: list[str] = []

    def seen(phase: str, _info: dict) -> None:
        if phase == "start":
            where.append(threading.current_thread().name)

    was = gc.isenabled()
    timer = collect_on_ui_thread(QApplication.instance(), interval_ms=5)
    gc.callbacks.append(seen)
    try:
        assert not gc.isenabled()

        def churn() -> None:
            for _ in range(20000):  # cycles: garbage only the collector frees
                a: list = []
                a.append(a)

        worker = threading.Thread(target=churn, name="worker")
        worker.start()
        worker.join()
        assert where == []  # the worker allocated past every threshold, and no collection ran there
        with gc_paused():
            churn()
            qtbot.wait(50)
            assert where == []  # paused: the timer waits
        worker = threading.Thread(target=churn, name="worker")
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: bool(where), timeout=60000)
        assert set(where) == {threading.main_thread().name}
    finally:
        gc.callbacks.remove(seen)
        timer.stop()
        if was:
            gc.enable()


def test_collections_wait_while_a_model_is_analysed(qtbot):
    """A collection scans every object of its generations, a model being analysed among them: while an analysis runs
    (a job that builds a model), the collector waits (at most two minutes), and collects once it ends."""
    import gc
    import threading

    from PySide6.QtWidgets import QApplication
    from splitscope.engine.jobs import collections_wait, collections_waiting, gc_held
    from splitscope.gui.shell import launch

    qtbot.waitUntil(lambda: not gc_held() and not collections_waiting(), timeout=60000)  # an earlier test's job
    generations: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start" and threading.current_thread() is threading.main_thread():
            generations.append(info["generation"])

    was, threshold = gc.isenabled(), gc.get_threshold()
    gc.set_threshold(10, 1, 1)
    timer = launch.collect_on_ui_thread(QApplication.instance(), interval_ms=5)
    gc.callbacks.append(seen)
    keep: list = []
    ticks = [0]

    def churn() -> bool:
        keep.extend([] for _ in range(100))  # new objects past every threshold at each tick
        ticks[0] += 1
        return True

    try:
        with collections_wait():
            qtbot.waitUntil(lambda: churn() and ticks[0] > 20, timeout=60000)
            assert generations == [], "a collection ran while a model was analysed"
        qtbot.waitUntil(lambda: churn() and 2 in generations, timeout=60000)
    finally:
        gc.callbacks.remove(seen)
        timer.stop()
        gc.set_threshold(*threshold)
        if was:
            gc.enable()


def holders(path, depth: int = 4) -> list[str]:
    """What still refers to the GraphModel of ``path``: chains of referrers' types (and a dict's keys, a function's
    name), so that a failure names the holder."""
    import gc
    import inspect

    from splitscope.engine.model import GraphModel

    def describe(o) -> str:  # type: ignore[no-untyped-def]
        if isinstance(o, dict):
            return f"dict{sorted(map(str, o))[:6]}"
        if inspect.isfunction(o) or inspect.ismethod(o):
            return f"{type(o).__name__} {getattr(o, '__qualname__', '?')}"
        if inspect.isframe(o):
            return f"frame {o.f_code.co_name} ({o.f_code.co_filename.rsplit('/', 1)[-1]}:{o.f_lineno})"
        return type(o).__qualname__

    found = [o for o in gc.get_objects() if isinstance(o, GraphModel) and o.path == path]
    chains: list[str] = []
    here = inspect.currentframe()

    def walk(o, trail: list[str], seen: set[int]) -> None:  # type: ignore[no-untyped-def]
        refs = [r for r in gc.get_referrers(o) if r is not here and r is not found and id(r) not in seen]
        if len(trail) >= depth or not refs:
            chains.append(" <- ".join(trail))
            return
        for r in refs[:4]:
            seen.add(id(r))
            walk(r, [*trail, describe(r)], seen)

    for gm in found:
        walk(gm, ["GraphModel"], {id(gm)})
    return chains


def test_the_model_before_is_let_go_of_when_another_is_opened(qtbot, window, tmp_path):
    """Once the next model is shown nothing keeps the one before: not the Input Shapes dialog it opened, not the
    workers that read its ops and saved results, not the session (a 200k-node model held that way stays in memory and
    is later freed in one stall)."""
    import gc
    import shutil
    import threading
    import time

    from splitscope.engine.model import GraphModel

    first = tmp_path / "first.onnx"
    shutil.copy(ROOT / "tests" / "data" / "torch_transformer.onnx", first)  # a seq dim: its dialog opens itself
    window.open_model(first)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.graph_model is not None and window.graph_model.path == first, timeout=30000)
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.graph_model.path == SAMPLE_MODEL, timeout=30000)

    def left() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, GraphModel) and o.path == first)

    from splitscope.profiler.workers import live, settled

    # The workers that read its ops and saved results have ended and delivered their last signal.
    qtbot.waitUntil(settled, timeout=60000)
    end = time.monotonic() + 120
    while left() and time.monotonic() < end:  # the panels let go as each takes the next model
        qtbot.wait(100)
    assert left() == 0, (holders(first), [t.name for t in threading.enumerate()], live())


def test_showing_a_node_brings_the_tabbed_inspector_to_the_front(qtbot, window):
    from PySide6.QtWidgets import QDockWidget

    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    docks = {d.windowTitle(): d for d in window.findChildren(QDockWidget)}
    inspector, summary = docks["Inspector"], docks["Split summary"]
    window.tabifyDockWidget(inspector, summary)  # as on a small screen
    summary.raise_()
    qtbot.waitUntil(lambda: inspector.visibleRegion().isEmpty(), timeout=10000)
    window.inspector.show_node(0)  # from a panel, a search or the canvas alike
    qtbot.waitUntil(lambda: not inspector.visibleRegion().isEmpty(), timeout=10000)


def test_the_stall_watch_keeps_no_frame_of_another_thread_alive():
    """It samples every thread's frames during a stall; a frame it kept would keep a replaced model alive."""
    import threading
    import time
    import weakref

    from splitscope.gui.shell.launch import _stall_watch

    class Model:
        pass

    beat: dict[str, float] = {"last": time.perf_counter() - 1.0}  # the UI thread is late now
    holding, done = threading.Event(), threading.Event()
    refs: list[weakref.ref[Model]] = []

    def worker() -> None:
        model = Model()
        refs.append(weakref.ref(model))
        holding.set()
        done.wait()

    t = threading.Thread(target=worker)
    t.start()
    holding.wait()
    where = _stall_watch(beat)
    while not where():  # sampled while the worker held its model
        time.sleep(0.01)
    beat["last"] = time.perf_counter() + 3600  # no stall from now on: no new sample replaces the last
    done.set()
    t.join()
    try:  # a sample may be under way still: wait for it (the old watch held its frames until the next stall)
        deadline = time.monotonic() + 30
        while refs[0]() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert refs[0]() is None
    finally:
        beat["stop"] = 1.0


def test_the_stall_watch_keeps_the_longest_stalls_each_once():
    """``--report-ready`` lists the five longest stalls, each with where it was (one entry a stall, the longest
    first): the single longest alone hid the next sources to mend."""
    import time

    from splitscope.gui.shell.launch import _stall_watch

    beat: dict[str, object] = {"last": time.perf_counter()}
    _stall_watch(beat)
    try:
        for late in (0.3, 0.12, 0.2):  # three stalls, each ended by a beat
            beat["last"] = time.perf_counter() - late
            deadline = time.monotonic() + 30
            while len(beat["longest"]) < (0.3, 0.12, 0.2).index(late) + 1 and time.monotonic() < deadline:
                beat["last"] = time.perf_counter() - late  # late still, until the watch has seen it and ...
                time.sleep(0.02)
                beat["last"] = time.perf_counter() + 0.2  # ... on time again: the stall ends
                time.sleep(0.05)
        longest = beat["longest"]
        assert len(longest) == 3
        gaps = [g for g, _ in longest]
        assert gaps == sorted(gaps, reverse=True) and gaps[0] >= 0.3
        assert all(where for _, where in longest)
    finally:
        beat["stop"] = 1.0


def test_a_search_typed_on_a_first_view_stays_when_its_analysis_finishes(qtbot, window):
    """Text typed while a model's analysis finishes is kept when the final model arrives (it was wiped: the field
    went back to what the model had remembered before), and stays that model's; another model gets its own."""
    yolo = ROOT / "build" / "acceptance" / "nudenet" / "320n.onnx"
    model = yolo if yolo.is_file() else ROOT / "tests" / "data" / "torch_detector_if.onnx"
    window.open_model(model)
    wait_idle(qtbot, window)
    from splitscope.profiler.controller import ModelResults

    c = window.controller
    mine = c._current
    c._current = ModelResults()  # typed before the window's results switched to this model (the race)
    window.search.setText("sigmoid")  # typed on the view on screen
    c._current = mine
    window.finder._model_changed(window.graph_model)  # the final model of the same file arrives
    assert window.search.text() == "sigmoid" and window.controller.results.search == "sigmoid"
    window.open_model(ROOT / "tests" / "data" / "torch_transformer.onnx")
    wait_idle(qtbot, window)
    assert window.search.text() == ""  # a model new to this window has no search of its own


@pytest.mark.parametrize("width", [1000, 700], ids=["beside", "under"])
def test_the_busy_notice_never_covers_the_legend(qtbot, window, width):
    """The "still analysing" notice sits beside the legend where there is room, else under it."""
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    canvas = window.canvas
    canvas.resize(width, 500)
    canvas.busy_text = "Large model: still analysing (the parser proves every node), this may take a while."
    canvas.grab()  # paints
    assert canvas.legend_rect is not None and canvas.notice_rect is not None
    assert not canvas.notice_rect.intersects(canvas.legend_rect)
    assert canvas.notice_rect.left() >= 0 and canvas.notice_rect.right() <= width
    beside = canvas.notice_rect.top() < canvas.legend_rect.bottom()
    assert beside == (width == 1000)
    canvas.busy_text = ""


def test_the_minimap_shows_only_while_part_of_the_graph_is_out_of_view(qtbot, window):
    """Over a graph shown whole the minimap adds nothing and covered a card in the corner of a small window."""
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    canvas, minimap = window.canvas, window.minimap
    canvas.fit()
    assert canvas.shows_all()
    qtbot.waitUntil(lambda: not minimap.isVisible(), timeout=5000)
    canvas.zoom_by(8.0)
    assert not canvas.shows_all()
    qtbot.waitUntil(minimap.isVisible, timeout=5000)
    canvas.fit()
    qtbot.waitUntil(lambda: not minimap.isVisible(), timeout=5000)


def _covered(canvas, rect) -> float:
    """Pixels of the nodes and blocks on screen that ``rect`` (widget coordinates) covers: computed here from the
    layout's own rectangles."""
    a = canvas.layout_.arrays
    covered = 0.0
    for i in range(canvas.layout_.size):
        if a["kind"][i] == KIND_FRAME:
            continue
        p0 = canvas.to_screen(float(a["x"][i]), float(a["y"][i]))
        p1 = canvas.to_screen(float(a["x"][i] + a["w"][i]), float(a["y"][i] + a["h"][i]))
        ox = min(p1.x(), rect.right()) - max(p0.x(), rect.left())
        oy = min(p1.y(), rect.bottom()) - max(p0.y(), rect.top())
        covered += max(ox, 0.0) * max(oy, 0.0)
    return covered


def test_the_minimap_keeps_clear_of_the_cards_of_a_zoomed_first_view(qtbot, window, tmp_path):
    """A first view at a readable zoom on part of a graph (the minimap then shows) leaves the minimap's corner free
    where the graph is narrow enough; otherwise the minimap sits in the corner that covers the least."""
    from tests.bench import make_transformer

    path = tmp_path / "layers_5k.onnx"
    onnx.save(make_transformer(5000), path)
    window.resize(1366, 768)
    window.open_model(path)
    wait_idle(qtbot, window)
    canvas, minimap = window.canvas, window.minimap
    canvas.first_view()
    qtbot.waitUntil(minimap.isVisible, timeout=5000)  # part of it is out of view
    qtbot.waitUntil(lambda: _covered(canvas, minimap.geometry()) == 0.0, timeout=5000)
    canvas.zoom_by(1.7)  # now wider than the view: cards everywhere, the least covered corner
    window._place_minimap()
    w, h = minimap.width(), minimap.height()
    corners = [(canvas.width() - w - 10, canvas.height() - h - 10), (canvas.width() - w - 10, 10)]
    corners.append((10, canvas.height() - h - 10))
    from PySide6.QtCore import QRect

    least = min(_covered(canvas, QRect(x, y, w, h)) for x, y in corners)
    assert _covered(canvas, minimap.geometry()) == least


def test_the_status_bar_offers_expanding_blocks_only_where_there_are_some(qtbot, window, tmp_path):
    from onnx import TensorProto as T
    from onnx import helper as hp

    from tests.engine.models import model

    io = [hp.make_tensor_value_info("x", T.FLOAT, [1, 4])], [hp.make_tensor_value_info("y", T.FLOAT, [1, 4])]
    path = tmp_path / "tiny.onnx"
    onnx.save(model([hp.make_node("Relu", ["x"], ["y"], name="relu")], *io), path)
    messages: list[str] = []
    window.statusBar().messageChanged.connect(messages.append)
    window.open_model(path)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: any("laid out" in m for m in messages), timeout=10000)
    said = next(m for m in messages if "laid out" in m)
    assert said == "1 node, 1 item laid out."
    messages.clear()
    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: any("laid out" in m for m in messages), timeout=10000)
    assert any("Double-click a block to expand it." in m for m in messages)
