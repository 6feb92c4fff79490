"""The what-if planner (View › Planner): a plan for every custom node and pre/post-processing run, named
scenarios saved with the model's session, and today against each scenario in a table and a bar chart.
Partitions, boundary bytes, copies and (with a profile) the latency range are recomputed in a worker on
every change, so a 50k-node model never stalls the window; the newest change wins."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from splitscope.engine.plan.outcome import ScenarioOutcome
from splitscope.engine.plan.scenario import PLANS, Item, Scenario, evaluate, fmt_ms, items, range_text
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.engine.text import format_bytes, plural
from splitscope.gui.shell import exports
from splitscope.gui.shell.charts import pg
from splitscope.gui.shell.palette import COLOURS
from splitscope.gui.show.plans_table import PLAN_COLUMN, PlanDelegate, PlansModel

if TYPE_CHECKING:
    from splitscope.engine.model import GraphModel
    from splitscope.gui.shell.host import Shell

TODAY = "today"
COMPARE_COLUMNS = ("scenario", "partitions", "boundary bytes", "host copies", "estimated latency", "custom work")


def latency_text(doc: ScenarioOutcome) -> str:
    lat = doc.latency
    if lat is None:
        return "profile to estimate"
    return range_text(lat) + (" (measured)" if lat.exact and doc.name == TODAY else "")


def custom_work_text(doc: ScenarioOutcome, shown: int = 3) -> str:
    """A scenario's custom work for one cell: the first few items with their basis, then how many more (a large
    export can plan tens of thousands)."""
    work, basis = doc.custom_work, doc.plugin_basis
    text = ", ".join(f"{k} ({basis.get(k, 'estimate')})" for k in work[:shown])
    if len(work) > shown:
        text += f" and {len(work) - shown:,} more"
    return text or "none"


class PlannerPanel(QWidget):
    """The planner's widgets: the scenario row, the plans table, today against the scenario, the comparison."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.scenario = QComboBox()
        self.scenario.setMinimumWidth(180)
        self.new_btn = QPushButton("New Scenario…")
        self.rename_btn = QPushButton("Rename…")
        self.delete_btn = QPushButton("Delete")
        row = QHBoxLayout()
        row.addWidget(QLabel("Scenario"))
        row.addWidget(self.scenario)
        for b in (self.new_btn, self.rename_btn, self.delete_btn):
            row.addWidget(b)
        row.addStretch(1)
        self.table = QTableView()
        self.plans = PlansModel(self.table)
        self.table.setModel(self.plans)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        triggers = QAbstractItemView.EditTrigger
        self.table.setEditTriggers(triggers.DoubleClicked | triggers.SelectedClicked | triggers.EditKeyPressed)
        self.summary = QLabel("Open a model: its custom nodes get a plan here.")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.compare = QTableWidget(0, len(COMPARE_COLUMNS))
        self.compare.setHorizontalHeaderLabels(list(COMPARE_COLUMNS))
        self.compare.horizontalHeader().setSectionResizeMode(5, QHeaderView.ResizeMode.Stretch)
        self.compare.verticalHeader().setVisible(False)
        self.compare.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.chart = pg.PlotWidget()
        self.chart.setMinimumHeight(80)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.6, width=[], brush=COLOURS["chart"]["primary"])
        self.chart.addItem(self.bars)
        self.chart.getAxis("left").setWidth(110)
        self.csv_plans = QPushButton("Export Plans CSV…")
        self.csv_compare = QPushButton("Export Comparison CSV…")
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(row)
        lv.addWidget(self.table, 1)
        lv.addWidget(self.summary)
        right = QTabWidget()
        cmp_box = QWidget()
        cv = QVBoxLayout(cmp_box)
        cv.setContentsMargins(0, 0, 0, 0)
        cv.addWidget(self.compare, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.csv_plans)
        buttons.addWidget(self.csv_compare)
        buttons.addStretch(1)
        cv.addLayout(buttons)
        right.addTab(cmp_box, "Today against the scenarios")
        right.addTab(self.chart, "Chart")
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([620, 480])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(split)


