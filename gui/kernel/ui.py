"""The kernel workbench in the window: Tools › Kernel Workbench… (and the canvas's right-click) on the selected
nodes or the first plugin node; the panel's Run, Cancel, Open .cu…, Edit in My Editor (the file is watched and the
kernel runs again when it is saved) and Export Plugin Project…. The controller runs each job in a child process
on the GPU lane and keeps the results with the model."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QFileSystemWatcher, QObject, QSettings, QTimer, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog
from splitscope.engine.view.layout import View
from splitscope.engine.view.rollup import values_up
from splitscope.gui.canvas.render import Heat
from splitscope.gui.kernel.panel import KernelPanel
from splitscope.gui.shell.lazy import LazyPanel
from splitscope.profiler.queue import JobKind, JobState

if TYPE_CHECKING:
    from splitscope.engine.kernel.results import KernelDoc
    from splitscope.gui.shell.host import Shell


class KernelUi(QObject):
    """Tools › Kernel Workbench… and its panel."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = c = shell.controller
        self._panel = LazyPanel(shell, "Kernel Workbench", KernelPanel, self._wire)  # built when first needed
        self.dock = self._panel.dock
        self.nodes: list[str] = []
        self.pending: int | None = None
        self._keep_source = False
        self._scratch: list[Path] = []
        self.file: Path | None = None
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(self._file_changed)
        self._debounce = QTimer(self, singleShot=True, interval=300)
        self._debounce.timeout.connect(self._reload)
        c.kernel_ready.connect(self._finished)
        c.queue.sample.connect(self._sample)
        c.queue.changed.connect(self._changed)
        c.model_ready.connect(self._model_ready)
        shell.colours.add("plugin", "After the generated &plugins (the parser's answer)", self.after_heat)

    @property
    def panel(self) -> KernelPanel:
        """The Kernel Workbench panel (built at the first use)."""
        return self._panel.get()

    def _wire(self, p: KernelPanel) -> None:
        p.run.clicked.connect(self.run)
        p.cancel.clicked.connect(self.cancel)
        p.load.clicked.connect(self.ask_load)
        p.edit_outside.clicked.connect(self.edit_outside)
        p.export.clicked.connect(self.ask_export)
        kernels = self.controller.results.kernels
        if kernels:
            p.set_result(kernels[-1])

    def add_actions(self, tools: Any, _view: Any = None) -> None:
        self.shell.add_action(tools, "&Kernel Workbench…", self.start, "Ctrl+K").setToolTip(
            "Cut the selected nodes (or the first plugin node) out at the shapes in force, capture their real "
            "inputs, write a plugin project, and check and time a CUDA kernel for them on the GPU against the "
            "runtime default"
        )

    # ------------------------------------------------------------ start and run
    def chosen(self) -> list[str]:
        """The names (labels) of the search matches, else the selected node; none: the first plugin node."""
        gm, canvas = self.controller.graph_model, self.shell.canvas
        if gm is None:
            return []
        idx = set(canvas.highlight_nodes) or ({canvas.selected_node} if canvas.selected_node >= 0 else set())
        return [gm.nodes[i].label for i in sorted(idx) if 0 <= i < len(gm.nodes)]

    def start(self, nodes: list[str] | None = None) -> int | None:
        """A first run on ``nodes`` (the chosen ones by default): a starting kernel is generated, the parser
        asked with the plugin registered, and the kernel run where there is a GPU."""
        gm = self.controller.graph_model
        if gm is None or gm.path is None:
            self.shell.show_message("Open a model first.", 5000)
            return None
        self.nodes = list(nodes) if nodes is not None else self.chosen()
        self._stop_watching()
        self.dock.show()
        self.dock.raise_()
        return self._submit({"nodes": self.nodes, "ask_parser": True})

    def run(self) -> int | None:
        """Run the source in the editor again (the parser's answer does not change with it)."""
        if self.panel.doc is None:
            return self.start()
        return self._submit(
            {"nodes": list(self.panel.doc.nodes), "source_text": self.panel.editor.toPlainText(), "ask_parser": False},
            keep=True,
        )

    def _submit(self, args: dict[str, Any], keep: bool = False) -> int | None:
        q = self.controller.queue
        rec = q.jobs.get(self.pending) if self.pending is not None else None
        if rec is not None and rec.state in ("queued", "running") and not rec.meta.get("export"):
            q.cancel(rec.id)  # the newest source wins (an export in flight is left to finish)
        self._keep_source = keep
        jid = self.controller.submit_kernel(args)
        if jid is None:
            self.shell.show_message("Open a model (not an engine's own graph) first.", 5000)
            return None
        q.jobs[jid].meta["export"] = bool(args.get("out"))
        if not args.get("out"):
            self.pending = jid  # the run the panel shows
        return jid

    def cancel(self) -> None:
        if self.pending is not None:
            self.controller.queue.cancel(self.pending)
        self.panel.stopped()

    # ------------------------------------------------------------ files
    def ask_load(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self.shell.window(),
            "Open a CUDA kernel",
            str(QSettings().value("kernel/dir", str(Path.home()))),
            "CUDA C++ (*.cu *.cuh);;All files (*)",
        )
        if name:
            QSettings().setValue("kernel/dir", str(Path(name).parent))
            self.watch(Path(name))
            self._reload()

    def edit_outside(self) -> None:
        """Write the source to a file (the one opened, else a new one), open it in the user's editor and watch it."""
        if self.file is None:
            folder = Path(tempfile.mkdtemp(prefix="splitscope-kernel-"))
            self._scratch.append(folder)  # removed when the window closes (remove_scratch)
            self.file = folder / "kernel.cu"
        self.file.write_text(self.panel.editor.toPlainText(), encoding="utf-8")
        self.watch(self.file)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.file)))
        self.shell.show_message(f"Editing {self.file}: saving it runs the kernel again.", 8000)

    def remove_scratch(self) -> None:
        """Remove the folders written for Edit in My Editor (the window closes)."""
        import shutil

        for folder in self._scratch:
            shutil.rmtree(folder, ignore_errors=True)
        self._scratch.clear()

    def watch(self, path: Path) -> None:
        self._stop_watching()
        self.file = path
        self.watcher.addPath(str(path))

    def _stop_watching(self) -> None:
        if self.watcher.files():
            self.watcher.removePaths(self.watcher.files())
        self.file = None

    def _file_changed(self, path: str) -> None:
        if path not in self.watcher.files() and Path(path).exists():
            self.watcher.addPath(path)  # editors that save by replacing the file
        self._debounce.start()

    def _reload(self) -> None:
        if self.file is None or not self.file.exists():
            return
        text = self.file.read_text("utf-8", errors="replace")
        if text != self.panel.editor.toPlainText():
            self.panel.editor.setPlainText(text)
            if self.panel.rerun.isChecked() and self.panel.doc is not None:
                self.run()

    def ask_export(self) -> int | None:
        if self.panel.doc is None:
            self.shell.show_message("Run the workbench on a node first.", 5000)
            return None
        folder = QFileDialog.getExistingDirectory(
            self.shell.window(),
            "Export the plugin project into",
            str(QSettings().value("kernel/dir", str(Path.home()))),
        )
        if not folder:
            return None
        return self.export(Path(folder) / f"{self.panel.doc.op.lower()}_plugin")

    def export(self, folder: Path) -> int | None:
        """The plugin project, with the source in the editor, written whole into ``folder`` (or not at all)."""
        assert self.panel.doc is not None
        return self._submit(
            {
                "nodes": list(self.panel.doc.nodes),
                "source_text": self.panel.editor.toPlainText(),
                "out": str(folder),
                "ask_parser": True,
                "run_gpu": False,
            },
            keep=True,
        )

    # ------------------------------------------------------------ events
    def _is_mine(self, jid: int) -> bool:
        """The run the panel shows (an older run's samples or result never overwrite the current one)."""
        return jid == self.pending

    def _sample(self, jid: int, s: Any) -> None:
        if self._is_mine(jid) and s.series == "time":
            self.panel.add_time(s.x, s.values["kernel_ms"])

    def _changed(self, jid: int) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if rec is None or rec.kind != JobKind.KERNEL or not self._is_mine(jid):
            return
        if rec.state == JobState.RUNNING and not rec.meta.get("started"):
            rec.meta["started"] = True
            self.panel.start()
        elif rec.state in ("failed", "cancelled"):
            self.panel.stopped()
            if rec.state == JobState.CANCELLED:
                self.panel.verdict.setText("Cancelled.")

    def _finished(self, jid: int, doc: KernelDoc) -> None:
        if doc.folder and not self._is_mine(jid):  # an export: said, the panel keeps the run it shows
            self.shell.show_message(f"Wrote the plugin project to {doc.folder}", 10000)
            return
        if not self._is_mine(jid):
            return
        if doc.answer is not None and doc.answer.taken:
            self.controller.set_colour_mode("plugin")  # the canvas after; the status colouring is before
        self.panel.set_result(doc, keep_source=self._keep_source)
        if doc.folder:
            self.shell.show_message(f"Wrote the plugin project to {doc.folder}", 10000)
        elif doc.kernel is not None and doc.kernel.verdict:
            self.shell.show_message(doc.kernel.verdict, 10000)

    AFTER = (
        ("TensorRT takes it", "#0072B2"),
        ("taken with the generated plugin", "#009E73"),
        ("still custom", "#D55E00"),
    )

    def after_heat(self, view: View) -> Heat | None:
        """The split after the plugins the workbench generated, as the real parser answered: the nodes it maps to
        a generated plugin (green) against those still outside the engine (vermillion). Before is the status
        colouring."""
        gm = self.controller.graph_model
        answers = self.controller.results.plugin_answers()
        if gm is None or not answers or view.gm is not gm:
            return None
        nodes: dict[int, float] = {}
        for n in gm.nodes:
            answer = answers.get(n.label)
            if answer is not None and answer.taken:
                nodes[n.index] = 1.0
            else:
                nodes[n.index] = 2.0 if n.status.value == "plugin" else 0.0
        groups = {g: next(iter(v)) for g, v in values_up(view.hier, nodes).items() if len(v) == 1}
        return Heat(
            nodes,
            groups,
            "after the generated plugins (status colours: before)",
            palette=tuple(c for _, c in self.AFTER),
            items=self.AFTER,
        )

    def _model_ready(self, *_: Any) -> None:
        self._stop_watching()
        if not self._panel.built:
            return  # it shows the model's last run when it is built
        last = self.controller.results.kernels[-1] if self.controller.results.kernels else None
        if last is not None:
            self.panel.set_result(last)
        else:
            self.panel.doc = None
            self.panel.editor.clear()
            self.panel.verdict.clear()
            self.panel.numbers.clear()
