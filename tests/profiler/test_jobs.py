"""profiler/: typed job events, progress throttled to the frame rate, and the model session's states."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QThreadPool
from splitscope.engine.jobs import LogLine, Partial, Progress, Sample
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.profiler.jobs import JobRunner
from splitscope.profiler.session import ModelSession


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test(qapp):
    yield
    assert QThreadPool.globalInstance().waitForDone(30000)


def test_events_are_routed_by_type_and_progress_is_throttled(qtbot):
    runner = JobRunner()
    got: dict[str, list] = {"progress": [], "partial": [], "sample": [], "log": []}
    runner.progress_changed.connect(got["progress"].append)
    runner.partial_result.connect(got["partial"].append)
    runner.sample.connect(got["sample"].append)
    runner.log_line.connect(got["log"].append)

    def job(token):
        for i in range(20000):
            yield Progress("count", i + 1, 20000, f"step {i + 1}")
        yield Partial("half")
        for i in range(50):
            yield Sample("latency", float(i), {"ms": 1.0})
        yield LogLine("done")
        return 42

    with qtbot.waitSignal(runner.job_finished, timeout=30000) as done:
        runner.start(job)
    assert done.args == [42]
    assert 1 <= len(got["progress"]) < 2000, "progress was not coalesced"
    assert got["progress"][-1].done == 20000, "the last progress must arrive"
    assert [p.value for p in got["partial"]] == ["half"]
    assert len(got["sample"]) == 50 and got["log"][0].text == "done"


def test_session_opens_the_sample_through_its_states(qtbot):
    session = ModelSession(parser="table")
    seen: list[str] = []
    session.view_changed.connect(lambda view, keep: seen.append("view"))
    session.analysed.connect(lambda gm: seen.append("analysed"))
    with qtbot.waitSignal(session.model_ready, timeout=60000) as ready:
        session.open(SAMPLE_MODEL)
    gm, view = ready.args
    assert session.graph_model is gm and session.view is view and view.stats is not None
    assert "analysed" in seen and seen.count("view") >= 1
    qtbot.waitUntil(lambda: not session.running, timeout=30000)
    # A relayout keeps the model and says so.
    with qtbot.waitSignal(session.view_changed, timeout=30000) as changed:
        session.collapse_all()
    assert changed.args[1] is True and session.graph_model is gm


def test_session_failure_keeps_the_previous_model(qtbot, tmp_path):
    session = ModelSession(parser="table")
    with qtbot.waitSignal(session.model_ready, timeout=60000):
        session.open(SAMPLE_MODEL)
    qtbot.waitUntil(lambda: not session.running, timeout=30000)
    before = session.graph_model
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00" * 100)
    with qtbot.waitSignal(session.failed, timeout=30000) as failed:
        session.open(bad)
    assert "not a readable ONNX model" in failed.args[0]
    assert session.graph_model is before


def test_a_relayout_during_refinement_still_makes_the_model_ready(qtbot):
    """Expanding or collapsing right when the analysis ends used to cancel the refinement for good."""
    session = ModelSession(parser="table")
    session.analysed.connect(lambda gm: session.collapse_all())
    with qtbot.waitSignal(session.model_ready, timeout=60000) as ready:
        session.open(SAMPLE_MODEL)
    gm, view = ready.args
    assert session.graph_model is gm and view.stats is not None
    qtbot.waitUntil(lambda: not session.running, timeout=30000)


def test_a_failed_open_after_a_ready_model_keeps_showing_it(qtbot, tmp_path):
    session = ModelSession(parser="table")
    with qtbot.waitSignal(session.model_ready, timeout=60000) as ready:
        session.open(SAMPLE_MODEL)
    qtbot.waitUntil(lambda: not session.running, timeout=30000)
    ready_view = ready.args[1]
    bad = tmp_path / "cycle.onnx"
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    g = h.make_graph(
        [h.make_node("Relu", ["b"], ["a"]), h.make_node("Relu", ["a"], ["b"])],
        "g",
        [],
        [h.make_tensor_value_info("b", T.FLOAT, [1])],
    )
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), bad)
    with qtbot.waitSignal(session.failed, timeout=30000):
        session.open(bad)
    qtbot.waitUntil(lambda: not session.running, timeout=30000)
    assert session.view.gm is ready_view.gm and session.graph_model is ready_view.gm


def test_a_large_file_shows_its_preview_first_then_the_full_model_in_place(qtbot, monkeypatch):
    """The light first pass: its view is shown, then the full model replaces it keeping what the user opened."""
    from pathlib import Path

    from splitscope.engine.split import preview

    monkeypatch.setattr(preview, "PREVIEW_MIN_BYTES", 0)  # the bundled export counts as large here
    model = Path(__file__).resolve().parents[1] / "data" / "torch_transformer.onnx"
    session = ModelSession(parser="table")
    views: list[tuple[object, bool]] = []
    session.view_changed.connect(lambda view, keep: views.append((view, keep)))
    with qtbot.waitSignal(session.model_ready, timeout=60000) as ready:
        session.open(model)
    gm, view = ready.args
    assert views[0][0].gm.preview, "the first view must be the preview's"
    assert not gm.preview and view.gm is gm
    final = [(v, keep) for v, keep in views if v.gm is gm]
    assert final and final[0][1] is True, "the full model replaces the preview in place (zoom and focus kept)"
    labels = {views[0][0].hier.full_label(g) for g in views[0][0].layout.expanded}
    assert {view.hier.full_label(g) for g in view.layout.expanded} == labels
    qtbot.waitUntil(lambda: not session.running, timeout=30000)


@pytest.mark.parametrize(
    "case", ["laid-out", "layout-failed", "one-thread", "a-layout-running"], ids=lambda c: c.replace("-", " ")
)
def test_the_full_load_waits_for_the_previews_layout_and_never_for_a_failed_one(qtbot, monkeypatch, case):
    """A large file's full load starts once its preview is laid out (not beside that layout), whatever else holds
    the thread pool (one thread in all; another model's layout running when the preview comes, which the preview's
    cancels); a preview whose layout fails lets the load go on all the same, and the full model is shown."""
    import threading
    from pathlib import Path

    from PySide6.QtCore import QThreadPool
    from splitscope.engine.split import analyze as A
    from splitscope.engine.split import preview
    from splitscope.profiler import session as S

    monkeypatch.setattr(preview, "PREVIEW_MIN_BYTES", 0)
    laid_out: list[bool] = []
    seen_at_load: list[list[bool]] = []
    real_prepare, real_analyze = S.prepare_view, A.analyze

    def prepare(gm, **kw):
        if gm.preview and case == "layout-failed":
            raise RuntimeError("no layout for this preview")
        view = yield from real_prepare(gm, **kw)
        laid_out.append(gm.preview)
        return view

    def analyze(*a, **kw):
        seen_at_load.append(list(laid_out))
        return real_analyze(*a, **kw)

    monkeypatch.setattr(S, "prepare_view", prepare)
    monkeypatch.setattr(A, "analyze", analyze)
    model = Path(__file__).resolve().parents[1] / "data" / "torch_transformer.onnx"
    session = ModelSession(parser="table")
    pool = QThreadPool.globalInstance()
    threads = pool.maxThreadCount()
    if case == "one-thread":
        pool.setMaxThreadCount(1)
    if case == "a-layout-running":  # another model's relayout, still running when the preview comes
        holding = threading.Event()

        def hold(token):
            holding.set()
            while not token.cancelled:
                yield Progress("layout", 0, 0, "laying out")
                threading.Event().wait(0.01)

        session.layout.start(hold)
        assert holding.wait(30)
    try:
        with qtbot.waitSignal(session.model_ready, timeout=60000) as ready:
            session.open(model)
        assert not ready.args[0].preview
        assert seen_at_load == [[] if case == "layout-failed" else [True]], "the load starts after the preview's layout"
        qtbot.waitUntil(lambda: not session.running, timeout=30000)
    finally:
        pool.setMaxThreadCount(threads)


def test_a_cancelled_job_lets_go_of_the_collectors_pause_and_cleans_up(qtbot):
    """A job cancelled at a yield inside engine.jobs.gc_paused (an analysis is one) is closed once its worker stops:
    its finally blocks run and the pause is given back, instead of waiting for a garbage collection that itself
    waits for the pause."""
    import threading

    from splitscope.engine.jobs import gc_held, gc_paused

    cleaned = threading.Event()
    started = threading.Event()

    def job(token):
        try:
            with gc_paused():
                started.set()
                while True:
                    yield Progress("spin", 0, 0, "working")
        finally:
            cleaned.set()

    runner = JobRunner()
    runner.start(job)
    assert started.wait(10) and gc_held()
    runner.cancel()
    qtbot.waitUntil(cleaned.is_set, timeout=10000)
    qtbot.waitUntil(lambda: not gc_held(), timeout=60000)


def test_a_job_record_speaks_in_closed_names_that_still_read_as_text(qtbot):
    from splitscope.profiler.queue import JobKind, JobQueue, JobState, Lane

    def job(token):
        yield from ()
        return {"ok": True}

    q = JobQueue()
    jid = q.submit("a job", job, lane="cpu", kind="report")  # plain strings are taken, and become the names
    rec = q.jobs[jid]
    assert rec.lane is Lane.CPU and rec.kind is JobKind.REPORT
    qtbot.waitUntil(lambda: rec.state is JobState.DONE, timeout=60_000)
    assert rec.result == {"ok": True}
    assert f"{rec.kind}/{rec.state}" == "report/done" and rec.kind == "report"
    with pytest.raises(ValueError):
        q.submit("unknown", job, lane="cpu", kind="no such kind")


def test_a_layout_that_ends_while_the_analysis_runs_gives_the_bar_back_to_the_analysis(qtbot):
    """The preview's layout ends at 100% while the full analysis still loads: the progress shown is the analysis's
    again (it said nothing new meanwhile: a large file's load is one long step), not a finished bar."""
    session = ModelSession(parser="table")
    shown: list[Progress] = []
    session.progress.connect(shown.append)
    loading = Progress("load", 0, 6, "Loading big.onnx")
    session.analysis.progress_changed.emit(loading)
    session.layout.progress_changed.emit(Progress("layout", 9, 9, "Layout done"))
    session.analysis._worker = object()  # type: ignore[assignment]  # the analysis runs (a worker is held)
    try:
        session.layout.running_changed.emit(False)
    finally:
        session.analysis._worker = None
    assert shown[-1] is loading
    session.layout.running_changed.emit(False)  # with no analysis running, the layout's end is the last word
    assert shown[-1] is loading and len(shown) == 3
