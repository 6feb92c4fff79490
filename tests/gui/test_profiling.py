"""Profiling from the window (pytest-qt, offscreen): the queue's lanes, the Jobs panel, live plots, the
time-share colouring, saved profiles coming back, comparing two runs, exports, and closing mid-job."""

from __future__ import annotations

import time
from pathlib import Path

from splitscope.engine.codec import stamp
from splitscope.engine.jobs import Progress
from splitscope.profiler.profiling import ProfileRequest
from splitscope.profiler.queue import CANCELLED, DONE, QUEUED, RUNNING, JobQueue
from splitscope.profiler.workers import settled

from tests.engine.models import LIGHT_DIR
from tests.gui.conftest import wait_idle

ROOT = Path(__file__).resolve().parents[2]

SQUEEZENET = LIGHT_DIR / "light_squeezenet.onnx"


def _sleeper(seconds: float):  # type: ignore[no-untyped-def]
    def factory(token):  # type: ignore[no-untyped-def]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            token.raise_if_cancelled()
            yield Progress("sleep", 0, 0, "sleeping")
            time.sleep(0.01)
        return "slept"

    return factory


def test_a_lane_runs_its_jobs_one_after_another_and_cancel_is_per_job(qtbot):
    q = JobQueue()
    a = q.submit("a", _sleeper(0.3))
    b = q.submit("b", _sleeper(0.1))
    c = q.submit("c", _sleeper(5))
    assert q.jobs[a].state == RUNNING and q.jobs[b].state == QUEUED  # queued, not cancelling a
    q.cancel(b)
    assert q.jobs[b].state == CANCELLED
    qtbot.waitUntil(lambda: q.jobs[a].state == DONE and q.jobs[c].state == RUNNING, timeout=60000)
    assert q.jobs[a].result == "slept" and q.jobs[b].started is None  # b never ran
    t0 = time.monotonic()
    q.cancel(c)
    qtbot.waitUntil(lambda: q.jobs[c].state == CANCELLED, timeout=60000)
    assert time.monotonic() - t0 < 1.0
    assert not q.running()


def test_profile_from_the_window_streams_and_colours_the_canvas(qtbot, window, tmp_path):
    window.open_model(SQUEEZENET)
    wait_idle(qtbot, window)
    ui = window.profiling
    jid = ui.submit(ProfileRequest(SQUEEZENET, iterations=30, warmup=2, profiled=4))
    qtbot.waitUntil(lambda: window.controller.queue.jobs[jid].state == DONE, timeout=60000)
    qtbot.waitUntil(lambda: jid in ui.results, timeout=60000)
    panel = ui.panel
    qtbot.waitUntil(lambda: panel.lat.n == 30 and panel.redraws > 0, timeout=60000)  # a redraw tick
    assert panel.node_bars.opts["width"] is not None and len(panel.nodes) > 10
    assert "Fix:" in panel.summary.toHtml()
    # The canvas is coloured by time share, with the scale in the legend.
    heat = window.canvas.heat
    assert heat is not None and heat.nodes and max(heat.nodes.values()) == 1.0
    assert window.colours.actions["time"].isChecked()
    # Every plot exports; no temporary file is left beside them.
    for tab in range(4):
        panel.tabs.setCurrentIndex(tab)
        for fmt in ("png", "svg", "csv"):
            out = panel.export_current(fmt, tmp_path / f"t{tab}.{fmt}")
            assert out is not None and out.stat().st_size > 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".splitscope-")]
    assert (tmp_path / "t0.csv").read_text().count("\n") == 31
    # Status again from the View menu.
    window.colours.actions["status"].trigger()
    assert window.canvas.heat is None


def test_saved_profiles_come_back_and_two_compare(qtbot, window):
    window.open_model(SQUEEZENET)
    wait_idle(qtbot, window)
    ui = window.profiling
    ids = [ui.submit(ProfileRequest(SQUEEZENET, iterations=5, warmup=1, profiled=2)) for _ in range(2)]
    qtbot.waitUntil(lambda: all(window.controller.queue.jobs[j].state == DONE for j in ids), timeout=90000)
    qtbot.waitUntil(lambda: all(j in ui.results for j in ids), timeout=60000)
    ui.compare(*ids)
    from PySide6.QtWidgets import QTableWidget

    tables = ui._compare_box.findChildren(QTableWidget)
    assert len(tables) == 2 and all(t.rowCount() > 5 for t in tables)  # by op type, by node
    assert tables[0].horizontalHeaderItem(3).text() == "B / A" and tables[0].item(0, 0).text() == "latency (mean)"
    box = ui._compare_box
    assert window.canvas.heat is not None and window.canvas.heat.diverging
    box.close()
    # Reopened, the model brings its two saved profiles back into the Jobs panel.
    window.open_model(Path(SQUEEZENET))
    wait_idle(qtbot, window)
    jobs = window.controller.queue.jobs
    qtbot.waitUntil(lambda: sum(1 for r in jobs.values() if r.lane == "saved") == 2, timeout=60000)


