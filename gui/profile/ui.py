"""The window's profiling: the Jobs and Profile panels, Tools › Profile…, the canvas's colour modes
(status, time share, a comparison of two runs) and the comparison table."""

from __future__ import annotations

import contextlib
import html
import math
from collections import ChainMap
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDialog, QTableWidget, QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget
from splitscope.engine.model import GraphModel
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.engine.view.layout import View
from splitscope.engine.view.rollup import sums_up
from splitscope.gui.canvas.render import Heat
from splitscope.gui.profile.dialog import ProfileDialog
from splitscope.gui.profile.generation import GenerationUi
from splitscope.gui.profile.jobs import JobsPanel
from splitscope.gui.profile.panel import ProfilePanel
from splitscope.gui.shell.exports import add_csv_menu
from splitscope.gui.shell.lazy import LazyPanel
from splitscope.profiler.profiling import ProfileRequest
from splitscope.profiler.queue import JobKind, JobState

if TYPE_CHECKING:
    from splitscope.gui.shell.host import Shell


def _node_ms(doc: ProfileDoc) -> dict[int, float]:
    return {r.index: r.ms for r in doc.per_node if r.index is not None}


def time_share_heat(view: View, doc: ProfileDoc) -> Heat:
    """Nodes by their share of the measured node time, blocks by the sum of theirs, each scaled to the largest of
    its kind (the legend's end names both)."""
    node_ms = _node_ms(doc)
    total = sum(node_ms.values()) or 1.0
    groups = sums_up(view.hier, node_ms)
    top_node = max(node_ms.values(), default=1.0) or 1.0
    top_group = max((v for g, v in groups.items() if g != 0), default=1.0) or 1.0
    return Heat(
        {i: ms / top_node for i, ms in node_ms.items()},
        {g: v / top_group for g, v in groups.items()},
        f"time share ({doc.backend})",
        False,
        "0%",
        f"node {top_node / total:.1%} · block {top_group / total:.0%}",
    )


def diff_heat(view: View, da: ProfileDoc, db: ProfileDoc) -> Heat:
    """Nodes and blocks by log2 of run B's time over run A's (blue: B faster, vermillion: B slower)."""
    ma, mb = _node_ms(da), _node_ms(db)
    both = [i for i in ma.keys() & mb.keys() if ma[i] > 0 and mb[i] > 0 and i < len(view.hier.node_group)]
    nodes = {i: max(-1.0, min(1.0, math.log2(mb[i] / ma[i]) / 2)) for i in both}
    ga, gb = sums_up(view.hier, {i: ma[i] for i in both}), sums_up(view.hier, {i: mb[i] for i in both})
    groups = {g: max(-1.0, min(1.0, math.log2(gb[g] / ga[g]) / 2)) for g in ga if ga[g] > 0 and gb.get(g, 0) > 0}
    return Heat(nodes, groups, f"{db.backend} vs {da.backend}", True, "B 4x faster", "B 4x slower")


def compare_rows(a: ProfileDoc, b: ProfileDoc, key: str) -> list[tuple[str, float, float]]:
    """(name, A ms, B ms) per op type (``key="op_type"``) or per node (``"name"``), largest first."""

    def agg(r: ProfileDoc) -> dict[str, float]:
        out: dict[str, float] = {}
        for row in r.per_node:
            k = row.op_type if key == "op_type" else row.name
            out[k] = out.get(k, 0.0) + row.ms
        return out

    xa, xb = agg(a), agg(b)
    names = sorted(xa.keys() | xb.keys(), key=lambda n: -(xa.get(n, 0) + xb.get(n, 0)))
    return [(n, xa.get(n, 0.0), xb.get(n, 0.0)) for n in names]