class PlannerUi(QObject):
    """Builds and runs the planner."""

    evaluated = Signal()
    """New figures are shown (tests wait on it)."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = shell.controller
        self.panel = PlannerPanel()
        self._delegate = PlanDelegate(self.panel.plans, self.set_plan, self.panel.table)
        self.panel.table.setItemDelegateForColumn(PLAN_COLUMN, self._delegate)
        self.dock = shell.add_dock("Planner", self.panel)  # a tab beside Ops: the full width for the plans
        self.dock.visibilityChanged.connect(self._grow)
        self.controller.model_ready.connect(self.model_changed)
        self.controller.kernel_ready.connect(lambda *_: self.recompute() if self.gm is not None else None)
        self.gm: GraphModel | None = None
        self.items: list[Item] = []
        self.scenarios: list[Scenario] = []
        self.results: list[ScenarioOutcome] = []
        self._generation = 0
        self._loading = False
        p = self.panel
        p.scenario.currentIndexChanged.connect(lambda _i: (self._show_plans(), self._summary()))
        p.new_btn.clicked.connect(lambda: self.new_scenario())
        p.rename_btn.clicked.connect(self._rename)
        p.delete_btn.clicked.connect(self._delete)
        p.csv_plans.clicked.connect(lambda: exports.ask_and_save_csv(self.shell.window(), p.table, "plans"))
        p.csv_compare.clicked.connect(lambda: exports.ask_and_save_csv(self.shell.window(), p.compare, "scenarios"))

    def _grow(self, visible: bool) -> None:
        """Shown, the planner takes the height its scenario row, plans and summary need (the canvas keeps
        the rest); the Ops tab keeps its own height."""
        if visible and self.dock.height() < 260:
            self.shell.resizeDocks([self.dock], [300], Qt.Orientation.Vertical)

    # ------------------------------------------------------------ model
    def model_changed(self, gm: GraphModel, *_: Any) -> None:
        """A model was analysed: its items and its saved scenarios, found in a worker (tens of thousands of custom
        nodes in a large export), then shown."""
        from splitscope.engine.plan.store import load_scenarios

        self.gm = gm
        self.items, self.scenarios, self.results = [], [], []
        self._generation += 1  # a recompute of the previous model still running is not shown
        self._loading = True  # its scenarios are not read yet: a new one now would be saved over them
        self.panel.new_btn.setEnabled(False)
        self._fill_scenarios(0)

        def work() -> tuple[GraphModel, list[Item], list[Scenario]]:
            its = sorted(items(gm), key=lambda it: it.kind != "plugin")  # the custom nodes first
            return gm, its, load_scenarios(gm.path) if gm.path is not None else []

        self._start(work, self._items_ready)

    def _items_ready(self, res: tuple[GraphModel, list[Item], list[Scenario]]) -> None:
        gm, its, scenarios = res
        if gm is not self.gm:
            return  # another model came meanwhile
        self.items, self.scenarios = its, scenarios
        self._loading = False
        self.panel.new_btn.setEnabled(True)
        self._fill_scenarios(0)
        self.recompute()

    def _start(self, work: Any, done: Any) -> None:
        from splitscope.profiler.workers import function_worker

        worker = function_worker(work)
        worker.returned.connect(done)
        worker.errored.connect(lambda e: self.shell.show_message(f"Planner: {e}", 8000))
        worker.start()

    def profile(self) -> ProfileDoc | None:
        """The profile shown in the Profile panel, when it is of this model (and at its dims)."""
        res = self.controller.results
        shown = res.profiles.get(res.shown_profile) if res.shown_profile is not None else None
        if shown is None or self.gm is None:
            return None
        from splitscope.engine.errors import SplitscopeError
        from splitscope.engine.present.inputs import check_same_model

        try:
            check_same_model(self.gm, shown.json, "profile", "the shown profile")
        except SplitscopeError:
            return None
        return shown

    def refresh_plans(self) -> None:
        """A profile came: the plans' latency ranges change."""
        self._show_plans()
        self.recompute()

    def current(self) -> Scenario | None:
        k = self.panel.scenario.currentIndex()
        return self.scenarios[k - 1] if k >= 1 and k - 1 < len(self.scenarios) else None

    # -------------------------------------------------------- scenarios
    def new_scenario(self, name: str | None = None) -> Scenario | None:
        """A new scenario starting from the suggested plans (a shipped plugin where one serves exactly)."""
        if self.gm is None or self._loading:
            return None
        if name is None:
            name, ok = QInputDialog.getText(
                self.shell.window(), "New scenario", "Name:", text=f"plan {chr(ord('A') + len(self.scenarios) % 26)}"
            )
            if not ok or not name.strip():
                return None
        name = self._unique(name.strip())
        s = Scenario(name, {it.key: it.suggested for it in self.items if it.suggested != it.today})
        self.scenarios.append(s)
        self._save()
        self._fill_scenarios(len(self.scenarios))
        self.recompute()
        return s

    def set_plan(self, key: str, plan: str) -> None:
        """Choose ``plan`` for item ``key`` in the current scenario, and recompute."""
        s = self.current()
        if s is None or plan not in PLANS:
            return
        it = next((i for i in self.items if i.key == key), None)
        if it is None or plan not in it.options:
            return
        if plan == it.today:
            s.plans.pop(key, None)
        else:
            s.plans[key] = plan
        m = self.panel.plans
        if m.rowCount():
            m.dataChanged.emit(m.index(0, PLAN_COLUMN), m.index(m.rowCount() - 1, PLAN_COLUMN))
        self._save()
        self.recompute()

    def _unique(self, name: str) -> str:
        taken = {s.name for s in self.scenarios} | {TODAY}
        base, k = name, 2
        while name in taken:
            name, k = f"{base} ({k})", k + 1
        return name

    def _rename(self) -> None:
        s = self.current()
        if s is None:
            return
        name, ok = QInputDialog.getText(self.shell.window(), "Rename scenario", "Name:", text=s.name)
        if ok and name.strip() and name.strip() != s.name:
            s.name = self._unique(name.strip())
            self._save()
            self._fill_scenarios(self.scenarios.index(s) + 1)
            self.recompute()

    def _delete(self) -> None:
        s = self.current()
        if s is not None:
            self.scenarios.remove(s)
            self._save()
            self._fill_scenarios(0)
            self.recompute()

    def _save(self) -> None:
        if self.gm is not None and self.gm.path is not None:
            from splitscope.engine.plan.store import save_scenarios

            try:
                save_scenarios(self.gm.path, self.scenarios)
            except OSError as e:
                self.shell.show_message(f"Could not save the scenarios: {e.strerror or e}", 8000)

    def _fill_scenarios(self, index: int) -> None:
        box = self.panel.scenario
        box.blockSignals(True)
        box.clear()
        box.addItem(f"{TODAY} (as exported)")
        for s in self.scenarios:
            box.addItem(s.name)
        box.setCurrentIndex(min(index, box.count() - 1))
        box.blockSignals(False)
        self._show_plans()

    # ------------------------------------------------------------ table
    def _show_plans(self) -> None:
        p, s = self.panel, self.current()
        editable = s is not None
        p.rename_btn.setEnabled(editable)
        p.delete_btn.setEnabled(editable)
        prof = self.profile()
        ms = {r.name: r.ms for r in prof.per_node} if prof is not None else {}
        gm = self.gm
        measured = (
            [sum(ms.get(gm.nodes[i].name, 0.0) for i in it.nodes) or None for it in self.items]
            if gm is not None and ms
            else []
        )
        p.plans.reset(self.items, s.plans if s is not None else None, measured)
        p.table.resizeColumnToContents(0)
        p.table.resizeColumnToContents(PLAN_COLUMN)

    # -------------------------------------------------------- recompute
    def recompute(self) -> None:
        """Evaluate today and every scenario in a worker; the newest request wins."""
        if self.gm is None:
            return
        self._generation += 1
        gen, gm, its, prof = self._generation, self.gm, list(self.items), self.profile()
        scen = [Scenario(TODAY)] + [Scenario(s.name, dict(s.plans)) for s in self.scenarios]
        answers = self.shell.controller.results.plugin_answers()

        def work() -> tuple[int, list[ScenarioOutcome]]:
            return gen, [evaluate(gm, s, prof, its, answers) for s in scen]

        self._start(work, self._evaluated)

    def _evaluated(self, res: tuple[int, list[ScenarioOutcome]]) -> None:
        gen, docs = res
        if gen != self._generation:
            return
        self.results = docs
        p = self.panel
        p.compare.setRowCount(len(docs))
        for r, d in enumerate(docs):
            cells = [
                d.name,
                str(d.partitions),
                format_bytes(d.boundary_bytes),
                fmt_ms(d.host_copy_ms) if d.host_copy_ms else "none",
                latency_text(d),
                custom_work_text(d),
            ]
            for c, text in enumerate(cells):
                p.compare.setItem(r, c, QTableWidgetItem(text))
        p.compare.resizeColumnsToContents()
        self._chart(docs)
        self._summary()
        self.evaluated.emit()

    def _summary(self) -> None:
        """Today against the scenario the combo shows (again whenever the combo changes)."""
        if not self.results:
            return
        s = self.current()
        today = self.results[0]
        mine = next((d for d in self.results if s is not None and d.name == s.name), today)
        self.panel.summary.setText(self.summary_html(today, mine))

    def summary_html(self, today: ScenarioOutcome, mine: ScenarioOutcome) -> str:
        def line(d: ScenarioOutcome) -> str:
            copies = f"host copies {fmt_ms(d.host_copy_ms)}" if d.host_copy_ms else "no host copies"
            return (
                f"<b>{html.escape(d.name)}</b>: {plural(d.partitions, 'partition')}, "
                f"{format_bytes(d.boundary_bytes)} crossing them, {copies}, latency {latency_text(d)}"
            )

        out = line(today)
        if mine is not today:
            out += "<br>" + line(mine)
            lat = mine.latency
            if lat and lat.saves_at_most_ms >= 0:
                out += f"<br>saves at most <b>{fmt_ms(lat.saves_at_most_ms)}</b> of {fmt_ms(lat.today_ms)}"
            elif lat:
                out += f"<br>adds at least <b>{fmt_ms(-lat.saves_at_most_ms)}</b> to {fmt_ms(lat.today_ms)}"
        else:
            out += "<br>Make or pick a scenario to compare it with today."
        src = mine.latency
        note = f"copies at {mine.copy_gbps:g} GB/s ({mine.copy_source})"
        if src:
            note += f"; latency: {src.source}; not priced: {src.not_priced}"
        return out + f"<br><i>{html.escape(note)}</i>"

    def _chart(self, docs: list[ScenarioOutcome]) -> None:
        p = self.panel
        ranges = [d.latency for d in docs]
        lat = all(r is not None for r in ranges)
        vals = [
            r.high_ms if r is not None and lat else d.boundary_bytes / 1e3 for d, r in zip(docs, ranges, strict=True)
        ]
        colours = [COLOURS["chart"]["today"]] + [COLOURS["chart"]["primary"]] * (len(docs) - 1)
        p.bars.setOpts(
            x0=[0] * len(docs),
            y=list(range(len(docs))),
            width=vals,
            height=0.6,
            brushes=[pg.mkBrush(c) for c in colours],
        )
        p.chart.getAxis("left").setTicks([[(k, d.name) for k, d in enumerate(docs)]])
        p.chart.setLabel(
            "bottom",
            "estimated latency (upper end)" if lat else "bytes crossing engine boundaries",
            units="ms" if lat else "kB",
        )
        p.chart.getPlotItem().invertY(True)
        p.chart.autoRange()