def test_a_failing_profile_reaches_the_presenter_and_the_app_goes_on(qtbot, window):
    from splitscope.engine.sample import SAMPLE_MODEL

    window.open_model(SAMPLE_MODEL)
    wait_idle(qtbot, window)
    ui = window.profiling
    with qtbot.waitSignal(window.controller.queue.failed, timeout=60000) as sig:
        ui.submit(ProfileRequest(SAMPLE_MODEL, iterations=3))
    assert "custom-op library" in sig.args[1]
    assert "custom-op library" in window.statusBar().currentMessage()
    assert window.graph_model is not None  # the model stays open


def test_closing_the_window_mid_job_cancels_it(qtbot, window):
    window.open_model(SQUEEZENET)
    wait_idle(qtbot, window)
    ui = window.profiling
    jid = ui.submit(ProfileRequest(SQUEEZENET, iterations=1_000_000, warmup=1))
    qtbot.waitUntil(lambda: ui.panel.lat.n > 5, timeout=60000)
    window.close()
    qtbot.waitUntil(lambda: window.controller.queue.jobs[jid].state == CANCELLED, timeout=60000)


def test_the_summary_of_a_cpu_profile_with_a_plugin_node_says_the_copies_were_not_measured():
    """The two-stage detector's RoiAlign needs custom CUDA for TensorRT-RTX; a CPU profile cannot time the
    copies its partition boundaries force: the summary says so and prints no 0 ms for them."""
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.runtime.profile import profile
    from splitscope.engine.runtime.results import ProfileDoc
    from splitscope.engine.split.analyze import analyze_model
    from splitscope.gui.profile.panel import summary_html

    model = ROOT / "tests" / "data" / "torch_two_stage_ort.onnx"
    gm = analyze_model(model, parser="rtx")
    assert any(n.status.value == "plugin" for n in gm.nodes) and len(gm.partitions) > 1
    doc = run_to_end(profile(model, gm, iterations=3, warmup=1, profiled=2)).to_json()
    assert doc["split_cost"]["boundary_copy_ms"] is None and doc["copies"]["not_measured"]
    text = summary_html(ProfileDoc.from_json(doc))
    assert "not measured" in text and "0.000 ms of partition-boundary copies" not in text


def test_a_profile_of_another_model_is_kept_with_it_and_never_shown_on_this_one(qtbot, window):
    """A profile of A that finishes after B was opened is filed under A (it comes back when A is reopened),
    and B's panels and canvas never show it."""
    window.open_model(SQUEEZENET)
    wait_idle(qtbot, window)
    c = window.controller
    other = str(ROOT / "tests" / "data" / "torch_transformer.onnx")
    res = {"backend": "ort-cpu", "per_node": [], "latency_ms": {"mean": 1.0}, "verdict": {}}
    jid = c.queue.add_finished("Profile the other model", "profile", res, {"model": other})
    with qtbot.assertNotEmitted(c.profile_ready, wait=50):
        c.profiling.deliver(jid, res)
    assert jid not in c.results.profiles and c._for(other).profiles[jid].json == stamp("profile", res)
    assert c.colour_mode == "status"


def test_a_profile_from_a_later_release_is_said_in_one_line_and_the_window_goes_on(qtbot, window):
    """A profile document of a later release (a saved file, a remote target running a newer Splitscope) is not
    read: the window says so in its status bar and keeps nothing; the model stays open."""
    window.open_model(SQUEEZENET)
    wait_idle(qtbot, window)
    c = window.controller
    res = {"schema": "splitscope-profile", "schema_version": 99, "latency_ms": {"mean": 1.0}}
    jid = c.queue.add_finished("Profile from a later release", "profile", res, {"model": str(SQUEEZENET)})
    with qtbot.waitSignal(c.failed) as said:
        c.profiling.deliver(jid, res)
    assert "written by a newer Splitscope" in said.args[0] and "update Splitscope" in said.args[0]
    assert "newer Splitscope" in window.statusBar().currentMessage()
    assert jid not in c.results.profiles and window.graph_model is not None


