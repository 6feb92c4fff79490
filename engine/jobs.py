"""Plain-Python progress and cancellation contracts for long engine jobs.

Engine jobs are generators that take a :class:`CancelToken` and yield
:class:`Progress` events; they never see a widget. ``profiler/`` drives them
from Qt workers, the CLI drives them directly.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from splitscope.engine.errors import JobCancelledError
from splitscope.engine.heap import give_back_free_memory

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

    Dropping a 200k-node model freed millions of objects in one C loop that held the interpreter for about 0.4 s:
    on the UI thread, or on a worker while the UI thread waits for it, a stall. The graph itself is now a few tables
    and shares its op types, dtypes and shapes, but its names, attributes and scopes and a view's group objects are
    still objects per node: at 200k nodes the model is 1.9M blocks and 110 ms to free, its view 0.9M blocks and 45 ms
    on the 2-core machine (``bench/bench_free.py --view``), so this stays until that is a frame. Once it is freed,
    the C heap's free pages go back to the system (:mod:`splitscope.engine.heap`).
    Here a thread keeps a reference,
    waits until it holds the last one (the caller's and the window's have gone), then empties the large lists and
    dicts inside it a ``chunk`` at a time, yielding the interpreter between steps; it only ever empties a container
    nothing else refers to, so an object still in use elsewhere is never touched, and it walks only the engine's own
    objects (never a Qt object, which must die on its own thread). Retiring an object already retiring gives its
    thread ``wait_s`` more. If other holders remain past the deadline it lets go, and the object is freed as usual
    whenever they do. Where reference counts cannot be read this way (a free-threaded build) it does nothing."""
    import time

    if not _COUNTS_OK:
        return
    key = id(obj)
    with _gc_lock:
        if key in _retiring:
            _retiring[key] = time.monotonic() + wait_s  # its thread waits longer
            return
        _retiring[key] = time.monotonic() + wait_s
    box = [obj]
    del obj

    def held_alone() -> bool:
        return sys.getrefcount(box[0]) <= _BOXED

    def work() -> None:
        root = None
        try:
            while not held_alone():
                with _gc_lock:
                    late = time.monotonic() > _retiring[key]
                if late and not held_alone():
                    with _gc_lock:
                        _retiring.pop(key, None)
                    box.clear()  # others still hold it: freed when they let go
                    return
                time.sleep(0.05)
            root = box.pop()
            with _gc_lock:
                _retiring.pop(key, None)  # before the object can die: its id may be reused
            _drain(root, chunk, 0)
        finally:
            with _gc_lock:
                if root is None:
                    _retiring.pop(key, None)
            drained, root = root is not None, None
        if drained:
            give_back_free_memory()

    threading.Thread(target=work, name="splitscope-retire", daemon=True).start()


_retiring: dict[int, float] = {}
"""id of each object being retired: the time its thread stops waiting for the other holders."""


def _counts() -> tuple[int, int]:
    """What ``sys.getrefcount`` reads, in the shapes :func:`retire` and :func:`_drain` read it, for an object held
    once (Python 3.14 passes arguments as borrowed references, so the reading is one less there)."""

    class Probe:
        __slots__ = ("v",)

    box = [object()]
    boxed = sys.getrefcount(box[0])
    p = Probe()
    p.v = []
    v = p.v
    field = sys.getrefcount(v)
    del v
    return boxed, field


_BOXED, _FIELD = _counts()
_COUNTS_OK = getattr(sys, "_is_gil_enabled", lambda: True)()
"""A free-threaded build counts references per thread: :func:`retire` does not rely on them there."""


def _fields(obj: Any) -> list[str]:
    names = list(getattr(obj, "__dict__", {}) or ())
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [n for n in dict.fromkeys(names) if not n.startswith("__")]


def _engine_object(v: Any) -> bool:
    """An object of the engine's own classes (a model, a graph, a view): the only kind :func:`_drain` walks into."""
    return type(v).__module__.startswith("splitscope.engine.")


def _drain(obj: Any, chunk: int, depth: int) -> None:
    """Empty, a chunk at a time, the large containers ``obj``'s fields alone refer to; recurse into its fields that
    are engine objects it alone refers to (a few levels: a model, its graph, its adjacency, a view)."""
    import time

    if depth > 4 or not _engine_object(obj):
        return
    for name in _fields(obj):
        try:
            v = getattr(obj, name)
        except AttributeError:
            continue
        if sys.getrefcount(v) > _FIELD:  # something besides this field refers to it
            del v
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
        elif _engine_object(v):
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
