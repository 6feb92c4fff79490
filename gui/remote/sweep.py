"""Tools › Sweep…: a grid of profiles over the open model (dims x backends x precisions x targets) as one job on Ray
or in sequence, and the Sweep panel: a sortable table filling in as cells end (CSV export), latency against the
first dim per backend and precision, and accuracy against latency with the Pareto front marked."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.sweep.grid import BACKENDS, PRECISIONS, Cell, expand, parse_dim_values
from splitscope.engine.sweep.results import SweepCell, SweepDoc
from splitscope.engine.sweep.summary import COLUMNS, accuracy, latency, pareto, rows, to_csv, workload
from splitscope.gui.shell.charts import pg
from splitscope.gui.shell.palette import COLOURS

if TYPE_CHECKING:
    from splitscope.engine.model import GraphModel

_PENS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


class SweepDialog(QDialog):
    """What to sweep: values per dim, backends, precisions, targets, Ray."""

    def __init__(self, gm: GraphModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from splitscope.profiler.targets import saved_targets

        self.setWindowTitle("Sweep")
        self.setMinimumWidth(560)
        self.gm = gm
        s = QSettings()
        form = QFormLayout(self)
        dims = list(gm.dims) or []
        default = ", ".join(f"{d}={v},{v * 8}" for d, v in gm.dims.items()) if dims else ""
        self.dims = QLineEdit(str(s.value(f"sweep/dims/{gm.path.name if gm.path else ''}", default)))
        self.dims.setPlaceholderText("batch=1,8,32; seq=128  (the model's dims, values separated by commas)")
        form.addRow("Dims", self.dims)
        last_b = str(s.value("sweep/backends", "ort-cpu")).split(",")
        last_p = str(s.value("sweep/precisions", "fp32,fp16,int8")).split(",")
        self.backends = self._boxes(BACKENDS, last_b)
        self.precisions = self._boxes(PRECISIONS, last_p)
        form.addRow("Backends", self._row(self.backends))
        form.addRow("Precisions", self._row(self.precisions))
        self._addresses = {t.label: t.address() for t in saved_targets()}
        self.targets = self._boxes(["local", *self._addresses], ["local"])
        form.addRow("Targets", self._row(self.targets))
        self.iterations = QSpinBox()
        self.iterations.setRange(1, 100_000)
        self.iterations.setValue(int(s.value("sweep/iterations", 50)))
        form.addRow("Timed iterations a cell", self.iterations)
        self.search = QSpinBox()
        self.search.setRange(0, 16)
        self.search.setValue(int(s.value("sweep/search", 0)))
        self.search.setSpecialValueText("No precision search")
        self.search.setSuffix(" most sensitive nodes")
        self.search.setToolTip(
            "A precision search as a grid: each reduced precision with nothing kept in float, then with the 1..K "
            "nodes a sensitivity pass ranks most sensitive kept in float"
        )
        form.addRow("Keep in float", self.search)
        self.ray = QLineEdit(str(s.value("sweep/ray", "")))
        self.ray.setPlaceholderText("empty: a local Ray if installed, else in sequence; or a cluster's address")
        form.addRow("Ray", self.ray)
        self.count = QLabel("")
        form.addRow(self.count)
        for w in (*self.backends.values(), *self.precisions.values(), *self.targets.values()):
            w.toggled.connect(self._recount)
        self.dims.textChanged.connect(self._recount)
        self.search.valueChanged.connect(self._recount)
        b = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        b.button(QDialogButtonBox.StandardButton.Ok).setText("Run Sweep")
        b.accepted.connect(self.accept)
        b.rejected.connect(self.reject)
        form.addRow(b)
        self._recount()

    @staticmethod
    def _boxes(names: Any, on: list[str]) -> dict[str, QCheckBox]:
        out = {}
        for n in names:
            box = QCheckBox("This machine" if n == "local" else n)
            box.setChecked(n in on)
            out[n] = box
        return out

    @staticmethod
    def _row(boxes: dict[str, QCheckBox]) -> QWidget:
        w = QWidget()
        lay = QHBoxLayout(w)
        lay.setContentsMargins(0, 0, 0, 0)
        for b in boxes.values():
            lay.addWidget(b)
        lay.addStretch(1)
        return w

    def cells(self) -> list[Cell]:
        """The grid's cells (raises :class:`SplitscopeError` for dims that do not parse)."""
        assert self.gm.path is not None
        items = [p.strip() for p in self.dims.text().replace(";", " ").split() if p.strip()]
        return expand(
            [str(self.gm.path)],
            parse_dim_values(items),
            [n for n, b in self.backends.items() if b.isChecked()],
            [n for n, b in self.precisions.items() if b.isChecked()],
            [self._addresses.get(n, n) for n, b in self.targets.items() if b.isChecked()],
            iterations=self.iterations.value(),
        )

    def search_count(self) -> int:
        """K of a precision search (0: none); only with a reduced precision chosen."""
        low = any(b.isChecked() for n, b in self.precisions.items() if n != "fp32")
        return self.search.value() if low else 0

    def _recount(self) -> None:
        try:
            cells = self.cells()
            n = len(cells)
            k = self.search_count()
            if n and k:
                low = sum(1 for c in cells if c.precision != "fp32")
                n += low * k
                text = f"{n} cells at most (after a sensitivity pass ranks the nodes)"
            elif n and self.search.value():
                text = f"{n} cells (a precision search needs a reduced precision)"
            else:
                text = f"{n} cells" if n else "Choose at least one backend, precision and target."
            self.count.setText(text)
        except SplitscopeError as e:
            self.count.setText(e.message)

    def ray_address(self) -> str | None:
        s = QSettings()
        assert self.gm.path is not None
        s.setValue(f"sweep/dims/{self.gm.path.name}", self.dims.text())
        s.setValue("sweep/backends", ",".join(n for n, b in self.backends.items() if b.isChecked()))
        s.setValue("sweep/precisions", ",".join(n for n, b in self.precisions.items() if b.isChecked()))
        s.setValue("sweep/iterations", self.iterations.value())
        s.setValue("sweep/ray", self.ray.text().strip())
        s.setValue("sweep/search", self.search.value())
        return self.ray.text().strip() or None


