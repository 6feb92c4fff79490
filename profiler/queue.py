"""A queue of jobs in lanes: each lane runs one job at a time, in order, and a job never cancels another.

The window's analysis keeps its own runner (a new model replaces the old one's analysis); profiling,
engine and calibration jobs go to the ``gpu`` lane, which runs them one after another. Every job has a
:class:`JobRecord` the Jobs panel shows: state, progress, elapsed time, error. Events of the running job
are relayed with its id; errors go to one presenter (the window's), never silently dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from PySide6.QtCore import QObject, Signal
from splitscope.engine.jobs import LogLine, Progress, Sample
from splitscope.profiler.jobs import JobFactory, JobRunner
from splitscope.profiler.outcome import outcome


class _Named(str, Enum):
    """A closed set of names that still reads, compares, formats and saves as its plain string."""

    __str__ = str.__str__
    __format__ = str.__format__


class JobState(_Named):
    """Where a job is in its life."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Lane(_Named):
    """Which queue a job waits in: each lane runs one job at a time."""

    GPU = "gpu"
    ENGINE = "engine"
    CPU = "cpu"
    REMOTE = "remote"
    SAVED = "saved"
    """Not a queue: a result reopened with its model."""


class JobKind(_Named):
    """What a job does, and so what its result is and who shows it (the controller's table of kinds)."""

    PROFILE = "profile"
    CALIBRATE = "calibrate"
    SWEEP = "sweep"
    ENGINE = "engine"
    ENGINE_GRAPH = "engine-graph"
    REPORT = "report"
    GENERATE = "generate"
    KERNEL = "kernel"
    VERIFY = "verify"
    TARGET_CHECK = "target-check"
    TARGET_TRUST = "target-trust"
    OPTIMIZE = "optimize"
    JOB = "job"


QUEUED, RUNNING, DONE, FAILED, CANCELLED = JobState


@dataclass(slots=True)
class JobRecord:
    """One job as the Jobs panel shows it."""

    id: int
    title: str
    lane: Lane
    kind: JobKind
    factory: JobFactory | None
    state: JobState = QUEUED
    done: int = 0
    total: int = 0
    message: str = ""
    submitted: float = field(default_factory=time.monotonic)
    started: float | None = None
    ended: float | None = None
    error: str = ""
    details: str = ""
    result: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def elapsed(self) -> float:
        """Seconds it has run (0 while queued)."""
        if self.started is None:
            return 0.0
        return (self.ended or time.monotonic()) - self.started

    @property
    def finished(self) -> bool:
        return self.state in (DONE, FAILED, CANCELLED)


