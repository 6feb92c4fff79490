"""Showing the split from the window (pytest-qt, offscreen): the planner's scenarios recomputed and saved
with the session, the present board stepping through the custom nodes, the report as a job that a cancel
leaves no trace of, the canvas copied as an image, and Model Explorer node data."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from splitscope.engine.plan.scenario import PLANS
from splitscope.engine.plan.store import load_scenarios
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.profiler.queue import CANCELLED, DONE

from tests.gui.conftest import wait_idle

ROOT = Path(__file__).resolve().parents[2]
DETECTOR = ROOT / "tests" / "data" / "torch_two_stage_ort.onnx"


def table_csv_of(view) -> str:
    from splitscope.gui.shell.exports import table_csv

    return table_csv(view)


def _open(qtbot, window, model: Path):
    with qtbot.waitSignal(window.show_ui.planner.evaluated, timeout=60000):
        window.open_model(model)
        wait_idle(qtbot, window)


def test_planner_scenarios_recompute_and_are_saved_with_the_session(qtbot, window, tmp_path):
    sample = tmp_path / "sample.onnx"
    sample.write_bytes(SAMPLE_MODEL.read_bytes())
    _open(qtbot, window, sample)
    planner = window.show_ui.planner
    keys = [it.key for it in planner.items]
    assert "/neck/dcn/DCNv4" in keys and "/postprocess/threshold/Compress" in keys
    assert planner.panel.table.model().rowCount() == len(keys) and planner.results[0].partitions == 2
    with qtbot.waitSignal(planner.evaluated, timeout=30000):
        s = planner.new_scenario("plan A")
    assert s.plans["/neck/dcn/DCNv4"] == "write-plugin" and s.plans["/postprocess/threshold/Compress"] == "replace"
    assert planner.panel.compare.rowCount() == 2 and planner.results[1].partitions == 1
    assert planner.results[1].boundary_bytes == 0 and "plan A" in planner.panel.summary.text()
    # The plan is chosen in the table's plan cell, as a user does: its combo box lists the item's options.
    table, model = planner.panel.table, planner.panel.table.model()
    row = keys.index("/postprocess/threshold/Compress")
    index = model.index(row, 3)
    assert table.indexWidget(index) is None  # no widget a row: tens of thousands of custom nodes stay a table
    assert model.data(index) == PLANS["replace"]
    editor = table.itemDelegateForColumn(3).createEditor(table.viewport(), None, index)
    table.itemDelegateForColumn(3).setEditorData(editor, index)
    assert [editor.itemData(k) for k in range(editor.count())] == planner.items[row].options
    editor.setCurrentIndex(editor.findData("host"))
    with qtbot.waitSignal(planner.evaluated, timeout=30000):
        table.itemDelegateForColumn(3).setModelData(editor, model, index)
    assert s.plans["/postprocess/threshold/Compress"] == "host" and model.data(index) == PLANS["host"]
    assert planner.results[1].host_bytes > 0 and planner.results[1].boundary_bytes == 500
    assert PLANS["host"] in table_csv_of(table)
    assert [x.to_json() for x in load_scenarios(sample)] == [s.to_json()]
    s.plans["/postprocess/threshold/Compress"] = "no-such-plan"  # an edited file: shown as evaluated, today's
    assert model.data(index) == PLANS[planner.items[row].today]
    s.plans["/postprocess/threshold/Compress"] = "host"
    # While a model's items and scenarios are read (in a worker), no scenario can be made over the saved ones.
    with qtbot.waitSignal(planner.evaluated, timeout=30000):
        planner.model_changed(planner.gm)
        assert planner.new_scenario("too early") is None and not planner.panel.new_btn.isEnabled()
    assert planner.panel.new_btn.isEnabled() and [x.name for x in planner.scenarios] == ["plan A"]
    # The comparison exports as CSV, one row a scenario.
    from splitscope.gui.shell.exports import table_csv

    rows = table_csv(planner.panel.compare).strip().splitlines()
    assert rows[0].startswith("scenario,partitions") and rows[2].startswith("plan A,1,")
    # Reopened, the model finds its scenario again.
    _open(qtbot, window, ROOT / "tests" / "data" / "torch_transformer.onnx")
    assert planner.scenarios == []
    _open(qtbot, window, sample)
    assert [x.name for x in planner.scenarios] == ["plan A"]


def test_present_board_steps_through_the_custom_nodes(qtbot, window):
    _open(qtbot, window, SAMPLE_MODEL)
    with qtbot.waitSignal(window.show_ui.planner.evaluated, timeout=30000):
        window.show_ui.planner.new_scenario("plan A")
    board = window.show_ui.present()
    qtbot.waitActive(board)  # the board, not the window, takes the keys (Esc would cancel jobs there)
    assert board.isFullScreen() and not board.dark
    nums = board.numbers()
    assert nums[0][0] == "100%" and nums[1][0] == "2" and "profile" in nums[2][1]
    assert board.mine.name == "plan A" and board.card() is None
    qtbot.keyClick(board, Qt.Key.Key_Right)
    title, text = board.card()
    assert "DCNv4" in title and title.startswith("1/") and "ModulatedDeformConv2d" in text
    assert "write a TensorRT plugin" in text
    qtbot.keyClick(board, Qt.Key.Key_Left)
    assert board.step == len(board.items) - 1
    qtbot.keyClick(board, Qt.Key.Key_D)
    assert board.dark
    img = board.image()
    assert not img.isNull() and img.width() == board.width()
    qtbot.keyClick(board, Qt.Key.Key_Escape)
    assert not board.isVisible()


def test_report_from_the_window_and_a_cancel_that_leaves_nothing(qtbot, window, tmp_path):
    _open(qtbot, window, DETECTOR)
    q = window.controller.queue
    out = tmp_path / "r.html"
    jid = window.show_ui.submit_report(out)
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE, timeout=60000)
    html = out.read_text(encoding="utf-8")
    assert "torch_two_stage_ort.onnx" in html and "<h2>The decision</h2>" in html
    (tmp_path / "c").mkdir()
    jid = window.show_ui.submit_report(tmp_path / "c" / "r.pdf")
    q.cancel(jid)
    qtbot.waitUntil(lambda: q.jobs[jid].finished, timeout=60000)
    assert q.jobs[jid].state == CANCELLED and list((tmp_path / "c").iterdir()) == []


def test_copy_canvas_and_node_data(qtbot, window, tmp_path):
    _open(qtbot, window, SAMPLE_MODEL)
    window.show_ui.copy_canvas()
    img = QGuiApplication.clipboard().image()
    assert not img.isNull() and img.width() >= window.canvas.width()
    files = window.show_ui.write_node_data(tmp_path)
    assert [f.name for f in files] == ["sample.split.json"]
    doc = json.loads(files[0].read_text())
    assert doc["main_graph"]["results"]["/neck/dcn/DCNv4"]["value"] == "plugin"


def test_every_table_travels_as_csv(qtbot, window):
    from PySide6.QtCore import Qt as _Qt
    from PySide6.QtWidgets import QTableView
    from splitscope.gui.shell.exports import table_csv

    _open(qtbot, window, SAMPLE_MODEL)
    views = window.findChildren(QTableView)
    assert views and all(v.contextMenuPolicy() == _Qt.ContextMenuPolicy.CustomContextMenu for v in views)
    rows = table_csv(window.ops.table).strip().splitlines()
    assert rows[0].startswith("Op type,Count,Status") and len(rows) == window.ops.table.model().rowCount() + 1
    assert any(r.startswith("com.example.vision::DCNv4,1,") for r in rows)
