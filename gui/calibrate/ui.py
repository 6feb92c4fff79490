"""Calibration in the window: Tools › Calibrate… (data, method, precision, samples, the nodes to keep in
float: those selected or highlighted on the canvas), run on the GPU lane in a child process; the Calibration
panel shows the accuracy, each tensor's histogram with every method's threshold on it, and the canvas
colours the plan by precision."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from splitscope.engine.calib.results import CalibrationDoc
from splitscope.engine.model import GraphModel
from splitscope.engine.view.layout import View
from splitscope.engine.view.rollup import values_up
from splitscope.gui.canvas.render import Heat
from splitscope.gui.shell.charts import pg
from splitscope.gui.shell.layout_state import PLOT_MIN_HEIGHT
from splitscope.gui.shell.lazy import LazyPanel
from splitscope.gui.shell.palette import COLOURS
from splitscope.profiler.queue import JobKind, JobState

if TYPE_CHECKING:
    from splitscope.gui.shell.host import Shell

METHOD_COLOURS = dict(COLOURS["methods"])
PLAN_COLOURS = {k: COLOURS["precision"][k] for k in ("FP32", "FP16", "BF16", "FP8", "INT8")}
"""The engine explorer's precision colours, so a plan and the engine built from it read alike."""


def _first_input(gm: GraphModel) -> Any:
    """The model's first input as calibration data sees it (dims named as the analysis names them)."""
    from splitscope.engine.runtime.inputs import InputSpec

    if not gm.graph.inputs:
        return None
    t = gm.graph.tensors.get(gm.graph.inputs[0])
    if t is None or t.shape is None:
        return None
    np_types = {"FLOAT": np.float32, "FLOAT16": np.float16, "DOUBLE": np.float64, "UINT8": np.uint8}
    dims = tuple(d if isinstance(d, (int, str)) else "?" for d in t.shape)
    return InputSpec(t.name, np.dtype(np_types.get(t.dtype or "FLOAT", np.float32)), dims)


