"""Tools › Targets… and Tools › Sweep…, and the Sweep panel, wired to the controller's queue."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDialog, QMainWindow
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.sweep.results import SweepCell, SweepDoc, cell_from_params
from splitscope.gui.remote.sweep import SweepDialog, SweepPanel
from splitscope.gui.shell.lazy import LazyPanel

if TYPE_CHECKING:
    from splitscope.gui.shell.host import Shell


class RemoteUi(QObject):
    """Targets (SSH hosts jobs run on) and sweeps (a grid of profiles on Ray or in sequence)."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = c = shell.controller
        self._panel = LazyPanel(shell, "Sweep", SweepPanel, self._wire)
        self.dock = self._panel.dock
        self.pending: int | None = None
        self.targets_dialog: Any = None
        self._model: Any = None
        self._read: object = None
        c.sweep_ready.connect(self._finished)
        c.queue.sample.connect(self._sample)
        c.queue.failed.connect(self._failed)
        c.queue.changed.connect(self._changed)
        c.model_ready.connect(self._model_ready)

    @property
    def panel(self) -> SweepPanel:
        return self._panel.get()

    def _wire(self, panel: SweepPanel) -> None:
        if self.controller.results.sweep is not None:
            panel.set_result(self.controller.results.sweep)

    def add_actions(self, tools: Any, _view: Any = None) -> None:
        self.shell.add_action(tools, "&Targets…", self.show_targets).setToolTip(
            "SSH hosts with Splitscope installed that profile, calibrate and sweep jobs can run on"
        )
        self.shell.add_action(tools, "S&weep…", self.ask).setToolTip(
            "Profile the open model over a grid of dims, backends, precisions and targets, on Ray or in sequence"
        )

    def show_targets(self) -> Any:
        from splitscope.gui.remote.targets import TargetsDialog

        if self.targets_dialog is None:
            self.targets_dialog = TargetsDialog(self.controller, self.shell.window())
        self.targets_dialog.show()
        self.targets_dialog.raise_()
        return self.targets_dialog

    def ask(self) -> int | None:
        gm = self.controller.graph_model
        if gm is None or gm.path is None:
            self.shell.show_message("Open a model first.", 5000)
            return None
        dialog = SweepDialog(gm, self.shell.window())
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        try:
            cells = dialog.cells()
        except SplitscopeError as e:
            self.shell.show_message(e.message, 8000)
            return None
        if not cells:
            self.shell.show_message("The sweep has no cells: choose a backend, a precision and a target.", 8000)
            return None
        return self.run(cells, dialog.ray_address(), dialog.search_count())

    def run(self, cells: list[Any], ray: str | bool | None = None, search: int = 0) -> int:
        self.pending = self.controller.submit_sweep(cells, ray, search)
        self.panel.start(list(cells), ranking=bool(search))
        self.dock.show()
        self.dock.raise_()
        win = self.shell.window()
        if isinstance(win, QMainWindow) and self.dock.height() < 0.4 * win.height():  # a table and three plots
            win.resizeDocks([self.dock], [int(0.42 * win.height())], Qt.Orientation.Vertical)
        return self.pending

    def _sample(self, jid: int, s: Any) -> None:
        if jid == self.pending and s.series == "sweep":
            self.panel.add_cell(SweepCell.from_json(s.values))
        elif jid == self.pending and s.series == "sweep-plan":  # a search ranked its nodes: its cells
            self.panel.start([cell_from_params(p) for p in s.values["cells"]])

    def _finished(self, jid: int, doc: SweepDoc) -> None:
        if jid == self.pending:
            self.pending = None  # ended: the panel follows the open model again
            self.panel.set_result(doc)

    def _failed(self, jid: int, message: str, _details: str) -> None:
        if jid == self.pending:
            self.pending = None
            self.panel.summary.setText(f"The sweep stopped: {message}")

    def _changed(self, jid: int) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if jid == self.pending and rec is not None and rec.state == "cancelled":
            self.pending = None
            self.panel.summary.setText("Cancelled: the cells that finished are kept and reused by the next run.")

    def _model_ready(self, gm: Any, _view: Any) -> None:
        """Another model: its last saved sweep comes back with it (read in a worker: saved results can be
        megabytes; the panel shows it when built)."""
        results = self.controller.results
        self._model, self._read = gm, None
        if results.sweep is None and gm.path is not None:
            from splitscope.profiler.profiling import read_saved

            self._read = read = object()  # the read holds no model: one replaced meanwhile is freed when it ends
            read_saved(gm.path, "sweep", partial(self._saved, read, results))
            return
        self._show_sweep(gm, results)

    def _saved(self, read: object, results: Any, saved: list[dict[str, Any]]) -> None:
        gm = self._model
        if read is not self._read or results is not self.controller.results:
            return  # another model was opened while its sweep was read
        self.controller.keep_saved_sweep(results, saved)  # a later release's is said; the panel offers a new sweep
        self._show_sweep(gm, results)

    def _show_sweep(self, gm: Any, results: Any) -> None:
        if self._panel.built and self.pending is None:
            if results.sweep is not None:
                self.panel.set_result(results.sweep)
            else:
                self.panel.clear(f"No sweep of {gm.path.name if gm.path else 'this model'} yet.")
