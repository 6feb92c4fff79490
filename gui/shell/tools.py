"""The window's tools: Optimize Export (an ONNX optimizer on a copy, checked, the split before and after)
and Open in Netron (a second opinion, served on 127.0.0.1)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSettings, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox
from splitscope.engine.text import format_bytes

if TYPE_CHECKING:
    from splitscope.engine.rewrite.optimize import OptimizeResult
    from splitscope.gui.shell.host import Shell


def result_html(res: OptimizeResult) -> str:
    """The before/after table of an optimize run."""
    b, a = res.before, res.after
    rows = [
        ("Nodes", f"{b.nodes:,}", f"{a.nodes:,}"),
        ("Plugin nodes", str(b.plugin), str(a.plugin)),
        ("Engine partitions", str(b.partitions), str(a.partitions)),
        ("Boundary bytes / inference", format_bytes(b.boundary_bytes), format_bytes(a.boundary_bytes)),
    ]
    cells = "".join(f"<tr><td>{k}</td><td align=right>{x}</td><td align=right><b>{y}</b></td></tr>" for k, x, y in rows)
    check = (
        f"{res.outputs} output{'s' if res.outputs != 1 else ''} compared with ONNX Runtime on seeded inputs: "
        f"max abs difference {res.max_abs_diff:.3g}"
        if res.compared
        else "Outputs not compared."
    )
    notes = "".join(f"<br><i>{html.escape(n)}</i>" for n in res.notes)
    return (
        f"<p><b>{html.escape(res.source.name)}</b> optimized by {html.escape(res.optimizer)} in "
        f"{res.optimizer_seconds:.2f} s, written to {html.escape(str(res.output))}.</p>"
        f"<table cellspacing=6><tr><th></th><th>before</th><th>after</th></tr>{cells}</table>"
        f"<p>{check}{notes}</p><p>The original was not changed.</p>"
    )


class OptimizeTool(QObject):
    """Runs :func:`splitscope.engine.rewrite.optimize.optimize_export` for the window, as a job of the queue (the
    Jobs panel shows its progress and Cancel; Esc cancels it with the rest)."""

    finished = Signal(object)
    """The :class:`OptimizeResult`."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.pending: int | None = None
        self.box: QMessageBox | None = None
        c = shell.controller
        c.optimize_ready.connect(self._ready)
        c.queue.failed.connect(self._failed)

    @property
    def running(self) -> bool:
        """Whether an Optimize Export is queued or running."""
        rec = self.shell.controller.queue.jobs.get(self.pending) if self.pending is not None else None
        return rec is not None and rec.state in ("queued", "running")

    def cancel(self) -> None:
        if self.pending is not None:
            self.shell.controller.queue.cancel(self.pending)

    def choose_and_run(self) -> None:
        """Ask where the optimized copy goes, then run."""
        gm = self.shell.controller.graph_model
        if gm is None or gm.path is None:
            return
        start = str(gm.path.with_name(f"{gm.path.stem}.optimized.onnx"))
        path, _ = QFileDialog.getSaveFileName(
            self.shell.window(), "Save the optimized model as", start, "ONNX models (*.onnx)"
        )
        if path:
            self.run(gm.path, Path(path))

    def run(self, source: Path, output: Path) -> int:
        """Optimize ``source`` into ``output``: a job of the queue; its id."""
        self.pending = self.shell.controller.submit_optimize(source, output)
        self.shell.show_message(f"Optimizing {source.name}… (the Jobs panel shows its progress and Cancel)")
        return self.pending

    def _failed(self, jid: int, message: str, details: str) -> None:
        if jid == self.pending:
            self.pending = None
            self.shell.show_failure(message, details)

    def _ready(self, jid: int, res: OptimizeResult) -> None:
        if jid != self.pending:
            return
        self.pending = None
        QSettings().setValue("main/last_dir", str(res.output.parent))
        box = QMessageBox(QMessageBox.Icon.Information, "Optimize export", result_html(res), parent=self.shell.window())
        open_it = box.addButton("Open the optimized model", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Close)
        open_it.clicked.connect(lambda: self.shell.open_model(res.output))
        box.open()
        self.box = box
        self.finished.emit(res)


class NetronTool(QObject):
    """Serves a model with the ``netron`` package on 127.0.0.1 and opens it in the browser; when no
    browser starts, shows the address with a button that copies it."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.url: QUrl | None = None
        self.box: QMessageBox | None = None

    def open(self, path: Path) -> None:
        """Serve ``path`` and open it."""
        try:
            import netron
        except ImportError:
            self.shell.show_failure(
                "Netron is not installed: pip install 'splitscope[netron]' (an optional "
                "second opinion; everything else works without it)."
            )
            return
        try:
            host, port = netron.serve(str(path), address=("127.0.0.1", 0), browse=False)
        except Exception as e:  # noqa: BLE001 - any netron failure becomes a message
            self.shell.show_failure(f"Netron could not serve the model: {e}.")
            return
        self.url = QUrl(f"http://{host}:{port}")
        # A started browser can still refuse to show it (Chromium will not run as root): the address is always
        # shown, with a button that copies it.
        self._show_url(self.url.toString(), QDesktopServices.openUrl(self.url))

    def _show_url(self, url: str, started: bool = False) -> None:
        said = (
            "A browser was asked to open it; if no page appeared (a browser that refuses to run as root, say), "
            if started
            else "No web browser could be started. "
        )
        box = QMessageBox(
            QMessageBox.Icon.Information,
            "Open in Netron",
            f"Netron is serving the model at\n{url}\n{said}open that address in a browser on this machine.",
            parent=self.shell.window(),
        )
        copy = box.addButton("Copy address", QMessageBox.ButtonRole.ActionRole)
        box.addButton(QMessageBox.StandardButton.Close)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(url))
        box.open()
        self.box = box
        self.shell.show_message(f"Netron is serving the model at {url}", 15000)