class CalibDialog(QDialog):
    """Tools › Calibrate…: data, recipe, method, precision, samples, labels, budget, dims, the nodes kept."""

    def __init__(self, parent: QWidget | None, gm: GraphModel, keep: list[str]) -> None:
        super().__init__(parent)
        self.setWindowTitle("Calibrate")
        self.setMinimumWidth(620)
        s = QSettings()
        form = QFormLayout(self)
        self.data = QLineEdit(str(s.value("calib/data", "random")))
        pick = QPushButton("Folder…")
        pick.clicked.connect(self._pick)
        row = QHBoxLayout()
        row.addWidget(self.data, 1)
        row.addWidget(pick)
        form.addRow("Samples from", row)
        from splitscope.engine.calib.pipeline import model_recipe
        from splitscope.gui.calibrate.recipe import RecipeBox, metric_box

        spec = _first_input(gm)
        meta = gm.metadata
        found = model_recipe(gm.path, meta, spec.dims if spec is not None else [])
        saved = s.value(f"calib/recipe/{gm.path.name if gm.path else ''}")
        recipe, source = (str(saved), "what you last used for this model") if saved else (found.text, found.source)
        self.recipe = RecipeBox(spec, dict(gm.dims), recipe, self, source)
        form.addRow(self.recipe)
        self.data.textChanged.connect(self.recipe.set_folder)
        self.recipe.set_folder(self.data.text())
        self.task_metric = metric_box()
        form.addRow("Task metric", self.task_metric)
        self.method = QComboBox()
        self.method.addItems(["entropy", "max", "percentile", "mse"])
        self.method.setCurrentText(str(s.value("calib/method", "entropy")))
        form.addRow("Method", self.method)
        self.precision = QComboBox()
        self.precision.addItems(["int8", "fp8", "fp16", "bf16"])
        self.precision.setToolTip(
            "INT8/FP8: Q/DQ from calibrated ranges. FP16/BF16: Casts around the nodes kept "
            "in FP32 (normalisations and reductions by default; with data, what overflows)."
        )
        self.precision.currentTextChanged.connect(lambda p: self.method.setEnabled(p in ("int8", "fp8")))
        form.addRow("Precision", self.precision)
        self.samples = QSpinBox()
        self.samples.setRange(1, 100_000)
        self.samples.setValue(int(s.value("calib/samples", 32)))
        form.addRow("Samples", self.samples)
        self.keep = QLineEdit(", ".join(keep))
        self.keep.setPlaceholderText("node names kept in float (select or search nodes first)")
        form.addRow("Keep in FP32", self.keep)
        self.labels = QLineEdit(str(s.value("calib/labels", "")))
        self.labels.setPlaceholderText("optional: a file of 'NAME LABEL' lines, the held-out samples' classes")
        form.addRow("Labels", self.labels)
        self.budget = QLineEdit(str(s.value("calib/budget", "")))
        self.budget.setPlaceholderText(
            "optional: snr=35, cosine=0.999 or top1=0.75 with labels (search the layers to keep in FP32)"
        )
        form.addRow("Accuracy budget", self.budget)
        assert gm.path is not None
        from splitscope.engine.dims import symbolic_dims
        from splitscope.engine.runtime.store import model_key
        from splitscope.gui.shell.shapes import start_value
        from splitscope.profiler.dims import saved_dims

        try:
            self.dim_key = model_key(gm.path)
        except OSError:  # unreadable now: the dims are asked but not remembered
            self.dim_key = ""
        saved = saved_dims(self.dim_key) if self.dim_key else {}  # what Profile was given: the same shapes
        self.dims: dict[str, QSpinBox] = {}
        for d in symbolic_dims(gm):
            box = QSpinBox()
            box.setRange(1, 1 << 20)
            box.setValue(start_value(gm, d, saved))  # the shapes in force first
            self.dims[d] = box
            box.valueChanged.connect(lambda v, d=d: self.recipe.set_dim(d, v))  # the preview follows the shapes
            form.addRow(f"Dim '{d}'", box)
        self.out = QLineEdit(str(gm.path.with_name(f"{gm.path.stem}.int8.onnx")))
        form.addRow("Write to", self.out)
        self.precision.currentTextChanged.connect(
            lambda p: self.out.setText(str(gm.path.with_name(f"{gm.path.stem}.{p}.onnx")))
        )  # type: ignore[union-attr]
        from splitscope.gui.profile.dialog import target_combo

        self.target = target_combo()
        form.addRow("Run on", self.target)
        b = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        b.button(QDialogButtonBox.StandardButton.Ok).setText("Calibrate")
        b.accepted.connect(self.accept)
        b.rejected.connect(self.reject)
        form.addRow(b)

    def _pick(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Calibration samples (.npy / .npz)")
        if d:
            self.data.setText(d)

    def args(self, model: Path, dims: dict[str, int]) -> dict[str, Any]:
        from splitscope.gui.profile.dialog import chosen_target

        s = QSettings()
        if self.dims:
            dims = {**dims, **{d: box.value() for d, box in self.dims.items()}}
            if self.dim_key:
                from splitscope.profiler.dims import remember_dims

                remember_dims(self.dim_key, dims)
        s.setValue("calib/data", self.data.text())
        s.setValue("calib/method", self.method.currentText())
        s.setValue("calib/samples", self.samples.value())
        s.setValue("calib/budget", self.budget.text())
        s.setValue("calib/labels", self.labels.text())
        s.setValue(f"calib/recipe/{model.name}", self.recipe.text())
        return {
            "model": str(model),
            "out": self.out.text(),
            "data": self.data.text().strip() or "random",
            "method": self.method.currentText(),
            "precision": self.precision.currentText(),
            "samples": self.samples.value(),
            "keep": [k.strip() for k in self.keep.text().split(",") if k.strip()],
            "dims": dims,
            "budget": self.budget.text().strip() or None,
            "labels": self.labels.text().strip() or None,
            "recipe": self.recipe.text(),
            "metric": self.task_metric.currentData(),
            "target": chosen_target(self.target),
        }


class CalibPanel(QWidget):
    """The result of a calibration: accuracy, and a tensor's histogram with each method's threshold."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(
            "No calibration yet. Tools › Calibrate… writes Q/DQ (INT8/FP8) or Cast (FP16/BF16) "
            "models as TensorRT 11 wants them."
        )
        self.title.setWordWrap(True)
        self.tensors = QListWidget()
        self.tensors.setMinimumHeight(40)
        self.tensors.currentTextChanged.connect(self._show)
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(60)
        self.plot.setLabel("bottom", "|activation|")
        self.plot.setLabel("left", "values (log10)")
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.tensors)
        split.addWidget(self.plot)
        split.setSizes([260, 700])
        self.sens_plot = pg.PlotWidget()
        self.sens_plot.setMinimumHeight(60)
        self.sens_plot.setLabel("bottom", "SNR gain with the node alone in float", units="dB")
        self.sens_bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[], brush=COLOURS["chart"]["highlight"])
        self.sens_plot.addItem(self.sens_bars)
        self.sens_plot.getAxis("left").setWidth(200)
        self.search_plot = pg.PlotWidget()
        self.search_plot.setMinimumHeight(60)
        self.search_plot.setLabel("bottom", "nodes kept in float")
        self.search_plot.setLabel("left", "accuracy of the worst output")
        self.search_curve = self.search_plot.plot(
            pen=pg.mkPen(COLOURS["chart"]["primary"], width=2), symbol="o", symbolSize=6
        )
        self.budget_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(COLOURS["chart"]["alert"], style=Qt.PenStyle.DashLine))
        self.search_plot.addItem(self.budget_line)
        self.range_plot = pg.PlotWidget()
        self.range_plot.setMinimumHeight(60)
        self.range_plot.setLabel("bottom", "calibration samples")
        self.range_plot.setLabel("left", "running max |activation|")
        self.range_curves: dict[str, Any] = {}
        self.tabs = QTabWidget()
        self.tabs.addTab(self.range_plot, "Range convergence")
        self.tabs.addTab(split, "Histogram and thresholds")
        self.tabs.addTab(self.sens_plot, "Sensitivity")
        self.tabs.addTab(self.search_plot, "Search")
        self.pin_fp32 = QPushButton("Pin Selection to FP32")
        self.pin_low = QPushButton("Pin Selection to INT8")
        self.pin_half = QPushButton("Pin Selection to FP16")
        for b, tip in (
            (self.pin_fp32, "keep the selected node, block or search matches in FP32"),
            (self.pin_low, "let the selected node, block or search matches run in the reduced type"),
            (self.pin_half, "run the selected node, block or search matches in FP16 (casts) inside the INT8/FP8 model"),
        ):
            b.setToolTip(tip + ", and measure the accuracy again in the background (the statistics are cached)")
            b.setEnabled(False)
        self.pins = QLabel("")
        self.pins.setWordWrap(True)
        # Side by side: the result's text and the pins on the left, the plots on the right with the dock's whole
        # height (stacked under several lines of text, a short bottom dock left them 60 px tall).
        side = QWidget()
        col = QVBoxLayout(side)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.title)
        for b in (self.pin_fp32, self.pin_low, self.pin_half):
            col.addWidget(b)
        col.addWidget(self.pins)
        col.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(side)
        for plot in (self.plot, self.sens_plot, self.search_plot, self.range_plot):
            plot.setMinimumHeight(PLOT_MIN_HEIGHT)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(scroll)
        body.addWidget(self.tabs)
        body.setStretchFactor(0, 2)
        body.setStretchFactor(1, 3)
        body.setSizes([2000, 3000])  # 2:3 of whatever width it gets (the plots' size hint left the text 200 px)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(body, 1)
        self.doc: CalibrationDoc | None = None
        """The shown calibration."""
        self.ranges: dict[str, list[tuple[float, float]]] = {}
        self.sens: dict[str, float] = {}
        self.path: list[tuple[float, float]] = []

    def clear(self) -> None:
        """No calibration for this model (another model was opened)."""
        self.doc = None
        self.title.setText(
            "No calibration yet. Tools › Calibrate… writes Q/DQ (INT8/FP8) or Cast (FP16/BF16) "
            "models as TensorRT 11 wants them."
        )
        for b in (self.pin_fp32, self.pin_low, self.pin_half):
            b.setEnabled(False)
        self.pins.setText("")
        self.tensors.clear()
        self.plot.clear()
        self.start()

    def start(self) -> None:
        """A new run: the live plots start empty."""
        self.sens, self.path = {}, []
        self.ranges: dict[str, list[tuple[float, float]]] = {}
        for c in self.range_curves.values():
            self.range_plot.removeItem(c)
        self.range_curves = {}
        self.tabs.setCurrentIndex(0)
        self._draw_live()

    def add_sample(self, s: Any) -> None:
        """Sensitivity and search samples as each layer or step finishes."""
        if s.series == "range":  # the first tensors' running ranges, one point a sample: do they settle?
            colours = COLOURS["okabe_ito"]
            for k, (name, v) in enumerate(s.values.items()):
                pts = self.ranges.setdefault(name, [])
                pts.append((s.x, v))
                curve = self.range_curves.get(name)
                if curve is None:
                    curve = self.range_curves[name] = self.range_plot.plot(pen=pg.mkPen(colours[k % 8], width=1.5))
                xs, ys = zip(*pts, strict=True)
                curve.setData(list(xs), list(ys))
            return
        if s.series == "sensitivity":
            self.sens.update(s.values)
            self.tabs.setCurrentIndex(2)
        elif s.series == "search":
            v = [x for k, x in s.values.items() if k != "kept"]
            if v:
                self.path.append((s.values["kept"], v[0]))
            self.tabs.setCurrentIndex(3)
        else:
            return
        self._draw_live()

    def _draw_live(self, gains: dict[str, float] | None = None) -> None:
        vals = gains if gains is not None else self.sens
        top = sorted(vals.items(), key=lambda kv: kv[1])[-25:]
        self.sens_bars.setOpts(x0=np.zeros(len(top)), y=np.arange(len(top)), width=[v for _, v in top])
        self.sens_plot.getAxis("left").setTicks([[(i, n[-32:]) for i, (n, _) in enumerate(top)]])
        if self.path:
            xs, ys = zip(*self.path, strict=True)
            self.search_curve.setData(list(xs), list(ys))
        else:
            self.search_curve.setData([], [])

    def set_result(self, res: CalibrationDoc) -> None:
        """A finished calibration: its accuracy, plan, histograms and search."""
        self.doc = res
        low = res.precision.upper()
        self.pin_low.setText(f"Pin Selection to {low}")
        self.pin_fp32.setEnabled(True)
        self.pin_low.setEnabled(True)
        self.pin_half.setEnabled(res.precision in ("int8", "fp8"))
        half = res.half
        self.pins.setText(
            f"{len(res.excluded)} nodes in FP32, {len(res.quantized)} in {low}"
            + (f", {len(half.nodes)} in {half.precision.upper()}" if half else "")
        )
        said = "<b>estimated</b> (an emulation)" if res.estimated else f"measured in {html.escape(res.runtime)}"
        acc = f"Accuracy {said}: " + "; ".join(
            f"{html.escape(o)}: {html.escape(a.line)}" for o, a in res.accuracy.items()
        )
        if res.uses_casts:
            what = (
                f"<b>{low}</b> with casts: {res.quantized_nodes} nodes reduced, "
                f"{res.casts} casts, {html.escape(res.weights_line)} stored reduced"
            )
        else:
            what = (
                f"<b>{low} by {res.method}</b> on {res.samples} samples: {res.tensors} activations, "
                f"{html.escape(res.weights_line)}"
            )
        from splitscope.engine.text import plural

        notes = "<br>".join(html.escape(n[:1].upper() + n[1:]) for n in res.notes)
        self.title.setText(
            f"{what}, {plural(len(res.excluded), 'node')} kept in float → "
            f"{html.escape(Path(res.out).name)}. {acc}.<br><i>{notes}</i>"
        )
        self.tensors.clear()
        hists = res.histograms

        # Tensors whose methods disagree most first: where the choice matters.
        def spread(t: str) -> float:
            vals = [v for v in hists[t].thresholds.values() if v > 0]
            return (max(vals) / min(vals)) if vals else 1.0

        # FP16: the largest values first; else where the methods differ
        order = (
            sorted(hists, key=lambda t: -hists[t].absmax) if res.uses_casts else sorted(hists, key=lambda t: -spread(t))
        )
        for t in order:
            self.tensors.addItem(t)
        if self.tensors.count():
            self.tensors.setCurrentRow(0)
        else:
            self._show("")
        search = res.search
        if search:
            self.path = list(search.path)
            if search.target is not None:
                self.budget_line.setPos(search.target)
            self._draw_live(dict(search.sensitivity))
            self.tabs.setCurrentIndex(3 if self.path else 2)
        else:
            self.tabs.setCurrentIndex(1)

    def _show(self, name: str) -> None:
        self.plot.clear()
        self.plot.setTitle("")
        if self.doc is None or not name:
            return
        h = self.doc.histograms.get(name)
        if h is None:
            return
        counts = np.asarray(h.counts, dtype=float)
        edges = np.linspace(0, h.max, counts.size + 1)
        self.plot.plot(
            edges,
            np.log10(counts + 1),
            stepMode="center",
            fillLevel=0,
            brush=(86, 180, 233, 120),
            pen=pg.mkPen(COLOURS["chart"]["primary"]),
        )
        if self.doc.uses_casts:  # FP16: what matters is how close the values come to its range
            from splitscope.engine.calib.casts import FP16_SAFE

            line = pg.InfiniteLine(
                pos=FP16_SAFE, angle=90, pen=pg.mkPen(COLOURS["chart"]["alert"], width=2, style=Qt.PenStyle.DashLine)
            )
            self.plot.addItem(line)
            key = f"max |x| {h.absmax:.4g}; above {FP16_SAFE:g} (a quarter of FP16's 65504) the node stays FP32"
        else:
            for m, v in h.thresholds.items():
                line = pg.InfiniteLine(
                    pos=v, angle=90, pen=pg.mkPen(METHOD_COLOURS[m], width=2, style=Qt.PenStyle.DashLine)
                )
                self.plot.addItem(line)
            key = " · ".join(
                f"<span style='color:{METHOD_COLOURS[m]}'>{m} {v:.4g}</span>" for m, v in h.thresholds.items()
            )
        extra = f" · {h.sentinels} sentinel values left out" if h.sentinels else ""
        self.plot.setTitle(f"{html.escape(name)}: {key}{extra}", size="9pt")


def nodes_under(view: View, gid: int) -> set[int]:
    """The nodes inside group ``gid`` at any depth."""
    groups = view.hier.groups
    inside = {gid}
    for g in sorted(groups, key=lambda g: g.depth):
        if g.parent in inside:
            inside.add(g.id)
    return {i for i, g in enumerate(view.hier.node_group) if g in inside}


class CalibUi(QObject):
    """Calibration in the window: Tools › Calibrate…, the Calibration panel, the pins and the plan's colours;
    the controller runs the calibrations (in a child process) and keeps each model's result."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = c = shell.controller
        self._panel = LazyPanel(shell, "Calibration", CalibPanel, self._wire)  # built when first needed
        self.dock = self._panel.dock
        self.last_args: dict[str, Any] | None = None
        self.pending: int | None = None
        c.calibration_ready.connect(self._finished)
        c.queue.sample.connect(self._sample)
        c.queue.changed.connect(self._changed)
        c.model_ready.connect(self._model_ready)
        shell.colours.add("plan", "Precision (&calibration plan)", self.plan_heat)

    @property
    def panel(self) -> CalibPanel:
        """The Calibration panel (built at the first use)."""
        return self._panel.get()

    def _wire(self, panel: CalibPanel) -> None:
        panel.pin_fp32.clicked.connect(lambda: self.pin("fp32"))
        panel.pin_low.clicked.connect(lambda: self.pin("low"))
        panel.pin_half.clicked.connect(lambda: self.pin("half"))
        if self.result is not None:
            panel.set_result(self.result)

    @property
    def result(self) -> CalibrationDoc | None:
        """The open model's calibration."""
        return self.controller.results.calibration

    def _model_ready(self, *_: Any) -> None:
        self.last_args = None
        self.pending = None
        if not self._panel.built:
            return  # it shows the model's result when it is built
        if self.result is not None:
            self.panel.set_result(self.result)
        else:
            self.panel.clear()

    def _sample(self, jid: int, s: Any) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if rec is not None and rec.kind == JobKind.CALIBRATE:
            self.panel.add_sample(s)

    def _changed(self, jid: int) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if (
            rec is not None
            and rec.kind == JobKind.CALIBRATE
            and rec.state == JobState.RUNNING
            and not rec.meta.get("started")
        ):
            rec.meta["started"] = True
            self.panel.start()
            self.dock.raise_()

    def add_actions(self, tools: Any, _view: Any = None) -> None:
        self.shell.add_action(tools, "&Calibrate…", self.ask).setToolTip(
            "Calibrate the model and write INT8/FP8 Q/DQ or FP16/BF16 casts as TensorRT 11 wants them, with its "
            "accuracy"
        )

    def ask(self) -> None:
        gm = self.controller.graph_model
        if gm is None or gm.path is None:
            self.shell.show_message("Open a model first.", 5000)
            return
        canvas = self.shell.canvas
        keep = [
            gm.nodes[i].name
            for i in sorted(canvas.highlight_nodes or ({canvas.selected_node} if canvas.selected_node >= 0 else set()))
            if gm.nodes[i].name
        ]
        dlg = CalibDialog(self.shell.window(), gm, keep)
        if dlg.exec() == QDialog.DialogCode.Accepted:
            self.submit(dlg.args(gm.path, dict(gm.dims)))

    def chosen(self) -> list[str]:
        """Names of what the user points at: the search matches, else the selected node, else the nodes of the
        selected block (an op type or a scope searched, one node, one block)."""
        gm, view = self.controller.graph_model, self.controller.view
        canvas = self.shell.canvas
        if gm is None:
            return []
        idx = set(canvas.highlight_nodes)
        if not idx and canvas.selected_node >= 0:
            idx = {canvas.selected_node}
        if not idx and canvas.selected_group >= 0 and view is not None:
            idx = nodes_under(view, canvas.selected_group)
        return [gm.nodes[i].name for i in sorted(idx) if gm.nodes[i].name]

    def pin(self, to: str | bool) -> int | None:
        """Pin the chosen nodes to FP32 (``fp32``), back to the reduced type (``low``) or, in an INT8/FP8 run,
        to FP16 (``half``), and measure again: the same run with the new pins, no search (the statistics come
        from the cache, so this takes seconds)."""
        to = {True: "fp32", False: "low"}.get(to, to) if isinstance(to, bool) else to
        names = self.chosen()
        if self.last_args is None or not names:
            self.shell.show_message("Select a node or a block, or search an op type or scope, first.", 5000)
            return None
        args = dict(self.last_args)
        kept = self.result.excluded if self.result is not None else ()
        keep = set(args.get("keep") or []) | set(kept)
        half = set(args.get("half") or [])
        chosen = set(names)
        casts_run = args.get("precision") in ("fp16", "bf16")  # there ``half`` forces nodes into the reduced type
        if to == "fp32":
            keep, half = keep | chosen, half - chosen
        elif to == "half" or (to == "low" and casts_run):
            keep, half = keep - chosen, half | chosen
        else:
            keep, half = keep - chosen, half - chosen
        args.update(keep=sorted(keep), half=sorted(half), budget=None, sensitivity=False)
        q = self.controller.queue
        if self.pending is not None and self.pending in q.jobs and q.jobs[self.pending].state in ("queued", "running"):
            q.cancel(self.pending)  # the newest pins win
        where = {"fp32": "FP32", "half": "FP16"}.get(to, args["precision"].upper())
        self.panel.pins.setText(f"Measuring with {len(names)} more pinned to {where}…")
        self.pending = self.submit(args)
        return self.pending

    def submit(self, args: dict[str, Any]) -> int:
        self.last_args = dict(args)
        return self.controller.submit_calibration(args)

    def _finished(self, jid: int, doc: CalibrationDoc) -> None:
        self.panel.set_result(doc)
        self.dock.raise_()
        self.controller.set_colour_mode("plan")
        first = next(iter(doc.accuracy.values()), None)
        lead = first.lead if first else ""
        how = " (estimated)" if doc.estimated else ""
        self.shell.show_message(f"Calibrated: wrote {Path(doc.out).name}" + (f", {lead}{how}" if lead else ""), 10000)

    def plan_heat(self, view: View) -> Heat | None:
        """Nodes by the precision the calibration plan gives them: quantized, or kept in FP32."""
        if self.result is None:
            return None
        gm = view.gm
        doc = self.result
        prec = doc.precision.upper()
        by = {n.name: n.index for n in gm.nodes if n.name}
        keys = list(PLAN_COLOURS)
        nodes = {by[n]: float(keys.index(prec)) for n in doc.quantized if n in by}
        nodes.update({by[n]: float(keys.index("FP32")) for n in doc.excluded if n in by})
        half = doc.half
        if half:
            nodes.update({by[n]: float(keys.index(half.precision.upper())) for n in half.nodes if n in by})
        groups = {g: next(iter(v)) for g, v in values_up(view.hier, nodes).items() if len(v) == 1}
        legend = [(prec, PLAN_COLOURS[prec]), ("kept in FP32", PLAN_COLOURS["FP32"])]
        if half:
            legend.insert(1, (f"pinned to {half.precision.upper()}", PLAN_COLOURS[half.precision.upper()]))
        return Heat(
            nodes,
            groups,
            "calibration plan (grey: left as written)",
            palette=tuple(PLAN_COLOURS.values()),
            items=tuple(legend),
        )
