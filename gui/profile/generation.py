"""Tools › Profile Generation…: a decoder's prefill then decode steps feeding its key/value cache back, in a job
(progress, Cancel); the Generation panel plots each step's time as the cache grows, live, and says the time to
first token, the time per output token, tokens/s, the cache's bytes a token and the decode verdict."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)
from splitscope.gui.shell.charts import pg
from splitscope.gui.shell.lazy import LazyPanel
from splitscope.gui.shell.palette import COLOURS

if TYPE_CHECKING:
    from splitscope.engine.runtime.generate import GenerationDoc
    from splitscope.gui.shell.host import Shell


class GenerationPanel(QWidget):
    """Step time against the cache's length, and the figures."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.summary = QLabel("Tools › Profile Generation… times a decoder with a key/value cache token by token.")
        self.summary.setObjectName("generation_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.summary)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("generation_plot")
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.setLabel("left", "ms per decode step")
        self.plot.setLabel("bottom", "tokens in the cache")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setMinimumHeight(40)
        self.curve = self.plot.plot(
            [], [], pen=pg.mkPen(COLOURS["chart"]["primary"], width=2), symbol="o", symbolSize=4
        )
        self.median = pg.InfiniteLine(angle=0, pen=pg.mkPen(COLOURS["chart"]["alert"], style=Qt.PenStyle.DashLine))
        self.median.hide()
        self.plot.addItem(self.median)
        lay.addWidget(self.plot, 1)
        self.setMinimumHeight(120)
        self.xs: list[float] = []
        self.ys: list[float] = []

    def start(self) -> None:
        self.xs, self.ys = [], []
        self.curve.setData([], [])
        self.median.hide()
        self.summary.setText("Prefill, then decode steps…")

    def add_step(self, tokens: float, ms: float) -> None:
        self.xs.append(tokens)
        self.ys.append(ms)
        self.curve.setData(np.asarray(self.xs), np.asarray(self.ys))

    def set_result(self, doc: GenerationDoc) -> None:
        g = doc.generation
        start = g.prompt_len + 1
        self.xs = [float(start + k) for k in range(len(g.step_ms))]
        self.ys = list(g.step_ms)
        self.curve.setData(np.asarray(self.xs), np.asarray(self.ys))
        self.median.setPos(g.tpot_ms)
        self.median.show()
        spread = ""
        if g.tpot_range_ms and g.ttft_range_ms:  # files from before the warm generations have none
            (t0, t1), (p0, p1) = g.ttft_range_ms, g.tpot_range_ms
            spread = (
                f" Medians of {g.generations} timed generations after an untimed one: prefill {t0:.3f}-{t1:.3f} "
                f"ms, each generation's step {p0:.3f}-{p1:.3f} ms."
            )
        self.summary.setText(
            f"<b>{html.escape(doc.backend)}</b>: time to first token <b>{g.ttft_ms:.3f} ms</b> "
            f"(prefill of {g.prompt_len}); per output token <b>{g.tpot_ms:.3f} ms</b> (median, dashed), "
            f"{g.tokens_per_s:.1f} tokens/s; KV cache {g.kv_bytes_per_token:,} bytes a token, "
            f"{g.kv_bytes_final / 1e6:.2f} MB after {g.steps} steps.{spread}"
            f"<br><b>{html.escape(g.verdict)}</b>: {html.escape(g.why)}. Fix: {html.escape(g.fix)}."
        )


class GenerationDialog(QDialog):
    """The prompt's length, the steps and the backend (remembered)."""

    def __init__(self, parent: QWidget | None, backends: list[str]) -> None:
        super().__init__(parent)
        self.setWindowTitle("Profile Generation")
        s = QSettings()
        form = QFormLayout(self)
        self.prompt = QSpinBox()
        self.prompt.setRange(1, 1 << 17)
        self.prompt.setValue(int(s.value("generate/prompt", 128)))
        self.steps = QSpinBox()
        self.steps.setRange(1, 1 << 14)
        self.steps.setValue(int(s.value("generate/steps", 32)))
        self.backend = QComboBox()
        self.backend.addItems(backends)
        form.addRow("Prompt length (tokens)", self.prompt)
        form.addRow("Decode steps", self.steps)
        form.addRow("Backend", self.backend)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> tuple[str, int, int]:
        s = QSettings()
        s.setValue("generate/prompt", self.prompt.value())
        s.setValue("generate/steps", self.steps.value())
        return self.backend.currentText(), self.prompt.value(), self.steps.value()


class GenerationUi(QObject):
    """Tools › Profile Generation… and its panel."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = c = shell.controller
        self._panel = LazyPanel(shell, "Generation", GenerationPanel, self._wire)
        self.dock = self._panel.dock
        self.pending: int | None = None
        c.generation_ready.connect(self._finished)
        c.queue.sample.connect(self._sample)
        c.queue.changed.connect(self._changed)
        c.model_ready.connect(self._model_ready)

    @property
    def panel(self) -> GenerationPanel:
        return self._panel.get()

    def _wire(self, panel: GenerationPanel) -> None:
        if self.controller.results.generation is not None:
            panel.set_result(self.controller.results.generation)

    def add_actions(self, tools: Any) -> None:
        self.shell.add_action(tools, "Profile &Generation…", self.ask).setToolTip(
            "A decoder with a key/value cache: a prefill, then decode steps feeding the cache back, timed step by step"
        )

    def ask(self) -> int | None:
        st = self.shell.dep_status.get("ort-cuda")
        backends = ["ort-cpu"] + (["ort-cuda"] if st is not None and st.ready else [])
        dialog = GenerationDialog(self.shell.window(), backends)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return self.run(*dialog.values())

    def run(self, backend: str, prompt_len: int, steps: int) -> int | None:
        self.pending = self.controller.submit_generation(backend, prompt_len, steps)
        if self.pending is None:
            self.shell.show_message("Open a model first.", 5000)
            return None
        self.dock.show()
        self.dock.raise_()
        return self.pending

    def _sample(self, jid: int, s: Any) -> None:
        if jid == self.pending and s.series == "step":
            self.panel.add_step(s.values["cache_tokens"], s.values["ms"])

    def _changed(self, jid: int) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if rec is None or jid != self.pending:
            return
        if rec.state == "running" and not rec.meta.get("started"):
            rec.meta["started"] = True
            self.panel.start()
        elif rec.state in ("failed", "cancelled"):
            self.pending = None
            self.panel.summary.setText("Cancelled." if rec.state == "cancelled" else "The generation profile failed.")

    def _model_ready(self, *_: Any) -> None:
        """Another model: its own last generation profile (kept for its report), or nothing."""
        self.pending = None
        doc = self.controller.results.generation
        if self._panel.built:
            if doc is not None:
                self.panel.set_result(doc)
            else:
                self.panel.start()
                self.panel.summary.setText("No generation profile of this model yet.")

    def _finished(self, jid: int, doc: GenerationDoc) -> None:
        self.pending = None
        self.panel.set_result(doc)
        self.shell.show_message(f"Generation: {doc.generation.tpot_ms:.3f} ms a token", 10000)