class SweepPanel(QWidget):
    """The sweep's cells as they end: the table, and the two plots."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.summary = QLabel("Tools › Sweep… profiles the open model over a grid of dims, backends and precisions.")
        self.summary.setObjectName("sweep_summary")
        self.summary.setWordWrap(True)
        top.addWidget(self.summary, 1)
        self.export = QPushButton("Export CSV…")
        self.export.clicked.connect(self._export)
        self.export.setEnabled(False)
        top.addWidget(self.export)
        lay.addLayout(top)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("sweep_table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setSortingEnabled(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        split.addWidget(self.table)
        plots = QWidget()
        pl = QVBoxLayout(plots)
        pl.setContentsMargins(0, 0, 0, 0)
        self.by_dim = pg.PlotWidget()
        self.by_dim.setObjectName("sweep_latency_plot")
        self.by_dim.setLabel("left", "median latency (ms)")
        self.by_dim.addLegend(offset=(5, 5))
        self.front = pg.PlotWidget()
        self.front.setObjectName("sweep_pareto_plot")
        self.front.setLabel("left", "accuracy: SNR against FP32 (dB)")
        self.front.setLabel("bottom", "median latency (ms)")
        self.by_precision = pg.PlotWidget()
        self.by_precision.setObjectName("sweep_throughput_plot")
        self.by_precision.setLabel("left", "items/s")
        self.by_precision.setLabel("bottom", "precision")
        self.by_precision.addLegend(offset=(5, 5))
        for p in (self.by_dim, self.by_precision, self.front):
            p.getAxis("left").enableAutoSIPrefix(False)
            p.getAxis("bottom").enableAutoSIPrefix(False)
            p.setMinimumHeight(120)
            pl.addWidget(p, 1)
        split.addWidget(plots)
        split.setSizes([600, 500])
        lay.addWidget(split, 1)
        self.doc = SweepDoc()
        self.setMinimumHeight(160)

    def start(self, cells: list[Cell], ranking: bool = False) -> None:
        """A new sweep: every cell listed as pending; ``ranking``: a precision search ranks its nodes first (its
        cells come once it has)."""
        self.doc = SweepDoc.planned(cells)
        self.export.setEnabled(False)
        self._redraw()
        if ranking:
            self.summary.setText("Ranking the quantized nodes by sensitivity; the search's cells follow.")

    def clear(self, text: str = "") -> None:
        """Another model, without a sweep: no row or point of the last one's left."""
        self.doc = SweepDoc()
        self.export.setEnabled(False)
        self._redraw()
        self.summary.setText(text)

    def add_cell(self, cell: SweepCell) -> None:
        """A cell ended (or was reused): its row and points."""
        self.doc = self.doc.with_cell(cell)
        self._redraw()

    def set_result(self, doc: SweepDoc) -> None:
        """The finished sweep (kept as it is: a cell arriving later makes a new one, never changes this)."""
        self.doc = doc
        self.export.setEnabled(True)
        self._redraw()

    def _redraw(self) -> None:
        table = rows(self.doc)
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(table))
        for r, row in enumerate(table):
            for c, key in enumerate(COLUMNS):
                v = row[key]
                item = QTableWidgetItem()
                if key == "model":
                    item.setData(Qt.ItemDataRole.DisplayRole, Path(str(v)).name)
                    item.setToolTip(str(v))
                elif isinstance(v, bool):
                    item.setData(Qt.ItemDataRole.DisplayRole, "yes" if v else "")
                elif isinstance(v, float):
                    item.setData(Qt.ItemDataRole.DisplayRole, round(v, 4))
                else:
                    item.setData(Qt.ItemDataRole.DisplayRole, "" if v is None else v)
                if key == "status" and v not in ("done", "pending"):
                    item.setForeground(pg.mkColor(COLOURS["chart"]["alert"]))
                    item.setToolTip(str(row["error"]))
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)
        cells = self.doc.cells
        done = list(self.doc.done)
        failed = [c for c in cells if c.status not in ("done", "pending")]
        pending = len(cells) - len(done) - len(failed)
        reused = sum(1 for c in done if c.reused)
        text = f"{len(done)} of {len(cells)} cells done" + (f" ({reused} reused)" if reused else "")
        if failed:
            text += f", {len(failed)} failed or stopped (hover the status for why)"
        if pending:
            text += f", {pending} to go"
        if self.doc.runner:
            text += f"; ran on {self.doc.runner}"
        notes = " ".join(self.doc.notes)
        self.summary.setText(text + (f". {notes}" if notes else ""))
        self._plot(done)

    def _plot(self, done: list[SweepCell]) -> None:
        self.by_dim.clear()
        self.by_precision.clear()
        self.front.clear()
        if not done:
            return
        dim = next(iter(sorted(done[0].params.dims)), None)
        self.by_dim.setLabel("bottom", dim or "cell")
        series: dict[str, list[tuple[float, float]]] = {}
        for c in done:
            p = c.params
            x = float(p.dims.get(dim, c.index)) if dim else float(c.index)
            lat = latency(c)
            assert lat is not None
            where = "" if p.target == "local" else f" @{p.target.split('?')[0]}"
            key = f"{p.backend} {p.precision}{where}"
            series.setdefault(key, []).append((x, lat))
        for k, (name, pts) in enumerate(sorted(series.items())):
            pts.sort()
            pen = pg.mkPen(_PENS[k % len(_PENS)], width=2)
            self.by_dim.plot(
                [a for a, _ in pts],
                [b for _, b in pts],
                pen=pen,
                symbol="o",
                symbolBrush=_PENS[k % len(_PENS)],
                name=name,
            )
        if dim and len({x for pts in series.values() for x, _ in pts}) > 2:
            self.by_dim.setLogMode(x=True, y=False)
        # Throughput against precision: one line a workload and backend, precisions in their usual order.
        order = [q for q in PRECISIONS if any(c.params.precision == q for c in done)]
        self.by_precision.getAxis("bottom").setTicks([list(enumerate(order))])
        lines: dict[str, list[tuple[int, float]]] = {}
        for c in done:
            if c.items_per_s is None:
                continue
            label = f"{c.params.backend} {c.params.dims_text()}".strip()
            lines.setdefault(label, []).append((order.index(c.params.precision), c.items_per_s))
        for k, (name, pts) in enumerate(sorted(lines.items())):
            pts.sort()
            colour = _PENS[k % len(_PENS)]
            self.by_precision.plot(
                [a for a, _ in pts],
                [b for _, b in pts],
                pen=pg.mkPen(colour, width=2),
                symbol="s",
                symbolBrush=colour,
                name=name,
            )
        # Accuracy against latency: FP32 is the reference (infinite SNR), drawn above the best finite one. One colour
        # a workload (model and dims: only cells of one workload compete); its Pareto front joined and enlarged.
        finite = [accuracy(c) for c in done if math.isfinite(accuracy(c))]
        top = (max(finite) + 10.0) if finite else 60.0
        front = pareto(self.doc.cells)
        groups: dict[Any, list[SweepCell]] = {}
        for c in done:
            groups.setdefault(workload(c), []).append(c)
        self.front.addLegend(offset=(-5, 5))
        for k, (key, members) in enumerate(groups.items()):
            colour = _PENS[k % len(_PENS)]
            # FP32 (the reference) on top; a reduced precision whose accuracy was not measured is not drawn.
            pts = [
                (latency(c), accuracy(c) if math.isfinite(accuracy(c)) else top, c.index in front)
                for c in members
                if accuracy(c) != float("-inf")
            ]
            if not pts:
                continue
            name = " ".join(f"{d}={v}" for d, v in key[1]) or Path(key[0]).name
            self.front.addItem(
                pg.ScatterPlotItem(
                    [x for x, _, _ in pts],
                    [y for _, y, _ in pts],
                    brush=pg.mkBrush(colour),
                    size=[14 if on else 7 for *_, on in pts],
                    pen=pg.mkPen("#333333"),
                    name=name,
                )
            )
            line = sorted((x, y) for x, y, on in pts if on)
            if len(line) > 1:
                self.front.plot([x for x, _ in line], [y for _, y in line], pen=pg.mkPen(colour, width=2))
        label = pg.TextItem("FP32 = the reference", color="#555555", anchor=(0, 1))
        label.setPos(min(latency(c) or 0.0 for c in done), top)
        self.front.addItem(label)
        self.front.setTitle("Pareto front per workload: the large points (none faster and more accurate)")

    def _export(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Export the sweep", "sweep.csv", "CSV (*.csv)")
        if name:
            from splitscope.engine.report.files import write_text_atomic

            write_text_atomic(name, to_csv(self.doc))
