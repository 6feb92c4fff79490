"""The window's targets and sweeps: the Targets dialog against the throwaway OpenSSH server, a profile streamed from
the target into the Profile panel, and a sweep filling its table and plots."""

from __future__ import annotations

from pathlib import Path

from splitscope.engine.sweep.grid import expand
from splitscope.profiler.profiling import ProfileRequest
from splitscope.profiler.queue import DONE

from tests.engine.test_sweep import _mlp
from tests.gui.conftest import _isolated_settings, wait_idle, window  # noqa: F401 - the GUI tests' fixtures

MODEL = Path(__file__).resolve().parents[1] / "data" / "torch_transformer.onnx"


def _target_url(server) -> str:  # type: ignore[no-untyped-def]
    from tests.remote.test_remote import _url

    return _url(server)


def test_targets_dialog_checks_asks_about_the_host_key_and_trusts_it(qtbot, window, ssh_server):  # noqa: F811
    ssh_server.known_hosts.write_text("")
    dialog = window.remote_ui.show_targets()
    assert dialog.add_target("not a host at all") is None and "not" in dialog.message.text()
    t = dialog.add_target(_target_url(ssh_server))
    assert t is not None and dialog.list.count() == 2
    jid = dialog.check(t)
    qtbot.waitUntil(lambda: window.controller.queue.jobs[jid].state == DONE, timeout=30000)
    qtbot.waitUntil(lambda: t.label in dialog._keys, timeout=60000)
    assert dialog.status[t.label] == "host key unknown" and "SHA256:" in dialog.message.text()
    assert ssh_server.known_hosts.read_text() == "", "nothing is trusted before the user says so"
    _algorithm, fingerprint = dialog._keys[t.label]
    dialog.trust(t, fingerprint)
    qtbot.waitUntil(lambda: dialog.status.get(t.label, "").startswith("Splitscope"), timeout=30000)
    assert f"[127.0.0.1]:{ssh_server.port}" in ssh_server.known_hosts.read_text()
    # The saved target comes back in a new dialog and in the Profile dialog's "Run on".
    from splitscope.gui.profile.dialog import target_combo

    assert target_combo().findText(t.label) > 0


def test_a_profile_on_the_target_streams_into_the_profile_panel(qtbot, window, trusted):  # noqa: F811
    window.open_model(MODEL)
    wait_idle(qtbot, window)
    target = trusted.target()
    ui = window.profiling
    jid = ui.submit(
        ProfileRequest(MODEL, iterations=20, warmup=2, profiled=2, dims={"seq": 16}, target=target.to_json())
    )
    qtbot.waitUntil(lambda: window.controller.queue.jobs[jid].state == DONE, timeout=90000)
    qtbot.waitUntil(lambda: jid in ui.results, timeout=60000)
    assert ui.results[jid].json["target"] == target.label
    assert ui.panel.lat.n == 20, "every timed iteration streamed back from the target"
    assert "on ssh://" in window.controller.queue.jobs[jid].title


def test_a_sweep_fills_its_table_and_marks_the_pareto_front(qtbot, window, tmp_path):  # noqa: F811
    model = _mlp(tmp_path / "mlp.onnx", hidden=64)
    window.open_model(model)
    wait_idle(qtbot, window)
    cells = expand([str(model)], {"batch": [1, 4]}, ["ort-cpu"], ["fp32", "int8"], iterations=5, warmup=1)
    cells += expand([str(tmp_path / "missing.onnx")], {}, ["ort-cpu"], ["fp32"], iterations=5)  # fails
    jid = window.remote_ui.run(cells, ray=False)
    qtbot.waitUntil(lambda: window.controller.queue.jobs[jid].state == DONE, timeout=120000)
    panel = window.remote_ui.panel
    qtbot.waitUntil(lambda: panel.export.isEnabled(), timeout=60000)
    assert panel.table.rowCount() == 5
    statuses = sorted(panel.table.item(r, 6).text() for r in range(5))
    assert statuses == ["done"] * 4 + ["failed"]
    assert "4 of 5 cells done" in panel.summary.text() and "1 failed" in panel.summary.text()
    assert len(panel.front.getPlotItem().items) >= 2 and panel.by_dim.getPlotItem().listDataItems()
    assert len(panel.by_precision.getPlotItem().listDataItems()) == 2  # a line a batch size: fp32, int8
    kept = window.controller.results.sweep
    assert kept is not None and len(kept.cells) == 5 and len(kept.done) == 4
    assert sorted(c.status for c in kept.cells) == ["done"] * 4 + ["failed"]
    other = _mlp(tmp_path / "other.onnx", hidden=32)  # another model, never swept: nothing of this sweep shows
    window.open_model(other)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: panel.table.rowCount() == 0, timeout=30000)
    assert "No sweep of other.onnx yet" in panel.summary.text() and not panel.export.isEnabled()


def test_the_sweep_dialog_runs_a_precision_search(qtbot, window, tmp_path):  # noqa: F811
    from splitscope.gui.remote.sweep import SweepDialog

    model = _mlp(tmp_path / "mlp.onnx", hidden=64)
    window.open_model(model)
    wait_idle(qtbot, window)
    dialog = SweepDialog(window.controller.graph_model)
    dialog.dims.setText("batch=2")
    for name, box in dialog.precisions.items():
        box.setChecked(name in ("fp32", "int8"))
    dialog.iterations.setValue(3)
    dialog.search.setValue(2)
    assert dialog.search_count() == 2 and "4 cells at most" in dialog.count.text()
    dialog.precisions["int8"].setChecked(False)
    assert dialog.search_count() == 0 and "needs a reduced precision" in dialog.count.text()
    dialog.precisions["int8"].setChecked(True)
    jid = window.remote_ui.run(dialog.cells(), ray=False, search=dialog.search_count())
    panel = window.remote_ui.panel
    assert "Ranking" in panel.summary.text() and panel.table.rowCount() == 2
    qtbot.waitUntil(lambda: window.controller.queue.jobs[jid].state == DONE, timeout=180000)
    qtbot.waitUntil(lambda: panel.export.isEnabled(), timeout=60000)
    kept = sorted((c.params.precision, len(c.params.keep)) for c in panel.doc.cells)
    assert kept == [("fp32", 0), ("int8", 0), ("int8", 1), ("int8", 2)] and panel.table.rowCount() == 4
    assert all(c.status == "done" for c in panel.doc.cells)
