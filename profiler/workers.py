"""Work off the UI thread through superqt's workers, made safe to run several at once and to let go of what they ran.

superqt's ``WorkerBase.run`` (0.9) wraps the work in ``warnings.catch_warnings()`` and sets
``warnings.showwarning`` to a lambda that holds the worker. ``catch_warnings`` saves and restores module-wide
state and is not thread-safe: when two workers overlap, the one that ends last puts back what it found on entry,
the other's lambda. That lambda then stays in the ``warnings`` module for good, and with it the worker, the function
it ran and all that function captured (a whole model, seen when one model replaced another in the window), and
every later warning of the process goes to a worker nobody listens to. How often it happens depends on how the
threads interleave, so on what ran before and how busy the machine is.

The workers made here run the same way without touching ``warnings`` at all (a warning inside one goes where any
other warning of the process goes), and drop their function, its arguments and their generator once their work is
done. Once their last signal has been delivered on the UI thread they also let go of every slot connected to them
(the callbacks, and what those captured): a worker kept by anything, for however long, holds nothing large.

superqt is imported at the first worker (the window shows before it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_CLASSES: dict[str, type] = {}


def _run(worker: Any) -> None:
    """superqt's ``WorkerBase.run`` less its ``warnings`` handling: the signals in the same order."""
    worker.started.emit()
    worker._running = True
    try:
        result = worker.work()
        if isinstance(result, RuntimeError):  # superqt's sign that the worker's Qt object was deleted meanwhile
            return
        if isinstance(result, Exception):
            raise result
        if not worker.abort_requested:
            worker.returned.emit(result)
    except Exception as exc:  # noqa: BLE001 - any error of the work goes to errored, as in superqt
        worker.errored.emit(exc)
    worker._running = False
    worker.finished.emit()
    worker._finished.emit(worker)


def _classes() -> dict[str, type]:
    if not _CLASSES:
        from superqt.utils import FunctionWorker, GeneratorWorker

        class Function(FunctionWorker):
            """A :class:`FunctionWorker` that leaves ``warnings`` alone and forgets its function when done."""

            def run(self) -> None:
                _run(self)

            def work(self) -> Any:
                try:
                    return super().work()
                finally:
                    self._func, self._args, self._kwargs = _nothing, (), {}

        class Generator(GeneratorWorker):
            """A :class:`GeneratorWorker` that leaves ``warnings`` alone, and closes its generator in its own thread
            when its loop ends, whatever ended it (the end, an error, a cancel), then forgets it. A job cancelled at
            a yield is otherwise suspended there, inside what it holds (child processes, open files), until a
            garbage collection happens to close it."""

            def run(self) -> None:
                _run(self)

            def work(self) -> Any:
                try:
                    return super().work()
                finally:
                    gen = getattr(self, "_gen", None)  # superqt's: the generator of the function it was given
                    if gen is not None:
                        gen.close()
                        self._gen = None

        _CLASSES.update(function=Function, generator=Generator)
    return _CLASSES


def _nothing(*_: Any, **__: Any) -> None:
    return None


def _let_go(worker: Any) -> None:
    """Disconnect every slot of ``worker``'s signals but superqt's own ``_finished``. Connected to ``_finished`` before
    the worker starts, so it runs on the UI thread after ``returned``, ``yielded``, ``errored`` and ``finished``
    have been delivered there (queued in the order emitted) and before superqt forgets the worker."""
    from PySide6.QtCore import QMetaMethod, QObject

    signals = worker.signals
    meta = signals.metaObject()
    base = QObject.staticMetaObject.methodCount()  # pyright: ignore[reportAttributeAccessIssue] - not in the stubs
    for i in range(base, meta.methodCount()):  # superqt's signals, of each class
        method = meta.method(i)
        name = bytes(method.name().data()).decode()
        signal = method.methodType() == QMetaMethod.MethodType.Signal
        if signal and name != "_finished" and signals.isSignalConnected(method):
            getattr(signals, name).disconnect()


def _made(kind: str, fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    worker = _classes()[kind](fn, *args, **kwargs)
    worker._finished.connect(_let_go)
    return worker


def function_worker(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A worker (not started: connect its ``returned``/``errored``, then ``start()``) running ``fn(*args, **kwargs)``.
    An error is given to ``errored`` only, never raised again on the UI thread."""
    return _made("function", fn, args, kwargs)


def generator_worker(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A worker (not started) running the generator function ``fn``: its yields come as ``yielded``."""
    return _made("generator", fn, args, kwargs)


def settled() -> bool:
    """Whether every worker started (here or through superqt anywhere in the process) has ended and had its last
    signal delivered on the UI thread: what a test, or a window closing, waits on instead of a fixed time."""
    from superqt.utils import WorkerBase

    return not WorkerBase._worker_set