def test_the_profile_panel_follows_the_open_model_and_a_finished_job_says_what_it_found(qtbot, window):
    """Profile A, then open B: the panel says B has no profile yet (no plot of A's left); the Jobs panel's line
    for A's finished job is its outcome (mean latency and verdict), not its last progress message."""
    window.open_model(SQUEEZENET)
    wait_idle(qtbot, window)
    ui = window.profiling
    jid = ui.submit(ProfileRequest(SQUEEZENET, iterations=5, warmup=1, profiled=2))
    qtbot.waitUntil(lambda: jid in ui.results, timeout=120000)
    qtbot.waitUntil(lambda: ui.panel.doc is not None, timeout=30000)
    rec = window.controller.queue.jobs[jid]
    assert "ms mean" in rec.message and "done in" in rec.message, rec.message
    other = ROOT / "tests" / "data" / "torch_transformer.onnx"
    window.open_model(other)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: ui.panel.doc is None, timeout=30000)
    assert "No profile of torch_transformer.onnx yet" in ui.panel.title.text()
    assert len(ui.panel.lat.view()) == 0 and not ui.panel.nodes
    window.open_model(SQUEEZENET)  # its profile comes back with it
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: ui.panel.doc is not None, timeout=30000)


def test_a_generation_profile_from_the_window(qtbot, window):
    """Tools › Profile Generation… on a decoder with its cache: a job in a child process, the step times plotted as
    the cache grows, the figures and the verdict said, the report's data kept with the model."""
    from pathlib import Path

    from splitscope.profiler.queue import DONE

    from tests.gui.conftest import wait_idle

    decoder = Path(__file__).resolve().parents[1] / "data" / "decoder_kv_tiny.onnx"
    window.open_model(decoder)
    wait_idle(qtbot, window)
    ui = window.profiling.generation
    jid = ui.run("ort-cpu", 16, 10)
    q = window.controller.queue
    with qtbot.waitSignal(window.controller.generation_ready, timeout=120000):
        qtbot.waitUntil(lambda: q.jobs[jid].state == DONE, timeout=120000)
    p = ui.panel
    xs, ys = p.curve.getData()
    assert list(xs) == [17.0 + k for k in range(10)] and all(y > 0 for y in ys)
    assert "time to first token" in p.summary.text() and "decode" in p.summary.text()
    assert window.controller.results.generation.generation.steps == 10
    assert window.show_ui.documents()["extras"].generation["steps"] == 10  # the report's section, from the results
    # Another model, then the decoder again: its profile comes back with it (nothing written onto the model).
    window.open_model(SQUEEZENET)
    wait_idle(qtbot, window)
    assert "No generation profile of this model yet" in p.summary.text()
    window.open_model(decoder)
    wait_idle(qtbot, window)
    assert "time to first token" in p.summary.text() and list(p.curve.getData()[0]) == list(xs)


def test_saved_profiles_are_read_in_a_worker_and_a_stale_read_is_dropped(qtbot, window, tmp_path):
    """The saved profiles of a model are read off the UI thread; the read for a model the user has left already
    (another was opened before it ended) adds nothing."""
    from splitscope.engine.runtime.store import save_result

    c = window.controller
    res = {"backend": "ort-cpu", "per_node": [], "latency_ms": {"mean": 1.0}, "verdict": {}, "dims": {}}
    save_result(SQUEEZENET, "profile", res)
    before = {j for j, r in c.queue.jobs.items() if r.lane == "saved"}
    came: list[list[int]] = []
    c.profiling.reloaded.connect(lambda _model, ids: came.append(ids))
    c.profiling.reload(Path(SQUEEZENET))
    c.profiling.reload(Path(SQUEEZENET))  # the first read is stale now: only the second one's come in
    qtbot.waitUntil(lambda: bool(came), timeout=60000)
    qtbot.waitUntil(settled, timeout=60000)  # the stale read has ended too, its result delivered
    added = {j for j, r in c.queue.jobs.items() if r.lane == "saved"} - before
    assert len(came) == 1 and len(added) == 1 and came[0] == sorted(added)


def test_the_nodes_tab_shows_as_many_labelled_bars_as_it_has_room_for(qtbot):
    """A short bottom dock (1366x768) showed 15 bars in 110 px, their labels dropped by the axis; now as many bars as
    fit at 16 px each, and every label (ties marked ``= ``) within the axis's width."""
    from splitscope.gui.profile.panel import BAR_PX, TOP_N, ProfilePanel, _tick

    p = ProfilePanel()
    qtbot.addWidget(p)
    p.resize(900, 260)
    p.show()
    p.tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: p.node_plot.isVisible())
    p.nodes = {f"/model.{k}/cv{k}/cv{k}.0/conv/Conv": 1.0 / (k + 1) for k in range(40)}
    p.tied = {"/model.1/cv1/cv1.0/conv/Conv"}
    p._dirty = True
    p._redraw()
    shown = len(p.node_bars.opts["width"])
    assert 3 <= shown <= min(TOP_N, (p.node_plot.height() - 60) // BAR_PX) < 15
    assert _tick("x" * 80, True).startswith("= …") and len(_tick("x" * 80, True)) == 33
    assert len(_tick("y" * 80, False)) == 33
