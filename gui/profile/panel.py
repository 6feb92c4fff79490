"""The Profile panel: live plots of a running profile and the figures of a finished one.

Samples go into ring buffers as they arrive; a 30 Hz timer redraws whatever changed, never one redraw
per sample. Tabs: latency per iteration and its histogram, per-node top-N bars, NVML telemetry strips,
the roofline (click a dot to select its node) and the summary (verdict, the custom part's cost,
copies). Every plot exports PNG, SVG and CSV.
"""

from __future__ import annotations

import csv
import html
import io
import os
import tempfile
import threading
from collections import ChainMap
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QTabWidget,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from splitscope.engine.jobs import Sample
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.gui.shell.charts import pg
from splitscope.gui.shell.layout_state import PLOT_MIN_HEIGHT
from splitscope.gui.shell.palette import COLOURS

REDRAW_MS = 33
TOP_N = 15
"""The most bars the Nodes tab shows; fewer where the tab is too short to label each (:data:`BAR_PX` a bar)."""
BAR_PX = 16
CLASS_COLOUR = dict(COLOURS["roofline_class"])


class Ring:
    """A growing numpy buffer that keeps the last ``capacity`` values."""

    def __init__(self, capacity: int = 200_000) -> None:
        self.a = np.zeros(capacity)
        self.n = 0

    def clear(self) -> None:
        self.n = 0

    def append(self, v: float) -> None:
        if self.n == len(self.a):
            self.a[:-1] = self.a[1:]
            self.a[-1] = v
        else:
            self.a[self.n] = v
            self.n += 1

    def extend(self, values: np.ndarray) -> None:
        for v in values[-len(self.a) :]:
            self.append(float(v))

    def view(self) -> np.ndarray:
        return self.a[: self.n]


