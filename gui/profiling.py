"""The window's profiling: the Jobs and Profile panels, Tools › Profile…, the canvas's colour modes
(status, time share, a comparison of two runs) and the comparison table."""

from __future__ import annotations

import contextlib
import html
import math
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QDialog, QDockWidget, QTableWidget, QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget
from splitscope.engine.model import GraphModel
from splitscope.engine.view.layout import View
from splitscope.gui.exports import add_csv_menu
from splitscope.gui.jobs_panel import JobsPanel
from splitscope.gui.profile_dialog import ProfileDialog
from splitscope.gui.profile_panel import ProfilePanel
from splitscope.gui.render import Heat
from splitscope.profiler.profiling import ProfileRequest, Profiling
from splitscope.profiler.queue import JobQueue

if TYPE_CHECKING:
    from splitscope.gui.app import MainWindow


def time_share_heat(view: View, result: dict[str, Any]) -> Heat:
    """Nodes by their share of the measured node time, blocks by the sum of theirs, scaled to the largest."""
    node_ms = {r["index"]: r["ms"] for r in result.get("per_node", []) if r.get("index") is not None}
    total = sum(node_ms.values()) or 1.0
    groups: dict[int, float] = {}
    hier = view.hier
    for i, ms in node_ms.items():
        if i >= len(hier.node_group):
            continue
        for g in hier.path(hier.node_group[i]):
            groups[g] = groups.get(g, 0.0) + ms
    top_node = max(node_ms.values(), default=1.0) or 1.0
    top_group = max((v for g, v in groups.items() if g != 0), default=1.0) or 1.0
    return Heat({i: ms / top_node for i, ms in node_ms.items()}, {g: v / top_group for g, v in groups.items()},
                f"time share ({result.get('backend', '')})", False, "0%", f"{top_node / total:.1%} (a node)")


def diff_heat(view: View, a: dict[str, Any], b: dict[str, Any]) -> Heat:
    """Nodes and blocks by log2 of run B's time over run A's (blue: B faster, vermillion: B slower)."""
    ma = {r["index"]: r["ms"] for r in a.get("per_node", []) if r.get("index") is not None}
    mb = {r["index"]: r["ms"] for r in b.get("per_node", []) if r.get("index") is not None}
    hier = view.hier
    ga: dict[int, float] = {}
    gb: dict[int, float] = {}
    nodes: dict[int, float] = {}
    for i in ma.keys() & mb.keys():
        if ma[i] > 0 and mb[i] > 0 and i < len(hier.node_group):
            nodes[i] = max(-1.0, min(1.0, math.log2(mb[i] / ma[i]) / 2))
            for g in hier.path(hier.node_group[i]):
                ga[g] = ga.get(g, 0.0) + ma[i]
                gb[g] = gb.get(g, 0.0) + mb[i]
    groups = {g: max(-1.0, min(1.0, math.log2(gb[g] / ga[g]) / 2)) for g in ga if ga[g] > 0 and gb.get(g, 0) > 0}
    return Heat(nodes, groups, f"{b.get('backend')} vs {a.get('backend')}", True, "B 4x faster", "B 4x slower")


