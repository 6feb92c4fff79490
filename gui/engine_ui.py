"""What TensorRT did, in the window: File › Import Engine Data… (and drag and drop), Compare With Engine
Data…, Tools › Build with TensorRT-RTX and Read Its Layers; the Engine panel; the canvas coloured by engine
layer, precision and the engine's time share; the inspector's engine section; an engine without its ONNX
model drawn as its own graph."""

from __future__ import annotations

import html
import math
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtWidgets import QDialog, QDockWidget, QFileDialog, QTableWidget, QTableWidgetItem, QVBoxLayout
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.view.layout import View
from splitscope.gui.engine_panel import EnginePanel
from splitscope.gui.exports import add_csv_menu
from splitscope.gui.palette import COLOURS
from splitscope.gui.render import Heat

if TYPE_CHECKING:
    from splitscope.engine.trtdata.importer import EngineData
    from splitscope.gui.app import MainWindow

LAYER_COLOURS = tuple(COLOURS["series"])
PRECISION_COLOURS = dict(COLOURS["precision"])


def _groups_up(view: View, node_vals: dict[int, Any]) -> dict[int, set[Any]]:
    """For every group, the set of values of the nodes below it: one pass over the nodes, then one up the tree
    (deepest groups first), so 50k nodes cost milliseconds, not a walk to the root per node."""
    hier = view.hier
    sets: dict[int, set[Any]] = {}
    ng = hier.node_group
    for i, v in node_vals.items():
        if i < len(ng):
            sets.setdefault(ng[i], set()).add(v)
    groups = hier.groups
    order = sorted((g.id for g in groups if g.parent not in (None, -1)), key=lambda g: -groups[g].depth)
    for gid in order:
        s = sets.get(gid)
        if s:
            parent = groups[gid].parent
            if parent is not None and parent >= 0:
                ps = sets.setdefault(parent, set())
                if len(ps) < 3:  # enough to know "more than one"
                    ps |= s
    return sets


def precision_heat(view: View, data: EngineData) -> Heat:
    """Nodes by the precision their layer really runs in; a block by its nodes' one precision, else mixed."""
    from splitscope.engine.trtdata.precision import precision_family

    keys = list(PRECISION_COLOURS)
    index = {p: float(k) for k, p in enumerate(keys)}
    fam: dict[str, str] = {}
    nodes: dict[int, float] = {}
    for i, p in data.node_precision().items():
        f = fam.get(p)
        if f is None:
            f = fam[p] = precision_family(p)
        if f in index:
            nodes[i] = index[f]
    gvals = {g: (next(iter(s)) if len(s) == 1 else index["mixed"]) for g, s in _groups_up(view, nodes).items()}
    seen = sorted({keys[int(v)] for v in nodes.values()}, key=keys.index)
    return Heat(nodes, gvals, "precision (as the engine runs it)", palette=tuple(PRECISION_COLOURS.values()),
                items=tuple((p, PRECISION_COLOURS[p]) for p in seen))


def layer_heat(view: View, data: EngineData) -> Heat:
    """Nodes fused into one engine layer share a colour (neighbouring layers differ); a block takes its
    layer's colour when it holds one layer only."""
    m = data.mapping
    nodes: dict[int, float] = {}
    if m is not None:
        for k, ids in enumerate(m.layer_nodes):
            for i in ids:
                nodes.setdefault(i, float(k % len(LAYER_COLOURS)))
    gvals = {g: next(iter(s)) for g, s in _groups_up(view, nodes).items() if len(s) == 1}
    return Heat(nodes, gvals, "engine layer (one colour a layer; grey: not in one layer, or many)",
                palette=LAYER_COLOURS, items=(("fused into one layer", LAYER_COLOURS[0]),
                                              ("the next layer", LAYER_COLOURS[1])))


def time_heat(view: View, data: EngineData) -> Heat | None:
    ms = data.node_ms()
    if not ms:
        return None
    top = max(ms.values()) or 1.0
    hier = view.hier
    groups: dict[int, float] = {}
    for i, v in ms.items():
        if i < len(hier.node_group):
            g = hier.node_group[i]
            groups[g] = groups.get(g, 0.0) + v
    for gid in sorted((g.id for g in hier.groups if g.parent not in (None, -1)), key=lambda g: -hier.groups[g].depth):
        if gid in groups:
            parent = hier.groups[gid].parent
            if parent is not None and parent >= 0:
                groups[parent] = groups.get(parent, 0.0) + groups[gid]
    gtop = max((v for g, v in groups.items() if g != 0), default=1.0) or 1.0
    total = sum(data.layer_ms().values()) or 1.0
    return Heat({i: v / top for i, v in ms.items()}, {g: v / gtop for g, v in groups.items()},
                "time share (imported engine profile)", False, "0%", f"{top / total:.1%} (a node)")