class JobQueue(QObject):
    """Lanes of queued jobs."""

    changed = Signal(int)
    """A job's record changed (state, progress): its id."""
    sample = Signal(int, object)
    """A :class:`Sample` of the running job: its id, the sample."""
    log_line = Signal(int, object)
    """A :class:`LogLine` of the running job: its id, the line."""
    finished = Signal(int)
    """A job ended well: its id (the record holds the result)."""
    failed = Signal(int, str, str)
    """A job failed: its id, the one-line message, details (a traceback for unexpected errors)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.jobs: dict[int, JobRecord] = {}
        self._next = 1
        self._runners: dict[str, JobRunner] = {}
        self._current: dict[str, int] = {}

    def submit(
        self,
        title: str,
        factory: JobFactory,
        lane: Lane = Lane.GPU,
        kind: JobKind = JobKind.JOB,
        meta: dict[str, Any] | None = None,
    ) -> int:
        """Queue ``factory`` on ``lane``; returns the job's id. It starts when the lane is free."""
        rec = JobRecord(self._next, title, Lane(lane), JobKind(kind), factory, meta=dict(meta or {}))
        self._next += 1
        self.jobs[rec.id] = rec
        self.changed.emit(rec.id)
        self._pump(lane)
        return rec.id

    def add_finished(self, title: str, kind: JobKind, result: Any, meta: dict[str, Any] | None = None) -> int:
        """Record a result that did not run here (a saved one, reopened with its model)."""
        rec = JobRecord(self._next, title, Lane.SAVED, JobKind(kind), None, DONE, result=result, meta=dict(meta or {}))
        rec.started = rec.ended = time.monotonic()
        self._next += 1
        self.jobs[rec.id] = rec
        self.changed.emit(rec.id)
        return rec.id

    def cancel(self, job_id: int) -> None:
        """Cancel a queued job (it never starts) or the running one (it stops at its next check)."""
        rec = self.jobs.get(job_id)
        if rec is None or rec.finished:
            return
        if rec.state == QUEUED:
            self._end(rec, CANCELLED)
            return
        runner = self._runners.get(rec.lane)
        if runner is not None:
            runner.cancel()

    def cancel_all(self) -> None:
        """Cancel every queued and running job (closing the window)."""
        for rec in list(self.jobs.values()):
            if rec.state == QUEUED:
                self._end(rec, CANCELLED)
        for lane in list(self._current):
            self.cancel(self._current[lane])

    def running(self, lane: Lane | None = None) -> bool:
        """Whether a job runs (on ``lane``)."""
        return bool(self._current) if lane is None else lane in self._current

    def forget_finished(self) -> None:
        """Drop the records of finished jobs (Clear in the Jobs panel)."""
        for jid in [j for j, r in self.jobs.items() if r.finished]:
            del self.jobs[jid]
            self.changed.emit(jid)

    # ---------------------------------------------------------------- lanes
    def _runner(self, lane: Lane) -> JobRunner:
        r = self._runners.get(lane)
        if r is None:
            r = self._runners[lane] = JobRunner(self)
            r.progress_changed.connect(lambda ev, ln=lane: self._progress(ln, ev))
            r.sample.connect(lambda ev, ln=lane: self._relay(ln, ev))
            r.log_line.connect(lambda ev, ln=lane: self._relay(ln, ev))
            r.job_finished.connect(lambda value, ln=lane: self._finished(ln, value))
            r.job_failed.connect(lambda msg, det, ln=lane: self._failed(ln, msg, det))
            r.job_cancelled.connect(lambda ln=lane: self._cancelled(ln))
        return r

    def _pump(self, lane: Lane) -> None:
        if lane in self._current:
            return
        nxt = next((r for r in self.jobs.values() if r.lane == lane and r.state == QUEUED), None)
        if nxt is None or nxt.factory is None:
            return
        nxt.state, nxt.started = RUNNING, time.monotonic()
        self._current[lane] = nxt.id
        self.changed.emit(nxt.id)
        self._runner(lane).start(nxt.factory)

    def _rec(self, lane: Lane) -> JobRecord | None:
        jid = self._current.get(lane)
        return self.jobs.get(jid) if jid is not None else None

    def _progress(self, lane: Lane, ev: Progress) -> None:
        rec = self._rec(lane)
        if rec is not None:
            rec.done, rec.total, rec.message = ev.done, ev.total, ev.message
            self.changed.emit(rec.id)

    def _relay(self, lane: Lane, ev: Sample | LogLine) -> None:
        rec = self._rec(lane)
        if rec is None:
            return
        if isinstance(ev, Sample):
            self.sample.emit(rec.id, ev)
        else:
            self.log_line.emit(rec.id, ev)

    def _end(self, rec: JobRecord, state: JobState) -> None:
        rec.state, rec.ended, rec.factory = state, time.monotonic(), None
        if self._current.get(rec.lane) == rec.id:
            del self._current[rec.lane]
        self.changed.emit(rec.id)

    def _finished(self, lane: Lane, value: Any) -> None:
        rec = self._rec(lane)
        if rec is None:
            return
        rec.result = value
        if rec.total:
            rec.done = rec.total
        rec.message = outcome(rec.kind, value, time.monotonic() - (rec.started or rec.submitted))
        self._end(rec, DONE)
        self.finished.emit(rec.id)
        self._pump(lane)

    def _failed(self, lane: Lane, message: str, details: str) -> None:
        rec = self._rec(lane)
        if rec is None:
            return
        rec.error, rec.details, rec.message = message, details, message
        self._end(rec, FAILED)
        self.failed.emit(rec.id, message, details)
        self._pump(lane)

    def _cancelled(self, lane: Lane) -> None:
        rec = self._rec(lane)
        if rec is None:
            return
        rec.message = "Cancelled"
        self._end(rec, CANCELLED)
        self._pump(lane)
