"""The application controller: one per window, the owner of the application's state.

It holds the open model (its :class:`ModelSession`), the job queue, the profiling service, each model's results
(profiles, imported engine, calibration, kept per model so that reopening a model brings them back) and the
canvas's colour mode, and says what changed through typed Qt signals. The window's panels subscribe to it and
present; none of them owns a job or a result. QtCore only.

Every job the panels ask for goes through here: a calibration or a TensorRT-RTX build runs in a child process
(:class:`splitscope.engine.child.JobProcess`, one protocol, one hard cancel), an engine import and a report in a
worker; their results come back on one connection to the queue, never one per submit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from splitscope.engine.api import EngineReport, Report
from splitscope.engine.calib.results import CalibrationDoc
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.kernel.answers import parser_answers
from splitscope.engine.kernel.results import KernelDoc, ParserAnswer
from splitscope.engine.model import GraphModel
from splitscope.engine.process import JobProcess
from splitscope.engine.runtime.generate import GenerationDoc
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.engine.sweep.results import SweepDoc
from splitscope.engine.view.layout import View
from splitscope.profiler.profiling import ProfileRequest, Profiling, child_or_remote, dims_text
from splitscope.profiler.queue import JobKind, JobQueue, Lane
from splitscope.profiler.session import ModelSession

if TYPE_CHECKING:
    from splitscope.engine.rewrite.optimize import OptimizeResult
    from splitscope.engine.trtdata.importer import EngineData


@dataclass(slots=True)
class ModelResults:
    """What the window has for one model, besides its analysis."""

    profiles: dict[int, ProfileDoc] = field(default_factory=dict)
    """Job id -> profile result, finished or reloaded."""
    shown_profile: int | None = None
    engine: EngineData | None = None
    """The imported or built engine's layers mapped onto this model (its JSON: ``engine.doc()``)."""
    calibration: CalibrationDoc | None = None
    """The last calibration of this model, typed."""
    search: str = ""
    """The search field's text while this model was open: it comes back with the model."""
    colour_mode: str = "status"
    """The colour mode last asked for on this model."""
    kernels: list[KernelDoc] = field(default_factory=list)
    """The kernel workbench's results on this model, newest last."""

    def plugin_answers(self) -> dict[str, ParserAnswer]:
        """The real parser's answers with the generated plugins registered, by node label (from :attr:`kernels`):
        what the planner counts and the canvas colours after."""
        return parser_answers(self.kernels)

    generation: GenerationDoc | None = None
    """The last generation profile of this model."""
    sweep: SweepDoc | None = None
    """The last sweep over this model."""


@dataclass(frozen=True, slots=True)
class EngineOutcome:
    """A finished engine job: what was asked (``import``, ``compare``, ``build``) and titled, the engine's report as
    the Python API gives it (layers mapped onto the model, the lint's advice in its JSON), the colourings made in the
    job's worker for the view then on screen, and the model it was mapped onto."""

    kind: str
    title: str
    report: EngineReport
    heat: dict[tuple[str, int], Any]
    model: str | None


@dataclass(slots=True)
class EngineRequest:
    """An engine import (trtexec files), a comparison with another engine, or a TensorRT-RTX build."""

    kind: str
    """``import``, ``compare`` or ``build``."""
    paths: list[str]
    title: str