def diff_heat(view: View, cmp: dict[str, Any]) -> Heat | None:
    rows = cmp.get("by_node")
    if not rows:
        return None
    nodes = {r["index"]: max(-1.0, min(1.0, math.log2(r["b_ms"] / r["a_ms"]) / 2)) for r in rows
             if r["a_ms"] > 0 and r["b_ms"] > 0}
    return Heat(nodes, {}, "engine B vs A", True, "B 4x faster", "B 4x slower")


def heats(kind: str, view: View, data: EngineData, comparison: dict[str, Any] | None) -> Heat | None:
    """The colouring ``kind`` of ``view`` from an import."""
    if kind == "precision":
        return precision_heat(view, data)
    if kind == "layer":
        return layer_heat(view, data)
    if kind == "time":
        return time_heat(view, data)
    return diff_heat(view, comparison) if comparison else None


class EngineUi(QObject):
    """Builds and wires the engine-data parts of the window."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.panel = EnginePanel()
        self.dock = window._dock("Engine", self.panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        ops = window.findChild(QDockWidget, "dock_Ops")
        if ops is not None:
            window.tabifyDockWidget(ops, self.dock)
            ops.raise_()
        self.data: EngineData | None = None
        self.doc: dict[str, Any] | None = None
        self.comparison: dict[str, Any] | None = None
        self.heat_cache: dict[tuple[str, int], Heat | None] = {}
        """Colourings made in the import's worker for the view then on screen (the UI thread only paints)."""
        self.pending: list[str] | None = None
        """Files to map once the engine's own graph, opened for them, is ready."""
        self.panel.layer_chosen.connect(self._layer_chosen)
        self.panel.nodes_chosen.connect(self._nodes_chosen)
        window.inspector.extras.append(self.inspector_html)
        window.canvas.node_selected.connect(self._node_selected)
        window.session.model_ready.connect(self._model_ready)
        self.last_paths: list[str] = []
        self.on_engine_graph = False
        """Whether the last import was drawn as the engine's own graph (no ONNX model yet)."""

    def add_file_actions(self, file_menu: Any) -> None:
        """File › Import Engine Data…, Compare With Engine Data…."""
        w = self.window
        w._action(file_menu, "Import &Engine Data…", self.ask_import, "Ctrl+Shift+I").setToolTip(
            "trtexec's --exportLayerInfo, --exportProfile and --exportTimes files of one engine (TensorRT 8 to 11)")
        w._action(file_menu, "Compare With Engine Data…", self.ask_compare)

    def add_actions(self, tools: Any, _view: Any = None) -> None:
        """Tools › Build with TensorRT-RTX…, and the engine's colour modes (after the profiling ones)."""
        w = self.window
        w._action(tools, "&Build with TensorRT-RTX and Read Its Layers", self.build_rtx).setToolTip(
            "Build the open model here (TensorRT-RTX builds without a GPU) and show what its builder fused")
        ui = w.profiling
        ui.add_colour_mode("precision", "&Precision (imported engine)", self._heat("precision"))
        ui.add_colour_mode("layer", "&Engine Layer (imported engine)", self._heat("layer"))
        ui.add_colour_mode("engine-time", "Time Share (imported &engine profile)", self._heat("time"))
        ui.add_colour_mode("engine-diff", "Comparison of Two E&ngines", self._heat("diff"))

    def _heat(self, kind: str) -> Any:
        def make(view: View) -> Heat | None:
            if self.data is None or self.data.mapping is None:
                return None
            cached = self.heat_cache.get((kind, id(view.hier)))
            if cached is not None:
                return cached
            heat = heats(kind, view, self.data, self.comparison)
            self.heat_cache[(kind, id(view.hier))] = heat
            return heat
        return make

    # ------------------------------------------------------------ import
    def ask_import(self) -> None:
        settings = QSettings()
        names, _ = QFileDialog.getOpenFileNames(self.window, "Import engine data (the files of one engine)",
                                                str(settings.value("engine/dir", str(Path.home()))),
                                                "trtexec JSON (*.json);;All files (*)")
        if names:
            settings.setValue("engine/dir", str(Path(names[0]).parent))
            self.import_files(names)

    def import_files(self, paths: list[str]) -> int | None:
        """Import one engine's files onto the open model (or, with none open, draw the engine's own graph)."""
        gm = self.window.graph_model
        if gm is None:
            return self._open_engine_graph(paths)
        return self._submit(f"Import {', '.join(Path(p).name for p in paths)}", paths, "import")

    def ask_compare(self) -> None:
        if self.data is None:
            self.window.statusBar().showMessage("Import an engine first, then compare another with it.", 6000)
            return
        names, _ = QFileDialog.getOpenFileNames(self.window, "Engine data to compare with",
                                                str(QSettings().value("engine/dir", str(Path.home()))),
                                                "trtexec JSON (*.json);;All files (*)")
        if names:
            self._submit(f"Compare with {Path(names[0]).name}", names, "compare")

    def build_rtx(self) -> int | None:
        gm = self.window.graph_model
        if gm is None or gm.path is None:
            self.window.statusBar().showMessage("Open a model first.", 5000)
            return None
        return self._submit(f"Build {gm.path.name} with TensorRT-RTX", [str(gm.path)], "build")

    def _submit(self, title: str, paths: list[str], kind: str) -> int:
        if kind == "import":
            self.last_paths = list(paths)
        gm = self.window.graph_model
        view = self.window.view
        queue = self.window.profiling.queue

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            from splitscope.engine.runtime.trt import from_build
            from splitscope.engine.trtdata.importer import import_files
            from splitscope.engine.trtdata.lint import lint

            yield Progress("engine", 0, 0, title)
            if kind == "build":
                data = from_build(paths[0], gm, "rtx", dict(gm.dims) if gm else None, token,
                                  lambda name, step, total: None)
            else:
                data = import_files(paths, gm)
            token.raise_if_cancelled()
            doc = data.to_json()
            made = {}
            if view is not None and data.mapping is not None and kind != "compare":
                for k in ("precision", "layer", "time"):  # here, not on the UI thread: 50k nodes take 30 ms
                    made[(k, id(view.hier))] = heats(k, view, data, None)
            return {"kind": kind, "data": data, "doc": doc, "lint": lint(data), "title": title, "heats": made}

        jid = queue.submit(title, job, lane="engine" if kind != "build" else "gpu", kind="engine")
        queue.finished.connect(self._finished)
        return jid

    def _finished(self, jid: int) -> None:
        rec = self.window.profiling.queue.jobs.get(jid)
        if rec is None or rec.kind != "engine" or not isinstance(rec.result, dict) or rec.meta.get("shown"):
            return
        rec.meta["shown"] = True
        res = rec.result
        if res["kind"] == "compare":
            from splitscope.engine.trtdata.compare import compare

            if self.data is not None:
                self.comparison = compare(self.data, res["data"])
                self.heat_cache = {k: v for k, v in self.heat_cache.items() if k[0] != "diff"}
                self._show_comparison(self.comparison)
                self.window.profiling.set_colour("engine-diff")
            return
        self.data, self.doc = res["data"], res["doc"]
        self.heat_cache = dict(res["heats"])
        self.panel.set_data(res["doc"], res["lint"], res["title"])
        self.dock.raise_()
        self.window.profiling.set_colour("precision" if any(x["precision"] for x in res["doc"]["layers"])
                                         else "layer")
        self.window.statusBar().showMessage(
            f"{len(res['doc']['layers'])} engine layers imported"
            + (f"; {res['doc']['mapped_data_node_share']:.0%} of the model's data-path nodes mapped"
               if res["doc"].get("mapped_data_node_share") is not None else ""), 8000)

    def _open_engine_graph(self, paths: list[str]) -> int | None:
        """No model open: draw the engine's own graph from its layer info (read and written in a worker), then
        import onto it."""
        from splitscope.engine.paths import cache_dir
        from splitscope.engine.trtdata.engine_graph import write_engine_graph

        def job(token: CancelToken) -> Generator[JobEvent, None, Any]:
            yield Progress("engine", 0, 0, "Drawing the engine's own graph")
            return write_engine_graph(paths, cache_dir() / "engine-graphs")

        queue = self.window.profiling.queue
        jid = queue.submit(f"Draw the engine of {Path(paths[0]).name}", job, lane="engine", kind="engine-graph",
                           meta={"paths": list(paths)})
        queue.finished.connect(self._graph_written)
        return jid

    def _graph_written(self, jid: int) -> None:
        rec = self.window.profiling.queue.jobs.get(jid)
        if rec is None or rec.kind != "engine-graph" or rec.meta.get("shown"):
            return
        rec.meta["shown"] = True
        self.pending = list(rec.meta["paths"])
        self.window.session.model_ready.connect(self._pending_ready, Qt.ConnectionType.SingleShotConnection)
        self.window.open_model(rec.result)

    def _pending_ready(self, *_: Any) -> None:
        if self.pending:
            paths, self.pending = self.pending, None
            self.on_engine_graph = True
            self._submit(f"Import {', '.join(Path(p).name for p in paths)}", paths, "import")

    def _model_ready(self, gm: Any, _view: Any) -> None:
        """The ONNX model opened after an engine seen on its own graph: the engine maps onto it now."""
        from splitscope.engine.trtdata.engine_graph import DOMAIN

        is_engine = bool(gm.nodes) and all(n.domain == DOMAIN for n in gm.nodes)
        if self.on_engine_graph and not is_engine and self.last_paths and self.pending is None:
            self.on_engine_graph = False
            paths = list(self.last_paths)
            self._submit(f"Map {', '.join(Path(p).name for p in paths)} onto {gm.path.name if gm.path else ''}",
                         paths, "import")
        elif not is_engine:
            self.data = self.doc = None
            self.heat_cache = {}

    # ------------------------------------------------------------ views
    def _show_comparison(self, cmp: dict[str, Any]) -> None:
        dlg = QDialog(self.window)
        dlg.setWindowTitle(f"Compare engines: A {cmp['a_total_ms']:.4f} ms, B {cmp['b_total_ms']:.4f} ms of layer time")
        dlg.resize(820, 520)
        rows = cmp.get("largest_changes", [])
        t = QTableWidget(len(rows) + len(cmp["by_layer_type"]), 5)
        t.setHorizontalHeaderLabels(["Node / layer type", "A ms", "B ms", "A precision", "B precision"])
        add_csv_menu(t, "engine-comparison")
        r = 0
        for row in cmp["by_layer_type"]:
            for c, v in enumerate((f"[type] {row['type']}", f"{row['a_ms']:.4f}", f"{row['b_ms']:.4f}", "", "")):
                t.setItem(r, c, QTableWidgetItem(v))
            r += 1
        for row in rows:
            for c, v in enumerate((row["name"], f"{row['a_ms']:.4f}", f"{row['b_ms']:.4f}", row["a_precision"],
                                   row["b_precision"])):
                t.setItem(r, c, QTableWidgetItem(v))
            r += 1
        t.resizeColumnsToContents()
        lay = QVBoxLayout(dlg)
        lay.addWidget(t)
        dlg.show()
        self.compare_dialog = dlg

    def inspector_html(self, index: int) -> str:
        """The inspector's section for a node: the engine layer(s) it ended in, with type, precision, tactic,
        formats and time."""
        if self.data is None or self.data.mapping is None or self.doc is None:
            return ""
        ks = self.data.mapping.node_layers.get(index, [])
        if not ks:
            return "<h4>Engine</h4><p>Not in any layer of the imported engine (TensorRT folded or removed it).</p>"
        parts = ["<h4>Engine</h4>"]
        rows = self.data.rows
        for k in ks[:4]:
            d, layer = self.doc["layers"][k], rows[k]
            fmts = ", ".join(sorted({t.format for t in (*layer.inputs, *layer.outputs) if t.format}))[:300]
            ms = f"{d['ms']:.4f} ms ({d['share']:.1%})" if d["ms"] is not None else "no profile"
            parts.append(f"<p><b>{html.escape(d['name'])}</b><br>{html.escape(d['type'])} · "
                         f"{html.escape(d['precision'] or 'precision not recorded')} · {ms}<br>"
                         f"tactic: {html.escape(layer.tactic or '—')}<br>formats: {html.escape(fmts or '—')}<br>"
                         f"holds {len(d['onnx_nodes'])} ONNX node{'s' if len(d['onnx_nodes']) != 1 else ''}</p>")
        return "".join(parts)

    def _layer_chosen(self, k: int) -> None:
        if self.data is None or self.data.mapping is None:
            return
        nodes = self.data.mapping.layer_nodes[k]
        w = self.window
        if nodes:
            w.highlight(nodes)
            w.canvas.select_node(nodes[0])
            w.inspector.show_node(nodes[0])

    def _nodes_chosen(self, names: list[str]) -> None:
        gm = self.window.graph_model
        if gm is None:
            return
        by = {n.name: n.index for n in gm.nodes}
        ids = [by[n] for n in names if n in by]
        if ids:
            self.window.highlight(ids)

    def _node_selected(self, index: int) -> None:
        if self.data is not None and self.data.mapping is not None:
            ks = self.data.mapping.node_layers.get(index)
            if ks:
                self.panel.select_layer(ks[0])
