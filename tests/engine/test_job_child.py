"""GPU jobs run in a child process: its events stream back, Cancel stops it within a second, and a child
that crashes or hangs ends the job with one line while the caller goes on."""

from __future__ import annotations

import threading
import time

import pytest
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, Progress, Sample, run_to_end
from splitscope.engine.process import JobCrashedError, JobProcess

from tests.engine.models import LIGHT_DIR


def test_a_profile_in_a_child_streams_samples_and_returns_the_result():
    job = JobProcess(
        "profile", {"model": str(LIGHT_DIR / "light_squeezenet.onnx"), "iterations": 6, "warmup": 1, "profiled": 2}
    )
    events = []
    gen = job.events()
    while True:
        try:
            events.append(next(gen))
        except StopIteration as stop:
            res = stop.value
            break
    assert sum(isinstance(e, Sample) and e.series == "latency" for e in events) == 6
    assert any(isinstance(e, Progress) for e in events)
    assert res["backend"] == "ort-cpu" and len(res["samples_ms"]) == 6 and res["per_node"]


def test_cancel_stops_a_hanging_child_within_a_second(test_job_kinds):
    token = CancelToken()
    job = JobProcess("test-sleep", {"seconds": 60})
    threading.Timer(0.5, token.cancel).start()
    t0 = time.perf_counter()
    with pytest.raises(JobCancelledError):
        run_to_end(job.events(token))
    assert time.perf_counter() - t0 < 0.5 + 1.0
    assert job.proc.poll() is not None  # the child is gone


def test_a_crashing_child_ends_the_job_with_one_line(test_job_kinds):
    with pytest.raises(JobCrashedError) as e:
        run_to_end(JobProcess("test-crash", {}).events())
    assert "signal" in e.value.message and "\n" not in e.value.message


def test_a_failing_job_reports_its_one_line_error():
    with pytest.raises(SplitscopeError, match="custom-op library"):
        run_to_end(
            JobProcess(
                "profile",
                {"model": str(__import__("splitscope.engine.sample", fromlist=["x"]).SAMPLE_MODEL), "iterations": 2},
            ).events()
        )


def test_an_unknown_kind_is_one_line_and_the_tests_kinds_come_only_from_the_environment(monkeypatch):
    from splitscope.engine.child import KINDS, job_kind

    assert not [k for k in KINDS if k.startswith("test")]  # none in the product
    monkeypatch.delenv("SPLITSCOPE_JOB_KINDS", raising=False)
    with pytest.raises(SplitscopeError, match="unknown job kind 'test-sleep'"):
        run_to_end(JobProcess("test-sleep", {"seconds": 0}).events())
    from tests import child_kinds

    monkeypatch.setenv("SPLITSCOPE_JOB_KINDS", child_kinds.entries())
    assert job_kind("test-sleep").__name__ == "sleep"


def test_the_parsers_answer_comes_in_lines_of_bounded_size(capsys, monkeypatch):
    """The parser child writes its named nodes a part a line (the parent decodes a line in one call that holds the
    window's thread too); the parent joins the parts into the answer the one line gave."""
    import io
    import json

    from splitscope.engine.split import parser_proc
    from splitscope.engine.split.parser import ParserAnswer, ParserProcess

    plugin = {i: f"op {i} rejected" for i in range(0, 50, 2)}
    unverified = {7: "a guessed type", 9: "é"}
    result = {"event": "result", "plugin": plugin, "unverified": unverified, "calls": 3, "first_call": {}, "notes": []}
    monkeypatch.setattr(parser_proc, "NAMES_PER_LINE", 4)
    parser_proc.emit_result(result)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 + 1 + 1 and max(len(json.loads(x).get("part", {})) for x in lines) == 4
    assert json.loads(lines[-1])["plugin"] == {}

    class _Done:  # the finished child: its output, its exit code
        stdout = io.StringIO("\n".join(lines) + "\n")

        @staticmethod
        def wait() -> int:
            return 0

    proc = ParserProcess.__new__(ParserProcess)
    proc.module, proc.proc, proc._cut_file = "tensorrt_rtx", _Done(), None
    proc._stderr = io.StringIO()
    proc.answer = ParserAnswer("tensorrt_rtx")
    answer = run_to_end(proc.events())
    assert answer.plugin == plugin and answer.unverified == unverified and answer.calls == 3 and not answer.failure


@pytest.mark.skipif(not hasattr(__import__("os"), "nice"), reason="no process niceness on this system")
def test_analysing_children_run_lower_when_the_window_asks(monkeypatch):
    """The window asks its analysing children (the parser's, shape inference) to run at a lower priority, so its
    own thread comes first on a busy machine; a child not asked keeps its parent's."""
    import os
    import subprocess
    import sys

    from splitscope.engine import entry

    probe = "import os; from splitscope.engine.entry import lower_priority; lower_priority(); print(os.nice(0))"
    base = os.nice(0)
    env, root = entry.child_env()
    assert entry.BACKGROUND_ENV not in env
    plain = subprocess.run([sys.executable, "-c", probe], env=env, cwd=root, capture_output=True, text=True, check=True)
    assert int(plain.stdout) == base
    monkeypatch.setattr(entry, "_background", False)
    entry.analyse_in_background()
    env, root = entry.child_env()
    low = subprocess.run([sys.executable, "-c", probe], env=env, cwd=root, capture_output=True, text=True, check=True)
    assert int(low.stdout) == min(base + entry.BACKGROUND_NICE, 19)
