"""Work off the UI thread: a function or a generator run on Qt's global thread pool, its results as queued signals.

The window used superqt's workers; this module replaces them for two reasons, both measured:

- superqt's ``WorkerBase.run`` (0.9) wraps the work in ``warnings.catch_warnings()`` and sets
  ``warnings.showwarning`` to a lambda that holds the worker. ``catch_warnings`` is not thread-safe: when two workers
  overlap, the one that ends last puts back the other's lambda, which then stays in the ``warnings`` module for good
  with the worker, its function and all that function captured (a whole model, seen when one model replaced another).
  We had overridden ``run`` and reached into superqt's private fields to avoid it.
- Importing superqt's worker imports the whole package (every widget, and ``importlib.metadata`` for its version):
  0.18 s on the UI thread at the first job, more than half of what the window took to show after Qt's import.

A worker here leaves ``warnings`` alone, drops its function, arguments and generator once the work is done (the
generator closed on its own thread, whatever ended it), and once its last signal has been delivered on the UI thread
lets go of every slot connected to it: a worker kept by anything, for however long, holds nothing large.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QMetaMethod, QObject, QRunnable, QThreadPool, Signal, SignalInstance

_LIVE: set[Worker] = set()
"""Workers started whose last signal has not yet been delivered on the UI thread (kept alive until then)."""


class _Signals(QObject):
    """A worker's signals (a QRunnable is no QObject); made on the thread that makes the worker, the UI thread, so
    that what the pool thread emits is queued there, in the order emitted."""

    started = Signal()
    """The work began on its pool thread."""
    yielded = Signal(object)
    """Each value a generator yields."""
    returned = Signal(object)
    """The return value; not emitted after an error or a :meth:`Worker.quit`."""
    errored = Signal(object)
    """The exception the work raised (never raised again on the UI thread)."""
    finished = Signal()
    """Always, last of the above."""
    done = Signal(object)
    """The worker itself, after ``finished``: lets go of the slots and of the worker (module-private)."""


class Worker(QRunnable):
    """``fn(*args, **kwargs)`` run on the global thread pool; a generator function's yields come as ``yielded``.
    Connect to the signals (``worker.returned`` and so on), then :meth:`start`."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], generator: bool) -> None:
        super().__init__()
        self.signals = _Signals()
        self._call: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None = (fn, args, kwargs)
        self._generator = generator
        self._quit = False

    @property
    def started(self) -> SignalInstance:
        return self.signals.started

    @property
    def yielded(self) -> SignalInstance:
        return self.signals.yielded

    @property
    def returned(self) -> SignalInstance:
        return self.signals.returned

    @property
    def errored(self) -> SignalInstance:
        return self.signals.errored

    @property
    def finished(self) -> SignalInstance:
        return self.signals.finished

    @property
    def abort_requested(self) -> bool:
        """Whether :meth:`quit` was called."""
        return self._quit

    def quit(self) -> None:
        """Ask the work to stop: a generator stops at its next yield (closed there); a function runs to its end.
        Either way ``returned`` is not emitted; ``finished`` is."""
        self._quit = True

    def start(self) -> None:
        """Queue the work on Qt's global thread pool."""
        if self in _LIVE:
            raise RuntimeError("this worker was already started")
        _LIVE.add(self)
        self.signals.done.connect(_let_go)
        QThreadPool.globalInstance().start(self)

    def run(self) -> None:
        """Called by the pool on its thread."""
        signals = self.signals
        signals.started.emit()
        try:
            result = self._work()
        except Exception as exc:  # noqa: BLE001 - any error of the work goes to errored, never raised on the UI thread
            signals.errored.emit(exc)
        else:
            if not self._quit:
                signals.returned.emit(result)
        signals.finished.emit()
        signals.done.emit(self)

    def _work(self) -> Any:
        assert self._call is not None, "a worker runs once"
        fn, args, kwargs = self._call
        self._call = None
        if not self._generator:
            return fn(*args, **kwargs)
        gen = fn(*args, **kwargs)
        del fn, args, kwargs
        try:
            while not self._quit:
                try:
                    value = next(gen)
                except StopIteration as stop:
                    return stop.value
                self.signals.yielded.emit(value)
            return None
        finally:
            gen.close()  # a job stopped at a yield lets go of what it holds (child processes, open files) now


def _let_go(worker: Worker) -> None:
    """On the UI thread, after every other signal of ``worker`` was delivered: disconnect all but ``done``'s own slot,
    and forget the worker."""
    signals = worker.signals
    meta = signals.metaObject()
    base = QObject.staticMetaObject.methodCount()  # pyright: ignore[reportAttributeAccessIssue] - not in the stubs
    for i in range(base, meta.methodCount()):
        method = meta.method(i)
        name = bytes(method.name().data()).decode()
        signal = method.methodType() == QMetaMethod.MethodType.Signal
        if signal and name != "done" and signals.isSignalConnected(method):
            getattr(signals, name).disconnect()
    _LIVE.discard(worker)


def function_worker(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Worker:
    """A worker (not started: connect its ``returned``/``errored``, then ``start()``) running ``fn(*args, **kwargs)``.
    An error is given to ``errored`` only, never raised again on the UI thread."""
    return Worker(fn, args, kwargs, generator=False)


def generator_worker(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Worker:
    """A worker (not started) running the generator function ``fn``: its yields come as ``yielded``."""
    return Worker(fn, args, kwargs, generator=True)


def settled() -> bool:
    """Whether every worker started here has ended and had its last signal delivered on the UI thread: what a test,
    or a window closing, waits on instead of a fixed time."""
    return not _LIVE


def live() -> list[Worker]:
    """The workers not yet settled (for a test's message when something stays)."""
    return list(_LIVE)
