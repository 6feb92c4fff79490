"""profiler/workers: two workers that overlap leave ``warnings`` as they found it and hold nothing they ran.

Workers built on ``warnings.catch_warnings()`` (superqt's, which the window used before) do not: the last to end puts
back the other's ``showwarning``, a lambda that keeps that worker and the function it ran (with a whole model in its
closure) for the life of the process."""

from __future__ import annotations

import gc
import threading
import warnings
import weakref

import pytest
from PySide6.QtCore import QThreadPool
from splitscope.profiler.workers import function_worker, generator_worker, settled


class Big:
    """Stands for a model a worker's function captured."""


def _overlapping(make, qtbot):
    """A starts, B starts, A ends, B ends: the order that leaves A's lambda behind with ``catch_warnings``."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    held = Big()
    ref = weakref.ref(held)

    def a(obj=held):
        a_in.set()
        assert b_in.wait(10)
        return None

    def b():
        b_in.set()
        assert a_out.wait(10)
        warnings.warn("inside b", stacklevel=1)  # caught by b's own handler while b runs
        return None

    wa, wb = make(a), make(b)
    wa.finished.connect(a_out.set)
    wa.start()
    assert a_in.wait(10)
    wb.start()
    assert QThreadPool.globalInstance().waitForDone(20000)
    qtbot.waitUntil(settled, timeout=60000)  # the queued finished signals
    del held, a, wa, wb
    return ref


def test_overlapping_workers_put_warnings_back_and_free_what_they_ran(qtbot):
    before = (warnings.showwarning, warnings.filters)
    ref = _overlapping(function_worker, qtbot)
    assert warnings.showwarning is before[0], "a worker's showwarning was left in the warnings module"
    assert warnings.filters is before[1]
    gc.collect()
    assert ref() is None, "what a finished worker ran is still held"


def test_generator_workers_too(qtbot):
    def as_gen(fn):
        def gen():
            yield 1
            return fn()

        return generator_worker(gen)

    before = warnings.showwarning
    ref = _overlapping(as_gen, qtbot)
    assert warnings.showwarning is before
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("kind", ["function", "generator"])
def test_a_worker_kept_after_it_ended_holds_none_of_its_callbacks(qtbot, kind):
    """Whatever keeps a finished worker (a caller's attribute, a Qt event, a slow thread pool) keeps no callback
    connected to it, so nothing those captured (a model replaced meanwhile) stays alive with it."""
    held = Big()
    ref = weakref.ref(held)
    got: list[str] = []

    def work():
        return 1

    def gen():
        yield 1
        return 2

    worker = function_worker(work) if kind == "function" else generator_worker(gen)
    worker.returned.connect(lambda v, obj=held: got.append(type(obj).__name__))
    worker.finished.connect(lambda obj=held: got.append(type(obj).__name__))
    if kind == "generator":
        worker.yielded.connect(lambda v, obj=held: got.append(type(obj).__name__))
    worker.start()
    qtbot.waitUntil(settled, timeout=60000)
    assert len(got) == (3 if kind == "generator" else 2)  # every callback ran before it was let go of
    del held
    gc.collect()
    assert ref() is None, "a callback of a finished worker is still connected"
    assert worker is not None  # kept to the end


def test_a_generator_asked_to_quit_stops_at_its_next_yield_and_is_closed_on_its_thread(qtbot):
    """Cancel: the generator stops at the yield it was at (its ``finally`` runs on the worker's thread, so a job lets
    go of child processes and files at once), ``returned`` is not emitted, ``finished`` is."""
    at_yield, release, closed_on = threading.Event(), threading.Event(), []
    got: list[str] = []

    def gen():
        try:
            at_yield.set()
            yield 1
            assert release.wait(20)
            yield 2
            yield 3  # never reached: the worker stops at the yield before
        finally:
            closed_on.append(threading.current_thread())

    worker = generator_worker(gen)
    worker.returned.connect(lambda v: got.append("returned"))
    worker.finished.connect(lambda: got.append("finished"))
    worker.start()
    assert at_yield.wait(20)
    worker.quit()
    release.set()
    qtbot.waitUntil(settled, timeout=60000)
    assert got == ["finished"]
    assert closed_on and closed_on[0] is not threading.main_thread()


def test_an_error_of_the_work_goes_to_errored_only(qtbot):
    got: list[object] = []

    def work():
        raise ValueError("bad input")

    worker = function_worker(work)
    worker.errored.connect(got.append)
    worker.returned.connect(lambda v: got.append("returned"))
    worker.start()
    qtbot.waitUntil(settled, timeout=60000)
    assert len(got) == 1 and isinstance(got[0], ValueError) and str(got[0]) == "bad input"
