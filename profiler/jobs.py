"""Run engine jobs in Qt worker threads, with typed events, throttled progress and cancel.

The engine's jobs are plain generators that yield :mod:`splitscope.engine.jobs` events
(:class:`Progress`, :class:`Partial`, :class:`Sample`, :class:`LogLine`) and take a
:class:`CancelToken`. a generator worker (:mod:`.workers`) runs them off the UI thread; this
module routes each event type to its own signal. Progress is coalesced to the frame rate
(a job may report thousands of steps a second; the bar needs sixty); partial results,
samples and log lines are never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, LogLine, Partial, Progress, Sample
from splitscope.profiler.workers import Worker, generator_worker

JobFactory = Callable[[CancelToken], Generator[JobEvent, None, Any]]

FRAME_MS = 16
"""Progress is shown at most this often."""


class JobRunner(QObject):
    """Runs one engine job at a time; a new job cancels the one running."""

    progress_changed = Signal(object)
    """A :class:`Progress` event (the latest, at most one per frame)."""
    partial_result = Signal(object)
    """A :class:`Partial` event: an intermediate result to show."""
    sample = Signal(object)
    """A :class:`Sample` event for a live plot."""
    log_line = Signal(object)
    """A :class:`LogLine` event."""
    job_finished = Signal(object)
    """The job's return value."""
    job_failed = Signal(str, str)
    """One-line message, details (traceback for unexpected errors, else empty)."""
    job_cancelled = Signal()
    """The job stopped at a Cancel (nothing of it is kept)."""
    running_changed = Signal(bool)
    """Whether a job is running now."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._worker: Worker | None = None
        self._token: CancelToken | None = None
        # Cancelled workers finish on their own; keep them referenced until they do,
        # or their signals' owner is deleted under the running thread.
        self._retired: set[Worker] = set()
        self._pending: Progress | None = None
        self._throttle = QTimer(self)
        self._throttle.setSingleShot(True)
        self._throttle.setInterval(FRAME_MS)
        self._throttle.timeout.connect(self._flush_progress)

    @property
    def running(self) -> bool:
        """Whether a job is running."""
        return self._worker is not None

    def start(self, factory: JobFactory) -> None:
        """Start ``factory(token)`` in a worker thread, cancelling any running job."""
        self.cancel()
        token = CancelToken()

        def run_job() -> Generator[JobEvent, Any, Any]:
            return (yield from factory(token))

        worker = generator_worker(run_job)
        worker.yielded.connect(lambda ev, w=worker: self._event(w, ev))
        worker.returned.connect(lambda value, w=worker: self._done(w, value))
        worker.errored.connect(lambda exc, w=worker: self._error(w, exc))
        self._worker, self._token = worker, token
        self.running_changed.emit(True)
        worker.start()

    def cancel(self) -> None:
        """Ask the running job to stop (cooperative; the parser child is killed)."""
        if self._token is not None:
            self._token.cancel()
        if self._worker is not None:
            worker = self._worker
            worker.quit()
            self._retired.add(worker)
            worker.finished.connect(lambda w=worker: self._retired.discard(w))
            self._release(worker)
            self.job_cancelled.emit()

    def wait(self, msecs: int = 10000) -> bool:
        """Block until the global pool is idle (shutdown and tests)."""
        from PySide6.QtCore import QThreadPool

        return QThreadPool.globalInstance().waitForDone(msecs)

    def _event(self, worker: Worker, ev: object) -> None:
        if self._worker is not worker:
            return  # a cancelled job's late events
        if isinstance(ev, Progress):
            self._pending = ev
            if not self._throttle.isActive():
                self._flush_progress()
                self._throttle.start()
        elif isinstance(ev, Partial):
            self._flush_progress()
            self.partial_result.emit(ev)
        elif isinstance(ev, Sample):
            self.sample.emit(ev)
        elif isinstance(ev, LogLine):
            self.log_line.emit(ev)

    def _flush_progress(self) -> None:
        if self._pending is not None:
            ev, self._pending = self._pending, None
            self.progress_changed.emit(ev)

    def _release(self, worker: Worker) -> None:
        if self._worker is worker:
            self._worker, self._token = None, None
            self._pending = None
            self.running_changed.emit(False)

    def _done(self, worker: Worker, value: object) -> None:
        if self._worker is worker:
            self._flush_progress()
            self._release(worker)
            self.job_finished.emit(value)

    def _error(self, worker: Worker, exc: BaseException) -> None:
        if self._worker is not worker:
            return
        self._release(worker)
        if isinstance(exc, JobCancelledError):
            self.job_cancelled.emit()
        elif isinstance(exc, SplitscopeError):
            self.job_failed.emit(exc.message, "")
        else:
            import traceback

            details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            self.job_failed.emit(f"Unexpected error: {type(exc).__name__}: {exc}", details)
