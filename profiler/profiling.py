"""Profiling for the window: a profile job per request on the queue's ``gpu`` lane, run in a child process,
saved with its model when it ends well, and the saved ones found again when the model is reopened."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from splitscope.engine.jobs import CancelToken, JobEvent, LogLine
from splitscope.engine.process import JobProcess
from splitscope.engine.runtime.store import load_results, save_result
from splitscope.profiler.queue import JobKind, JobQueue, Lane


@dataclass(slots=True)
class ProfileRequest:
    """What the Profile dialog (or a test) asks for."""

    model: Path
    backend: str = "ort-cpu"
    iterations: int = 100
    warmup: int = 10
    profiled: int = 20
    dims: dict[str, int] = field(default_factory=dict)
    input: str | None = None
    parser: str = "table"
    target: dict[str, Any] | None = None
    """An SSH target (:meth:`splitscope.engine.remote.target.Target.to_json`), None for this machine."""

    def title(self) -> str:
        at = f" at {dims_text(self.dims)}" if self.dims else ""
        where = f" on {self.target.get('label', self.target.get('host'))}" if self.target else ""
        return f"Profile {self.model.name} on {self.backend}{at}{where}"


def dims_text(dims: dict[str, int]) -> str:
    """``height=320, width=320``: the dims a job runs at, for its name."""
    return ", ".join(f"{k}={v}" for k, v in dims.items())


def read_saved(model: Path, kind: str, done: Any) -> None:
    """The saved results of ``kind`` of ``model`` (:func:`load_results`) read in a worker, then given to ``done`` on
    the UI thread: a large model's are megabytes of JSON each, which held the window when read on its thread."""
    from splitscope.profiler.workers import function_worker

    worker = function_worker(load_results, model, kind)
    worker.returned.connect(done)
    worker.start()


def child_or_remote(kind: str, args: dict[str, Any], push: tuple[str, ...] = (), fetch: tuple[str, ...] = ()) -> Any:
    """The job's process: a child here, or the same child on the SSH target ``args["target"]`` names (popped)."""
    target = args.pop("target", None)
    if target:
        from splitscope.engine.remote.job import RemoteJob
        from splitscope.engine.remote.target import Target

        return RemoteJob(Target.from_json(target), kind, args, push=push, fetch=fetch)
    return JobProcess(kind, args)


def profile_job(req: ProfileRequest, token: CancelToken) -> Generator[JobEvent, None, dict[str, Any]]:
    """The job: the profile in a child process, then saved with the model (atomically; a cancelled or failed
    job saves nothing)."""
    args = asdict(req)
    args["model"] = str(req.model)
    result = yield from child_or_remote("profile", args, push=("model", "input")).events(token)
    token.raise_if_cancelled()
    try:
        result["_saved"] = str(save_result(req.model, "profile", result))
    except OSError as e:
        yield LogLine(
            f"The profile could not be saved with the model ({e.strerror or e}); it is shown anyway.", "warning"
        )
    return result


class Profiling(QObject):
    """Submits profiles to the queue and brings back saved ones."""

    result_ready = Signal(int, object)
    """A profile finished or was reloaded: job id, its :class:`~splitscope.engine.runtime.results.ProfileDoc`."""
    unreadable = Signal(str)
    """A profile could not be read here (a later release's document): one line that says what to do."""

    reloaded = Signal(object, list)
    """The saved profiles of a model came back (model path, their job ids)."""

    def __init__(self, queue: JobQueue, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.queue = queue
        queue.finished.connect(self._finished)
        self._reads = 0

    def submit(self, req: ProfileRequest) -> int:
        """Queue a profile; returns its job id."""
        return self.queue.submit(
            req.title(),
            lambda token: profile_job(req, token),
            lane=Lane.GPU,
            kind=JobKind.PROFILE,
            meta={"model": str(req.model), "backend": req.backend},
        )

    def reload(self, model: Path | None) -> None:
        """Put the model's saved profiles in the queue's list, as finished jobs, once read (:func:`read_saved`);
        :attr:`reloaded` says when. A model opened meanwhile (``None``: one without a file) makes the earlier read's
        profiles stale: they are dropped."""
        self._reads += 1
        read = self._reads
        if model is not None:
            read_saved(model, "profile", lambda docs: self._add_saved(read, model, docs))

    def _add_saved(self, read: int, model: Path, docs: list[dict[str, Any]]) -> None:
        if read != self._reads:
            return  # another model was opened since
        self.reloaded.emit(model, self.add_saved(model, docs))

    def add_saved(self, model: Path, docs: list[dict[str, Any]]) -> list[int]:
        """The saved profiles ``docs`` (:func:`load_results`) as finished jobs; their ids."""
        ids = []
        for doc in docs:
            res = doc["result"]
            dims = res.get("dims") if isinstance(res.get("dims"), dict) else {}
            at = f" at {dims_text(dims)}" if dims else ""
            jid = self.queue.add_finished(
                f"Profile {model.name} on {res.get('backend', '?')}{at} (saved {doc['saved']})",
                JobKind.PROFILE,
                res,
                {"model": str(model), "backend": res.get("backend")},
            )
            ids.append(jid)
            self.deliver(jid, res)
        return ids

    def deliver(self, job_id: int, result: dict[str, Any]) -> None:
        """Read a profile's document as its type and say it is ready (or, unreadable here, say why)."""
        from splitscope.engine.errors import SplitscopeError
        from splitscope.engine.runtime.results import ProfileDoc

        try:
            doc = ProfileDoc.from_json(result)
        except SplitscopeError as e:
            self.unreadable.emit(e.message)
            return
        self.result_ready.emit(job_id, doc)

    def _finished(self, job_id: int) -> None:
        rec = self.queue.jobs.get(job_id)
        if rec is not None and rec.kind == JobKind.PROFILE and isinstance(rec.result, dict):
            self.deliver(job_id, rec.result)