class CompareDialog(QDialog):
    """Two profiles side by side: per op type and per node, A, B and B/A."""

    def __init__(self, a: ProfileDoc, b: ProfileDoc, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Compare: A {a.backend} ({a.started}) · B {b.backend} ({b.started})")
        self.resize(760, 520)
        tabs = QTabWidget()
        for key, label in (("op_type", "By op type"), ("name", "By node")):
            rows = compare_rows(a, b, key)
            t = QTableWidget(len(rows) + 1, 4)
            t.setHorizontalHeaderLabels([label[3:], "A ms", "B ms", "B / A"])
            add_csv_menu(t, "profile-comparison")
            la, lb = a.latency.mean, b.latency.mean
            for r, (name, x, y) in enumerate([("latency (mean)", la, lb), *rows]):
                t.setItem(r, 0, QTableWidgetItem(name))
                for c, v in ((1, x), (2, y)):
                    it = QTableWidgetItem(f"{v:.4f}")
                    it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    t.setItem(r, c, it)
                ratio = QTableWidgetItem(f"{y / x:.2f}x" if x > 0 and y > 0 else "—")
                ratio.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                ratio.setToolTip("B faster" if 0 < y < x else "B slower" if y > x > 0 else "")
                t.setItem(r, 3, ratio)
            t.resizeColumnsToContents()
            tabs.addTab(t, label)
        lay = QVBoxLayout(self)
        lay.addWidget(tabs)


class ProfilingUi(QObject):
    """The profiling parts of the window: the Jobs and Profile panels, Tools › Profile…, the time-share and
    comparison colourings; the controller runs the profiles and keeps their results."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = c = shell.controller
        self.jobs = JobsPanel(c.queue)
        self.jobs_dock = shell.add_dock("Jobs", self.jobs)
        self._panel = LazyPanel(shell, "Profile", ProfilePanel, self._wire)  # built when first needed
        self._node_ops: ChainMap[str, str] = ChainMap()
        self.profile_dock = self._panel.dock
        self.diff_pair: tuple[int, int] | None = None
        c.queue.sample.connect(self._sample)
        c.queue.changed.connect(self._job_changed)
        c.profile_ready.connect(self._result)
        c.model_ready.connect(self.model_changed)
        self.jobs.selection_changed.connect(self._selected)
        self.jobs.compare_requested.connect(self.compare)
        self.generation = GenerationUi(shell)
        shell.colours.add("time", "&Time Share (last profile)", self._time_heat)
        shell.colours.add("diff", "&Comparison of Two Profiles", self._diff_heat)

    @property
    def panel(self) -> ProfilePanel:
        """The Profile panel (built at the first use)."""
        return self._panel.get()

    def _wire(self, panel: ProfilePanel) -> None:
        panel.node_selected.connect(self._select_node)
        panel.node_ops = getattr(self, "_node_ops", ChainMap())
        shown = self.controller.results.shown_profile
        if shown is not None and shown in self.results:  # the model's last profile, kept while the panel was not built
            rec = self.controller.queue.jobs.get(shown)
            panel.show_result(shown, self.results[shown], rec.title if rec else "Profile")

    def _sample(self, jid: int, s: Any) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if self._panel.built or (rec is not None and rec.kind == JobKind.PROFILE):
            self.panel.add_sample(jid, s)

    @property
    def results(self) -> dict[int, ProfileDoc]:
        """The open model's profiles by job id."""
        return self.controller.results.profiles

    @property
    def shown(self) -> int | None:
        """The profile the Profile panel shows."""
        return self.controller.results.shown_profile

    def add_actions(self, tools: Any, view: Any) -> None:
        """Tools › Profile…"""
        self.profile_action = self.shell.add_action(tools, "&Profile…", self.ask, "Ctrl+P")
        self.profile_action.setToolTip("Time the model on this machine: latency, per-node time, copies, verdict")
        self.generation.add_actions(tools)

    def _time_heat(self, view: View) -> Heat | None:
        return time_share_heat(view, self.results[self.shown]) if self.shown in self.results else None

    def _diff_heat(self, view: View) -> Heat | None:
        if self.diff_pair is None or not all(k in self.results for k in self.diff_pair):
            return None
        a, b = self.diff_pair
        return diff_heat(view, self.results[a], self.results[b])

    # ------------------------------------------------------------ actions
    def available(self) -> dict[str, str]:
        """Which backends can run here ("" when one can, else why not)."""
        st = self.shell.dep_status.get("ort-cuda")
        cuda_ok = st is not None and st.ready
        return {
            "ort-cpu": "",
            "ort-cuda": "" if cuda_ok else "needs onnxruntime-gpu and an NVIDIA GPU",
            "tensorrt": "running an engine needs TensorRT and an NVIDIA GPU (not here)",
            "rtx": "running an engine needs TensorRT-RTX and a GPU it supports (not here)",
        }

    def ask(self) -> None:
        """Open the Profile dialog for the model on screen and queue what it asks for."""
        gm = self.controller.graph_model
        if gm is None or gm.path is None:
            self.shell.show_message("Open a model first.", 5000)
            return
        from splitscope.engine.runtime.store import model_key

        try:
            key = model_key(gm.path)
        except OSError as e:
            self.shell.show_failure(f"Cannot read {gm.path.name} ({e.strerror or e}): is it still there?")
            return
        dlg = ProfileDialog(gm, key, self.available(), self.shell.window())
        if dlg.exec() == QDialog.DialogCode.Accepted:
            self.submit(dlg.request())

    def submit(self, req: ProfileRequest) -> int:
        """Queue a profile and follow it in the Profile panel."""
        jid = self.controller.submit_profile(req)
        self.profile_dock.raise_()
        return jid

    def model_changed(self, gm: GraphModel, *_: Any) -> None:
        """A model was opened: its saved profiles come back in the Jobs panel; its nodes' op types, for the live
        plot's labels, are gathered in a worker (200k nodes: a third of a second on the UI thread)."""
        from splitscope.profiler.workers import function_worker

        self._node_ops = ChainMap()
        if self._panel.built:
            self.panel.node_ops = self._node_ops
            if self.panel.doc is None or not self._of_open_model(self.panel.doc):
                self.panel.reset(gm.path.name if gm.path else "this model")  # its saved profiles come back below

        def ops() -> tuple[GraphModel, list[dict[str, str]]]:
            # In dicts of a step each: one dict of a million names grows in single calls that hold the interpreter
            # for a tenth of a second (the window's thread waiting).
            nodes, step = gm.nodes, 50_000
            return gm, [
                {nodes[i].label: nodes[i].op_type for i in range(at, min(at + step, len(nodes)))}
                for at in range(0, len(nodes), step)
            ]

        worker = function_worker(ops)
        worker.returned.connect(self._ops_ready)
        worker.start()
        self.diff_pair = None
        with contextlib.suppress(OSError):
            self.controller.profiling.reload(gm.path)

    def _of_open_model(self, doc: ProfileDoc) -> bool:
        """Whether ``doc`` is a profile of the model open now; True when no model is open."""
        gm = self.controller.graph_model
        return gm is None or gm.path is None or doc.of_model(gm.path)

    def _ops_ready(self, res: tuple[GraphModel, list[dict[str, str]]]) -> None:
        gm, parts = res
        if gm is not self.controller.graph_model:
            return  # another model came meanwhile
        self._node_ops.maps.extend(parts)  # the panel's too: after what a finished profile's rows said (the first map)

    def compare(self, a: int, b: int) -> None:
        """The comparison table of two finished profiles, and the canvas coloured by it."""
        ra, rb = self.results.get(a), self.results.get(b)
        if ra is None or rb is None:
            return
        self.diff_pair = (a, b)
        self._compare_box = CompareDialog(ra, rb, self.shell.window())
        self._compare_box.show()
        self.controller.set_colour_mode("diff")

    def set_colour(self, mode: str) -> None:
        """Colour the canvas by a mode (the controller holds it; View › Colour by paints it)."""
        self.controller.set_colour_mode(mode)

    # ------------------------------------------------------------ events
    def _job_changed(self, jid: int) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if (
            rec is not None
            and rec.kind == JobKind.PROFILE
            and rec.state == JobState.RUNNING
            and self.panel.live_id != jid
        ):
            self.panel.start_live(jid, rec.title)

    def _result(self, jid: int, doc: ProfileDoc) -> None:
        rec = self.controller.queue.jobs.get(jid)
        if rec is not None and rec.kind != JobKind.PROFILE and not self._panel.built:
            return  # a saved profile coming back with its model: shown when the panel is first built
        if not self._of_open_model(doc):
            return  # a profile of a model no longer open: it stays in the Jobs panel, not in this model's panel
        self.panel.show_result(jid, doc, rec.title if rec else "Profile")
        self.shell.show_message(
            f"Profile: {doc.latency.mean:.3f} ms mean on {doc.backend}; {doc.verdict.verdict}: {doc.verdict.why}"[:200],
            10000,
        )
        if self.controller.colour_mode in ("time", "status"):
            self.controller.set_colour_mode("time")

    def _selected(self, ids: list[int]) -> None:
        if len(ids) == 1 and ids[0] in self.results:
            rec = self.controller.queue.jobs.get(ids[0])
            self.controller.show_profile(ids[0])
            self.panel.show_result(ids[0], self.results[ids[0]], rec.title if rec else "Profile")
            if self.controller.colour_mode == "time":
                self.controller.set_colour_mode("time")

    def _select_node(self, index: int) -> None:
        gm = self.controller.graph_model
        if gm is not None and 0 <= index < len(gm.nodes):
            self.shell.canvas.select_node(index)
            self.shell.inspector.show_node(index)

    def summary_text(self) -> str:
        """The shown profile's verdict in a line (tests, status)."""
        r = self.results.get(self.shown or -1)
        return html.unescape(r.verdict.verdict) if r else ""
