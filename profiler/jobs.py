"""Run engine job generators in Qt worker threads, with progress and cancel.

The engine's jobs are plain generators that yield :class:`splitscope.engine.jobs.Progress`
and take a :class:`splitscope.engine.jobs.CancelToken`. superqt's ``GeneratorWorker``
runs them on the global thread pool and turns yields, returns and exceptions
into signals; this module adds the cancel token (which also kills a parser
child process) and one place that owns the running job.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from PySide6.QtCore import QObject, Signal
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, Progress
from superqt.utils import GeneratorWorker

JobFactory = Callable[[CancelToken], Generator[Progress, None, Any]]


class JobRunner(QObject):
    """Runs one engine job at a time; a new job cancels the one running."""

    progress_changed = Signal(object)
    """A :class:`Progress` event."""
    job_finished = Signal(object)
    """The job's return value."""
    job_failed = Signal(str, str)
    """One-line message, details (traceback for unexpected errors, else empty)."""
    job_cancelled = Signal()
    running_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._worker: GeneratorWorker | None = None
        self._token: CancelToken | None = None
        # Cancelled workers finish on their own; keep them referenced until they do,
        # or their signals' owner is deleted under the running thread.
        self._retired: set[GeneratorWorker] = set()

    @property
    def running(self) -> bool:
        """Whether a job is running."""
        return self._worker is not None

    def start(self, factory: JobFactory) -> None:
        """Start ``factory(token)`` in a worker thread, cancelling any running job."""
        self.cancel()
        token = CancelToken()
        def run_job() -> Generator[Progress, None, Any]:
            return (yield from factory(token))

        worker = GeneratorWorker(run_job)
        worker.yielded.connect(self.progress_changed.emit)
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

    def _release(self, worker: GeneratorWorker) -> None:
        if self._worker is worker:
            self._worker, self._token = None, None
            self.running_changed.emit(False)

    def _done(self, worker: GeneratorWorker, value: object) -> None:
        if self._worker is worker:
            self._release(worker)
            self.job_finished.emit(value)

    def _error(self, worker: GeneratorWorker, exc: BaseException) -> None:
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