class AppController(QObject):
    """The open model, its jobs and its results, for one window."""

    model_ready = Signal(object, object)
    """A model is open and final: its :class:`GraphModel` and :class:`View`."""
    colour_mode_changed = Signal(str)
    """The canvas's colour mode (``status``, ``time``, ``precision``, ...) was asked for."""
    profile_ready = Signal(int, object)
    """A profile finished or was reloaded: job id, its :class:`ProfileDoc`."""
    engine_ready = Signal(int, object)
    """An engine job finished: job id, its :class:`EngineOutcome`."""
    calibration_ready = Signal(int, object)
    """A calibration finished: job id, its :class:`CalibrationDoc`."""
    generation_ready = Signal(int, object)
    """A generation profile finished on the open model: its id, its :class:`GenerationDoc`."""
    kernel_ready = Signal(int, object)
    """A kernel workbench job finished on the open model: its id, its :class:`KernelDoc`."""
    optimize_ready = Signal(int, object)
    """An Optimize Export finished: (job id, its :class:`~splitscope.engine.rewrite.optimize.OptimizeResult`)."""
    sweep_ready = Signal(int, object)
    """A sweep finished: (job id, its :class:`SweepDoc`)."""
    report_ready = Signal(int, object)
    """A report was written: job id, its :class:`~splitscope.engine.api.Report`."""
    engine_graph_ready = Signal(int, object, object)
    """An engine's own graph was written (no ONNX model open): job id, its path, the engine files."""
    failed = Signal(str, str)
    """A job failed: one line, details."""

    def __init__(self, parser: str = "auto", parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = ModelSession(parser, self)
        self.queue = JobQueue(self)
        self.profiling = Profiling(self.queue, self)
        self.colour_mode = "status"
        self._results: dict[str, ModelResults] = {}
        self._current = ModelResults()
        self.session.model_ready.connect(self._model_ready)
        self.profiling.result_ready.connect(self._profile)
        self.profiling.unreadable.connect(lambda message: self.failed.emit(message, ""))
        self.queue.finished.connect(self._finished)
        self.queue.failed.connect(lambda _jid, message, details: self.failed.emit(message, details))

    # ------------------------------------------------------------ state
    @property
    def graph_model(self) -> GraphModel | None:
        """The model whose final analysis is shown."""
        return self.session.graph_model

    @property
    def view(self) -> View | None:
        """The layout on screen."""
        return self.session.view

    @property
    def results(self) -> ModelResults:
        """The open model's results."""
        return self._current

    def set_colour_mode(self, mode: str) -> None:
        """Ask for a colour mode; the canvas's presenter falls back to ``status`` when the mode has no data."""
        self.colour_mode = mode
        self._current.colour_mode = mode  # the model's own: it comes back when the model is opened again
        self.colour_mode_changed.emit(mode)

    def show_profile(self, jid: int) -> None:
        """The open model's profile ``jid`` is the one shown (it comes back with the model)."""
        self._current.shown_profile = jid

    def remember_search(self, text: str) -> None:
        """The search field's text on the open model (each model keeps its own)."""
        self._current.search = text

    def keep_saved_sweep(self, results: ModelResults, saved: list[dict[str, Any]]) -> None:
        """The last of a model's saved sweeps (:func:`~splitscope.engine.runtime.store.load_results`), kept with its
        results where they hold none yet; one saved by a later release is said in one line and not kept."""
        if not saved or results.sweep is not None:
            return
        try:
            results.sweep = SweepDoc.from_json(saved[-1]["result"])
        except SplitscopeError as e:
            self.failed.emit(e.message, "")

    def note_colour_mode(self, mode: str) -> None:
        """The mode the canvas actually shows (after a fall-back), without asking again."""
        self.colour_mode = mode

    # ------------------------------------------------------------- jobs
    def open(self, path: Path) -> None:
        """Analyse and show ``path`` at the dims last given for it (the current model stays until the new one is
        ready)."""
        self.session.open(Path(path))

    def submit_profile(self, req: ProfileRequest) -> int:
        """Queue a profile (a child process on the GPU lane)."""
        return self.profiling.submit(req)

    def submit_calibration(self, args: dict[str, Any]) -> int:
        """Queue a calibration (a child process on the GPU lane); Cancel leaves no file."""

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            data = args.get("data")
            push = ("model", "labels") + (("data",) if data and data != "random" and Path(data).exists() else ())
            return (yield from child_or_remote("calibrate", dict(args), push=push, fetch=("out",)).events(token))

        where = f" on {args['target']['label']}" if args.get("target") else ""
        return self.queue.submit(
            f"Calibrate {Path(args['model']).name} ({args['precision']}, {args['method']})"
            + (f" at {dims_text(args['dims'])}" if args.get("dims") else "")
            + where,
            job,
            lane=Lane.GPU,
            kind=JobKind.CALIBRATE,
            meta={"model": str(args["model"])},
        )

    def submit_sweep(self, cells: list[Any], ray: str | bool | None = None, search: int = 0) -> int:
        """Queue a sweep (:mod:`splitscope.engine.sweep`): each cell a child process, on Ray or in sequence; each
        finished cell arrives as a ``sweep`` sample; the sweep is saved with its first model. ``search``: a
        precision search over the K most sensitive nodes (:mod:`splitscope.engine.sweep.search`), ranked first; its
        cells then arrive as a ``sweep-plan`` sample."""
        model = cells[0].model if cells else ""

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            from splitscope.engine.jobs import Sample
            from splitscope.engine.runtime.store import save_result
            from splitscope.engine.sweep.run import run_sweep

            grid = cells
            if search:
                from splitscope.engine.sweep.search import search_cells

                grid, _ = yield from search_cells(cells, search, token)
                yield Sample("sweep-plan", 0.0, {"cells": [c.params() for c in grid]})  # type: ignore[dict-item]
            doc = yield from run_sweep(grid, ray=ray, cancel=token)
            with contextlib.suppress(OSError):  # shown anyway; the cells themselves are kept for the next run
                doc["_saved"] = str(save_result(Path(model), "sweep", doc))
            return doc

        return self.queue.submit(
            f"Sweep {len(cells)} cells of {Path(model).name}" + (f", a search over {search} nodes" if search else ""),
            job,
            lane=Lane.GPU,
            kind=JobKind.SWEEP,
            meta={"model": model},
        )

    def _child_job(self, kind: JobKind, args: dict[str, Any], title: str, model: str) -> int:
        """Queue a job that runs in a child process (``splitscope.engine.child``, kind ``kind``) on the GPU lane:
        Cancel kills it; its result is kept with ``model``."""

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            return (yield from JobProcess(kind, args).events(token))

        return self.queue.submit(title, job, lane=Lane.GPU, kind=kind, meta={"model": model})

    def submit_verify(self, budget: float = 300.0, ranges: dict[str, tuple[int, int]] | None = None) -> int | None:
        """Queue a verifying build of the open model's partitions at the shapes in force (TensorRT-RTX, in a child
        process: Cancel kills it), over ``ranges`` (name -> (min, max)) where given; when it ends, the model is
        shown again with the nodes the builder rejects. A range that does not hold its dim's value raises."""
        gm = self.graph_model
        if gm is None or gm.path is None or gm.engine_graph:
            return None
        from splitscope.engine.runtime.verify import check_ranges, child_args

        args = child_args(gm, budget, ranges=check_ranges(gm, ranges or {}))
        title = f"Verify {gm.path.name} by building at {gm.shapes_label()}"
        return self._child_job(JobKind.VERIFY, args, title, str(gm.path))

    def submit_optimize(self, source: Path, output: Path) -> int:
        """Queue an Optimize Export of ``source`` into ``output`` (a job of the queue: progress, Cancel, the Jobs
        panel; the file is written whole or not at all)."""
        parser = self.session.parser

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            from splitscope.engine.rewrite.optimize import optimize_export

            return (yield from optimize_export(source, output, parser=parser, cancel=token))

        title = f"Optimize {source.name} into {output.name}"
        return self.queue.submit(title, job, lane=Lane.CPU, kind=JobKind.OPTIMIZE, meta={"model": str(source)})

    def submit_generation(self, backend: str, prompt_len: int, steps: int) -> int | None:
        """Queue a generation profile of the open decoder (a child process on the GPU lane, Cancel kills it)."""
        gm = self.graph_model
        if gm is None or gm.path is None:
            return None
        args = {"model": str(gm.path), "backend": backend, "prompt_len": prompt_len, "steps": steps}
        title = f"Generate {steps} tokens after {prompt_len} with {gm.path.name} ({backend})"
        return self._child_job(JobKind.GENERATE, args, title, str(gm.path))

    def submit_kernel(self, args: dict[str, Any]) -> int | None:
        """Queue a kernel workbench job on the open model (a child process on the GPU lane: extract, capture,
        reference, the parser's answer with the plugin, the kernel on the GPU); ``args`` as
        :func:`splitscope.engine.kernel.job.kernel_job` takes them, the model and its dims filled in here."""
        gm = self.graph_model
        if gm is None or gm.path is None or gm.engine_graph:
            return None
        args = {"model": str(gm.path), "dims": dict(gm.dims), "parser": self.session.parser, **args}  # the window's

        what = ", ".join(args.get("nodes") or []) or "the first plugin node"
        return self._child_job(
            JobKind.KERNEL, args, f"Kernel workbench: {what[:60]} at {gm.shapes_label()}", str(gm.path)
        )

    def submit_engine(
        self, req: EngineRequest, prepare: Callable[[Any], dict[tuple[str, int], Any]] | None = None
    ) -> int:
        """Queue an engine job. A build runs TensorRT-RTX in a child process (it can crash) and maps its layers
        here; imports read trtexec's files in a worker. ``prepare(data)`` runs in the worker too (colourings)."""
        gm, view = self.graph_model, self.view

        def job(token: CancelToken) -> Generator[JobEvent, None, EngineOutcome]:
            from splitscope.engine.trtdata.importer import import_files
            from splitscope.engine.trtdata.lint import lint

            yield Progress("engine", 0, 0, req.title)
            if req.kind == "build":
                from splitscope.engine.runtime.trt import engine_data_from_log

                out = yield from JobProcess(
                    "build", {"model": req.paths[0], "backend": "rtx", "dims": dict(gm.dims) if gm else {}}
                ).events(token)
                data = engine_data_from_log(out["lines"], req.paths[0], gm, "rtx")
                data.notes.append(f"engine of {out['engine_bytes']:,} bytes built in {out['seconds']:.1f} s")
            else:
                data = import_files(req.paths, gm)
            token.raise_if_cancelled()
            heat = prepare(data) if prepare is not None and view is not None else {}
            doc = data.to_json()
            doc["lint"] = lint(data)
            model = str(gm.path) if gm is not None and gm.path is not None else None
            return EngineOutcome(req.kind, req.title, EngineReport(data, doc, gm), heat, model)

        return self.queue.submit(
            req.title, job, lane=Lane.GPU if req.kind == "build" else Lane.ENGINE, kind=JobKind.ENGINE
        )

    def submit_engine_graph(self, paths: list[str]) -> int:
        """Draw an engine's own graph from its layer info (written in a worker as an ONNX file to open)."""
        from splitscope.engine.paths import cache_dir
        from splitscope.engine.trtdata.engine_graph import write_engine_graph

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            yield Progress("engine", 0, 0, "Drawing the engine's own graph")
            return write_engine_graph(paths, cache_dir() / "engine-graphs")

        return self.queue.submit(
            f"Draw the engine of {Path(paths[0]).name}",
            job,
            lane=Lane.ENGINE,
            kind=JobKind.ENGINE_GRAPH,
            meta={"paths": list(paths)},
        )

    def submit_report(self, title: str, job: Callable[[CancelToken], Generator[JobEvent, None, Any]]) -> int:
        """Queue a report job (a worker on the CPU lane)."""
        return self.queue.submit(title, job, lane=Lane.CPU, kind=JobKind.REPORT)

    def cancel_all(self) -> None:
        """Cancel the analysis and every queued or running job (the window closes)."""
        self.session.cancel()
        self.queue.cancel_all()

    # ----------------------------------------------------------- events
    @staticmethod
    def _key(path: str | Path | None) -> str:
        return str(Path(path).resolve()) if path else ""

    def _for(self, path: str | Path | None) -> ModelResults:
        """The results of the model at ``path`` (kept for when it is opened again)."""
        key = self._key(path)
        return self._results.setdefault(key, ModelResults()) if key else ModelResults()

    def _is_open(self, path: str | Path | None) -> bool:
        gm = self.graph_model
        return gm is not None and gm.path is not None and bool(path) and self._key(path) == self._key(gm.path)

    def _model_ready(self, gm: GraphModel, view: View) -> None:
        self._current = self._for(gm.path)
        self.colour_mode = "status"
        self.model_ready.emit(gm, view)

    def _profile(self, jid: int, doc: ProfileDoc) -> None:
        """A profile finished (or came back saved): kept with the model it profiled, shown only if that
        model is the one open (a profile of A finishing after B was opened never colours B)."""
        rec = self.queue.jobs.get(jid)
        model = (rec.meta.get("model") if rec is not None else None) or doc.json.get("model")
        mine = self._for(model) if model else self._current
        mine.profiles[jid] = doc
        mine.shown_profile = jid
        if not model or self._is_open(model):
            self.profile_ready.emit(jid, doc)

    def _finished(self, jid: int) -> None:
        """A job of the queue ended: its kind's handler (:data:`_FINISHED`) keeps its result with its model and says
        so; a result that cannot be read here (a later release's document) is said in one line, not kept."""
        rec = self.queue.jobs.get(jid)
        if rec is None or rec.meta.get("shown") or rec.result is None:
            return
        done = _FINISHED.get(rec.kind)
        if done is None:
            return
        rec.meta["shown"] = True
        try:
            done(self, jid, rec.result, rec.meta)
        except SplitscopeError as e:
            self.failed.emit(e.message, "")

    def _engine_graph_done(self, jid: int, path: Path, meta: dict[str, Any]) -> None:
        self.engine_graph_ready.emit(jid, path, list(meta["paths"]))

    def _optimize_done(self, jid: int, res: OptimizeResult, _meta: dict[str, Any]) -> None:
        self.optimize_ready.emit(jid, res)

    def _engine_done(self, jid: int, res: EngineOutcome, _meta: dict[str, Any]) -> None:
        if res.kind != "compare":
            mine = self._for(res.model) if res.model else self._current
            mine.engine = res.report.data
        if res.model is None or self._is_open(res.model):
            self.engine_ready.emit(jid, res)

    def _calibration_done(self, jid: int, res: dict[str, Any], meta: dict[str, Any]) -> None:
        model = meta.get("model")
        doc = self._for(model).calibration = CalibrationDoc.from_json(res)
        if self._is_open(model):
            self.calibration_ready.emit(jid, doc)

    def _report_done(self, jid: int, res: dict[str, Any], _meta: dict[str, Any]) -> None:
        self.report_ready.emit(jid, Report(Path(res["out"]), int(res["bytes"]), str(res.get("headline", "")), res))

    def _generation_done(self, jid: int, res: dict[str, Any], meta: dict[str, Any]) -> None:
        model = meta.get("model")
        doc = GenerationDoc.from_json(res)
        self._for(model).generation = doc
        if self._is_open(model):
            self.generation_ready.emit(jid, doc)

    def _kernel_done(self, jid: int, res: dict[str, Any], meta: dict[str, Any]) -> None:
        model = meta.get("model")
        doc = KernelDoc.from_json(res)
        self._for(model).kernels.append(doc)
        if self._is_open(model):
            self.kernel_ready.emit(jid, doc)

    def _sweep_done(self, jid: int, res: dict[str, Any], meta: dict[str, Any]) -> None:
        doc = self._for(meta.get("model")).sweep = SweepDoc.from_json(res)
        self.sweep_ready.emit(jid, doc)

    def _verify_done(self, _jid: int, res: dict[str, Any], meta: dict[str, Any]) -> None:
        if self._is_open(meta.get("model")):
            self.session.apply_build(res)  # the model comes back with what the builder rejects


_FINISHED: dict[JobKind, Callable[[AppController, int, Any, dict[str, Any]], None]] = {
    JobKind.ENGINE: AppController._engine_done,
    JobKind.ENGINE_GRAPH: AppController._engine_graph_done,
    JobKind.OPTIMIZE: AppController._optimize_done,
    JobKind.CALIBRATE: AppController._calibration_done,
    JobKind.REPORT: AppController._report_done,
    JobKind.GENERATE: AppController._generation_done,
    JobKind.KERNEL: AppController._kernel_done,
    JobKind.SWEEP: AppController._sweep_done,
    JobKind.VERIFY: AppController._verify_done,
}
"""The job kinds' registry: what a finished job of each kind does with its result (kept per model, shown where its
model is open; a profile goes through :class:`~splitscope.profiler.profiling.Profiling`)."""
