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
    """Pause the cyclic garbage collector while building large object graphs.

    Building ~10 objects per node triggers repeated full collections over an ever
    larger heap (a third of the time on a 50k-node model); the models hold no
    cycles worth collecting. The collector is one for the process: the pause is counted across threads, so that a
    layout ending in one worker never turns it back on under an analysis still building in another (a full
    collection over a half-built 200k-node model held the interpreter for a second, stalling the window).
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
            # What was built is long-lived: move it out of the collector's reach, or the first collection after
            # re-enabling scans it all (a pause of whichever thread allocates next, often the UI thread). Acyclic
            # garbage is still freed by reference counting.
            gc.freeze()
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


def retire(obj: Any, wait_s: float = 120.0, chunk: int = 4000) -> None:
    """Free ``obj`` (a model or a view of hundreds of thousands of nodes) a step at a time on a thread of its own.

    Dropping a 200k-node model frees millions of objects in one C loop that holds the interpreter for about 0.4 s:
    on the UI thread, or on a worker while the UI thread waits for it, a stall. Here a thread keeps a reference,
    waits until it holds the last one (the caller's and the window's have gone), then empties the large lists and
    dicts inside it a ``chunk`` at a time, yielding the interpreter between steps; it only ever empties a container
    nothing else refers to, so an object still in use elsewhere is never touched. If other holders remain after
    ``wait_s`` it lets go and the object is freed as usual, whenever they let go of it."""
    import sys
    import time

    key = id(obj)
    with _gc_lock:
        if key in _retiring:
            return  # one thread a object: two holding it would each wait for the other
        _retiring.add(key)
    box = [obj]
    del obj

    def held_alone() -> bool:
        return sys.getrefcount(box[0]) <= 2  # the box's slot and getrefcount's argument

    def work() -> None:
        try:
            end = time.monotonic() + wait_s
            while not held_alone():
                if time.monotonic() > end:
                    box.clear()
                    return
                time.sleep(0.05)
            root = box.pop()
            _drain(root, chunk, 0)
            del root
        finally:
            with _gc_lock:
                _retiring.discard(key)

    threading.Thread(target=work, name="splitscope-retire", daemon=True).start()


_retiring: set[int] = set()


def _fields(obj: Any) -> list[str]:
    names = list(getattr(obj, "__dict__", {}) or ())
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [n for n in dict.fromkeys(names) if not n.startswith("__")]


def _drain(obj: Any, chunk: int, depth: int) -> None:
    """Empty, a chunk at a time, the large containers ``obj``'s fields alone refer to; recurse into its fields that
    are objects it alone refers to (a few levels: a model, its graph, its adjacency, a view)."""
    import sys
    import time

    if depth > 4 or isinstance(obj, (str, bytes, int, float, type)):
        return
    for name in _fields(obj):
        try:
            v = getattr(obj, name)
        except AttributeError:
            continue
        # references: the field, ``v`` here, getrefcount's argument
        if sys.getrefcount(v) > 3:
            continue
        if isinstance(v, list) and len(v) > chunk:
            while v:
                del v[-chunk:]
                time.sleep(0)
        elif isinstance(v, dict) and len(v) > chunk:
            while v:
                for _ in range(min(chunk, len(v))):
                    v.popitem()
                time.sleep(0)
        elif not isinstance(v, (list, dict, tuple, set, str, bytes, int, float)) and (
            hasattr(v, "__dict__") or hasattr(type(v), "__slots__")
        ):
            _drain(v, chunk, depth + 1)
        del v


def gc_held() -> bool:
    """Whether a :func:`gc_paused` block is running in some thread (a collection now would scan what it builds)."""
    return _gc_holders > 0


def run_to_end(job: Generator[JobEvent, None, T]) -> T:
    """Drive a job generator to completion, dropping its progress, and return its value."""
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
