"""End-to-end smoke: open the sample in the window, see the split; bad file keeps the old model."""

from __future__ import annotations

from engine.analyze import SAMPLE_MODEL
from gui.app import MainWindow


def test_open_sample_and_bad_file(qtbot, tmp_path):
    w = MainWindow(parser="table")
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.runner.job_finished, timeout=30000):
        w.open_model(SAMPLE_MODEL)
    assert w.table_model.rowCount() == 41
    assert "2 node(s)" in w.headline.text() and "sample.onnx" in w.headline.text()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with qtbot.waitSignal(w.runner.job_failed, timeout=30000) as blocker:
        w.open_model(bad)
    assert "not" in blocker.args[0]
    assert w.table_model.rowCount() == 41  # the previous model stays open
    w.runner.wait()
