"""The model session: the state machine from opening a model to its final, refined view.

One session holds one model at a time and runs its jobs: the analysis (load, table
colours, shapes, the real parser), the first layout as soon as the structure is known,
the refinement when the analysis ends, and relayouts on expand/collapse. The window
observes it through signals and only presents; later jobs (profiling, calibration)
join here. QtCore only.

States, in order, for each :meth:`open`:

1. *analysing*: the analysis job runs; the previous model stays on screen.
2. *first view*: the analysis yielded a :class:`Partial` (structure coloured by the
   table); the first layout runs on it while the analysis waits for up to 3 s, so the
   first paint gets the CPU.
3. *refining*: the analysis returned; statuses, shapes and partitions are final. If the
   first layout is still running, the refinement waits for it; then the same layout is
   recounted and redrawn in place, with the panel figures.
4. *ready*: :attr:`graph_model` is the final model; :data:`model_ready` was emitted.

A failure or cancel at any point leaves the previous ready model in place.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, Signal
from splitscope.engine.heap import give_back_when_freed
from splitscope.engine.jobs import CancelToken, JobEvent, Partial, Progress, collections_wait
from splitscope.engine.model import GraphModel
from splitscope.engine.report.stats import panel_stats
from splitscope.engine.view.layout import View, prepare_view, relayout
from splitscope.profiler.jobs import JobRunner

FIRST_LAYOUT_HEAD_START_S = 3.0
"""How long the analysis waits for the first layout of its structure before refining (a preview's layout is waited
for to its end)."""


def _wait_giving_up_the_thread(event: threading.Event, timeout: float | None = None) -> None:
    """Wait for ``event`` in a worker of the global thread pool, its place in the pool lent meanwhile (Qt's
    ``releaseThread``): the layout being waited for runs in that pool too, and with every thread taken (one core, or
    another job running) it would never start."""
    pool = QThreadPool.globalInstance()
    pool.releaseThread()
    try:
        event.wait(timeout)
    finally:
        pool.reserveThread()


class ModelSession(QObject):
    """One open model and the jobs that analyse and lay it out."""

    progress = Signal(object)
    """A :class:`Progress` of whichever job runs (throttled to the frame rate)."""
    view_changed = Signal(object, bool)
    """A new :class:`View` to show, and whether it is the same model as before (keep zoom and focus)."""
    model_ready = Signal(object, object)
    """The final :class:`GraphModel` and its :class:`View` (with panel figures): show the panels."""
    analysed = Signal(object)
    """The analysis of a model finished (its path goes to the recent files)."""
    failed = Signal(str, str)
    """One-line message, details."""
    cancelled = Signal()
    """The analysis stopped at a Cancel (the model on screen stays)."""
    running_changed = Signal(bool)
    """Whether an analysis or a layout is running now."""
    body_changed = Signal(list)
    """The canvas entered or left an If / Loop / Scan body: the way in (crumbs), [] for the main graph."""

    def __init__(self, parser: str = "auto", parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.parser = parser
        self.analysis = JobRunner(self)
        self.layout = JobRunner(self)
        self.graph_model: GraphModel | None = None
        """The last model whose analysis is final and shown."""
        self.view: View | None = None
        """The layout on screen."""
        self.focus: tuple[int, int] = (-1, -1)
        self._undo: list[frozenset[int]] = []
        self._redo: list[frozenset[int]] = []
        self.fold_constants = True
        """Fold nodes that only carry constants into their consumers (View > Fold Constant Nodes)."""
        self.viewport: tuple[int, int] | None = None
        """Pixels the first view is fitted into (the canvas's size), to choose how deep it opens."""
        """(group, node) to bring into view after the next relayout."""
        self._early: GraphModel | None = None
        """The model of the analysis that runs, once it yielded its partial view."""
        self._final: GraphModel | None = None
        """The last model whose analysis finished (a candidate for :attr:`graph_model`)."""
        self._pending: GraphModel | None = None
        """A finished model waiting for its first layout to land before it is refined."""
        self._layout_gm: GraphModel | None = None
        """The model the layout job that runs (or ran last) is for."""
        self._ready_view: View | None = None
        """The last view of :attr:`graph_model`, to go back to when a newer analysis fails."""
        self._first_layout = threading.Event()
        self._starting_layout = False
        self._recounting = False
        """Whether the analysis job that runs is a re-count at new dims (which a newer one may replace)."""
        self.outer_views: list[View] = []
        """The views a body was opened from, innermost last (Back returns to the last)."""
        """A ready model re-costed at new dims: its refreshed view is announced as ready again."""
        self._analysis_progress: Progress | None = None
        """The analysis's last progress: shown again when a layout ends while the analysis still runs."""
        self.analysis.progress_changed.connect(self._analysis_progressed)
        self.layout.progress_changed.connect(self.progress)
        self.layout.running_changed.connect(self._layout_running)
        self.analysis.partial_result.connect(self._on_partial)
        self.analysis.job_finished.connect(self._on_analysed)
        self.layout.job_finished.connect(self._on_laid_out)
        self.layout.job_failed.connect(self._first_layout_ended)
        self.layout.job_cancelled.connect(self._first_layout_ended)
        for r in (self.analysis, self.layout):
            r.job_failed.connect(self.failed)
            r.job_cancelled.connect(self.cancelled)
            r.running_changed.connect(lambda *_: self.running_changed.emit(self.running))
        self.analysis.job_failed.connect(self._analysis_stopped)
        self.analysis.job_cancelled.connect(self._analysis_stopped)

    def _analysis_progressed(self, p: Progress) -> None:
        self._analysis_progress = p
        self.progress.emit(p)

    def _layout_running(self, running: bool) -> None:
        """A layout ended (the preview's, say) while the analysis goes on: the progress shown is the analysis's
        again, not the finished layout's 100%."""
        if not running and self.analysis.running and self._analysis_progress is not None:
            self.progress.emit(self._analysis_progress)

    # ------------------------------------------------------------------ state
    @property
    def running(self) -> bool:
        """Whether any job of the session runs."""
        return self.analysis.running or self.layout.running

    @property
    def analysing(self) -> bool:
        """Whether the analysis job runs."""
        return self.analysis.running

    # ---------------------------------------------------------------- actions
    def open(self, path: Path, dims: dict[str, int] | None = None) -> None:
        """Analyse ``path`` at ``dims`` (values for its inputs' symbolic dims; by default the ones last given for
        this model, looked up in the worker: that reads the file); the current model stays until the new one
        is ready."""
        path = Path(path)
        given = None if dims is None else dict(dims)
        parser = self.parser
        if self._layout_gm is not self.graph_model:
            self.layout.cancel()  # a layout of an unfinished model; relayouts of the ready one may finish
        self._first_layout.set()
        self._early = None
        self._pending = None
        self._undo.clear()
        self._redo.clear()
        first_layout = self._first_layout = threading.Event()
        self._leave_bodies()
        self._recounting = False

        def job(token: CancelToken) -> Generator[JobEvent, None, GraphModel]:
            from splitscope.engine.split.preview import preview_job  # no onnx: a large file's structure first

            for ev in preview_job(path, parser, token):
                yield ev
                if isinstance(ev, Partial):
                    # The full load starts once the preview is laid out (or its layout ends otherwise): sharing the
                    # two cores and the interpreter with it made the first view of a million nodes 3-4 s later,
                    # and the load's memory came on top of the first view's.
                    _wait_giving_up_the_thread(first_layout)
            token.raise_if_cancelled()
            from splitscope.engine.split.analyze import analyze  # onnx loads in the worker
            from splitscope.profiler.dims import remembered_dims

            dims = remembered_dims(path) if given is None else given
            # Remembered dims the file no longer has (it was re-exported) are dropped, not refused.
            gen = analyze(path, parser=parser, dims=dims, cancel=token, responsive=True, known_dims_only=True)
            while True:
                try:
                    ev = next(gen)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
                yield ev
                if isinstance(ev, Partial):
                    # Let the first layout have the CPU (and the GIL) before refining.
                    _wait_giving_up_the_thread(first_layout, FIRST_LAYOUT_HEAD_START_S)

        self._start_analysis(job)

    def _start_analysis(self, job: Callable[[CancelToken], Generator[JobEvent, None, GraphModel]]) -> None:
        """Start ``job`` on the analysis runner, the window's collections waiting while it runs (it builds a model:
        :func:`~splitscope.engine.jobs.collections_wait`)."""

        def analysing(token: CancelToken) -> Generator[JobEvent, None, GraphModel]:
            with collections_wait():
                return (yield from job(token))

        self.analysis.start(analysing)

    def set_dims(self, dims: dict[str, int]) -> bool:
        """Re-count the model on screen at ``dims`` in a worker (shapes, FLOPs, bytes, partitions; the parser is not
        asked again). The worker makes a new model and the window shows it when it is ready, as when a model is
        opened: the model on screen is never changed under it. A re-count still running is replaced; while another
        model is being opened nothing starts (False)."""
        gm = self.graph_model
        if gm is None or (self.analysis.running and not self._recounting):
            return False

        def job(token: CancelToken) -> Generator[JobEvent, None, GraphModel]:
            from splitscope.engine.split.analyze import apply_dims

            return (yield from apply_dims(gm, dims, token, responsive=True))

        self._leave_bodies()
        self._recounting = True
        self._start_analysis(job)
        return True

    def apply_build(self, doc: dict[str, Any]) -> bool:
        """Show the model on screen again with what a verifying build found (:mod:`splitscope.engine.runtime.verify`):
        a new model made in a worker, the nodes the builder rejects marked, its partitions counted again."""
        gm = self.graph_model
        if gm is None or (self.analysis.running and not self._recounting):
            return False

        def job(token: CancelToken) -> Generator[JobEvent, None, GraphModel]:
            from splitscope.engine.runtime.verify import apply_report
            from splitscope.engine.split.analyze import apply_dims

            new = yield from apply_dims(gm, dict(gm.dims), token, responsive=True)
            apply_report(new, doc)
            return new

        self._leave_bodies()
        self._recounting = True
        self._start_analysis(job)
        return True

    def open_body(self, node: int, body: str | None = None) -> None:
        """Show the body ``body`` (default: the first) of node ``node`` of the graph on screen, laid out in a worker;
        :meth:`close_body` goes back."""
        view = self.view
        if view is None or not 0 <= node < len(view.gm.nodes) or not view.gm.nodes[node].subgraphs:
            return
        owner = view.gm.nodes[node]
        body = body if body is not None and body in owner.subgraphs else next(iter(owner.subgraphs))
        crumbs = (*view.crumbs, f"{owner.op_type} '{owner.label}' › {body}")
        viewport, fold = self.viewport, self.fold_constants
        self._undo.clear()
        self._redo.clear()

        def job(token: CancelToken) -> Generator[JobEvent, None, View]:
            from splitscope.engine.view.body import body_model

            sub = body_model(view.gm, owner, body)
            new = yield from prepare_view(sub, cancel=token, viewport=viewport, fold=fold)
            new.crumbs, new.owner = crumbs, (node, body)
            new.stats = panel_stats(sub)  # the panels speak of the graph on screen
            return new

        self._start_layout(view.gm, job)

    def switch_body(self, body: str) -> None:
        """Show another body of the node whose body is on screen (``else_branch`` beside ``then_branch``)."""
        view = self.view
        if not self.outer_views or view is None or view.owner is None or self.layout.running:
            return
        self.view = self.outer_views.pop()
        self.open_body(view.owner[0], body)

    def close_body(self) -> None:
        """Back to the graph the body on screen was opened from."""
        if not self.outer_views or self.layout.running:
            return
        self.view = self.outer_views.pop()
        self._undo.clear()
        self._redo.clear()
        self.view_changed.emit(self.view, False)
        self.body_changed.emit(list(self.view.crumbs))

    def _leave_bodies(self) -> None:
        """Back to the main graph from any depth of bodies (a new model, new dims, refolding, a refinement)."""
        if self.outer_views:
            self.view = self.outer_views[0]
            self.outer_views.clear()
            self.view_changed.emit(self.view, False)
            self.body_changed.emit([])

    def cancel(self) -> None:
        """Cancel whatever runs."""
        self._first_layout.set()
        self.analysis.cancel()
        self.layout.cancel()

    def undo(self) -> None:
        """Go back to the expansion before the last view change (expand, collapse, search)."""
        if self.view is not None and self._undo:
            self._redo.append(frozenset(self.view.layout.expanded))
            self.relayout(set(self._undo.pop()), record=False)

    def redo(self) -> None:
        """Redo the view change undone last."""
        if self.view is not None and self._redo:
            self._undo.append(frozenset(self.view.layout.expanded))
            self.relayout(set(self._redo.pop()), record=False)

    def relayout(self, expanded: set[int], focus_group: int = -1, focus_node: int = -1, record: bool = True) -> None:
        """Lay the current model out again with ``expanded`` groups open.

        If the model's analysis has finished but its refinement has not landed yet (the user expanded a
        group meanwhile), this relayout does the refinement too, so it is never lost.
        """
        view = self.view
        if view is None:
            return
        if record:  # a new view change: it can be undone, and what was undone cannot be redone any more
            self._undo.append(frozenset(view.layout.expanded))
            self._redo.clear()
        self.focus = (focus_group, focus_node)
        gm = view.gm
        refine = gm is self._final and gm is not self.graph_model
        if refine:
            self._pending = None

        def job(token: CancelToken) -> Generator[JobEvent, None, View]:
            if refine:
                view.hier.refresh_counts(gm)
                view.ctx.refresh_boundaries()
            new = yield from relayout(view, expanded, token)
            if refine:
                new.stats = panel_stats(gm)
            return new

        self._start_layout(gm, job)

    def set_folding(self, fold: bool) -> None:
        """Fold constant-only nodes into their consumers, or show every node; the current model is laid out
        again (its figures stay)."""
        self.fold_constants = fold
        self._leave_bodies()
        self._undo.clear()  # the group tree changes: earlier expansions name other groups
        self._redo.clear()
        view = self.view
        if view is None:
            return
        viewport = self.viewport
        self._start_layout(view.gm, lambda token: prepare_view(view.gm, cancel=token, viewport=viewport, fold=fold))

    def toggle_group(self, gid: int) -> None:
        """Expand a collapsed group or collapse an expanded one."""
        if self.view is None:
            return
        expanded = set(self.view.layout.expanded)
        if gid in expanded:
            expanded.discard(gid)
        else:
            expanded.add(gid)
        self.relayout(expanded, focus_group=gid)

    def expand_all(self) -> None:
        """Expand every group."""
        if self.view is not None:
            self.relayout({g.id for g in self.view.hier.groups if g.parent != -1})

    def collapse_all(self) -> None:
        """Collapse to the top level."""
        if self.view is not None:
            self.relayout({0})

    # ------------------------------------------------------------ job results
    def _start_layout(self, gm: GraphModel, factory: Any) -> None:
        """Start ``factory`` on the layout runner, the window's collections waiting while it runs (a view and its
        figures are built from the model's columns)."""
        self._layout_gm = gm
        self._starting_layout = True  # the layout running before is cancelled in here

        def laying_out(token: CancelToken) -> Generator[JobEvent, None, View]:
            with collections_wait():
                return (yield from factory(token))

        try:
            self.layout.start(laying_out)
        finally:
            self._starting_layout = False

    def _on_partial(self, ev: Partial) -> None:
        if isinstance(ev.value, GraphModel):
            early, gm = self._early, ev.value
            self._early = gm
            if early is not None and early.preview and not gm.preview:
                return  # the preview's view stays until the full model is laid out
            viewport = self.viewport
            self._start_layout(
                gm, lambda token: prepare_view(gm, cancel=token, viewport=viewport, fold=self.fold_constants)
            )

    def _on_analysed(self, gm: GraphModel) -> None:
        self._recounting = False
        self._final = gm
        self.analysed.emit(gm)
        self._refine(gm)

    def _analysis_stopped(self, *_: object) -> None:
        """The analysis failed or was cancelled: forget its model, and show the ready one again."""
        self._recounting = False
        if self.outer_views and self.outer_views[0].gm is not self.graph_model:
            self.outer_views.clear()  # a body of the model that failed: its way back leads nowhere
            self.body_changed.emit([])
        early, self._early, self._pending = self._early, None, None
        self._first_layout.set()
        if early is not None and self._layout_gm is early:
            self.layout.cancel()
        if self.view is not None and self.view.gm is not self.graph_model and self._ready_view is not None:
            self.view = self._ready_view
            self.view_changed.emit(self._ready_view, False)

    def _refine(self, gm: GraphModel) -> None:
        self._leave_bodies()  # a body opened on the first view: the refined model is shown from its top
        view = self.view
        if view is not None and view.gm is gm:
            # Same model, refined: recount groups and redraw statuses and boundaries in place.
            expanded = set(view.layout.expanded)

            def refresh(token: CancelToken) -> Generator[JobEvent, None, View]:
                view.hier.refresh_counts(gm)
                view.ctx.refresh_boundaries()
                new = yield from relayout(view, expanded, token)
                new.stats = panel_stats(gm)
                return new

            self._start_layout(gm, refresh)
        elif self.layout.running and self._layout_gm is gm:
            self._pending = gm  # its first layout still runs; refine when it lands
        else:
            viewport, fold = self.viewport, self.fold_constants
            # After a preview of the same file, the groups the user opened on it stay open.
            shown = view if view is not None and view.gm.preview and view.gm.path == gm.path else None

            def first(token: CancelToken) -> Generator[JobEvent, None, View]:
                if shown is not None:
                    new = yield from prepare_view(gm, cancel=token, viewport=viewport, fold=fold, like=shown)
                else:
                    new = yield from prepare_view(gm, cancel=token, viewport=viewport, fold=fold)
                new.stats = panel_stats(gm)
                return new

            self._start_layout(gm, first)

    def _first_layout_ended(self, *_: object) -> None:
        """The preview's layout failed or was cancelled: the analysis waiting for it goes on. (Another layout's
        end says nothing: starting the preview's own cancels the one before it.)"""
        if not self._starting_layout and self._layout_gm is not None and self._layout_gm.preview:
            self._first_layout.set()

    def _set_ready_view(self, view: View) -> None:
        self._ready_view = view

    def _on_laid_out(self, view: View) -> None:
        self._first_layout.set()
        if self.view is not None and len(view.crumbs) > len(self.view.crumbs):  # a body was opened
            self.outer_views.append(self.view)
            self.view = view
            self.view_changed.emit(view, False)
            self.body_changed.emit(list(view.crumbs))
            return
        keep = self.view is not None and (
            self.view.gm is view.gm or (self.view.gm.preview and self.view.gm.path == view.gm.path)
        )
        if view.stats is None and keep and self.view is not None:
            view.stats = self.view.stats  # expand/collapse: same figures
        old, self.view = self.view, view
        if old is not None and old.gm is not view.gm and self.outer_views:  # another model's view
            self.outer_views.clear()  # a body of that model opened meanwhile: its way back leads nowhere now
            self.body_changed.emit([])
        del old  # freed here, in a few milliseconds: a 200k-node model and its view are a few hundred objects
        if view.gm is self.graph_model:
            self._set_ready_view(view)
        self.view_changed.emit(view, keep)
        if self._pending is view.gm and view.stats is None:
            self._pending = None
            self._refine(view.gm)  # the analysis finished while the first layout ran
            return
        if view.stats is not None and view.gm is self._final and view.gm is not self.graph_model:
            if self.graph_model is not None:  # freed once the panels have let go of it too: then its heap goes back
                give_back_when_freed(self.graph_model.nodes)
            self.graph_model = view.gm
            self._set_ready_view(view)
            self.model_ready.emit(view.gm, view)
