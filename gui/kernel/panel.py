"""The Kernel Workbench panel: the op and its reference, the kernel's source (edited here or in the user's editor),
the NVRTC error at its line, the verdict with its numbers, and two live plots: the time of each launch against the
runtime default and the bound, and the histogram of the errors against the reference."""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontDatabase, QTextCursor, QTextFormat
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)
from splitscope.engine.kernel.results import KernelDoc, KernelResult
from splitscope.gui.shell.charts import pg
from splitscope.gui.shell.palette import COLOURS


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v * 1e3:.1f} µs" if v < 1 else f"{v:.3f} ms"


class KernelPanel(QWidget):
    """What one kernel job found, and the source to run next."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: KernelDoc | None = None
        self.times: list[float] = []
        split = QSplitter(Qt.Orientation.Horizontal, self)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.addWidget(split)

        split.addWidget(self._build_source())
        split.addWidget(self._build_results())
        split.setSizes([560, 440])
        for w in (self.time_plot, self.hist_plot, self.editor):
            w.setMinimumHeight(40)
        self.setMinimumHeight(120)  # a tab of the bottom dock: it must not make the dock (and the canvas) taller

    def _build_source(self) -> QWidget:
        """The left side: what ran, the source editor, its error line, and the buttons."""
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel(
            "Select a node (a plugin node, or nodes TensorRT takes) and choose Tools › Kernel Workbench."
        )
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setObjectName("kernel_title")
        lv.addWidget(self.title)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("kernel_source")
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setPlaceholderText("The kernel's CUDA C++ (launch convention: see the plugin project's launch.py)")
        lv.addWidget(self.editor, 1)
        self.error = QLabel()
        self.error.setObjectName("kernel_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {COLOURS['chart']['alert']}; font-weight: bold")
        self.error.hide()
        lv.addWidget(self.error)
        row = QHBoxLayout()
        self.run = QPushButton("Run on the GPU")
        self.run.setObjectName("kernel_run")
        self.cancel = QPushButton("Cancel")
        self.cancel.setEnabled(False)
        self.load = QPushButton("Open .cu…")
        self.edit_outside = QPushButton("Edit in My Editor")
        self.export = QPushButton("Export Plugin Project…")
        self.rerun = QCheckBox("Run again when the file changes")
        self.rerun.setChecked(True)
        for w in (self.run, self.cancel, self.load, self.edit_outside, self.export):
            row.addWidget(w)
        row.addWidget(self.rerun)
        row.addStretch(1)
        lv.addLayout(row)
        return left

    def _build_results(self) -> QWidget:
        """The right side: the verdict, the numbers, the launches' times and the errors' histogram."""
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        self.verdict = QLabel()
        self.verdict.setObjectName("kernel_verdict")
        self.verdict.setWordWrap(True)
        self.verdict.setStyleSheet("font-weight: bold")
        rv.addWidget(self.verdict)
        self.numbers = QLabel()
        self.numbers.setObjectName("kernel_numbers")
        self.numbers.setWordWrap(True)
        self.numbers.setTextFormat(Qt.TextFormat.RichText)
        rv.addWidget(self.numbers)
        self._build_time_plot()
        rv.addWidget(self.time_plot, 1)
        self._build_error_plot()
        rv.addWidget(self.hist_plot, 1)
        return right

    def _build_time_plot(self) -> None:
        """Each timed launch, with the runtime default and the bound as lines."""
        self.time_plot = pg.PlotWidget()
        self.time_plot.setObjectName("kernel_time_plot")
        self.time_plot.setLabel("left", "ms per launch")
        self.time_plot.setLabel("bottom", "launch")
        self.time_plot.getAxis("left").enableAutoSIPrefix(False)
        self.time_plot.addLegend(offset=(-10, 10), brush=pg.mkBrush(255, 255, 255, 200))
        self.time_plot.setMouseEnabled(x=False, y=False)
        self.curve = self.time_plot.plot([], [], pen=None, symbol="o", symbolSize=4, name="your kernel")
        chart = COLOURS["chart"]
        self.curve.setSymbolBrush(pg.mkBrush(chart["primary"]))
        self.curve.setSymbolPen(None)
        pens = {
            "default": pg.mkPen(chart["alert"], width=2, style=Qt.PenStyle.DashLine),
            "bound": pg.mkPen(chart["highlight"], width=2, style=Qt.PenStyle.DotLine),
        }
        self.default_line = pg.InfiniteLine(angle=0, pen=pens["default"])
        self.bound_line = pg.InfiniteLine(angle=0, pen=pens["bound"])
        for line in (self.default_line, self.bound_line):
            line.hide()
            self.time_plot.addItem(line)
        legend = self.time_plot.plotItem.legend
        legend.addItem(pg.PlotDataItem(pen=pens["default"]), "runtime default")
        legend.addItem(pg.PlotDataItem(pen=pens["bound"]), "bound (speed of light)")

    def _build_error_plot(self) -> None:
        """How far the kernel's outputs are from the reference, as a histogram of log10 errors."""
        self.hist_plot = pg.PlotWidget()
        self.hist_plot.setObjectName("kernel_error_plot")
        self.hist_plot.setLabel("left", "elements")
        self.hist_plot.setLabel("bottom", "log10 |kernel − reference|  (−12: exact)")
        self.hist_plot.getAxis("left").enableAutoSIPrefix(False)
        self.hist_plot.setMouseEnabled(x=False, y=False)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.45, brush=COLOURS["chart"]["secondary"])
        self.hist_plot.addItem(self.bars)

    # ------------------------------------------------------------ live
    def start(self) -> None:
        """A run began: the plots are cleared and fill as the launches are timed."""
        self.times = []
        self.curve.setData([], [])
        self.error.hide()
        self.verdict.setText("Running…")
        self.run.setEnabled(False)
        self.cancel.setEnabled(True)

    def add_time(self, x: float, ms: float) -> None:
        self.times.append(ms)
        self.curve.setData(np.arange(len(self.times)), np.asarray(self.times))

    def stopped(self) -> None:
        self.run.setEnabled(True)
        self.cancel.setEnabled(False)

    # ------------------------------------------------------------ result
    def set_result(self, doc: KernelDoc, keep_source: bool = False) -> None:
        """Show one job's result; the source it ran replaces the editor's text unless ``keep_source``."""
        self.doc = doc
        self.stopped()
        sig = ", ".join(f"{html.escape(t['name'])} {t['dtype']}{t['shape']}" for t in doc.inputs[:4])
        more = f" and {len(doc.inputs) - 4} more" if len(doc.inputs) > 4 else ""
        a = doc.answer
        parser = ""
        if a is not None and a.partitions_counted:
            parser = (
                f"<br>Parser with the plugin registered: <b>{a.how}</b>; partitions "
                f"{a.partitions_before} → {a.partitions_after}, boundary bytes "
                f"{a.boundary_bytes_before:,} → {a.boundary_bytes_after:,}"
            )
        self.title.setText(
            f"<b>{html.escape(', '.join(doc.nodes[:4]))}</b>{' …' if len(doc.nodes) > 4 else ''} "
            f"({html.escape(doc.op)}, {'TensorRT takes it' if doc.delegated else 'needs custom CUDA'}) at "
            f"{html.escape(doc.shapes)}<br>inputs: {sig}{more}<br>reference: {html.escape(doc.reference_how)}"
            + (f" ({html.escape(doc.reference_note[:160])})" if doc.reference_note else "")
            + parser
        )
        if not keep_source:
            self.editor.setPlainText(doc.source_text)
        k = doc.kernel or KernelResult()
        self._error(k)
        if k.verdict:
            self.verdict.setText(k.verdict)
        elif k.gpu and not k.compiled:
            self.verdict.setText(f"The kernel does not compile: {k.error}")
        else:
            self.verdict.setText(f"Not run: {k.error}" if k.error else "")
        self.numbers.setText(self._numbers(k))
        self.times = list(k.times_ms or self.times)
        self.curve.setData(np.arange(len(self.times)), np.asarray(self.times, dtype=float))
        for line, value in ((self.default_line, k.default_ms), (self.bound_line, k.sol_ms)):
            line.setVisible(value is not None)
            if value is not None:
                line.setPos(value)
        hist = k.histogram
        if hist.get("counts"):
            edges = np.asarray(hist["edges"])
            self.bars.setOpts(x=(edges[:-1] + edges[1:]) / 2, height=np.asarray(hist["counts"]), width=0.45)
        else:
            self.bars.setOpts(x=[], height=[])

    @staticmethod
    def _numbers(k: KernelResult) -> str:
        if not k.ran:
            return ""
        lo, hi = k.spread_ms or [None, None]
        dev = k.device_ms
        rows = [
            ("kernel (device, CUPTI)", _ms(dev) if dev is not None else k.device_how or "not measured"),
            ("runtime default's kernels (device)", _ms(k.default_device_ms)),
            ("kernel (CUDA events)", f"{_ms(k.ms)} (p10–p90 {_ms(lo)}–{_ms(hi)})"),
            ("kernel (host, launch included)", _ms(k.host_ms)),
            (
                "runtime default (host, launch included)",
                _ms(k.default_ms) if k.default_ms is not None else k.default_how,
            ),
            ("bound", f"{_ms(k.sol_ms)} ({k.sol_how})"),
            ("max abs error", f"{k.max_abs_err:.3g}" if k.max_abs_err is not None else "no reference"),
            ("max ULP", str(k.max_ulp) if k.max_ulp is not None else "—"),
            ("beyond tolerance", f"{k.beyond:.2%}" if k.beyond is not None else "—"),
        ]
        cells = "".join(f"<tr><td>{html.escape(a)}</td><td>&nbsp;{html.escape(str(b))}</td></tr>" for a, b in rows)
        return f"<table>{cells}</table><i>{html.escape(k.gpu)}</i>"

    def _error(self, k: KernelResult) -> None:
        """An NVRTC error: said under the editor, its line marked and the cursor put there."""
        line = k.error_line
        if k.error and k.gpu and not k.compiled:  # NVRTC's, not "no GPU here"
            self.error.setText(k.error)
            self.error.show()
        else:
            self.error.hide()
        if line:
            block = self.editor.document().findBlockByNumber(int(line) - 1)
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(QColor(COLOURS["chart"]["alert"]).lighter(180))
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            cur = QTextCursor(block)
            sel.cursor = cur
            self.editor.setExtraSelections([sel])
            self.editor.setTextCursor(cur)
            self.editor.centerCursor()
        else:
            self.editor.setExtraSelections([])