def compare_rows(a: dict[str, Any], b: dict[str, Any], key: str) -> list[tuple[str, float, float]]:
    """(name, A ms, B ms) per op type (``key="op_type"``) or per node (``"name"``), largest first."""
    def agg(r: dict[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        for row in r.get("per_node", []):
            out[row[key]] = out.get(row[key], 0.0) + row["ms"]
        return out
    xa, xb = agg(a), agg(b)
    names = sorted(xa.keys() | xb.keys(), key=lambda n: -(xa.get(n, 0) + xb.get(n, 0)))
    return [(n, xa.get(n, 0.0), xb.get(n, 0.0)) for n in names]


class CompareDialog(QDialog):
    """Two profiles side by side: per op type and per node, A, B and B/A."""

    def __init__(self, a: dict[str, Any], b: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Compare: A {a.get('backend')} ({a.get('started', '')}) · "
                            f"B {b.get('backend')} ({b.get('started', '')})")
        self.resize(760, 520)
        tabs = QTabWidget()
        for key, label in (("op_type", "By op type"), ("name", "By node")):
            rows = compare_rows(a, b, key)
            t = QTableWidget(len(rows) + 1, 4)
            t.setHorizontalHeaderLabels([label[3:], "A ms", "B ms", "B / A"])
            add_csv_menu(t, "profile-comparison")
            la, lb = a.get("latency_ms", {}).get("mean", 0.0), b.get("latency_ms", {}).get("mean", 0.0)
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
    """Builds and wires the profiling parts of the window."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.queue = JobQueue(self)
        self.profiling = Profiling(self.queue, self)
        self.jobs = JobsPanel(self.queue)
        self.panel = ProfilePanel()
        self.jobs_dock = window._dock("Jobs", self.jobs, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.profile_dock = window._dock("Profile", self.panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        # Tabbed with the Ops panel: the canvas keeps its size (the first view is fitted to it).
        ops = window.findChild(QDockWidget, "dock_Ops")
        if ops is not None:
            window.tabifyDockWidget(ops, self.jobs_dock)
        window.tabifyDockWidget(self.jobs_dock, self.profile_dock)
        if ops is not None:
            ops.raise_()
        self.results: dict[int, dict[str, Any]] = {}
        self.shown: int | None = None
        self.colour_sources: dict[str, Any] = {}
        """Colour modes other parts add (engine layer, precision): key -> ``heat(view)``."""
        self.queue.sample.connect(self.panel.add_sample)
        self.queue.changed.connect(self._job_changed)
        self.queue.failed.connect(lambda _jid, msg, det: window._on_failed(msg, det))
        self.profiling.result_ready.connect(self._result)
        self.jobs.selection_changed.connect(self._selected)
        self.jobs.compare_requested.connect(self.compare)
        self.panel.node_selected.connect(self._select_node)

    def add_actions(self, tools: Any, view: Any) -> None:
        """Tools › Profile…; View › Colour by."""
        self.profile_action = self.window._action(tools, "&Profile…", self.ask, "Ctrl+P")
        self.profile_action.setToolTip("Time the model on this machine: latency, per-node time, copies, verdict")
        self.colour_menu = view.addMenu("Colour &by")
        self.colour_group = QActionGroup(self)
        self.colour_actions: dict[str, QAction] = {}
        for key, text in (("status", "&Status"), ("time", "&Time Share (last profile)"),
                          ("diff", "&Comparison of Two Profiles")):
            self.add_colour_mode(key, text)
        self.colour_actions["status"].setChecked(True)
        self.diff_pair: tuple[int, int] | None = None

    def add_colour_mode(self, key: str, text: str, heat: Any = None) -> QAction:
        """A View › Colour by entry; ``heat(view) -> Heat | None`` colours the canvas for it."""
        act = QAction(text, self, checkable=True)
        act.triggered.connect(lambda _=False, k=key: self.set_colour(k))
        self.colour_group.addAction(act)
        self.colour_menu.addAction(act)
        self.colour_actions[key] = act
        if heat is not None:
            self.colour_sources[key] = heat
        return act

    # ------------------------------------------------------------ actions
    def available(self) -> dict[str, str]:
        """Which backends can run here ("" when one can, else why not)."""
        st = self.window.dep_status.get("ort-cuda")
        cuda_ok = st is not None and st.ready
        return {"ort-cpu": "", "ort-cuda": "" if cuda_ok else "needs onnxruntime-gpu and an NVIDIA GPU",
                "tensorrt": "running an engine needs TensorRT and an NVIDIA GPU (not here)",
                "rtx": "running an engine needs TensorRT-RTX and a GPU it supports (not here)"}

    def ask(self) -> None:
        """Open the Profile dialog for the model on screen and queue what it asks for."""
        gm = self.window.graph_model
        if gm is None or gm.path is None:
            self.window.statusBar().showMessage("Open a model first.", 5000)
            return
        from splitscope.engine.runtime.store import model_key

        try:
            key = model_key(gm.path)
        except OSError as e:
            self.window._on_failed(f"Cannot read {gm.path.name} ({e.strerror or e}): is it still there?", "")
            return
        dlg = ProfileDialog(gm, key, self.available(), self.window)
        if dlg.exec() == QDialog.DialogCode.Accepted:
            self.submit(dlg.request())

    def submit(self, req: ProfileRequest) -> int:
        """Queue a profile and follow it in the Profile panel."""
        jid = self.profiling.submit(req)
        self.profile_dock.raise_()
        return jid

    def model_changed(self, gm: GraphModel) -> None:
        """A model was opened: its saved profiles come back in the Jobs panel."""
        self.results.clear()
        self.panel.node_ops = {n.label: n.op_type for n in gm.nodes}
        self.set_colour("status")
        if gm.path is not None:
            with contextlib.suppress(OSError):
                self.profiling.reload(gm.path)

    def compare(self, a: int, b: int) -> None:
        """The comparison table of two finished profiles, and the canvas coloured by it."""
        ra, rb = self.results.get(a), self.results.get(b)
        if ra is None or rb is None:
            return
        self.diff_pair = (a, b)
        self._compare_box = CompareDialog(ra, rb, self.window)
        self._compare_box.show()
        self.set_colour("diff")

    def set_colour(self, mode: str) -> None:
        """Colour the canvas by status, by the shown profile's time share, or by the last comparison."""
        view = self.window.view
        heat = None
        if view is not None and mode == "time" and self.shown in self.results:
            heat = time_share_heat(view, self.results[self.shown])
        elif view is not None and mode == "diff" and self.diff_pair is not None:
            a, b = self.diff_pair
            if a in self.results and b in self.results:
                heat = diff_heat(view, self.results[a], self.results[b])
        elif view is not None and mode in self.colour_sources:
            heat = self.colour_sources[mode](view)
        if heat is None:
            mode = "status"
        if hasattr(self, "colour_actions"):
            self.colour_actions[mode].setChecked(True)
        self.window.canvas.set_heat(heat)

    # ------------------------------------------------------------ events
    def _job_changed(self, jid: int) -> None:
        rec = self.queue.jobs.get(jid)
        if rec is not None and rec.kind == "profile" and rec.state == "running" and self.panel.live_id != jid:
            self.panel.start_live(jid, rec.title)

    def _result(self, jid: int, result: dict[str, Any]) -> None:
        self.results[jid] = result
        rec = self.queue.jobs.get(jid)
        self.shown = jid
        self.panel.show_result(jid, result, rec.title if rec else "Profile")
        v = result.get("verdict", {})
        self.window.statusBar().showMessage(
            f"Profile: {result.get('latency_ms', {}).get('mean', 0):.3f} ms mean on {result.get('backend')}; "
            f"{v.get('verdict', '')}: {v.get('why', '')}"[:200], 10000)
        if self.colour_actions["time"].isChecked() or self.colour_actions["status"].isChecked():
            self.set_colour("time")

    def _selected(self, ids: list[int]) -> None:
        if len(ids) == 1 and ids[0] in self.results:
            rec = self.queue.jobs.get(ids[0])
            self.shown = ids[0]
            self.panel.show_result(ids[0], self.results[ids[0]], rec.title if rec else "Profile")
            if self.colour_actions["time"].isChecked():
                self.set_colour("time")

    def _select_node(self, index: int) -> None:
        w = self.window
        if w.graph_model is not None and 0 <= index < len(w.graph_model.nodes):
            w.canvas.select_node(index)
            w.inspector.show_node(index)

    def summary_text(self) -> str:
        """The shown profile's verdict in a line (tests, status)."""
        r = self.results.get(self.shown or -1)
        return html.unescape(r["verdict"]["verdict"]) if r else ""
