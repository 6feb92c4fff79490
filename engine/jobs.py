"""Plain-Python progress and cancellation contracts for long engine jobs.

Engine jobs are generators that take a :class:`CancelToken` and yield
:class:`Progress` events; they never see a widget. ``profiler/`` drives them
from Qt workers, the CLI drives them directly.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from splitscope.engine.errors import JobCancelledError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress event.

    Attributes
    ----------
    stage
        Short machine-readable stage name (``load``, ``shapes``, ``parser`` ...).
    done, total
        Units done out of ``total``; ``total`` 0 means indeterminate.
    message
        Human-readable line for a status bar.
    """

    stage: str
    done: int = 0
    total: int = 0
    message: str = ""


@dataclass(frozen=True, slots=True)
class Partial:
    """An intermediate result worth showing now (a GraphModel coloured by the table).

    The rule for a partial result that keeps changing after it was yielded: the job
    may go on refining its *fields* in place (statuses, reasons, shapes, costs: single
    attribute writes, atomic under the GIL), never its *structure* (the node list and
    tensor dict are fixed once yielded). A consumer treats it as provisional: whatever
    it derives (layout arrays, panel figures) is rebuilt from the final result, and
    panels that read fields on demand (the inspector) wait for that final result.
    """

    value: Any
    message: str = ""


@dataclass(frozen=True, slots=True)
class Sample:
    """One measurement of a series (a latency, a telemetry reading) for a live plot."""

    series: str
    x: float
    values: dict[str, float]


@dataclass(frozen=True, slots=True)
class LogLine:
    """A line for the job's log."""

    text: str
    level: str = "info"


JobEvent = Progress | Partial | Sample | LogLine
"""What a job generator yields."""


class CancelToken:
    """Cooperative cancellation flag, safe to set from any thread."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Request cancellation."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`JobCancelledError` if cancellation was requested."""
        if self._event.is_set():
            raise JobCancelledError()


_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a model or a view is built.

    A built model is a few tables, but building it reads the file through protobuf's and ONNX's objects and makes
    dicts and lists on the way, enough to set the collector off again and again: the 50k-node export analyses in
    4.5-4.8 s paused, 5.0-5.5 s not (``analyze_model``, two runs each, on the 2-core machine). The collector is one
    for the process: the pause is counted across threads, so that a layout ending in one worker never turns it back
    on under an analysis still building in another; the window's collections on the UI thread wait meanwhile
    (:func:`gc_held`). What is built is left to the collector as usual afterwards (a full collection then takes
    15-30 ms: the modules' objects, not the model's).
    """
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


def gc_held() -> bool:
    """Whether a :func:`gc_paused` block is running in some thread (a collection now would scan what it builds)."""
    return _gc_holders > 0


_analysing = 0


@contextlib.contextmanager
def collections_wait() -> Iterator[None]:
    """Mark a model being analysed in some thread: the window's collections wait meanwhile, a while at most
    (:func:`collections_waiting`). Between its builds' own pauses (:func:`gc_paused`) such a job makes many objects
    that live a few seconds (at a million nodes, a young collection then scanned them for 171 ms, and a full one
    for 140-190 ms); once it ends, what it leaves is a few tables."""
    global _analysing
    with _gc_lock:
        _analysing += 1
    try:
        yield
    finally:
        with _gc_lock:
            _analysing -= 1


def collections_waiting() -> bool:
    """Whether a :func:`collections_wait` block runs in some thread."""
    return _analysing > 0


def run_to_end(job: Generator[JobEvent, None, T]) -> T:
    """Drive a job generator to completion, dropping its progress, and return its value."""
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