class ProfilePanel(QWidget):
    """Shows one profile, live or finished."""

    node_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=False, background="w", foreground="#333")
        self.title = QLabel("No profile yet. Tools › Profile… runs one; the plots fill as it runs.")
        self.title.setWordWrap(True)
        self.export = QToolButton()
        self.export.setText("Export")
        self.export.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        m = QMenu(self.export)
        for fmt in ("png", "svg", "csv"):
            m.addAction(f"Export this plot as {fmt.upper()}…", lambda f=fmt: self.export_current(f))
        self.export.setMenu(m)
        head = QHBoxLayout()
        head.addWidget(self.title, 1)
        head.addWidget(self.export)
        self.tabs = QTabWidget()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(head)
        lay.addWidget(self.tabs, 1)
        self.tabs.addTab(_scrolling(self._build_latency()), "Latency")
        self.tabs.addTab(self._build_nodes(), "Nodes")
        self.tabs.addTab(_scrolling(self._build_telemetry()), "Telemetry")
        self.tabs.addTab(self._build_roofline(), "Roofline")
        # Summary
        self.summary = QTextBrowser()
        self.summary.setOpenLinks(False)
        self.tabs.addTab(self.summary, "Summary")
        for plot in (
            self.lat_plot,
            self.hist_plot,
            self.node_plot,
            self.roof_plot,
            *(w for w, _ in self.tel_plots.values()),
        ):
            plot.setMinimumHeight(PLOT_MIN_HEIGHT)  # a short bottom dock scrolls them, never squashes them
        # Live buffers
        self.live_id: int | None = None
        self.lat = Ring()
        self.tel_t = Ring()
        self.tel: dict[str, Ring] = {k: Ring() for k in self.tel_plots}
        self.nodes: dict[str, float] = {}
        self.tied: set[str] = set()
        """Nodes whose time ties with the one ranked before them (the profile's ``tie``)."""
        self.node_ops: ChainMap[str, str] = ChainMap()
        """Op type by node name, for the bars' labels: a finished profile's rows first, then the open model's nodes
        (in steps)."""
        self.doc: ProfileDoc | None = None
        """The shown profile, typed (the panel reads it, not the JSON's keys)."""
        self._dirty = False
        self._timer = QTimer(self)
        self._timer.setInterval(REDRAW_MS)
        self._timer.timeout.connect(self._redraw)
        self._timer.start()
        self.tabs.currentChanged.connect(self._resized)  # a tab shown for the first time gets its size then
        self.redraws = 0
        # numpy's percentile costs 30 ms on its first call (lazy set-up): pay it off the UI thread, now.
        threading.Thread(
            target=lambda: np.percentile(np.ones(4), [50, 90]), daemon=True, name="warm-percentile"
        ).start()

    # ------------------------------------------------------------ feeding
    def _build_latency(self) -> QWidget:
        """Latency per iteration and its histogram, side by side."""
        lat = QWidget()
        ll = QVBoxLayout(lat)
        ll.setContentsMargins(0, 0, 0, 0)
        self.lat_plot = pg.PlotWidget()
        self.lat_plot.setLabel("bottom", "iteration")
        self.lat_plot.setLabel("left", "latency", units="ms")
        self.lat_curve = self.lat_plot.plot(pen=pg.mkPen(COLOURS["chart"]["primary"], width=1))
        self.hist_plot = pg.PlotWidget()
        self.hist_plot.setLabel("bottom", "latency", units="ms")
        self.hist_plot.setLabel("left", "iterations")
        self.hist_bars = pg.BarGraphItem(x=[], height=[], width=1, brush=COLOURS["chart"]["secondary"])
        self.hist_plot.addItem(self.hist_bars)
        self.stats = QLabel("")
        self.stats.setWordWrap(True)  # a narrow dock wraps the figures instead of cutting them
        plots = QHBoxLayout()  # side by side: each keeps the dock's height, not half of it
        plots.addWidget(self.lat_plot, 3)
        plots.addWidget(self.hist_plot, 2)
        ll.addWidget(self.stats)  # above the plots: a short dock scrolls them, never the figures out of sight
        ll.addLayout(plots, 1)
        return lat

    def _build_nodes(self) -> QWidget:
        """The slowest nodes' bars."""
        self.node_plot = pg.PlotWidget()
        self.node_plot.setLabel("bottom", "time per inference", units="ms")
        self.node_bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[], brush=COLOURS["chart"]["highlight"])
        self.node_plot.addItem(self.node_bars)
        self.node_plot.getAxis("left").setWidth(230)
        return self.node_plot

    def _build_telemetry(self) -> QWidget:
        """NVML's strips: GPU utilisation, power, SM clock."""
        tel = QWidget()
        tl = QVBoxLayout(tel)
        tl.setContentsMargins(0, 0, 0, 0)
        self.tel_note = QLabel("")
        self.tel_note.setWordWrap(True)
        tl.addWidget(self.tel_note)
        self.tel_plots: dict[str, tuple[pg.PlotWidget, Any]] = {}
        for key, label, unit in (
            ("gpu_util", "GPU utilisation", "%"),
            ("power_w", "power", "W"),
            ("sm_clock_mhz", "SM clock", "MHz"),
        ):
            w = pg.PlotWidget()
            w.setLabel("left", label, units=unit)
            w.setLabel("bottom", "time", units="s")
            self.tel_plots[key] = (w, w.plot(pen=pg.mkPen(COLOURS["chart"]["telemetry"], width=1)))
            tl.addWidget(w, 1)
        return tel

    def _build_roofline(self) -> QWidget:
        """Each node's achieved FLOP/s against its arithmetic intensity, a colour a class."""
        self.roof_plot = pg.PlotWidget()
        for side in ("bottom", "left"):  # the data are log10 values; the axes label them as powers of ten
            self.roof_plot.getAxis(side).setLogMode(True)
            self.roof_plot.getAxis(side).enableAutoSIPrefix(False)
        self.roof_plot.setLabel("bottom", "arithmetic intensity (FLOP/byte)")
        self.roof_plot.setLabel("left", "achieved FLOP/s")
        self.roof_plot.addLegend(offset=(-10, 10))
        self.roof_scatter: dict[str, pg.ScatterPlotItem] = {}
        for cls, colour in CLASS_COLOUR.items():  # one item a class, so that the legend names the colours
            sc = pg.ScatterPlotItem(size=7, brush=pg.mkBrush(colour), pen=None, name=cls)
            sc.sigClicked.connect(self._roof_clicked)
            self.roof_plot.addItem(sc)
            self.roof_scatter[cls] = sc
        self.roof_lines: list[Any] = []
        self.roof_note = pg.TextItem("", color="#555")
        self.roof_plot.addItem(self.roof_note)
        return self.roof_plot

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._resized()

    def _resized(self, *_: Any) -> None:
        self._dirty = True  # as many node bars as the tab now has room for

    def start_live(self, job_id: int, title: str) -> None:
        """A new run: clear the plots and follow ``job_id``'s samples."""
        self.live_id, self.doc = job_id, None
        self.lat.clear()
        self.tel_t.clear()
        for r in self.tel.values():
            r.clear()
        self.nodes, self.tied = {}, set()
        self.title.setText(f"<b>{html.escape(title)}</b> (running)")
        self.summary.setHtml("<p>Running…</p>")
        self.tel_note.setText("")
        self._dirty = True

    def add_sample(self, job_id: int, s: Sample) -> None:
        """A sample of a job: kept when it is the one followed (cheap: the timer draws)."""
        if job_id != self.live_id:
            return
        if s.series == "latency":
            self.lat.append(s.values["ms"])
        elif s.series == "telemetry":
            self.tel_t.append(s.x)
            for k, r in self.tel.items():
                r.append(float(s.values.get(k, 0.0)))
        elif s.series == "nodes":
            self.nodes = dict(s.values)
        self._dirty = True

    def show_result(self, job_id: int, doc: ProfileDoc, title: str) -> None:
        """A finished profile: every plot from its figures."""
        self.live_id, self.doc = job_id, doc
        self.lat.clear()
        self.lat.extend(np.asarray(doc.samples_ms, dtype=float))
        self.tel_t.clear()
        for r in self.tel.values():
            r.clear()
        series = doc.telemetry_series
        if series:
            t0 = series[0]["t"]
            for s in series:
                self.tel_t.append(s["t"] - t0)
                for k, r in self.tel.items():
                    r.append(float(s.get(k, 0.0)))
        self.nodes = {r.name: r.ms for r in doc.per_node}
        self.tied = {r.name for r in doc.per_node if r.tie}
        self.node_ops.update({r.name: r.op_type for r in doc.per_node if r.op_type})
        self.title.setText(f"<b>{html.escape(title)}</b> — {html.escape(doc.device)}")
        self.tel_note.setText(
            ""
            if series
            else "No GPU telemetry for this run: " + (doc.telemetry_note or "the CPU backend does not touch the GPU.")
        )
        self.summary.setHtml(summary_html(doc))
        self._draw_roofline(doc)
        self._dirty = True

    def reset(self, model_name: str) -> None:
        """Another model is open: nothing of the last one's profile stays (plots, axes, roofline, summary)."""
        self.live_id, self.doc = None, None
        self.lat.clear()
        self.tel_t.clear()
        for r in self.tel.values():
            r.clear()
        self.nodes, self.tied = {}, set()
        for sc in self.roof_scatter.values():
            sc.setData([])
        for item in self.roof_lines:
            self.roof_plot.removeItem(item)
        self.roof_lines = []
        self.roof_note.setText("")
        self.title.setText(f"No profile of {html.escape(model_name)} yet. Tools › Profile… runs one.")
        self.summary.setHtml("")
        self.tel_note.setText("")
        self._dirty = True
        self._redraw()
        for plot in (self.lat_plot, self.hist_plot, self.node_plot):
            plot.enableAutoRange()

    # ------------------------------------------------------------ drawing
    def _redraw(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self.redraws += 1
        y = self.lat.view()
        self.lat_curve.setData(np.arange(len(y)), y)
        if len(y):
            counts, edges = np.histogram(y, bins=min(60, max(5, len(y) // 5)))
            self.hist_bars.setOpts(x=(edges[:-1] + edges[1:]) / 2, height=counts, width=(edges[1] - edges[0]) * 0.9)
            p50, p90, p99 = np.percentile(y, [50, 90, 99])
            self.stats.setText(
                f"{len(y)} iterations · mean {y.mean():.3f} ms · p50 {p50:.3f} · p90 {p90:.3f} · "
                f"p99 {p99:.3f} · min {y.min():.3f} · max {y.max():.3f} ms"
            )
        else:
            self.hist_bars.setOpts(x=[], height=[], width=1)
            self.stats.setText("")
        fit = max(3, (self.node_plot.height() - 60) // BAR_PX)  # the axis and its label take about 60 px
        top = sorted(self.nodes.items(), key=lambda kv: -kv[1])[: min(TOP_N, fit)]
        top.reverse()
        self.node_bars.setOpts(x0=np.zeros(len(top)), y=np.arange(len(top)), width=[v for _, v in top])
        ticks = [(i, _tick(self._node_label(n), n in self.tied)) for i, (n, _) in enumerate(top)]
        self.node_plot.getAxis("left").setTicks([ticks])
        t = self.tel_t.view()
        for k, (_, curve) in self.tel_plots.items():
            curve.setData(t, self.tel[k].view())

    def _node_label(self, name: str) -> str:
        op = self.node_ops.get(name)
        return f"{op} · {name}" if op and op not in name else name

    def _draw_roofline(self, doc: ProfileDoc) -> None:
        for item in self.roof_lines:
            self.roof_plot.removeItem(item)
        self.roof_lines = []
        rows = [r for r in doc.per_node if r.intensity and r.achieved_flops]
        for cls, sc in self.roof_scatter.items():
            sc.setData(
                [
                    {
                        "pos": (np.log10(r.intensity), np.log10(r.achieved_flops)),  # type: ignore[arg-type]
                        "data": r.index,
                        "symbol": "t" if r.status == "plugin" else "o",
                    }
                    for r in rows
                    if r.roofline_class == cls
                ]
            )
        gpu_name = doc.gpu.name if doc.gpu else ""
        peaks, bw = (doc.gpu.peak_flops, doc.gpu.peak_bandwidth) if doc.gpu else ({}, 0.0)
        if peaks and bw:
            xs = np.logspace(-2, 4, 200)
            for name, colour in COLOURS["roofs"].items():
                if name in peaks:
                    line = self.roof_plot.plot(
                        np.log10(xs),
                        np.log10(np.minimum(peaks[name], bw * xs)),
                        pen=pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DashLine),
                    )
                    self.roof_lines.append(line)
            self.roof_note.setText(f"roofs: {gpu_name} peaks (fp32, tf32, fp16) and {bw / 1e12:.2f} TB/s")
        else:
            self.roof_note.setText("No GPU peaks for this run (the CPU backend): the dots show achieved FLOP/s only.")
        if rows:
            self.roof_note.setPos(
                np.log10(min(r.intensity or 1.0 for r in rows)),
                np.log10(max(max(peaks.values(), default=0.0), max(r.achieved_flops or 1.0 for r in rows))) + 0.4,
            )

    def _roof_clicked(self, _item: Any, points: Any) -> None:
        if len(points) and points[0].data() is not None:
            self.node_selected.emit(int(points[0].data()))

    # ------------------------------------------------------------ export
    def export_current(self, fmt: str, path: Path | None = None) -> Path | None:
        """Export the current tab's plot (PNG/SVG) or data (CSV), atomically; asks where when ``path`` is None."""
        tab = self.tabs.currentIndex()
        if path is None:
            settings = QSettings()
            folder = Path(str(settings.value("export/dir", str(Path.home()))))
            start = folder / f"profile-{self.tabs.tabText(tab).lower()}.{fmt}"
            name, _ = QFileDialog.getSaveFileName(self, f"Export as {fmt.upper()}", str(start), f"*.{fmt}")
            if not name:
                return None
            path = Path(name)
            settings.setValue("export/dir", str(path.parent))
        widget = [self.lat_plot, self.node_plot, self.tel_plots["gpu_util"][0], self.roof_plot, None][tab]
        fd, tmp = tempfile.mkstemp(prefix=".splitscope-", suffix=f".{fmt}", dir=path.parent)
        os.close(fd)
        try:
            if fmt == "csv":
                Path(tmp).write_text(self.csv_text(tab), encoding="utf-8")
            else:
                render_widget(widget if widget is not None else self.summary, Path(tmp), fmt)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return path

    def csv_text(self, tab: int) -> str:
        """The data behind a tab, as CSV."""
        out = io.StringIO()
        w = csv.writer(out)
        if tab == 0:
            w.writerow(["iteration", "latency_ms"])
            w.writerows((i, f"{v:.6f}") for i, v in enumerate(self.lat.view()))
        elif tab == 1:
            w.writerow(["node", "ms"])
            w.writerows((n, f"{v:.6f}") for n, v in sorted(self.nodes.items(), key=lambda kv: -kv[1]))
        elif tab == 2:
            w.writerow(["t_s", *self.tel])
            cols = [self.tel[k].view() for k in self.tel]
            w.writerows((f"{t:.4f}", *(f"{c[i]:.3f}" for c in cols)) for i, t in enumerate(self.tel_t.view()))
        else:
            head = ["rank", "node", "op_type", "ms", "ms_low", "ms_high", "class", "intensity", "achieved_flops"]
            w.writerow([*head, "sol_ms", "headroom_ms"])
            for r in self.doc.per_node if self.doc is not None else ():
                lo, hi = r.spread_ms or ("", "")
                row = [r.rank_label, r.name, r.op_type, r.ms, lo, hi, r.roofline_class, r.intensity, r.achieved_flops]
                w.writerow([*row, r.sol_ms, r.headroom_ms])
        return out.getvalue()


def _scrolling(w: QWidget) -> QScrollArea:
    """``w`` in a scroll area: a short dock scrolls the plots instead of taking height from the canvas."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    area.setWidget(w)
    return area


def render_widget(widget: QWidget, path: Path, fmt: str) -> None:
    """Paint ``widget`` into a PNG at twice its size, or an SVG (Qt's own painters: pyqtgraph's SVG exporter
    fails on some paths)."""
    from PySide6.QtGui import QImage, QPainter

    size = widget.size()
    if fmt == "svg":
        from PySide6.QtSvg import QSvgGenerator

        gen = QSvgGenerator()
        gen.setFileName(str(path))
        gen.setSize(size)
        gen.setViewBox(widget.rect())
        gen.setTitle("Splitscope profile")
        p = QPainter(gen)
        widget.render(p)
        p.end()
        return
    img = QImage(size.width() * 2, size.height() * 2, QImage.Format.Format_ARGB32)
    img.fill(0xFFFFFFFF)
    p = QPainter(img)
    p.scale(2, 2)
    widget.render(p)
    p.end()
    if not img.save(str(path), "PNG"):
        raise OSError(f"could not write {path}")


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def _short(name: str, n: int = 34) -> str:
    return name if len(name) <= n else "…" + name[-(n - 1) :]


def _tick(label: str, tied: bool) -> str:
    """A bar's label in the axis's width (a longer one is not drawn at all): ``= `` before a tie, within it."""
    return "= " + _short(label, 31) if tied else _short(label, 33)


def _at(dims: dict[str, int]) -> str:
    """`` at height=320, width=320``: the dims the profile ran at (its figures hold at those shapes only)."""
    return (" at " + ", ".join(f"{html.escape(str(k))}={v}" for k, v in dims.items())) if dims else ""


def summary_html(doc: ProfileDoc) -> str:
    """The Summary tab: the verdict first, then the custom part's cost, latency, copies, notes."""
    v, lat, sc = doc.verdict, doc.latency, doc.split_cost
    parts = [
        f"<h3>{html.escape(v.verdict or '?')}</h3><p>{html.escape(v.why)}.<br><b>Fix:</b> {html.escape(v.fix)}.</p>",
        f"<p>Mean {lat.mean:.3f} ms (p50 {lat.p50:.3f}, p90 {lat.p90:.3f}, p99 {lat.p99:.3f}) over "
        f"{doc.iterations} iterations after {doc.warmup} warm-up{_at(doc.dims)}; {doc.inferences_per_s:.1f} "
        "inferences/s. Per-node "
        f"times cover {doc.node_cover:.0%} of a profiled run; small (launch-bound) nodes take "
        f"{v.launch_bound_ms:.3f} ms.</p>",
    ]
    if not doc.verified:
        parts.append(
            f"<p><i>The {html.escape(doc.backend)} backend is not yet run against a real engine: these figures come "
            "from code written to TensorRT's documented API and tested against a fake engine.</i></p>"
        )
    if sc.plugin_nodes:
        rows = "".join(
            f"<tr><td>{html.escape(p.name)}</td><td>{html.escape(p.op_type)}</td><td align=right>{p.ms:.4f}</td>"
            f"<td align=right>{'' if p.most_a_kernel_saves_ms is None else f'{p.most_a_kernel_saves_ms:.4f}'}</td></tr>"
            for p in sc.plugins
        )
        if sc.boundary_copy_ms is not None:
            copies = (
                f"plus {sc.boundary_copy_ms:.3f} ms of partition-boundary copies: "
                f"{sc.share_of_end_to_end or 0.0:.1%} of end to end ({html.escape(sc.assumes)})"
            )
        else:  # never a 0 that reads as measured
            copies = f"plus partition-boundary copies, not measured ({html.escape(sc.not_measured or 'no GPU')})"
        parts.append(
            f"<p><b>The custom part:</b> {sc.plugin_ms:.3f} ms in {sc.plugin_nodes} plugin nodes {copies}.</p>"
            "<table cellspacing=4><tr><th>plugin node</th><th>op</th><th>ms</th>"
            f"<th>most a kernel saves (ms)</th></tr>{rows}</table>"
        )
    c = doc.copies
    if c.measured:
        rows = "".join(
            f"<tr><td align=right>{m.bytes:,}</td><td align=right>{m.h2d_pinned_gbps}</td>"
            f"<td align=right>{m.h2d_pageable_gbps}</td><td align=right>{m.d2h_pinned_gbps}</td>"
            f"<td align=right>{m.d2h_pageable_gbps}</td></tr>"
            for m in c.measured
        )
        parts.append(
            "<p><b>Copies</b> (GB/s"
            + (f"; the link's peak is {c.link_peak_gbps} GB/s" if c.link_peak_gbps else "")
            + ")</p>"
            "<table cellspacing=4><tr><th>bytes</th><th>H2D pinned</th><th>H2D pageable</th>"
            f"<th>D2H pinned</th><th>D2H pageable</th></tr>{rows}</table>"
        )
    elif c.not_measured:
        parts.append(f"<p>Copies not measured: {html.escape(c.not_measured)}.</p>")
    for n in doc.notes:
        parts.append(f"<p><i>{html.escape(n)}</i></p>")
    return "".join(parts)
